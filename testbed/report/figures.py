"""The study's figures, computed from the run database for any selection of runs.

Every function takes a SQLAlchemy `Session` and a `RunFilter` (`testbed.export.selection`)
and returns plain frozen dataclasses (no ORM objects), so the reports and the dashboard
share them. Rates are fractions in [0, 1] (None when the denominator is 0); durations are
seconds. Rows are sorted as documented per function; ties by name.

Definitions (the choices a reader of the tables needs to know):

- Pass rate (`pass_rates`): per `runs.task_category` (NULL → `UNKNOWN`),
  passed / (passed + failed). Harness errors and cancelled runs are counted but left out of
  the rate (DESIGN.md: a harness error is never an agent failure); unfinished runs
  (outcome NULL) are ignored.
- Command failure rate (`command_failures`): AGENT commands only (`source = agent`; setup,
  verify and probe commands are the harness's, not the agent's) that have an exit status
  (`exit_code` NOT NULL: timeouts and transport failures have none and are left out);
  failed = non-zero exit. Grouped by the OS release of the node the command ran on
  (`commands.node` = `nodes.name` within the same run; no such node or no release →
  `UNKNOWN`).
- Residue (`residue`): runs by `runs.residue` (yes / no / undetermined / not analysed =
  NULL); `residue_by_category`: findings of kind `residue` per finding category — number
  of findings, distinct runs and the share of the selected runs.
- High-impact classes (`impact_classes`): classes listed in `commands.impact` of AGENT
  commands; per class the number of commands, of distinct runs, and the share of the
  selected runs (all of them, whatever their outcome).
- Completion time (`completion_times`): per task category, min / median / max of
  `finished_at - started_at` over runs with both set (any outcome).
- Reboot regressions (`reboot_regressions`): a (run, requirement, node) whose check passed
  at `after_agent` and failed at `after_reboot` (NULL nodes match each other);
  aggregated per (task, requirement).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, and_, case, cast, func, select
from sqlalchemy.orm import Session, aliased

from testbed.db.models import Check, Command, Finding, Node, Run
from testbed.db.types import utcnow
from testbed.export.selection import RunFilter

UNKNOWN = "(unknown)"
"""Label of a missing category or OS release."""


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _in_selection(selection: RunFilter, run_id_column: Any) -> list[Any]:
    return [] if selection.selects_all else [run_id_column.in_(selection.run_ids())]


@dataclass(frozen=True)
class CategoryPassRate:
    """Outcomes of the runs of one task category."""

    category: str
    runs: int
    passed: int
    failed: int
    error: int
    cancelled: int
    pass_rate: float | None
    """passed / (passed + failed)."""


@dataclass(frozen=True)
class OsCommandFailures:
    """Agent commands with an exit status on nodes of one OS release."""

    os_release: str
    commands: int
    failed: int
    failure_rate: float | None


@dataclass(frozen=True)
class ResidueSummary:
    """Runs by residue verdict."""

    runs: int
    with_residue: int
    without_residue: int
    undetermined: int
    not_analysed: int


@dataclass(frozen=True)
class ResidueCategory:
    """Residue findings of one category."""

    category: str
    findings: int
    runs: int
    share_of_runs: float | None


@dataclass(frozen=True)
class ImpactClass:
    """One high-impact class of agent commands."""

    impact_class: str
    runs: int
    share_of_runs: float | None
    commands: int


@dataclass(frozen=True)
class CompletionTimes:
    """Run durations of one task category (seconds)."""

    category: str
    runs: int
    min_s: float
    median_s: float
    max_s: float


@dataclass(frozen=True)
class RebootRegression:
    """A requirement that held before the reboot and failed after it, in `runs` runs."""

    task_id: str
    requirement: str
    description: str | None
    runs: int
    run_ids: list[str]


@dataclass(frozen=True)
class Figures:
    """Every figure of the report for one selection."""

    selection: str
    generated_at: datetime
    runs: int
    pass_rates: list[CategoryPassRate]
    command_failures: list[OsCommandFailures]
    residue: ResidueSummary
    residue_by_category: list[ResidueCategory]
    impact_classes: list[ImpactClass]
    completion_times: list[CompletionTimes]
    reboot_regressions: list[RebootRegression]
    runs_rebooted: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO 8601)."""
        data = asdict(self)
        data["generated_at"] = self.generated_at.isoformat()
        return data


def run_count(session: Session, selection: RunFilter) -> int:
    """Number of selected runs."""
    return int(session.scalar(select(func.count()).select_from(Run).where(*selection.runs_where())) or 0)


def pass_rates(session: Session, selection: RunFilter) -> list[CategoryPassRate]:
    """Outcomes and pass rate per task category, sorted by category."""
    counts = {
        name: func.sum(case((Run.outcome == name, 1), else_=0)).label(name)
        for name in ("passed", "failed", "error", "cancelled")
    }
    rows = session.execute(
        select(Run.task_category, func.count().label("runs"), *counts.values())
        .where(*selection.runs_where(), Run.outcome.is_not(None))
        .group_by(Run.task_category)
    ).all()
    result = [
        CategoryPassRate(
            category=r.task_category if r.task_category is not None else UNKNOWN,
            runs=int(r.runs),
            passed=int(r.passed or 0),
            failed=int(r.failed or 0),
            error=int(r.error or 0),
            cancelled=int(r.cancelled or 0),
            pass_rate=_rate(int(r.passed or 0), int(r.passed or 0) + int(r.failed or 0)),
        )
        for r in rows
    ]
    return sorted(result, key=lambda x: x.category)


def command_failures(session: Session, selection: RunFilter) -> list[OsCommandFailures]:
    """Agent-command failure rate per OS release, sorted by release."""
    failed = func.sum(case((Command.exit_code != 0, 1), else_=0))
    rows = session.execute(
        select(Node.os_release, func.count().label("commands"), failed.label("failed"))
        .select_from(Command)
        .outerjoin(Node, and_(Node.run_id == Command.run_id, Node.name == Command.node))
        .where(*_in_selection(selection, Command.run_id), Command.source == "agent", Command.exit_code.is_not(None))
        .group_by(Node.os_release)
    ).all()
    merged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        key = r.os_release if r.os_release else UNKNOWN
        merged[key][0] += int(r.commands)
        merged[key][1] += int(r.failed or 0)
    return [
        OsCommandFailures(os_release=k, commands=n, failed=f, failure_rate=_rate(f, n))
        for k, (n, f) in sorted(merged.items())
    ]


def residue(session: Session, selection: RunFilter) -> ResidueSummary:
    """Runs with residue, without, undetermined and not analysed."""
    counts = dict(
        session.execute(select(Run.residue, func.count()).where(*selection.runs_where()).group_by(Run.residue)).all()
    )
    return ResidueSummary(
        runs=int(sum(counts.values())),
        with_residue=int(counts.get("yes", 0)),
        without_residue=int(counts.get("no", 0)),
        undetermined=int(counts.get("undetermined", 0)),
        not_analysed=int(counts.get(None, 0)),
    )


def residue_by_category(session: Session, selection: RunFilter, runs: int | None = None) -> list[ResidueCategory]:
    """Residue findings per finding category, most runs first."""
    total = run_count(session, selection) if runs is None else runs
    rows = session.execute(
        select(Finding.category, func.count().label("findings"), func.count(Finding.run_id.distinct()).label("runs"))
        .where(*_in_selection(selection, Finding.run_id), Finding.kind == "residue")
        .group_by(Finding.category)
    ).all()
    result = [
        ResidueCategory(
            category=r.category, findings=int(r.findings), runs=int(r.runs), share_of_runs=_rate(r.runs, total)
        )
        for r in rows
    ]
    return sorted(result, key=lambda x: (-x.runs, -x.findings, x.category))


def impact_classes(session: Session, selection: RunFilter, runs: int | None = None) -> list[ImpactClass]:
    """High-impact classes of agent commands, most runs first.

    Only commands whose impact list is not empty are read (streamed), so this stays cheap
    on large databases."""
    total = run_count(session, selection) if runs is None else runs
    impact_text = cast(Command.impact, Text)
    stmt = select(Command.run_id, impact_text).where(
        *_in_selection(selection, Command.run_id),
        Command.source == "agent",
        impact_text.not_in(["[]", "null"]),
    )
    commands: Counter[str] = Counter()
    run_sets: dict[str, set[str]] = defaultdict(set)
    for run_id, raw in session.execute(stmt.execution_options(yield_per=5000)):
        classes = json.loads(raw) if raw else []
        for cls in set(classes or ()):
            commands[cls] += 1
            run_sets[cls].add(run_id)
    result = [
        ImpactClass(impact_class=cls, runs=len(run_sets[cls]), share_of_runs=_rate(len(run_sets[cls]), total),
                    commands=commands[cls])
        for cls in commands
    ]  # fmt: skip
    return sorted(result, key=lambda x: (-x.runs, -x.commands, x.impact_class))


def completion_times(session: Session, selection: RunFilter) -> list[CompletionTimes]:
    """min / median / max run duration per task category, sorted by category."""
    durations: dict[str, list[float]] = defaultdict(list)
    stmt = select(Run.task_category, Run.started_at, Run.finished_at).where(
        *selection.runs_where(), Run.started_at.is_not(None), Run.finished_at.is_not(None)
    )
    for category, started, finished in session.execute(stmt):
        assert started is not None and finished is not None
        durations[category if category is not None else UNKNOWN].append((finished - started).total_seconds())
    return [
        CompletionTimes(category=k, runs=len(v), min_s=min(v), median_s=float(statistics.median(v)), max_s=max(v))
        for k, v in sorted(durations.items())
    ]


def reboot_regressions(session: Session, selection: RunFilter) -> tuple[int, list[RebootRegression]]:
    """(runs with a check after the reboot, regressions per (task, requirement) — most runs
    first)."""
    before = aliased(Check)
    after = aliased(Check)
    rows = session.execute(
        select(Run.task_id, before.requirement, before.description, before.run_id)
        .select_from(before)
        .join(
            after,
            and_(
                after.run_id == before.run_id,
                after.requirement == before.requirement,
                after.node.is_not_distinct_from(before.node),
            ),
        )
        .join(Run, Run.id == before.run_id)
        .where(
            *selection.runs_where(),
            before.point == "after_agent",
            before.status == "passed",
            after.point == "after_reboot",
            after.status == "failed",
        )
        .distinct()
    ).all()
    grouped: dict[tuple[str, str], tuple[str | None, set[str]]] = {}
    for task_id, requirement, description, run_id in rows:
        desc, runs = grouped.setdefault((task_id, requirement), (description, set()))
        runs.add(run_id)
        if desc is None and description is not None:
            grouped[(task_id, requirement)] = (description, runs)
    rebooted = int(
        session.scalar(
            select(func.count(Check.run_id.distinct())).where(
                *_in_selection(selection, Check.run_id), Check.point == "after_reboot"
            )
        )
        or 0
    )
    result = [
        RebootRegression(task_id=t, requirement=r, description=d, runs=len(ids), run_ids=sorted(ids))
        for (t, r), (d, ids) in grouped.items()
    ]
    return rebooted, sorted(result, key=lambda x: (-x.runs, x.task_id, x.requirement))


def compute_figures(session: Session, selection: RunFilter | None = None) -> Figures:
    """Every figure for `selection` (default: all runs), read in one transaction."""
    selection = selection or RunFilter()
    runs = run_count(session, selection)
    rebooted, regressions = reboot_regressions(session, selection)
    return Figures(
        selection=selection.describe(),
        generated_at=utcnow(),
        runs=runs,
        pass_rates=pass_rates(session, selection),
        command_failures=command_failures(session, selection),
        residue=residue(session, selection),
        residue_by_category=residue_by_category(session, selection, runs),
        impact_classes=impact_classes(session, selection, runs),
        completion_times=completion_times(session, selection),
        reboot_regressions=regressions,
        runs_rebooted=rebooted,
    )
