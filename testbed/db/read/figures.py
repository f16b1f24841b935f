"""The study's figures for any selection of runs (the report's tables and charts).

`compute_figures(session, selection)` reads every figure in the session's transaction and
returns plain frozen dataclasses. Rates are fractions in [0, 1] (None when the denominator
is 0); durations are seconds. Where each figure is defined (the choices a reader of the
tables needs to know):

- Pass rate per task category — `rates.pass_rates_by_category` (harness errors and
  cancelled runs counted but left out of the rate; unfinished runs ignored).
- Agent-command failure rate per OS release — `commands.command_failures`.
- Runs by residue verdict and residue findings per category — `findings.residue_summary`,
  `findings.residue_by_category`.
- High-impact classes of agent commands — `commands.impact_classes`.
- Completion time per category — `runs.completion_times`.
- Reboot regressions — `checks.reboot_regressions`.
- The leaderboard (agents compared overall, per category and per release) —
  `leaderboard.leaderboard`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from testbed.db.read.checks import RebootRegression, reboot_regressions, runs_rebooted
from testbed.db.read.commands import ImpactClass, OsCommandFailures, command_failures, impact_classes
from testbed.db.read.filters import RunFilter
from testbed.db.read.findings import ResidueCategory, ResidueSummary, residue_by_category, residue_summary
from testbed.db.read.leaderboard import Leaderboard, leaderboard
from testbed.db.read.rates import UNKNOWN, CategoryPassRate, pass_rates_by_category
from testbed.db.read.runs import CompletionTimes, completion_times, run_count
from testbed.db.types import utcnow


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
    leaderboard: Leaderboard
    runs_rebooted: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (datetimes as ISO 8601)."""
        data = asdict(self)
        data["generated_at"] = self.generated_at.isoformat()
        return data


def compute_figures(session: Session, selection: RunFilter | None = None) -> Figures:
    """Every figure for `selection` (default: all runs), read in one transaction."""
    selection = selection or RunFilter()
    runs = run_count(session, selection)
    return Figures(
        selection=selection.describe(),
        generated_at=utcnow(),
        runs=runs,
        pass_rates=pass_rates_by_category(session, selection),
        command_failures=command_failures(session, selection),
        residue=residue_summary(session, selection),
        residue_by_category=residue_by_category(session, selection, runs),
        impact_classes=impact_classes(session, selection, runs),
        completion_times=completion_times(session, selection),
        reboot_regressions=reboot_regressions(session, selection),
        leaderboard=leaderboard(session, selection),
        runs_rebooted=runs_rebooted(session, selection),
    )


__all__ = [
    "UNKNOWN",
    "CategoryPassRate",
    "CompletionTimes",
    "Figures",
    "ImpactClass",
    "Leaderboard",
    "OsCommandFailures",
    "RebootRegression",
    "ResidueCategory",
    "ResidueSummary",
    "compute_figures",
]
