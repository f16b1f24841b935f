"""The `tasks` table of the export: one row per task of the exported runs.

Contracts:

- Counts per `task_id` come from the read model's one outcome count
  (`testbed.db.read.rates.count_outcomes`): runs, passed, failed, error, cancelled,
  unfinished; plus the first and last creation time, the variants seen, and the category
  recorded most often (ties: the smallest name).
- When `tasks_dir/<task_id>/task.toml` loads (`testbed.model.taskload.load_definition`, the
  task model's own loader and validation), its category, difficulty, tags, description,
  image variants, requirement ids and whether any check must persist fill the definition
  columns (`source` = "task.toml"); otherwise they come from the runs or stay null
  (`source` = "runs"). A task.toml that does not load never fails the export: it is named
  in a warning and ignored.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, func, select

from testbed.db.models import Run
from testbed.db.read.filters import RunFilter
from testbed.db.read.rates import OutcomeCounts, count_outcomes, fold
from testbed.errors import InputError
from testbed.model.taskload import load_definition


def _variants(conn: Connection, where: list[Any]) -> dict[str, set[str]]:
    variants: dict[str, set[str]] = {}
    stmt = select(Run.task_id, Run.variant).where(*where, Run.variant.is_not(None)).distinct()
    for task_id, variant in conn.execute(stmt):
        variants.setdefault(task_id, set()).add(str(variant))
    return variants


def _main_categories(conn: Connection, where: list[Any]) -> dict[str, str]:
    seen: dict[str, Counter[str]] = {}
    stmt = (
        select(Run.task_id, Run.task_category, func.count())
        .where(*where, Run.task_category.is_not(None))
        .group_by(Run.task_id, Run.task_category)
    )
    for task_id, category, n in conn.execute(stmt):
        seen.setdefault(task_id, Counter())[str(category)] = n
    return {task_id: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for task_id, c in seen.items()}


def _record(task_id: str, counts: OutcomeCounts, times: tuple[Any, Any], variants: set[str]) -> dict[str, Any]:
    return {
        "task_id": task_id, "category": None, "difficulty": None, "tags": None, "description": None,
        "declared_variants": None, "variants_seen": sorted(variants), "requirements": None,
        "persistence_required": None, "runs": counts.total, "passed": counts.passed, "failed": counts.failed,
        "error": counts.error, "cancelled": counts.cancelled, "unfinished": counts.unfinished,
        "first_run_at": times[0], "last_run_at": times[1], "source": "runs",
    }  # fmt: skip


def task_definition(tasks_dir: Path | None, task_id: str, warnings: list[str]) -> dict[str, Any]:
    """The definition columns of `task_id` from its task.toml (see the module contract)."""
    if tasks_dir is None or "/" in task_id or task_id.startswith("."):
        return {}
    directory = tasks_dir / task_id
    if not (directory / "task.toml").is_file():
        return {}
    try:
        d = load_definition(directory)
    except InputError as exc:
        warnings.append(f"{directory / 'task.toml'}: ignored ({exc})")
        return {}
    result: dict[str, Any] = {
        "difficulty": d.difficulty,
        "tags": list(d.tags),
        "description": d.description or None,
        "declared_variants": list(d.images),
        "requirements": [c.id for c in d.checks],
        "persistence_required": d.persistence_required,
        "source": "task.toml",
    }
    if d.category:
        result["category"] = d.category
    return result


def task_rows(
    conn: Connection, selection: RunFilter, tasks_dir: Path | None, warnings: list[str]
) -> list[dict[str, Any]]:
    """One dict per task of the selected runs, by task id (see the module contract)."""
    where = selection.where()
    counts = fold(count_outcomes(conn, Run.task_id, where=where))
    times = {
        task_id: (first, last)
        for task_id, first, last in conn.execute(
            select(Run.task_id, func.min(Run.created_at), func.max(Run.created_at)).where(*where).group_by(Run.task_id)
        )
    }
    variants = _variants(conn, where)
    categories = _main_categories(conn, where)
    rows = []
    for task_id in sorted(counts):
        record = _record(task_id, counts[task_id], times[task_id], variants.get(task_id, set()))
        record["category"] = categories.get(task_id)
        record.update(task_definition(tasks_dir, task_id, warnings))
        rows.append(record)
    return rows
