"""The coordinator on the fake executor and the in-memory store, in simulated time:
budgets never exceeded, every run ends exactly once, largest first, boot caps, retries and
their limit, the watchdog, cancellation (graceful and at once), recovery of dead owners."""

from __future__ import annotations

import asyncio
import itertools
import random
import socket
from collections.abc import Callable

import pytest

from testbed.model.job import RetryPolicy
from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.coordinator import Coordinator, CoordinatorConfig, JobSummary
from testbed.scheduler.executor import ClaimedRun
from testbed.scheduler.jobrows import NewRun
from testbed.scheduler.resources import Budget, Demand, HostSlot, place
from testbed.testing.clock import VirtualClockLoop, run_simulated
from testbed.testing.memstore import MemoryRunStore
from testbed.testing.scheduler import FakeCatalog, FakeExecutor, FakeRun, make_hosts

DEAD_OWNER = f"{socket.gethostname()}:4194000:12345:dead0000"


def _setup(
    loop: VirtualClockLoop,
    tasks: list[str],
    behaviour: Callable[[ClaimedRun], FakeRun],
    *,
    retry: RetryPolicy | None = None,
    hosts: list[HostSlot] | None = None,
    demands: dict[str, Demand] | None = None,
    timeouts: dict[str, float] | None = None,
    owner: str = "coord-a",
) -> tuple[MemoryRunStore, str, FakeExecutor, Coordinator]:
    store = MemoryRunStore(retry or RetryPolicy(limit=2, backoff_s=10), clock=loop.wall_clock)
    job_id, _ = store.create_job("t", "fake", [NewRun(t, "debian-12", 1) for t in tasks])
    executor = FakeExecutor(behaviour, on_start=store.mark_started)
    coordinator = Coordinator(
        job_id, store, executor, hosts or make_hosts(2, 6), FakeCatalog(demands or {}, timeouts or {}),
        owner=owner, config=CoordinatorConfig(poll_s=30, heartbeat_s=10, lease_ttl_s=60),
    )
    return store, job_id, executor, coordinator


def _assert_each_settled_once(store: MemoryRunStore, job_id: str) -> None:
    runs = store.jobs[job_id].runs.values()
    assert all(r.state == "finished" and r.settles == 1 for r in runs), [
        (r.id[:6], r.state, r.settles) for r in runs if r.settles != 1
    ]


def test_random_workload_respects_every_budget_and_ends_each_run_once() -> None:
    rng = random.Random(7)
    demands = {f"t{i}": Demand(n, n * rng.randint(1, 2), 512 * n) for i, n in enumerate([1, 2, 3, 4, 1, 2, 1])}
    tasks = [f"t{rng.randrange(7)}" for _ in range(120)]
    hosts = [
        HostSlot("a", "test:///a", Budget(8, vcpus=10, memory_mb=4096), BootGate(3, 2.0)),
        HostSlot("b", "test:///b", Budget(5, vcpus=None, memory_mb=2048), BootGate(2)),
        HostSlot("c", "test:///c", Budget(4, vcpus=4, memory_mb=None), BootGate(1)),
    ]

    def behaviour(run: ClaimedRun) -> FakeRun:
        r = random.Random(run.run_id)
        outcome = r.choice(["passed", "passed", "failed", "error"])
        return FakeRun(r.uniform(20, 60), r.uniform(10, 400), r.uniform(1, 30), outcome)

    async def main(loop: VirtualClockLoop) -> tuple[JobSummary, MemoryRunStore, str, FakeExecutor]:
        store, job_id, ex, coord = _setup(loop, tasks, behaviour, hosts=hosts, demands=demands,
                                          retry=RetryPolicy(limit=1, backoff_s=5))
        return await coord.run(), store, job_id, ex

    summary, store, job_id, ex = run_simulated(main)
    assert summary.complete and not summary.interrupted
    assert ex.stats.violations == []
    assert set(ex.stats.executions.values()) == {1}  # no run executed twice
    _assert_each_settled_once(store, job_id)
    assert sum(summary.outcomes.values()) == len(store.jobs[job_id].runs) == 120 + summary.retries
    assert summary.harness_errors == summary.outcomes.get("error", 0)
    assert ex.stats.peak_slots["a"] <= 8 and ex.stats.peak_booting["c"] <= 1 and ex.stats.peak_booting["a"] <= 3
    for host in hosts:  # everything given back
        assert host.used_slots == host.used_vcpus == host.used_memory_mb == 0
        assert host.boot_gate.free == host.boot_gate.capacity


def test_largest_runs_start_first_and_small_ones_fill_the_gaps() -> None:
    demands = {"big": Demand(4, 4, 2048), "small": Demand(1, 1, 512)}
    tasks = ["small"] * 6 + ["big"] * 3

    async def main(loop: VirtualClockLoop) -> tuple[FakeExecutor, MemoryRunStore, str]:
        store, job_id, ex, coord = _setup(loop, tasks, lambda r: FakeRun(10, 100, 0), demands=demands,
                                          hosts=make_hosts(1, 6))
        await coord.run()
        return ex, store, job_id

    ex, store, job_id = run_simulated(main)
    runs = store.jobs[job_id].runs
    first_wave = sorted(ex.stats.started_at, key=lambda rid: ex.stats.started_at[rid])
    at_zero = [runs[r].task_id for r in first_wave if ex.stats.started_at[r] == 0.0]
    assert sorted(at_zero) == ["big", "small", "small"]  # one big (4 slots) + 2 small fill the 6
    assert ex.stats.peak_slots["sim0"] == 6


def test_placement_spreads_over_hosts_and_respects_memory() -> None:
    hosts = [HostSlot("a", "u", Budget(4, memory_mb=1000), BootGate(1)),
             HostSlot("b", "u", Budget(4, memory_mb=4000), BootGate(1))]
    assert place(Demand(1, 1, 600), hosts) is hosts[0]
    hosts[0].take("r1", Demand(1, 1, 600))
    assert place(Demand(1, 1, 600), hosts) is hosts[1]
    assert place(Demand(2, 2, 5000), hosts) is None
    with pytest.raises(AssertionError):
        hosts[0].take("r2", Demand(1, 1, 600))  # 1200 MiB > 1000


def test_boot_gate_caps_boots_and_staggers_starts() -> None:
    async def main(loop: VirtualClockLoop) -> tuple[list[float], int]:
        gate = BootGate(2, interval_s=5.0)
        starts: list[float] = []

        async def lab(nodes: int) -> None:
            view = gate.for_run(nodes)

            async def node() -> None:
                async with view:
                    starts.append(loop.time())
                await asyncio.sleep(30)

            await asyncio.gather(*(node() for _ in range(nodes)))
            view.finish()

        await asyncio.gather(lab(3), lab(2), lab(1))
        return starts, gate.peak

    starts, peak = run_simulated(main)
    assert peak == 2
    assert all(b - a >= 5.0 - 1e-9 for a, b in itertools.pairwise(starts))
    assert len(starts) == 6


def test_harness_errors_are_retried_with_backoff_up_to_the_limit() -> None:
    def behaviour(run: ClaimedRun) -> FakeRun:
        if run.task_id == "flaky":
            return FakeRun(5, 5, 0, "error" if run.retry < 2 else "passed", "boom")
        if run.task_id == "broken":
            return FakeRun(5, 5, 0, "error", "always")
        return FakeRun(5, 5, 0, "failed")

    async def main(loop: VirtualClockLoop) -> tuple[JobSummary, MemoryRunStore, str, FakeExecutor]:
        store, job_id, ex, coord = _setup(loop, ["flaky", "broken", "agentfail"], behaviour,
                                          retry=RetryPolicy(limit=2, backoff_s=100, factor=3))
        return await coord.run(), store, job_id, ex

    summary, store, job_id, ex = run_simulated(main)
    runs = list(store.jobs[job_id].runs.values())
    by_task = {t: sorted((r for r in runs if r.task_id == t), key=lambda r: r.retry) for t in ("flaky", "broken")}
    assert [r.outcome for r in by_task["flaky"]] == ["error", "error", "passed"]
    assert [r.outcome for r in by_task["broken"]] == ["error", "error", "error"]  # 1 try + limit 2
    assert [r.retry for r in by_task["broken"]] == [0, 1, 2]
    assert by_task["broken"][1].retry_of == by_task["broken"][0].id  # the failed attempt's record is kept
    assert len([r for r in runs if r.task_id == "agentfail"]) == 1  # agent failures are never retried
    assert summary.retries == 4 and summary.harness_errors == 5 and summary.agent_failures == 1
    # backoff: retry 1 waits >= 100 s after the failure, retry 2 >= 300 s
    for rows in by_task.values():
        gap1 = ex.stats.started_at[rows[1].id] - ex.stats.ended_at[rows[0].id]
        gap2 = ex.stats.started_at[rows[2].id] - ex.stats.ended_at[rows[1].id]
        assert gap1 >= 100 - 1e-6 and gap2 >= 300 - 1e-6
    _assert_each_settled_once(store, job_id)


def test_watchdog_and_executor_faults_are_harness_errors() -> None:
    def behaviour(run: ClaimedRun) -> FakeRun:
        if run.task_id == "hang" and run.retry == 0:
            return FakeRun(5, 10_000, 0, "passed")
        if run.task_id == "crash" and run.retry == 0:
            return FakeRun(5, 5, 0, "raise", "executor bug")
        return FakeRun(5, 5, 0, "passed")

    async def main(loop: VirtualClockLoop) -> tuple[JobSummary, MemoryRunStore, str]:
        store, job_id, _ex, coord = _setup(loop, ["hang", "crash"], behaviour, timeouts={"hang": 600},
                                           retry=RetryPolicy(limit=1, backoff_s=1))
        return await coord.run(), store, job_id

    summary, store, job_id = run_simulated(main)
    runs = {(r.task_id, r.retry): r for r in store.jobs[job_id].runs.values()}
    assert runs[("hang", 0)].outcome == "error" and "watchdog" in (runs[("hang", 0)].error or "")
    assert runs[("crash", 0)].outcome == "error" and "executor bug" in (runs[("crash", 0)].error or "")
    assert runs[("hang", 1)].outcome == runs[("crash", 1)].outcome == "passed"
    assert summary.complete
    _assert_each_settled_once(store, job_id)


def test_stop_tears_down_running_runs_and_leaves_the_rest_for_resume() -> None:
    async def main(loop: VirtualClockLoop) -> None:
        store, job_id, ex, coord = _setup(loop, [f"t{i}" for i in range(10)], lambda r: FakeRun(10, 500, 5),
                                          hosts=make_hosts(1, 4))
        task = asyncio.create_task(coord.run())
        await asyncio.sleep(100)
        coord.stop()
        summary = await task
        assert summary.interrupted and not summary.complete
        assert len(ex.stats.cancelled) == 4  # the four running runs
        runs = store.jobs[job_id].runs.values()
        cancelled = [r for r in runs if r.outcome == "cancelled"]
        assert len(cancelled) == 4 and all(r.settles == 1 for r in cancelled)
        pending = [r for r in runs if r.state == "pending"]
        assert len(pending) == 10  # 6 never started + 4 replacements of the cancelled
        assert {r.retry_of for r in pending if r.retry_of} == {r.id for r in cancelled}
        assert all(r.lease_owner is None for r in pending)
        # resume with a new coordinator: the job completes, nothing runs twice
        ex2 = FakeExecutor(lambda r: FakeRun(10, 50, 5), on_start=store.mark_started)
        coord2 = Coordinator(job_id, store, ex2, make_hosts(1, 4), FakeCatalog(), owner="coord-b")
        summary2 = await coord2.run()
        assert summary2.complete and summary2.started == 10
        assert not set(ex.stats.executions) & set(ex2.stats.executions)
        assert sorted(r.outcome or "" for r in runs).count("passed") == 10

    run_simulated(main)


def test_second_stop_aborts_at_once() -> None:
    async def main(loop: VirtualClockLoop) -> None:
        class SlowTeardown(FakeExecutor):
            async def execute(self, run, host, boot_gate, progress):  # type: ignore[no-untyped-def]
                try:
                    return await super().execute(run, host, boot_gate, progress)
                except asyncio.CancelledError:
                    await self._pause(10_000)  # a teardown that would take ages
                    raise

        store = MemoryRunStore(RetryPolicy(), clock=loop.wall_clock)
        job_id, _ = store.create_job("t", "fake", [NewRun(f"t{i}", "d", 1) for i in range(3)])
        ex = SlowTeardown(lambda r: FakeRun(10, 500, 5), on_start=store.mark_started)
        coord = Coordinator(job_id, store, ex, make_hosts(1, 4), FakeCatalog(), owner="c")
        task = asyncio.create_task(coord.run())
        await asyncio.sleep(50)
        coord.stop()
        await asyncio.sleep(5)
        assert not task.done()
        t0 = loop.time()
        coord.stop()
        summary = await task
        assert ex.aborted and summary.interrupted and loop.time() - t0 < 1

    run_simulated(main)


def test_cancelled_job_stops_running_runs_at_heartbeat_and_replaces_nothing() -> None:
    async def main(loop: VirtualClockLoop) -> None:
        store, job_id, ex, coord = _setup(loop, [f"t{i}" for i in range(6)], lambda r: FakeRun(10, 500, 5),
                                          hosts=make_hosts(1, 2))
        task = asyncio.create_task(coord.run())
        await asyncio.sleep(60)
        assert store.cancel_job(job_id) == 4  # the pending ones
        summary = await task
        runs = store.jobs[job_id].runs.values()
        assert all(r.outcome == "cancelled" for r in runs) and len(runs) == 6
        assert len(ex.stats.cancelled) == 2 and not summary.interrupted
        _assert_each_settled_once(store, job_id)

    run_simulated(main)


def test_runs_of_a_dead_coordinator_are_recovered_without_running_twice() -> None:
    async def main(loop: VirtualClockLoop) -> None:
        store = MemoryRunStore(RetryPolicy(limit=1, backoff_s=0), clock=loop.wall_clock)
        job_id, ids = store.create_job("t", "fake", [NewRun(f"t{i}", "d", 1) for i in range(5)])
        # a coordinator that died: claimed three runs, started two of them
        assert store.claim(job_id, ids[:3], DEAD_OWNER, ttl_s=3600) == set(ids[:3])
        store.mark_started(ids[0])
        store.mark_started(ids[1])
        # a live peer holds the fourth (its lease is valid; its process is not on this host)
        assert store.claim(job_id, [ids[3]], "elsewhere:1:1:live", ttl_s=100) == {ids[3]}
        ex = FakeExecutor(lambda r: FakeRun(5, 20, 5), on_start=store.mark_started)
        coord = Coordinator(job_id, store, ex, make_hosts(1, 4), FakeCatalog(), owner="c",
                            config=CoordinatorConfig(poll_s=30, heartbeat_s=10))
        summary = await coord.run()
        runs = store.jobs[job_id].runs
        assert runs[ids[0]].outcome == runs[ids[1]].outcome == "error"  # lost: finished, never re-run
        assert "coordinator lost" in (runs[ids[0]].error or "")
        assert ids[0] not in ex.stats.executions and ids[1] not in ex.stats.executions
        assert ex.stats.executions[ids[2]] == 1  # returned to pending, then run once
        # the peer's run was left alone until its lease expired (100 s), then recovered
        assert ex.stats.executions[ids[3]] == 1 and ex.stats.started_at[ids[3]] >= 100
        replacements = [r for r in runs.values() if r.retry_of in (ids[0], ids[1])]
        assert len(replacements) == 2 and all(r.outcome == "passed" for r in replacements)
        assert summary.complete and summary.lost == 2
        assert set(ex.stats.executions.values()) == {1}

    run_simulated(main)


def test_two_coordinators_in_one_loop_share_a_job() -> None:
    async def main(loop: VirtualClockLoop) -> None:
        store = MemoryRunStore(RetryPolicy(limit=1, backoff_s=3), clock=loop.wall_clock)
        job_id, _ = store.create_job("t", "fake", [NewRun(f"t{i}", "d", 1) for i in range(40)])

        def behaviour(run: ClaimedRun) -> FakeRun:
            r = random.Random(run.run_id)
            return FakeRun(r.uniform(1, 10), r.uniform(10, 100), 1, "error" if r.random() < 0.2 else "passed")

        exs = [FakeExecutor(behaviour, on_start=store.mark_started) for _ in range(2)]
        coords = [Coordinator(job_id, store, ex, make_hosts(1, 3), FakeCatalog(), owner=f"c{i}",
                              config=CoordinatorConfig(poll_s=5, heartbeat_s=5))
                  for i, ex in enumerate(exs)]
        a, b = await asyncio.gather(*(c.run() for c in coords))
        assert a.complete and b.complete and a.started and b.started
        assert not set(exs[0].stats.executions) & set(exs[1].stats.executions)
        assert all(v == 1 for ex in exs for v in ex.stats.executions.values())
        _assert_each_settled_once(store, job_id)

    run_simulated(main)
