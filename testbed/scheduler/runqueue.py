"""The pending runs a coordinator holds: one FIFO per demand class, largest class first, and
a heap of delayed runs (retries waiting for their backoff).

Owned by the coordinator's loop alone (`testbed.scheduler.coordinator`), so it has no locks.
A run is held at most once: `add` ignores a run id it already holds (a follow-up can arrive
both with its settled run's report and through a refresh of the pending rows) until the
coordinator `forget`s it.
"""

from __future__ import annotations

import collections
import heapq
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime

from testbed.errors import TestbedError
from testbed.scheduler.resources import Demand
from testbed.scheduler.store import PendingRun

log = logging.getLogger(__name__)

UNPLACEABLE = Demand(0, 0, 0)
"""The demand of a run whose task or image cannot be loaded: it is claimed and failed at once."""


class RunQueue:
    """Pending runs by demand class, plus delayed runs until their `not_before`."""

    def __init__(self, demand_of: Callable[[PendingRun], Demand]) -> None:
        self._demand_of = demand_of
        self._buckets: dict[Demand, collections.deque[PendingRun]] = {}
        self._order: list[Demand] = []
        self._delayed: list[tuple[datetime, int, PendingRun]] = []
        self._held: set[str] = set()

    def __len__(self) -> int:
        """Runs waiting, delayed ones included."""
        return sum(len(q) for q in self._buckets.values()) + len(self._delayed)

    def add(self, run: PendingRun, now: datetime) -> None:
        """Hold `run` (delayed while `not_before` is in the future) unless already held."""
        if run.run_id in self._held:
            return
        self._held.add(run.run_id)
        if run.not_before is not None and run.not_before > now:
            heapq.heappush(self._delayed, (run.not_before, run.seq, run))
            return
        try:
            demand = self._demand_of(run)
        except TestbedError as exc:  # e.g. the task directory is gone: claim and fail it
            log.error("run %s cannot be placed: %s", run.run_id, exc)
            demand = UNPLACEABLE
        bucket = self._buckets.get(demand)
        if bucket is None:
            bucket = self._buckets[demand] = collections.deque()
            self._order.append(demand)
            self._order.sort(key=lambda d: d.order_key)
        bucket.append(run)

    def promote(self, now: datetime) -> None:
        """Move every delayed run whose time has come to its demand class."""
        while self._delayed and self._delayed[0][0] <= now:
            _, _, run = heapq.heappop(self._delayed)
            self._held.discard(run.run_id)
            self.add(replace(run, not_before=None), now)

    def next_due(self) -> datetime | None:
        """When the earliest delayed run becomes due (None: nothing is delayed)."""
        return self._delayed[0][0] if self._delayed else None

    def classes(self) -> Iterator[tuple[Demand, collections.deque[PendingRun]]]:
        """The demand classes, largest first, with their runs in FIFO order (pop to take one)."""
        for demand in self._order:
            yield demand, self._buckets[demand]

    def forget(self, run_id: str) -> None:
        """Stop holding `run_id` (it ended, or was taken back): a later `add` queues it again."""
        self._held.discard(run_id)
