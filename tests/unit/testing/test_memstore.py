"""`MemoryRunStore` keeps the contract of `SqlRunStore`: the same script of claims, leases,
settlements, recovery and cancellation gives the same answers on both (run ids mapped to
labels in order of appearance; times relative to the script's clock)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from testbed.db.engine import open_database
from testbed.db.types import utcnow
from testbed.model.job import RetryPolicy
from testbed.scheduler.jobrows import NewRun, create_job_with_runs
from testbed.scheduler.store import PendingRun, RunStore, SqlRunStore, cancel_job
from testbed.testing.memstore import MemoryRunStore

DEAD = f"{socket.gethostname()}:4194000:12345:dead0000"
A, B = "a:1:1:x", "b:1:1:x"


@dataclass
class Harness:
    """One store plus what the script needs beside the `RunStore` protocol."""

    store: RunStore
    job_id: str
    ids: list[str]
    mark_started: Callable[[str], None]
    cancel: Callable[[], int]
    clock: list[datetime]
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, run_id: str) -> str:
        return self.labels.setdefault(run_id, f"r{len(self.labels)}")

    def pending(self, p: PendingRun) -> tuple[Any, ...]:
        delay = None if p.not_before is None else round((p.not_before - self.clock[0]).total_seconds())
        return (self.label(p.run_id), p.task_id, p.attempt, p.retry, delay)


RUNS = [NewRun(f"t{i}", "debian-12", 1) for i in range(4)]
POLICY = RetryPolicy(limit=1, backoff_s=30)


def _memory(tmp_path: Path) -> Harness:
    clock = [utcnow()]
    store = MemoryRunStore(POLICY, clock=lambda: clock[0])
    job_id, ids = store.create_job("j", "fake", RUNS)
    return Harness(store, job_id, ids, store.mark_started, lambda: store.cancel_job(job_id), clock)


def _sql(tmp_path: Path) -> Harness:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    clock = [utcnow()]
    store = SqlRunStore(db, POLICY, clock=lambda: clock[0])
    job_id, ids = create_job_with_runs(db, "j", {}, "fake", RUNS)
    return Harness(store, job_id, ids, store.mark_started, lambda: cancel_job(db, job_id), clock)


def _script(h: Harness) -> list[Any]:
    """Drive the store through the contract and record every answer."""
    s, job, ids = h.store, h.job_id, h.ids
    for run_id in ids:
        h.label(run_id)
    out: list[Any] = [[h.pending(p) for p in s.pending(job)]]
    out.append(sorted(map(h.label, s.claim(job, ids[:2], A, 60))))
    out.append(sorted(map(h.label, s.claim(job, ids, B, 60))))  # only the unleased two
    s.release([ids[3]], B)
    out.append([h.pending(p) for p in s.pending(job)])
    out.append(sorted(map(h.label, s.renew(job, A, ids, 60).renewed)))
    h.clock[0] += timedelta(seconds=61)  # A's leases lapse; B's renewed ones too
    out.append(sorted(map(h.label, s.claim(job, [ids[0]], B, 60))))
    out.append(sorted(map(h.label, s.renew(job, A, ids[:2], 60).renewed)))  # A lost ids[0]
    h.mark_started(ids[0])
    settled = s.settle(job, ids[0], B, "error", "libvirt fell over")
    follow = settled.follow_up
    out.append((settled.outcome, settled.lost, follow and h.pending(follow)))
    assert follow is not None
    out.append(sorted(map(h.label, s.claim(job, [follow.run_id], B, 60))))  # backoff not over
    out.append(s.settle(job, ids[1], B, "passed", None).lost)  # not B's: A's lease
    h.clock[0] += timedelta(seconds=61)
    out.append(sorted(map(h.label, s.claim(job, [ids[1]], DEAD, 3600))))
    h.mark_started(ids[1])
    report = s.recover(job, B)
    out.append(
        (
            sorted(map(h.label, report.lost)),
            sorted(map(h.label, report.returned)),
            len(report.created),
            report.cancelled,
        )
    )
    out.append(s.recover(job, B).created)  # idempotent
    out.append(s.unfinished(job))
    s.release([ids[2]], B)  # `cancel_job` on SQL reads the wall clock, not the store's
    out.append(h.cancel())
    out.append(([h.pending(p) for p in s.pending(job)], s.renew(job, B, [ids[0]], 60).job_cancelled))
    out.append(s.unfinished(job))
    return out


def test_memory_store_answers_like_the_sql_store(tmp_path: Path) -> None:
    (tmp_path / "sql").mkdir()
    memory, sql = _script(_memory(tmp_path)), _script(_sql(tmp_path / "sql"))
    assert memory == sql
    # and the answers are the contract's, not merely equal
    assert memory[1] == ["r0", "r1"] and memory[2] == ["r2", "r3"]
    assert memory[3] == [("r3", "t3", 1, 0, None)]
    assert memory[7] == ("error", False, ("r4", "t0", 1, 1, 30))
    assert memory[8] == [] and memory[9] is True
    assert memory[11] == (["r1"], [], 1, [])  # started under a dead owner: lost, retried
    assert memory[14] == 4 and memory[15] == ([], True) and memory[16] == 0


@pytest.mark.parametrize("make", [_memory, _sql], ids=["memory", "sql"])
def test_cancelled_job_offers_nothing(make: Callable[[Path], Harness], tmp_path: Path) -> None:
    h = make(tmp_path)
    assert h.cancel() == 4
    assert h.store.pending(h.job_id) == []
    assert h.store.claim(h.job_id, h.ids, A, 60) == set()
    assert h.store.unfinished(h.job_id) == 0
