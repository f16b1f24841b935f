"""The context one run's steps share: its request, runtime, recorder, lab and journal.

Contract:
- `RunContext` is made once per run, after the run row exists, and handed to every step of
  the run's lifecycle (`testbed.runner.lifecycle`); no step reaches into another's state.
- `phase(name)` is the only way a step opens a phase: it records the phase row (and the
  run's state when given), emits a `PhaseEvent` at the start and at the end, and closes
  the row however the body ends — `ok` (or the status the body set on the handle), `error`
  with the fault's text when an exception escapes, `cancelled` on cancellation. The
  exception is re-raised; the phase's closing row is written even then (shielded).
- Database writes go through `call` (off the event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Agent, AgentContext
from testbed.analysis import SafetyPolicy
from testbed.db.recorder import RunRecorder
from testbed.egress.hub import LabEgress
from testbed.errors import HarnessError
from testbed.hypervisor.lab import LabNode
from testbed.model.vocab import Phase, PhaseStatus, RunState
from testbed.runner.events import Listener, PhaseEvent, RunEvent, emit
from testbed.runner.journal import RunJournal
from testbed.runner.lockout import AccessLoss
from testbed.runner.recording import CommandRecorder
from testbed.runner.request import RunRequest, RunResult
from testbed.runtime import Runtime

T = TypeVar("T")


class RunLab(Protocol):
    """What a run needs of its lab: `testbed.hypervisor.lab.Lab`, or a lab restored from a
    saved state (`testbed.hypervisor.restoredlab.RestoredLab`)."""

    nodes: dict[str, LabNode]

    async def up(self) -> None: ...

    async def down(self) -> None: ...


@dataclass
class PhaseHandle:
    """Lets a phase's body choose how the phase closes (default `ok`, no detail)."""

    status: PhaseStatus = PhaseStatus.OK
    detail: str | None = None

    def close_as(self, status: PhaseStatus, detail: str | None = None) -> None:
        self.status, self.detail = status, detail


@dataclass
class RunContext:
    """See module docstring."""

    request: RunRequest
    runtime: Runtime
    db: sessionmaker[Session]
    recorder: RunRecorder
    commands: CommandRecorder
    agent: Agent
    agent_context: AgentContext
    policy: SafetyPolicy
    listeners: list[Listener] = field(default_factory=list)
    lab: RunLab | None = None
    journal: RunJournal = field(default_factory=RunJournal)
    result: RunResult = field(init=False)
    current_phase: Phase = Phase.PROVISIONING
    timings: dict[str, float] = field(default_factory=dict)
    lockouts: dict[str, AccessLoss] = field(default_factory=dict)
    """node → how the agent cut the harness off it (`testbed.runner.lockout`)."""
    egress: LabEgress | None = None
    """The lab's attachment to the host's egress proxy, when its policy is not `none`."""
    resources: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    """What the steps opened for the run's lifetime; closed before the lab is torn down."""

    def __post_init__(self) -> None:
        self.commands.journal = self.journal
        self.result = RunResult(self.recorder.run_id, "error")

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    @property
    def nodes(self) -> dict[str, LabNode]:
        if self.lab is None:
            raise HarnessError("the run's lab does not exist yet")
        return self.lab.nodes

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in a worker thread (database writes)."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def emit(self, event: RunEvent) -> None:
        emit(self.listeners, event)

    @contextlib.asynccontextmanager
    async def phase(self, name: Phase, state: RunState | None = None) -> AsyncIterator[PhaseHandle]:
        """Open phase `name` (moving the run to `state` first, when given); see the module
        docstring for how it closes."""
        if state is not None:
            await self.call(self.recorder.set_state, state)
        await self.call(self.recorder.phase_started, name)
        self.current_phase = name
        self.emit(PhaseEvent(self.run_id, name, PhaseStatus.RUNNING))
        handle = PhaseHandle()
        try:
            yield handle
        except asyncio.CancelledError:
            await self._close_safely(name, PhaseStatus.CANCELLED, None)
            raise
        except HarnessError as exc:
            await self._close_safely(name, PhaseStatus.ERROR, str(exc))
            raise
        except Exception as exc:
            await self._close_safely(name, PhaseStatus.ERROR, f"{type(exc).__name__}: {exc}\n{_trace()}")
            raise
        await self.call(self.recorder.phase_finished, name, handle.status, handle.detail)
        self.emit(PhaseEvent(self.run_id, name, handle.status, handle.detail))

    async def _close_safely(self, name: Phase, status: PhaseStatus, detail: str | None) -> None:
        """Close the phase row while an exception propagates: shielded from cancellation,
        and a failure to write (the database is the fault) does not mask the original."""
        with contextlib.suppress(Exception):  # the fault being raised matters more than this row
            await asyncio.shield(self.call(self.recorder.phase_finished, name, status, detail))
        self.emit(PhaseEvent(self.run_id, name, status, detail))


def _trace() -> str:
    return traceback.format_exc(limit=8)
