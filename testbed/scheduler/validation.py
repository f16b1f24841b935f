"""Task validation: every task's oracle passes and leaves no residue, and the do-nothing
agent fails, on every release the task declares (`scripts/validate-tasks`).

Pieces (the command itself is `testbed.cli.validate_tasks`):
- `job_spec(tasks, agent)`: the job file of one agent over the tasks — every declared
  image (`images: all`), the canonical scenario (seed 0), held-out tasks included, one
  attempt, harness errors retried once;
- `collect(session, oracle_job, noop_job, commit, day)`: one `Row` per (task, release) from
  the two jobs' final runs (`testbed.db.read.jobs.final_runs`), the oracle's runs of the
  first and the do-nothing agent's of the second (one job running both agents may be
  given twice);
- `merge_report(existing, rows)`: tasks/VALIDATION.md with these rows replacing earlier
  rows of the same (task, release) and every other row kept, so a run over a subset
  updates only its own cells.

A row is `ok` when the oracle passed with residue `no` and the do-nothing agent failed;
anything else is `PROBLEM` with the reasons in its notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from testbed.db.read.jobs import FinalRun, final_runs
from testbed.model.vocab import Outcome, Residue

COLUMNS = ("task", "release", "oracle", "oracle time", "residue", "noop", "noop time", "verdict", "commit", "date",
           "notes")  # fmt: skip
HEADER = """# Task validation

Written by `scripts/validate-tasks` (do not edit by hand). Each row is one task on one
release it declares, run through the scheduler on real guests: the task's oracle, then the
do-nothing agent (`noop`), canonical scenario (seed 0). A row is `ok` when the oracle passed
and left no residue and the do-nothing agent failed. Rows of tasks not validated in the
last run keep the commit they were validated at; the audit line says which declared cells
have no row, a PROBLEM row, or a row older than the task's last change.
"""
NOTE_CHARS = 300


@dataclass(frozen=True)
class Row:
    task: str
    release: str
    oracle: str
    oracle_time: str
    residue: str
    noop: str
    noop_time: str
    verdict: str
    commit: str
    date: str
    notes: str

    @property
    def key(self) -> tuple[str, str]:
        return self.task, self.release

    def cells(self) -> list[str]:
        return [self.task, self.release, self.oracle, self.oracle_time, self.residue, self.noop, self.noop_time,
                self.verdict, self.commit, self.date, self.notes]  # fmt: skip


def job_spec(
    tasks: list[str], agent: str, *, vm_slots: int | None = None, warm: bool = True, images: str = "all"
) -> dict[str, Any]:
    """The job file (as data) that runs `agent` over `tasks` on every declared release
    (`images="default"`: on each task's first release only)."""
    spec: dict[str, Any] = {
        "name": f"validate-{agent}",
        "tasks": list(tasks),
        "images": images,
        "agent": agent,
        "attempts": 1,
        "seeds": [0],
        "split": "all",
        "include_heldout": True,
        "warm": warm,
        "retry": {"limit": 1, "backoff_s": 10},
    }
    if vm_slots is not None:
        spec["hosts"] = [{"name": "local", "vm_slots": vm_slots}]
    return spec


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def seconds(text: str) -> float | None:
    """The inverse of `duration` ("7m 13s", "45s"); None for an empty or unknown cell."""
    m = re.fullmatch(r"\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text)
    if not text.strip() or m is None:
        return None
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def _clean(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= NOTE_CHARS else flat[: NOTE_CHARS - 1] + "…"


def _row(task: str, release: str, oracle: FinalRun | None, noop: FinalRun | None, commit: str, day: str) -> Row:
    notes: list[str] = []
    o_out = (oracle.outcome or "unfinished") if oracle else "missing"
    n_out = (noop.outcome or "unfinished") if noop else "missing"
    residue = (oracle.residue or "unknown") if oracle else ""
    if oracle is not None and oracle.outcome != Outcome.PASSED and oracle.error:
        notes.append(f"oracle: {oracle.error}")
    if oracle is not None and oracle.residue_findings:
        shown = "; ".join(oracle.residue_findings[:3])
        notes.append(f"residue: {len(oracle.residue_findings)} finding(s): {shown}")
        residue = f"{residue} ({len(oracle.residue_findings)})"
    if noop is not None and noop.outcome == Outcome.ERROR and noop.error:
        notes.append(f"noop: {noop.error}")
    if noop is not None and noop.outcome == Outcome.PASSED:
        notes.append("noop passed: the checks do not notice a do-nothing agent")
    ok = (
        oracle is not None and oracle.outcome == Outcome.PASSED and oracle.residue == Residue.NO
        and noop is not None and noop.outcome == Outcome.FAILED
    )  # fmt: skip
    return Row(task, release, o_out, duration(oracle.duration_s if oracle else None), residue, n_out,
               duration(noop.duration_s if noop else None), "ok" if ok else "PROBLEM", commit, day,
               _clean("; ".join(notes)))  # fmt: skip


def collect(session: Session, oracle_job: str, noop_job: str, commit: str, day: str) -> list[Row]:
    """One row per (task, release) run by either job (see the module docstring)."""
    oracle = {(r.task_id, r.variant or ""): r for r in final_runs(session, oracle_job) if r.agent == "oracle"}
    noop = {(r.task_id, r.variant or ""): r for r in final_runs(session, noop_job) if r.agent == "noop"}
    keys = sorted(set(oracle) | set(noop))
    return [_row(task, release, oracle.get((task, release)), noop.get((task, release)), commit, day)
            for task, release in keys]  # fmt: skip


def parse_rows(text: str) -> list[Row]:
    """The rows of an existing report (lines of its table; anything else is ignored)."""
    rows: list[Row] = []
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith(("| task ", "| ---")):
            continue
        cells = [c.strip().replace("\\|", "|") for c in _split_cells(line)]
        if len(cells) == len(COLUMNS):
            rows.append(Row(*cells))
    return rows


def _split_cells(line: str) -> list[str]:
    cells, current, escaped = [], "", False
    for ch in line.strip()[1:-1]:
        if ch == "|" and not escaped:
            cells.append(current)
            current = ""
        else:
            current += ch
        escaped = ch == "\\" and not escaped
    cells.append(current)
    return cells


def render_report(rows: list[Row], audit: str | None = None) -> str:
    """The whole VALIDATION.md for `rows`; `audit` is a line on whether they are current
    (`testbed.scheduler.validation_audit.summary`), printed under the count."""
    ordered = sorted(rows, key=lambda r: r.key)
    ok = sum(r.verdict == "ok" for r in ordered)
    tasks = len({r.task for r in ordered})
    lines = [HEADER, f"{ok} of {len(ordered)} cells ok ({tasks} tasks).", "", *([audit, ""] if audit else [])]
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in ordered:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
    return "\n".join(lines) + "\n"


def merge_rows(existing: str, rows: list[Row]) -> list[Row]:
    """The rows of the `existing` report text with `rows` replacing those of the same
    (task, release)."""
    kept = {r.key: r for r in parse_rows(existing)}
    for row in rows:
        kept[row.key] = row
    return list(kept.values())


def merge_report(existing: str, rows: list[Row]) -> str:
    """`existing` report text with `rows` replacing its rows of the same (task, release)."""
    return render_report(merge_rows(existing, rows))
