"""The leaderboard: agents compared over the same selection of runs, overall, per task
category and per release (image variant).

Contracts (every rate is a fraction in [0, 1], None when its denominator is 0):

- Only finished runs count; `cancelled` runs are counted (`cancelled`) but enter no rate.
  Scored runs = passed + failed + error.
- `pass_rate` = passed / (passed + failed) (`testbed.db.read.rates`: a harness error is
  never the agent's failure), with its Wilson 95 % interval (`ci_low`, `ci_high`).
- `pass_at[k]`: the unbiased pass@k estimator per matrix cell (task x release) averaged
  over the agent's cells with at least k decided attempts, for k = 1 … the largest number
  of decided attempts of any of its cells (at most `MAX_K`).
- `error_rate` = error / scored. `residue_rate` = runs with residue `yes` / runs whose
  residue is decided (`yes` or `no`). `high_impact_rate` = scored runs with at least one
  agent command of non-empty `impact` / scored runs.
- `median_agent_s`: the median over scored runs of the agent phase's duration (the sum of
  the run's `agent` rows in `phases`; boot, setup, snapshots, verification and teardown
  are not agent time); None without such rows.
- `tokens` / `cost_usd`: sums over the agent's scored runs' model turns (cost None when no
  turn is priced); `tokens_per_solved` / `cost_per_solved` divide them by `passed` (None
  when nothing passed, or when the agent made no model call / has no price).
- `common_k(scores)`: the largest k every score with a pass@k has (0 when none has): the
  pass@k column a table of several agents shows.
- `leaderboard(session, selection)` gives `agents` (one row per agent, group `all`),
  `by_category` and `by_release` (one row per agent and group); rows sorted by group, then
  pass rate (best first, None last), then agent.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from testbed.db.models import Command, Phase, Run
from testbed.db.read.commands import impactful_clause
from testbed.db.read.filters import RunFilter
from testbed.db.read.jsonable import JsonRecord, seconds_between
from testbed.db.read.rates import UNKNOWN, mean_pass_at_k, pass_rate, rate, wilson_interval
from testbed.db.read.turns import TurnTotals, turn_totals
from testbed.model.vocab import Outcome, Residue, Source
from testbed.model.vocab import Phase as PhaseName

MAX_K = 10
"""Largest k reported for pass@k."""

ALL = "all"
"""Group of the overall rows."""


@dataclass(frozen=True)
class AgentScore(JsonRecord):
    """One agent over one group of runs (see the module contract)."""

    agent: str
    group: str
    runs: int
    passed: int
    failed: int
    error: int
    cancelled: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    pass_at: dict[int, float | None]
    error_rate: float | None
    residue_rate: float | None
    high_impact_rate: float | None
    median_agent_s: float | None
    tokens: int
    tokens_per_solved: float | None
    cost_usd: float | None
    cost_per_solved: float | None

    @property
    def k(self) -> int:
        """The largest k with a pass@k value (0 when none)."""
        return max((k for k, v in self.pass_at.items() if v is not None), default=0)


@dataclass
class _RunFacts:
    agent: str
    task: str
    category: str
    release: str
    outcome: str
    residue: str | None
    impactful: bool
    agent_s: float | None
    turns: TurnTotals | None


@dataclass(frozen=True)
class Leaderboard(JsonRecord):
    """Agents overall, per task category and per release."""

    selection: str
    agents: list[AgentScore]
    by_category: list[AgentScore]
    by_release: list[AgentScore]


def _agent_seconds(session: Session, selection: RunFilter) -> dict[str, float]:
    stmt = select(Phase.run_id, Phase.started_at, Phase.finished_at).where(
        *selection.in_selection(Phase.run_id), Phase.name == PhaseName.AGENT
    )
    out: dict[str, float] = defaultdict(float)
    for run_id, started, finished in session.execute(stmt):
        seconds = seconds_between(started, finished)
        if seconds is not None:
            out[run_id] += seconds
    return out


def _impactful_runs(session: Session, selection: RunFilter) -> set[str]:
    stmt = select(Command.run_id).where(
        *selection.in_selection(Command.run_id), impactful_clause(session), Command.source == Source.AGENT
    )
    return set(session.scalars(stmt.distinct()))


def _facts(session: Session, selection: RunFilter) -> list[_RunFacts]:
    agent_s = _agent_seconds(session, selection)
    impactful = _impactful_runs(session, selection)
    turns = turn_totals(session, selection)
    stmt = select(Run.id, Run.agent, Run.task_id, Run.task_category, Run.image, Run.outcome, Run.residue).where(
        *selection.where(), Run.outcome.is_not(None)
    )
    return [
        _RunFacts(agent, task, category or UNKNOWN, image or UNKNOWN, outcome or "", residue, run_id in impactful,
                  agent_s.get(run_id), turns.get(run_id))
        for run_id, agent, task, category, image, outcome, residue in session.execute(stmt)
    ]  # fmt: skip


def _pass_at(runs: list[_RunFacts]) -> dict[int, float | None]:
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in runs:
        if r.outcome in (Outcome.PASSED, Outcome.FAILED):
            cell = cells[(r.task, r.release)]
            cell[0] += 1
            cell[1] += r.outcome == Outcome.PASSED
    largest = min(MAX_K, max((n for n, _ in cells.values()), default=0))
    pairs = [(n, c) for n, c in cells.values()]
    return {k: mean_pass_at_k(pairs, k) for k in range(1, largest + 1)}


def _per_solved(total: float | None, passed: int) -> float | None:
    return None if total is None or not passed else total / passed


def score(agent: str, group: str, runs: list[_RunFacts]) -> AgentScore:
    """The `AgentScore` of `agent` over `runs` (all of them the agent's)."""
    by: dict[str, int] = defaultdict(int)
    for r in runs:
        by[r.outcome] += 1
    passed, failed, error = by[Outcome.PASSED], by[Outcome.FAILED], by[Outcome.ERROR]
    scored = [r for r in runs if r.outcome != Outcome.CANCELLED]
    interval = wilson_interval(passed, passed + failed)
    residue_decided = [r for r in scored if r.residue in (Residue.YES, Residue.NO)]
    times = [r.agent_s for r in scored if r.agent_s is not None]
    priced = [r.turns.cost_usd for r in scored if r.turns is not None and r.turns.cost_usd is not None]
    called = [r.turns for r in scored if r.turns is not None]
    tokens = sum(t.total_tokens for t in called)
    return AgentScore(
        agent=agent, group=group, runs=len(runs), passed=passed, failed=failed, error=error,
        cancelled=by[Outcome.CANCELLED], pass_rate=pass_rate(passed, failed),
        ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
        pass_at=_pass_at(scored), error_rate=rate(error, len(scored)),
        residue_rate=rate(sum(r.residue == Residue.YES for r in residue_decided), len(residue_decided)),
        high_impact_rate=rate(sum(r.impactful for r in scored), len(scored)),
        median_agent_s=float(statistics.median(times)) if times else None, tokens=tokens,
        tokens_per_solved=_per_solved(float(tokens), passed) if called else None,
        cost_usd=sum(priced) if priced else None, cost_per_solved=_per_solved(sum(priced) if priced else None, passed),
    )  # fmt: skip


def common_k(scores: list[AgentScore]) -> int:
    """The largest k every score that has one has a pass@k for (see the module contract)."""
    return min((s.k for s in scores if s.k), default=0)


def _sort_key(s: AgentScore) -> tuple[Any, ...]:
    return (s.group, s.pass_rate is None, -(s.pass_rate or 0.0), s.agent)


def _scores(facts: list[_RunFacts], group_of: Any) -> list[AgentScore]:
    groups: dict[tuple[str, str], list[_RunFacts]] = defaultdict(list)
    for f in facts:
        groups[(f.agent, group_of(f))].append(f)
    return sorted((score(agent, group, runs) for (agent, group), runs in groups.items()), key=_sort_key)


def leaderboard(session: Session, selection: RunFilter | None = None) -> Leaderboard:
    """Agents compared over `selection` (default: every run; see the module contract)."""
    selection = selection or RunFilter()
    facts = _facts(session, selection)
    return Leaderboard(
        selection=selection.describe(),
        agents=_scores(facts, lambda f: ALL),
        by_category=_scores(facts, lambda f: f.category),
        by_release=_scores(facts, lambda f: f.release),
    )
