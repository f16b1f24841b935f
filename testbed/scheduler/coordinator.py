"""The coordinator: ONE asyncio task owns all scheduling state of a job (vmshed style).

Everything the coordinator decides happens in `Coordinator.run`'s loop: which pending run
goes to which host, budgets in use, retries waiting for their backoff, what runs where.
Each run executes in its own task (`_execute`) that only calls the executor and settles its
row, then reports back to the owner through an event deque; the heartbeat task does the
same with lease renewals. Nothing else mutates the state, so there are no locks.

Contracts:
- **Budgets.** A run is started only after `HostSlot.take` reserved its whole demand on one
  host, and its demand is given back only when its task has ended (the lab is torn down):
  at no instant does a host hold more VMs, vCPUs or memory than its budget.
- **Order.** Each scheduling pass walks the demand classes from the largest (most nodes,
  then memory) to the smallest and places runs while they fit (least loaded host first),
  so large labs go first and small ones fill the gaps.
- **Exactly once.** A run is started only after `store.claim` granted its lease, and every
  started run is settled exactly once (`store.settle`), whatever happens to its task.
- **Retries.** Follow-up runs (retries with their backoff, replacements of interrupted runs)
  are created by the store when a run settles; the coordinator queues them, holding a
  delayed one until its `not_before`.
- **Time limit.** A run whose task runs past `ClaimedRun.timeout_s` is cancelled (the runner
  tears down and records `cancelled`) and settled as `error` (watchdog) — the agent's own
  time limit is enforced earlier by the runner, which verifies the state as it stands.
- **Stop.** `stop()` once: no new run starts; running runs are cancelled (each lab torn
  down, each run recorded `cancelled` and replaced by a pending row for `--resume`); the
  loop returns when they have all ended. `stop()` twice: `executor.abort()` destroys every
  lab at once and the loop returns without waiting.
- **Done.** The loop returns when no run of the job is unfinished (after recovering runs of
  dead coordinators), so several coordinators on one job all return once it is complete.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from testbed.errors import TestbedError
from testbed.scheduler.coordevents import Event, LeasesRenewed, PhaseChanged, RunDone, StopRequested
from testbed.scheduler.executor import PHASES, ClaimedRun, Executor
from testbed.scheduler.jobview import HostView, JobSummary, ProgressSink, Snapshot
from testbed.scheduler.resources import Demand, HostSlot, place
from testbed.scheduler.runqueue import RunQueue
from testbed.scheduler.runtask import execute_and_settle
from testbed.scheduler.store import PendingRun, RunStore, Settled

__all__ = ["Coordinator", "CoordinatorConfig", "JobSummary", "ProgressSink", "RunCatalog", "Snapshot"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class RunCatalog(Protocol):
    """What the coordinator needs to know about a pending run before placing it."""

    def demand(self, run: PendingRun) -> Demand: ...

    def timeout(self, run: PendingRun) -> float: ...


@dataclass
class CoordinatorConfig:
    lease_ttl_s: float = 120.0
    heartbeat_s: float = 20.0
    poll_s: float = 15.0
    view_interval_s: float = 0.25


@dataclass
class Running:
    run: ClaimedRun
    host: HostSlot
    task: asyncio.Task[None]
    phase: str = "provisioning"
    started: float = 0.0


class Coordinator:
    """Schedules one job's runs over `hosts`; see the module docstring."""

    def __init__(
        self,
        job_id: str,
        store: RunStore,
        executor: Executor,
        hosts: list[HostSlot],
        catalog: RunCatalog,
        *,
        owner: str,
        config: CoordinatorConfig | None = None,
        view: ProgressSink | None = None,
        on_event: Callable[[str, Any], None] | None = None,
    ) -> None:
        if not hosts:
            raise ValueError("the coordinator needs at least one host")
        self.job_id = job_id
        self.store = store
        self.executor = executor
        self.hosts = hosts
        self.catalog = catalog
        self.owner = owner
        self.config = config or CoordinatorConfig()
        self.view = view
        self.on_event = on_event or (lambda _kind, _data: None)
        self.summary = JobSummary(job_id)
        # -- state owned by the loop --
        self._queue = RunQueue(catalog.demand)
        self._running: dict[str, Running] = {}
        self._events: collections.deque[Event] = collections.deque()
        self._wake = asyncio.Event()
        self._stopping = False
        self._immediate = False
        self._stop_requests = 0
        self._t0 = 0.0
        self._finished_count = 0
        self._last_view = float("-inf")

    # -- public ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Request a stop (see module docstring); safe to call from a signal handler that
        runs in the loop's thread (`loop.add_signal_handler`)."""
        self._stop_requests += 1
        self._post(StopRequested())

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def run(self) -> JobSummary:
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        await self._recover()
        await self._refresh()
        heartbeat = asyncio.create_task(self._heartbeat())
        next_poll = loop.time() + self.config.poll_s
        try:
            while True:
                self._drain()
                if self._immediate:
                    break
                if self._stopping:
                    if not self._running:
                        break
                    self._show()
                    await self._sleep(self.config.view_interval_s if self.view is not None else 3600.0)
                    continue
                self._promote_delayed()
                await self._schedule()
                now = loop.time()
                idle = not self._running and not self.queued
                if idle or now >= next_poll:
                    # Recover dead peers' runs and pick up pending rows created elsewhere.
                    next_poll = now + self.config.poll_s
                    await self._recover()
                    await self._refresh()
                    if self._events or (idle and self.queued):
                        continue
                    if idle and await self._db(self.store.unfinished, self.job_id) == 0:
                        self.summary.complete = True
                        break
                self._show()
                if not self._events:
                    await self._sleep(self._wait_time(loop.time(), next_poll))
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            if self._immediate:
                await self.executor.abort()
        self.summary.interrupted = self._stop_requests > 0 and not self.summary.complete
        self.summary.peak_slots = {h.name: h.peak_slots for h in self.hosts}
        self.summary.elapsed_s = loop.time() - self._t0
        self._show(force=True)
        return self.summary

    # -- events ---------------------------------------------------------------------------
    def _post(self, event: Event) -> None:
        self._events.append(event)
        self._wake.set()

    async def _sleep(self, timeout: float) -> None:
        self._wake.clear()
        if self._events:
            return
        try:
            async with asyncio.timeout(max(0.0, timeout)):
                await self._wake.wait()
        except TimeoutError:
            pass

    def _wait_time(self, now: float, next_poll: float) -> float:
        wait = next_poll - now
        due = self._queue.next_due()
        if due is not None:
            wait = min(wait, (due - self.store.now()).total_seconds())
        if self.view is not None:
            wait = min(wait, self.config.view_interval_s)
        return max(wait, 0.0)

    def _drain(self) -> None:
        while self._events:
            event = self._events.popleft()
            if isinstance(event, RunDone):
                self._on_done(event)
            elif isinstance(event, PhaseChanged):
                running = self._running.get(event.run_id)
                if running is not None:
                    running.phase = event.phase
            elif isinstance(event, LeasesRenewed):
                self._on_renewed(event)
            elif isinstance(event, StopRequested):
                self._on_stop()

    def _on_stop(self) -> None:
        if self._stop_requests >= 2:
            self._immediate = True
        if not self._stopping:
            self._stopping = True
            self.on_event("stopping", len(self._running))
            for running in self._running.values():
                running.task.cancel()

    def _on_done(self, event: RunDone) -> None:
        running = self._running.pop(event.run_id)
        running.host.give(event.run_id, running.run.demand)
        self._queue.forget(event.run_id)
        self._finished_count += 1
        outcomes = self.summary.outcomes
        outcomes[event.outcome] = outcomes.get(event.outcome, 0) + 1
        if event.outcome == "error":
            self.summary.harness_errors += 1
        elif event.outcome == "failed":
            self.summary.agent_failures += 1
        if event.follow_up is not None:
            if event.outcome == "error":
                self.summary.retries += 1
            else:
                self.summary.replaced += 1
            if not self._stopping:
                self._enqueue(event.follow_up)
        self.on_event("done", (event.run_id, event.outcome, event.follow_up))

    def _on_renewed(self, event: LeasesRenewed) -> None:
        lost = event.asked - event.renewal.renewed
        for run_id in lost:
            running = self._running.get(run_id)
            if running is not None:  # another coordinator took it over: stop our copy
                log.warning("lost the lease of run %s; cancelling it here", run_id)
                running.task.cancel()
        if event.renewal.job_cancelled and not self._stopping:
            self.on_event("job-cancelled", None)
            self._stopping = True
            for running in self._running.values():
                running.task.cancel()

    async def _recover(self) -> None:
        report = await self._db(self.store.recover, self.job_id, self.owner)
        self.summary.lost += len(report.lost)
        if report.lost or report.created or report.returned:
            self.on_event("recovered", report)

    # -- queue ----------------------------------------------------------------------------
    async def _refresh(self) -> None:
        for run in await self._db(self.store.pending, self.job_id):
            self._enqueue(run)

    def _enqueue(self, run: PendingRun) -> None:
        self._queue.add(run, self.store.now())

    def _promote_delayed(self) -> None:
        self._queue.promote(self.store.now())

    # -- placement ------------------------------------------------------------------------
    async def _schedule(self) -> None:
        placements: list[tuple[PendingRun, HostSlot, Demand]] = []
        for demand, bucket in self._queue.classes():
            while bucket:
                if demand.nodes == 0:  # cannot be described: fails at once (runqueue.UNPLACEABLE)
                    run = bucket.popleft()
                    placements.append((run, self.hosts[0], demand))
                    continue
                host = place(demand, self.hosts)
                if host is None:
                    break
                run = bucket.popleft()
                host.take(run.run_id, demand)
                placements.append((run, host, demand))
            if not any(h.free_slots for h in self.hosts):
                break
        if not placements:
            return
        granted = await self._db(
            self.store.claim, self.job_id, [p[0].run_id for p in placements], self.owner, self.config.lease_ttl_s
        )
        for run, host, demand in placements:
            if run.run_id not in granted:  # another coordinator has it (or the job was cancelled)
                if demand.nodes:
                    host.give(run.run_id, demand)
                self._queue.forget(run.run_id)
                continue
            if self._stopping:  # a stop arrived while claiming: hand it back
                if demand.nodes:
                    host.give(run.run_id, demand)
                await self._db(self.store.release, [run.run_id], self.owner)
                self._queue.forget(run.run_id)
                continue
            self._start(run, host, demand)

    def _start(self, run: PendingRun, host: HostSlot, demand: Demand) -> None:
        try:
            timeout = self.catalog.timeout(run)
        except TestbedError:
            timeout = 0.0
        claimed = ClaimedRun(
            run.run_id, self.job_id, run.task_id, run.image, run.agent, run.attempt, run.retry, demand, timeout,
            run.seed,
        )
        if demand.nodes == 0:
            host.running.add(run.run_id)  # balanced by give() of a zero demand
        task = asyncio.create_task(self._execute(claimed, host), name=f"run-{run.run_id[:8]}")
        self._running[run.run_id] = Running(claimed, host, task, "provisioning", asyncio.get_running_loop().time())
        self.summary.started += 1
        self.on_event("started", (run.run_id, host.name))

    async def _execute(self, run: ClaimedRun, host: HostSlot) -> None:
        """One run's task: execute, settle, report (exactly once; see `runtask`)."""

        async def settle(outcome: str, error: str | None, override: bool) -> Settled:
            return await self._db(
                self.store.settle, self.job_id, run.run_id, self.owner, outcome, error, override=override
            )

        def on_phase(phase: str) -> None:
            self._post(PhaseChanged(run.run_id, phase))

        self._post(await execute_and_settle(run, host, self.executor, settle, on_phase))

    # -- leases ---------------------------------------------------------------------------
    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_s)
            asked = frozenset(self._running)
            try:
                renewal = await self._db(
                    self.store.renew, self.job_id, self.owner, list(asked), self.config.lease_ttl_s
                )
            except Exception as exc:  # noqa: BLE001 - try again at the next beat; the TTL covers a few misses
                log.warning("heartbeat failed: %s", exc)
                continue
            self._post(LeasesRenewed(renewal, asked))

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.store.blocking:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    # -- view -----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        phases = dict.fromkeys(PHASES, 0)
        phases["queued"] = self.queued
        for running in self._running.values():
            phases[running.phase] = phases.get(running.phase, 0) + 1
        phases["done"] = self._finished_count
        elapsed = asyncio.get_running_loop().time() - self._t0
        eta = None
        if self._finished_count and elapsed > 0:
            rate = self._finished_count / elapsed
            eta = (self.queued + len(self._running)) / rate
        return Snapshot(
            job_id=self.job_id,
            phases=phases,
            outcomes=dict(self.summary.outcomes),
            retries=self.summary.retries,
            lost=self.summary.lost,
            hosts=[HostView(h.name, h.used_slots, h.budget.vm_slots, h.boot_gate.booting) for h in self.hosts],
            elapsed_s=elapsed,
            eta_s=eta,
            stopping=self._stopping,
        )

    def _show(self, force: bool = False) -> None:
        if self.view is None:
            return
        now = time.monotonic()
        if force or now - self._last_view >= self.config.view_interval_s:
            self._last_view = now
            self.view.update(self.snapshot())
