"""An in-process fake hypervisor/executor, a run catalog and simulated hosts.

`FakeExecutor` has the `Executor` interface of the real one: it takes the host's boot gate
the way `Lab` does (one `RunBootGate` per run, entered once per node, finished when
provisioning ends), then sleeps simulated durations for boot, agent and verify phases and
returns the outcome its `behaviour` picks. It checks independently of the coordinator that
no host ever holds more than its budget and that boots never exceed a host's boot capacity,
and counts how often each run was executed.

Run it on a `testbed.testing.clock.VirtualClockLoop` so that simulated hours take
milliseconds.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass, field

from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.executor import ClaimedRun, ExecOutcome, ProgressFn
from testbed.scheduler.resources import Budget, Demand, HostSlot
from testbed.scheduler.store import PendingRun


@dataclass(frozen=True)
class FakeRun:
    """What a fake run does: boot time (per node, in parallel), agent and verify times, and
    the outcome it returns (`passed`, `failed`, `error`; or `raise` to raise an exception)."""

    boot_s: float = 30.0
    agent_s: float = 60.0
    verify_s: float = 5.0
    outcome: str = "passed"
    error: str | None = None


Behaviour = Callable[[ClaimedRun], FakeRun]


@dataclass
class FakeStats:
    executions: collections.Counter[str] = field(default_factory=collections.Counter)
    cancelled: set[str] = field(default_factory=set)
    peak_slots: dict[str, int] = field(default_factory=dict)
    peak_booting: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    started_at: dict[str, float] = field(default_factory=dict)
    ended_at: dict[str, float] = field(default_factory=dict)


class FakeExecutor:
    """See module docstring. `on_start(run_id)` is called when a run starts (what the runner
    does to its row: `SqlRunStore.mark_started` / `MemoryRunStore.mark_started`)."""

    def __init__(self, behaviour: Behaviour, *, on_start: Callable[[str], None] | None = None) -> None:
        self.behaviour = behaviour
        self.on_start = on_start
        self.stats = FakeStats()
        self._slots: dict[str, int] = collections.defaultdict(int)
        self._vcpus: dict[str, int] = collections.defaultdict(int)
        self._memory: dict[str, int] = collections.defaultdict(int)
        self._booting: dict[str, int] = collections.defaultdict(int)
        self._abort = asyncio.Event()
        self.aborted = False

    def _use(self, host: HostSlot, demand: Demand, sign: int) -> None:
        self._slots[host.name] += sign * demand.nodes
        self._vcpus[host.name] += sign * demand.vcpus
        self._memory[host.name] += sign * demand.memory_mb
        b = host.budget
        if self._slots[host.name] > b.vm_slots:
            self.stats.violations.append(f"{host.name}: {self._slots[host.name]} VMs > {b.vm_slots}")
        if b.vcpus is not None and self._vcpus[host.name] > b.vcpus:
            self.stats.violations.append(f"{host.name}: {self._vcpus[host.name]} vCPUs > {b.vcpus}")
        if b.memory_mb is not None and self._memory[host.name] > b.memory_mb:
            self.stats.violations.append(f"{host.name}: {self._memory[host.name]} MiB > {b.memory_mb}")
        self.stats.peak_slots[host.name] = max(self.stats.peak_slots.get(host.name, 0), self._slots[host.name])

    async def execute(self, run: ClaimedRun, host: HostSlot, boot_gate: BootGate, progress: ProgressFn) -> ExecOutcome:
        loop = asyncio.get_running_loop()
        self.stats.executions[run.run_id] += 1
        self.stats.started_at[run.run_id] = loop.time()
        plan = self.behaviour(run)
        self._use(host, run.demand, +1)
        gate = boot_gate.for_run(run.demand.nodes)
        counted = 0
        try:
            if self.on_start is not None:
                self.on_start(run.run_id)
            progress("provisioning")

            async def boot_node() -> None:
                nonlocal counted
                async with gate:  # as Lab does around domain creation
                    if not counted:
                        counted = gate.held
                        self._booting[host.name] += counted
                        peak = max(self.stats.peak_booting.get(host.name, 0), self._booting[host.name])
                        self.stats.peak_booting[host.name] = peak
                        if self._booting[host.name] > boot_gate.capacity:
                            self.stats.violations.append(f"{host.name}: {self._booting[host.name]} booting")
                await self._pause(plan.boot_s)

            try:
                await asyncio.gather(*(boot_node() for _ in range(run.demand.nodes)))
            finally:
                gate.finish()
                self._booting[host.name] -= counted
            progress("agent")
            await self._pause(plan.agent_s)
            progress("verifying")
            await self._pause(plan.verify_s)
            if plan.outcome == "raise":
                raise RuntimeError(plan.error or "fake executor fault")
            return ExecOutcome(plan.outcome, plan.error)
        except asyncio.CancelledError:
            self.stats.cancelled.add(run.run_id)
            raise
        finally:
            self._use(host, run.demand, -1)
            self.stats.ended_at[run.run_id] = loop.time()

    async def _pause(self, seconds: float) -> None:
        if seconds <= 0 or self._abort.is_set():
            return
        try:
            async with asyncio.timeout(seconds):
                await self._abort.wait()
        except TimeoutError:
            pass

    async def abort(self) -> None:
        self.aborted = True
        self._abort.set()


@dataclass
class FakeCatalog:
    """A `RunCatalog` from a table of demands by task id (default: one small node)."""

    demands: dict[str, Demand] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    default: Demand = field(default_factory=lambda: Demand(1, 1, 640))
    default_timeout_s: float = 3600.0

    def demand(self, run: PendingRun) -> Demand:
        return self.demands.get(run.task_id, self.default)

    def timeout(self, run: PendingRun) -> float:
        return self.timeouts.get(run.task_id, self.default_timeout_s)


def make_hosts(
    count: int,
    slots: int,
    *,
    vcpus: int | None = None,
    memory_mb: int | None = None,
    boot_concurrency: int = 8,
    boot_interval_s: float = 0.0,
) -> list[HostSlot]:
    """`count` simulated hosts `sim0`, `sim1`, ... with equal budgets."""
    return [
        HostSlot(
            f"sim{i}", f"test:///sim{i}", Budget(slots, vcpus, memory_mb), BootGate(boot_concurrency, boot_interval_s)
        )
        for i in range(count)
    ]
