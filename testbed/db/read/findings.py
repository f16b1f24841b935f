"""Findings (residue, impact, safety) and residue verdicts.

Contracts:

- `run_findings(session, run_id, kind)` lists the run's findings in id order (the order
  they were recorded), each with the seq and text of the command it is attributed to
  (text cut to `command_chars` characters when given); `kind` must be a finding kind (else
  `InputError`). `load_findings(session, ref, kind)` resolves the run first and adds its
  residue verdict (`RunFindings`).
- `residue_summary`: the selected runs by `runs.residue` (yes / no / undetermined / not
  analysed = NULL). `residue_by_category`: findings of kind `residue` per finding
  category — the findings, the distinct runs and their share of `runs` selected runs; most
  runs first, then most findings, then by category.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from testbed.db.models import FINDING_KINDS, Command, Finding, Run
from testbed.db.read.filters import RunFilter
from testbed.db.read.ids import resolve_run_id
from testbed.db.read.jsonable import JsonRecord
from testbed.db.read.rates import rate
from testbed.errors import InputError
from testbed.model.vocab import FindingKind, Residue


@dataclass(frozen=True)
class FindingInfo(JsonRecord):
    """A finding with the seq and text of the command it is attributed to (if any)."""

    id: int
    node: str | None
    kind: str
    category: str
    summary: str
    evidence: Any
    command_id: int | None
    command_seq: int | None
    command_text: str | None


@dataclass(frozen=True)
class RunFindings:
    """A run's findings and its residue verdict (yes, no, undetermined or None)."""

    run_id: str
    residue: str | None
    findings: list[FindingInfo]


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in FINDING_KINDS:
        raise InputError(None, "kind", f"must be one of {', '.join(FINDING_KINDS)}; got {kind!r}")


def run_findings(
    session: Session, run_id: str, kind: str | None = None, command_chars: int | None = None
) -> list[FindingInfo]:
    """The findings of run `run_id` (see the module contract)."""
    _check_kind(kind)
    command_text = Command.command if command_chars is None else func.substr(Command.command, 1, command_chars)
    stmt = (
        select(Finding, Command.seq, command_text)
        .outerjoin(Command, Command.id == Finding.command_id)
        .where(Finding.run_id == run_id)
        .order_by(Finding.id)
    )
    if kind is not None:
        stmt = stmt.where(Finding.kind == kind)
    return [
        FindingInfo(f.id, f.node, f.kind, f.category, f.summary, f.evidence, f.command_id, seq, cmd)
        for f, seq, cmd in session.execute(stmt)
    ]


def load_findings(session: Session, ref: str, kind: str | None = None) -> RunFindings:
    """The findings and residue verdict of the run named by `ref` (full id or prefix)."""
    _check_kind(kind)
    run_id = resolve_run_id(session, ref)
    residue = session.scalar(select(Run.residue).where(Run.id == run_id))
    return RunFindings(run_id, residue, run_findings(session, run_id, kind))


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


def residue_summary(session: Session, selection: RunFilter) -> ResidueSummary:
    """Runs with residue, without, undetermined and not analysed."""
    stmt = select(Run.residue, func.count()).where(*selection.where()).group_by(Run.residue)
    counts: dict[str | None, int] = {verdict: int(n) for verdict, n in session.execute(stmt)}
    return ResidueSummary(
        runs=sum(counts.values()),
        with_residue=counts.get(Residue.YES, 0),
        without_residue=counts.get(Residue.NO, 0),
        undetermined=counts.get(Residue.UNDETERMINED, 0),
        not_analysed=counts.get(None, 0),
    )


def residue_by_category(session: Session, selection: RunFilter, runs: int) -> list[ResidueCategory]:
    """Residue findings per finding category among `runs` selected runs (see the contract)."""
    rows = session.execute(
        select(Finding.category, func.count().label("findings"), func.count(Finding.run_id.distinct()).label("runs"))
        .where(*selection.in_selection(Finding.run_id), Finding.kind == FindingKind.RESIDUE)
        .group_by(Finding.category)
    ).all()
    result = [
        ResidueCategory(r.category, findings=int(r.findings), runs=int(r.runs), share_of_runs=rate(r.runs, runs))
        for r in rows
    ]
    return sorted(result, key=lambda x: (-x.runs, -x.findings, x.category))
