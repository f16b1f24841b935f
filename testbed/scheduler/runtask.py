"""One run's task under the coordinator: execute it, settle its row, say how it ended.

Contract of `execute_and_settle`: it never raises and returns exactly once. The executor's
fault is the run's `error`; the run's time limit (`ClaimedRun.timeout_s`) ends it as `error`
(watchdog) and overrides what the runner recorded; a cancellation (the coordinator stopping)
is `cancelled`. The row is then settled exactly once — shielded, so a second cancellation
during settling still lets it finish — and the returned `RunDone` carries the outcome the
store recorded and the follow-up it queued (none when settling failed: the lease then
expires and recovery finishes the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from testbed.scheduler.coordevents import RunDone
from testbed.scheduler.executor import ClaimedRun, ExecOutcome, Executor
from testbed.scheduler.resources import HostSlot
from testbed.scheduler.store import Settled

log = logging.getLogger(__name__)

Settle = Callable[[str, str | None, bool], Awaitable[Settled]]
"""Settles the run's row: (outcome, error, override) → what the store recorded."""


async def _outcome(
    run: ClaimedRun, host: HostSlot, executor: Executor, on_phase: Callable[[str], None]
) -> tuple[ExecOutcome, bool]:
    """The executor's outcome and whether it overrides the runner's record (watchdog)."""
    if run.demand.nodes == 0:
        return ExecOutcome("error", "the run's task or image cannot be loaded (see the coordinator log)"), False
    try:
        async with asyncio.timeout(run.timeout_s if run.timeout_s > 0 else None):
            return await executor.execute(run, host, host.boot_gate, on_phase), False
    except TimeoutError:
        return ExecOutcome("error", f"watchdog: the run exceeded its time limit of {run.timeout_s:.0f} s"), True


async def execute_and_settle(
    run: ClaimedRun, host: HostSlot, executor: Executor, settle: Settle, on_phase: Callable[[str], None]
) -> RunDone:
    """Run `run` on `host` and settle it; see the module contract."""
    override = False
    try:
        result, override = await _outcome(run, host, executor, on_phase)
    except asyncio.CancelledError:
        result = ExecOutcome("cancelled", "cancelled")
    except Exception as exc:  # an executor fault is a harness error of this run (logged)
        log.exception("executor failed on run %s", run.run_id)
        result = ExecOutcome("error", f"executor: {type(exc).__name__}: {exc}")
    settling = asyncio.ensure_future(settle(result.outcome, result.error, override))
    try:
        settled = await asyncio.shield(settling)
        return RunDone(run.run_id, settled.outcome, settled.follow_up, settled.lost)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await settling
        return RunDone(run.run_id, result.outcome, None, False)
    except Exception as exc:  # noqa: BLE001 - the DB failed: the lease expires, recovery finishes it
        log.error("cannot settle run %s: %s", run.run_id, exc)
        return RunDone(run.run_id, result.outcome, None, False)
