"""The seam between the scheduler and whatever executes a run.

The coordinator depends only on `Executor`: the real one (`RunnerExecutor`, which drives
`testbed.runner.run.Runner` on a libvirt host) and the in-process fake used by tests and the
benchmark (`testbed.testing.scheduler.FakeExecutor`) have the same interface.

Contract of `Executor.execute(run, host, boot_gate, progress)`:
- executes the already claimed run `run` with its whole lab on `host`, passing
  `boot_gate.for_run(run.demand.nodes)` (or equivalent) to the lab so that boots on that
  host are capped and staggered, and releasing its boot permits when provisioning ends;
- reports phase changes by calling `progress(phase)` with one of `PHASES`;
- returns the outcome (`passed`, `failed`, `error`, `cancelled`) and an error text; a harness
  fault is returned as `error`, never raised (an exception that escapes is treated as
  `error` by the coordinator);
- when cancelled, tears the lab down and records `cancelled` before re-raising
  `CancelledError` (the runner does this).
`abort()` is called on a second Ctrl-C: destroy every lab this executor started, at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from testbed.model.vocab import Phase
from testbed.scheduler.bootgate import BootGate
from testbed.scheduler.resources import Demand, HostSlot

PHASES: tuple[str, ...] = ("queued", "provisioning", "agent", "verifying", "done")
"""What the progress view shows per run (the runner's finer phases are mapped onto these)."""

ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class ClaimedRun:
    """A run this coordinator holds the lease of, ready to execute."""

    run_id: str
    job_id: str
    task_id: str
    image: str
    agent: str
    attempt: int
    retry: int
    demand: Demand
    timeout_s: float
    seed: int | None = None  # the scenario (None: the default seed)


@dataclass(frozen=True)
class ExecOutcome:
    outcome: str  # passed | failed | error | cancelled
    error: str | None = None


class Executor(Protocol):
    async def execute(
        self, run: ClaimedRun, host: HostSlot, boot_gate: BootGate, progress: ProgressFn
    ) -> ExecOutcome: ...

    async def abort(self) -> None: ...


VIEW_OF_PHASE: dict[Phase, str] = {
    Phase.PROVISIONING: "provisioning",
    Phase.EGRESS: "provisioning",
    Phase.SNAPSHOT_BEFORE_SETUP: "provisioning",
    Phase.SETUP: "provisioning",
    Phase.SNAPSHOT_AFTER_SETUP: "provisioning",
    Phase.SAVE_STATE: "provisioning",
    Phase.AGENT: "agent",
    Phase.SNAPSHOT_AFTER_AGENT: "verifying",
    Phase.VERIFY: "verifying",
    Phase.REBOOT: "verifying",
    Phase.SNAPSHOT_AFTER_REBOOT: "verifying",
    Phase.VERIFY_AFTER_REBOOT: "verifying",
    Phase.RESIDUE: "verifying",
    Phase.TEARDOWN: "done",
}
"""Which of `PHASES` each runner phase shows as (every `Phase` is listed)."""
