"""The dashboard's summaries: the overview (totals, pass rates by group, residue and
high-impact shares, recent jobs) and every task with its variants.

Contracts:

- Pass rates and shares as in `testbed.db.read.rates` (harness errors never count as agent
  failures). Residue share = runs with `residue = 'yes'` / runs whose residue is decided
  (`yes` or `no`). High-impact share = runs with at least one command whose `impact` list
  is non-empty / all runs (read through the partial index, see `commands.impactful_clause`).
- By OS, a run counts once under each distinct `nodes.os_release` of its nodes (NULLs
  ignored); runs with no known release count under `(unknown)`. Groups are sorted by size,
  then name; a missing category or image is `(none)`.
- `tasks`: every task seen in `runs`, sorted by id, with one `OutcomeCounts` per (variant,
  image) (key `variant · image`) and the agents that ran it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from testbed.db.models import Command, Node, Run
from testbed.db.read.commands import impactful_clause
from testbed.db.read.jobs import JobProgress, recent_jobs
from testbed.db.read.rates import UNKNOWN, OutcomeCounts, Share, count_outcomes
from testbed.model.vocab import Residue

NONE = "(none)"
"""Label of a missing category or image."""


@dataclass
class Overview:
    """Everything on the overview page (`/`, `/api/overview`)."""

    totals: OutcomeCounts
    by_category: list[OutcomeCounts]
    by_os: list[OutcomeCounts]
    by_agent: list[OutcomeCounts]
    by_image: list[OutcomeCounts]
    residue: Share
    residue_undetermined: int
    high_impact: Share
    jobs: list[JobProgress]
    unfinished: int
    generated_at: datetime


def _ordered(groups: dict[str, OutcomeCounts]) -> list[OutcomeCounts]:
    return sorted(groups.values(), key=lambda c: (-c.total, c.key))


def _count_into(groups: dict[str, OutcomeCounts], key: str, outcome: str | None, n: int) -> None:
    groups.setdefault(key, OutcomeCounts(key)).add(outcome, n)


def _by_os(session: Session) -> dict[str, OutcomeCounts]:
    groups: dict[str, OutcomeCounts] = {}
    rows = session.execute(
        select(Node.os_release, Run.outcome, func.count(func.distinct(Run.id)))
        .join(Run, Run.id == Node.run_id)
        .where(Node.os_release.is_not(None))
        .group_by(Node.os_release, Run.outcome)
    )
    for os_release, outcome, n in rows:
        _count_into(groups, str(os_release), outcome, n)
    known_os = exists().where(Node.run_id == Run.id, Node.os_release.is_not(None))
    for outcome, n in session.execute(select(Run.outcome, func.count()).where(~known_os).group_by(Run.outcome)):
        _count_into(groups, UNKNOWN, outcome, n)
    return groups


def overview(session: Session, *, max_jobs: int = 20) -> Overview:
    """Totals, pass rates by category / OS / agent / image, residue and high-impact shares, and
    the newest `max_jobs` jobs with their progress."""
    totals = OutcomeCounts("all")
    groups: dict[str, dict[str, OutcomeCounts]] = {"category": {}, "agent": {}, "image": {}}
    residue: dict[str | None, int] = defaultdict(int)
    for category, agent, image, res, outcome, n in count_outcomes(
        session, Run.task_category, Run.agent, Run.image, Run.residue
    ):
        totals.add(outcome, n)
        _count_into(groups["category"], category or NONE, outcome, n)
        _count_into(groups["agent"], agent, outcome, n)
        _count_into(groups["image"], image or NONE, outcome, n)
        residue[res] += n
    impactful = session.scalar(
        select(func.count(func.distinct(Command.run_id))).select_from(Command).where(impactful_clause(session))
    )
    decided = residue[Residue.YES] + residue[Residue.NO]
    return Overview(
        totals=totals,
        by_category=_ordered(groups["category"]),
        by_os=_ordered(_by_os(session)),
        by_agent=_ordered(groups["agent"]),
        by_image=_ordered(groups["image"]),
        residue=Share.of(residue[Residue.YES], decided),
        residue_undetermined=residue[Residue.UNDETERMINED],
        high_impact=Share.of(impactful or 0, totals.total),
        jobs=recent_jobs(session, max_jobs),
        unfinished=totals.unfinished,
        generated_at=datetime.now(UTC),
    )


@dataclass
class TaskRow:
    """A task with its overall counts and one `OutcomeCounts` per variant (key
    `variant · image`)."""

    task_id: str
    category: str | None
    counts: OutcomeCounts
    variants: list[tuple[str | None, str | None, OutcomeCounts]]
    agents: list[str]


def tasks(session: Session) -> list[TaskRow]:
    """Every task seen in `runs`, with its variants (variant, image) and their pass rates."""
    groups: dict[str, dict[tuple[str | None, str | None], OutcomeCounts]] = {}
    categories: dict[str, str | None] = {}
    agents: dict[str, set[str]] = defaultdict(set)
    keys = (Run.task_id, Run.task_category, Run.variant, Run.image, Run.agent)
    for task_id, category, variant, image, agent, outcome, n in count_outcomes(session, *keys):
        per = groups.setdefault(task_id, {})
        per.setdefault((variant, image), OutcomeCounts(f"{variant or '-'} · {image or '-'}")).add(outcome, n)
        categories[task_id] = categories.get(task_id) or category
        agents[task_id].add(agent)
    out: list[TaskRow] = []
    for task_id in sorted(groups):
        total = OutcomeCounts(task_id)
        variants = []
        by_variant = sorted(groups[task_id].items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))
        for (variant, image), counts in by_variant:
            variants.append((variant, image, counts))
            total.merge(counts)
        out.append(TaskRow(task_id, categories[task_id], total, variants, sorted(agents[task_id])))
    return out
