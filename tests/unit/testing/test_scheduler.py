"""The fake executor follows its plan, reports progress like the runner and catches budget
and boot-capacity violations on its own; the catalog and host helpers."""

from __future__ import annotations

import asyncio

import pytest

from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.executor import ClaimedRun, ExecOutcome
from testbed.scheduler.resources import Budget, Demand, HostSlot
from testbed.scheduler.store import PendingRun
from testbed.testing.clock import VirtualClockLoop, run_simulated
from testbed.testing.scheduler import FakeCatalog, FakeExecutor, FakeRun, make_hosts


def _claimed(run_id: str, nodes: int = 1) -> ClaimedRun:
    return ClaimedRun(run_id, "job", "t", "debian-12", "fake", 1, 0, Demand(nodes, nodes, 512 * nodes), 3600)


def test_a_run_boots_works_and_verifies_for_its_planned_times() -> None:
    seen: list[tuple[str, float]] = []
    started: list[str] = []
    ex = FakeExecutor(lambda run: FakeRun(boot_s=20, agent_s=100, verify_s=5), on_start=started.append)
    host = make_hosts(1, 4)[0]

    async def main(loop: VirtualClockLoop) -> ExecOutcome:
        return await ex.execute(_claimed("r1", 2), host, host.boot_gate, lambda p: seen.append((p, loop.time())))

    outcome = run_simulated(main)
    assert outcome == ExecOutcome("passed", None)
    assert seen == [("provisioning", 0.0), ("agent", 20.0), ("verifying", 120.0)]
    assert started == ["r1"]
    assert ex.stats.executions == {"r1": 1}
    assert (ex.stats.started_at["r1"], ex.stats.ended_at["r1"]) == (0.0, 125.0)
    assert ex.stats.peak_slots == {"sim0": 2} and ex.stats.violations == []


def test_planned_faults_and_outcomes() -> None:
    plans = {"a": FakeRun(outcome="failed"), "b": FakeRun(outcome="raise", error="disk gone")}
    ex = FakeExecutor(lambda run: plans[run.run_id])
    host = make_hosts(1, 4)[0]

    async def main(loop: VirtualClockLoop) -> ExecOutcome:
        failed = await ex.execute(_claimed("a"), host, host.boot_gate, lambda p: None)
        with pytest.raises(RuntimeError, match="disk gone"):
            await ex.execute(_claimed("b"), host, host.boot_gate, lambda p: None)
        return failed

    assert run_simulated(main) == ExecOutcome("failed", None)
    assert ex.stats.executions == {"a": 1, "b": 1}
    assert ex.stats.peak_slots == {"sim0": 1}  # the faulted run gave its slot back


def test_overcommitting_a_host_is_recorded_as_a_violation() -> None:
    ex = FakeExecutor(lambda run: FakeRun())
    host = HostSlot("h", "test:///h", Budget(2, vcpus=2, memory_mb=1024), BootGate(1, 0.0))

    async def main(loop: VirtualClockLoop) -> None:
        runs = [_claimed(f"r{i}", 1) for i in range(3)]  # the coordinator would never do this
        await asyncio.gather(*(ex.execute(r, host, host.boot_gate, lambda p: None) for r in runs))

    run_simulated(main)
    assert "h: 3 VMs > 2" in ex.stats.violations
    assert "h: 3 vCPUs > 2" in ex.stats.violations
    assert "h: 1536 MiB > 1024" in ex.stats.violations
    assert ex.stats.peak_booting == {"h": 1}  # the boot gate still let one boot at a time


def test_abort_ends_every_pause_at_once() -> None:
    ex = FakeExecutor(lambda run: FakeRun(boot_s=10, agent_s=10_000, verify_s=10_000))
    host = make_hosts(1, 1)[0]

    async def main(loop: VirtualClockLoop) -> float:
        task = asyncio.create_task(ex.execute(_claimed("r"), host, host.boot_gate, lambda p: None))
        await asyncio.sleep(50)
        await ex.abort()
        await task
        return loop.time()

    assert run_simulated(main) == 50.0
    assert ex.aborted


def test_catalog_and_hosts() -> None:
    big = Demand(3, 6, 4096)
    catalog = FakeCatalog(demands={"big": big}, timeouts={"big": 60.0})
    pending = PendingRun("r", "big", "debian-12", "fake", 1)
    other = PendingRun("s", "small", "debian-12", "fake", 1)
    assert (catalog.demand(pending), catalog.timeout(pending)) == (big, 60.0)
    assert (catalog.demand(other), catalog.timeout(other)) == (Demand(1, 1, 640), 3600.0)
    hosts = make_hosts(3, 5, vcpus=8, memory_mb=8192, boot_concurrency=2)
    assert [(h.name, h.uri) for h in hosts] == [(f"sim{i}", f"test:///sim{i}") for i in range(3)]
    assert all(h.budget == Budget(5, 8, 8192) and h.boot_gate.capacity == 2 for h in hosts)
    assert hosts[0].boot_gate is not hosts[1].boot_gate
