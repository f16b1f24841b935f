"""Typed events a run emits while it goes: the one channel from the runner to whoever
watches it (the CLI's live lines, the scheduler's progress view and boot gate, the
environment API's timings).

Contract: listeners are plain callables, called synchronously on the event loop in the
order the events happen; they must not block and must not raise (an exception from a
listener is logged and dropped, it never changes the run). Every phase emits exactly one
`PhaseEvent` with status `running` when it starts and one with its closing status
(`ok`, `failed`, `error`, `skipped`, `cancelled`) when it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from testbed.model.vocab import Outcome, Phase, PhaseStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStarted:
    """The run row exists (its id is known); the lab is not up yet."""

    run_id: str


@dataclass(frozen=True)
class PhaseEvent:
    """A phase started (`status` running) or ended (any other status)."""

    run_id: str
    phase: Phase
    status: PhaseStatus
    detail: str | None = None

    @property
    def started(self) -> bool:
        return self.status == PhaseStatus.RUNNING


@dataclass(frozen=True)
class ProvisionProgress:
    """A step of bringing the lab up (`who` is a node name or "lab")."""

    run_id: str
    who: str
    what: str


@dataclass(frozen=True)
class RunFinished:
    """The run is over and recorded (`outcome` final)."""

    run_id: str
    outcome: Outcome
    error: str | None


RunEvent = RunStarted | PhaseEvent | ProvisionProgress | RunFinished
Listener = Callable[[RunEvent], None]


def emit(listeners: Iterable[Listener], event: RunEvent) -> None:
    """Hand `event` to every listener; a listener's exception is logged, never raised."""
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            log.exception("run event listener failed on %r", event)
