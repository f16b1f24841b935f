"""RunQueue: demand classes largest first, FIFO within a class, delayed runs, no duplicates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from testbed.errors import InputError
from testbed.scheduler.resources import Demand
from testbed.scheduler.runqueue import UNPLACEABLE, RunQueue
from testbed.scheduler.store import PendingRun

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BIG, SMALL = Demand(3, 3, 3072), Demand(1, 1, 1024)


def _run(run_id: str, *, not_before: datetime | None = None, seq: int = 0) -> PendingRun:
    return PendingRun(run_id, run_id.rstrip("0123456789"), "debian-12", "a", 1, not_before=not_before, seq=seq)


def _demand(run: PendingRun) -> Demand:
    if run.task_id == "gone":
        raise InputError(None, "task", "no such task")
    return BIG if run.task_id == "big" else SMALL


def test_largest_class_first_fifo_within_and_no_duplicates() -> None:
    queue = RunQueue(_demand)
    for run_id in ("small1", "big1", "small2", "big2", "small1"):
        queue.add(_run(run_id), T0)
    assert len(queue) == 4
    assert [(d, [r.run_id for r in q]) for d, q in queue.classes()] == [
        (BIG, ["big1", "big2"]),
        (SMALL, ["small1", "small2"]),
    ]
    taken = next(queue.classes())[1].popleft()
    queue.add(taken, T0)
    assert len(queue) == 3, "a taken run stays held until forgotten"
    queue.forget(taken.run_id)
    queue.add(taken, T0)
    assert len(queue) == 4


def test_delayed_runs_wait_for_their_time() -> None:
    queue = RunQueue(_demand)
    later = T0 + timedelta(seconds=30)
    queue.add(_run("small1", not_before=later), T0)
    assert len(queue) == 1 and queue.next_due() == later and list(queue.classes()) == []
    queue.promote(T0 + timedelta(seconds=29))
    assert list(queue.classes()) == []
    queue.promote(later)
    assert queue.next_due() is None
    [(demand, runs)] = list(queue.classes())
    assert demand == SMALL and runs[0].run_id == "small1" and runs[0].not_before is None


def test_a_run_that_cannot_be_described_is_queued_unplaceable() -> None:
    queue = RunQueue(_demand)
    queue.add(_run("gone1"), T0)
    assert [d for d, _ in queue.classes()] == [UNPLACEABLE]
