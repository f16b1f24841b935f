"""A run's lifecycle: an ordered list of steps, then teardown and `finish` on every path.

DESIGN lifecycle: pending → provisioning → snapshot(before_setup) → setup →
snapshot(after_setup) → agent → snapshot(after_agent) → verify → [reboot →
snapshot(after_reboot) → verify again] → residue → teardown → finished.

Three lists (not subclasses): `cold` (a fresh lab), `build_state` (cold, then the lab is
saved after setup and goes on restored — `testbed.runner.fastreset`) and `restore` (the lab
is restored from a saved post-setup state). They share every step from the agent on.

Contract of `execute`:
- Outcome: the steps' verdict (`Conclude`); `error` for any harness fault (`HarnessError`)
  or any other exception (the harness's own bug), with the phase it happened in;
  `cancelled` when the run's task is cancelled (then `CancelledError` is re-raised).
  Harness errors are never reported as `failed`.
- Teardown (when a lab was made) and the run row's `finish` happen on every path — a
  fault, a database error, cancellation, a second cancellation during teardown — and run
  to completion (`run_to_completion`). A failure to write `finish` is logged and re-raised
  after teardown; it never leaks the lab.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from testbed.aio import run_to_completion
from testbed.errors import HarnessError
from testbed.model.vocab import Outcome, SnapshotPoint
from testbed.runner.context import RunContext
from testbed.runner.events import RunFinished
from testbed.runner.request import RunResult
from testbed.runner.steps import (
    AccessCheck,
    AgentPhase,
    Conclude,
    Egress,
    LabFactory,
    PersistenceCheck,
    Provision,
    ResidueStep,
    Setup,
    Snapshot,
    Step,
    Verify,
    cold_lab,
    teardown,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lifecycle:
    """A named list of steps."""

    name: str
    steps: tuple[Step, ...]


def prepare_steps(make_lab: LabFactory = cold_lab) -> tuple[Step, ...]:
    """Everything before the agent on a fresh lab."""
    return (
        Provision(make_lab),
        Egress(),
        Snapshot(SnapshotPoint.BEFORE_SETUP, state=None),
        Setup(),
        Snapshot(SnapshotPoint.AFTER_SETUP),
    )


def agent_steps() -> tuple[Step, ...]:
    """Everything from the agent on (shared by every lifecycle)."""
    return (
        AgentPhase(),
        AccessCheck(),
        Snapshot(SnapshotPoint.AFTER_AGENT),
        Verify(),
        PersistenceCheck(),
        Conclude(),
        ResidueStep(),
    )


def cold(make_lab: LabFactory = cold_lab) -> Lifecycle:
    return Lifecycle("cold", (*prepare_steps(make_lab), *agent_steps()))


async def execute(ctx: RunContext, lifecycle: Lifecycle) -> RunResult:
    """Run `lifecycle`'s steps in `ctx`; see the module docstring."""
    result = ctx.result
    try:
        await _steps(ctx, lifecycle.steps)
    except asyncio.CancelledError:
        result.outcome, result.error = Outcome.CANCELLED, "cancelled"
        await run_to_completion(_close(ctx))
        raise
    except BaseException:
        await run_to_completion(_close(ctx))
        raise
    await run_to_completion(_close(ctx))
    return result


async def _steps(ctx: RunContext, steps: Sequence[Step]) -> None:
    result = ctx.result
    try:
        for step in steps:
            await step.run(ctx)
    except HarnessError as exc:
        result.outcome, result.error = Outcome.ERROR, f"{ctx.current_phase}: {exc}"
    except Exception as exc:
        result.outcome = Outcome.ERROR
        result.error = f"{ctx.current_phase}: internal error: {type(exc).__name__}: {exc}"
        log.exception("run %s: internal error in %s", ctx.run_id, ctx.current_phase)


async def _close(ctx: RunContext) -> None:
    """Teardown, then the run row's `finish` (even when teardown failed)."""
    result = ctx.result
    try:
        await teardown(ctx)
    except Exception:
        log.exception("run %s: teardown failed", ctx.run_id)
    reward = 1.0 if result.outcome == Outcome.PASSED else 0.0
    await ctx.call(ctx.recorder.finish, result.outcome, result.error, reward)
    ctx.emit(RunFinished(ctx.run_id, Outcome(result.outcome), result.error))
