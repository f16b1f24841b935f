"""What the dashboard's run page shows: the read model's view of one run plus its snapshot
differences.

The dashboard reads the database only through `testbed.db.read` (overview, runs list,
tasks, full command); this module adds what the read model leaves out on purpose, the
differences between snapshots, which come from `testbed.probes.diff` (a layer above the
database).

Contracts:

- `run_page` is everything on `/runs/{id}` and `/api/runs/{id}`: the run without its
  commands (`testbed.db.read.runs.run_detail`), one page of its command log with outputs
  cut to `PREVIEW_CHARS` and the findings of each shown command, its snapshot points per
  node, and `snapshot_diffs`.
- `snapshot_diffs` compares, per node, the consecutive pairs of `SNAPSHOT_POINTS` that both
  exist (`diff_snapshots`), leaving out probes without change (counted in `unchanged`).
  Results are cached (LRU, `DIFF_CACHE_SIZE` runs) under the run id and the (id, taken_at)
  of its snapshots, so a replaced or added snapshot misses the cache; a hit costs one
  query that does not load snapshot data.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from testbed.db.models import SNAPSHOT_POINTS
from testbed.db.read.checks import CheckInfo
from testbed.db.read.commands import COMMAND_PAGE_SIZE, PREVIEW_CHARS, CommandPreview, attach_findings, command_page
from testbed.db.read.findings import FindingInfo
from testbed.db.read.jobs import job_names
from testbed.db.read.runs import NodeInfo, PhaseInfo, RunSummary, run_detail
from testbed.db.read.snapshots import snapshot_data, snapshot_stamps
from testbed.probes.diff import ProbeDiff, diff_snapshots

DIFF_PAIRS: tuple[tuple[str, str], ...] = tuple(itertools.pairwise(SNAPSHOT_POINTS))
"""Consecutive snapshot points compared on the run page."""

DIFF_CACHE_SIZE = 64
"""Runs whose snapshot differences are kept in memory (see `snapshot_diffs`)."""


@dataclass
class SnapshotDiff:
    """The differences of one node between two snapshot points, probes with no change left
    out of `probes` (`unchanged` counts them)."""

    node: str
    before: str
    after: str
    probes: dict[str, ProbeDiff]
    unchanged: int

    @property
    def changes(self) -> int:
        """Number of added, removed and changed items over every probe."""
        return sum(len(d.items()) for d in self.probes.values())


@dataclass
class RunPage:
    """Everything on a run's page (`/runs/{id}`, `/api/runs/{id}`)."""

    run: RunSummary
    job_name: str | None
    config: Any
    phases: list[PhaseInfo]
    nodes: list[NodeInfo]
    checks: list[CheckInfo]
    findings: list[FindingInfo]
    snapshots: dict[str, list[str]]
    diffs: list[SnapshotDiff]
    commands: list[CommandPreview]
    command_total: int
    command_page: int
    command_pages: int
    command_page_size: int
    phase_counts: dict[str, int]
    impactful_commands: int


_diff_cache: OrderedDict[tuple[str, tuple[Any, ...]], list[SnapshotDiff]] = OrderedDict()
_diff_lock = threading.Lock()


def _compute_diffs(session: Session, run_id: str) -> list[SnapshotDiff]:
    snaps = snapshot_data(session, run_id)
    out: list[SnapshotDiff] = []
    for node in sorted({n for n, _ in snaps}):
        for before, after in DIFF_PAIRS:
            if (node, before) not in snaps or (node, after) not in snaps:
                continue
            diffs = diff_snapshots(snaps[(node, before)], snaps[(node, after)])
            shown = {name: d for name, d in diffs.items() if not d.empty or d.status != "compared" or d.notes}
            out.append(SnapshotDiff(node, before, after, shown, len(diffs) - len(shown)))
    return out


def snapshot_diffs(session: Session, run_id: str) -> list[SnapshotDiff]:
    """Per node, the differences between consecutive snapshot points (see the contract)."""
    key = (run_id, snapshot_stamps(session, run_id))
    with _diff_lock:
        if key in _diff_cache:
            _diff_cache.move_to_end(key)
            return _diff_cache[key]
    out = _compute_diffs(session, run_id)
    with _diff_lock:
        _diff_cache[key] = out
        while len(_diff_cache) > DIFF_CACHE_SIZE:
            _diff_cache.popitem(last=False)
    return out


def run_page(session: Session, ref: str, *, command_page_no: int = 1, page_size: int = COMMAND_PAGE_SIZE) -> RunPage:
    """Everything about run `ref` (full id or unique prefix; `InputError` subclasses when
    unknown or ambiguous), with page `command_page_no` of its command log."""
    detail = run_detail(session, ref, commands=False)
    run = detail.run
    job_name = job_names(session, {run.job_id}).get(run.job_id) if run.job_id else None
    snapshots: dict[str, list[str]] = {}
    for s in detail.snapshots:
        snapshots.setdefault(s.node, []).append(s.point)
    page = command_page(session, run.id, command_page_no, page_size, PREVIEW_CHARS)
    attach_findings(page.commands, detail.findings)
    return RunPage(
        run=run,
        job_name=job_name,
        config=detail.config,
        phases=detail.phases,
        nodes=detail.nodes,
        checks=detail.checks,
        findings=detail.findings,
        snapshots=snapshots,
        diffs=snapshot_diffs(session, run.id),
        commands=page.commands,
        command_total=page.total,
        command_page=page.page,
        command_pages=page.pages,
        command_page_size=page.page_size,
        phase_counts=page.phase_counts,
        impactful_commands=page.impactful,
    )
