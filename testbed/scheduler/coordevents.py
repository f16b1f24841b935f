"""The typed events a coordinator's loop drains: what its run tasks, its heartbeat and its
stop requests report to the one owner of the scheduling state (vmshed's typed actions)."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.scheduler.store import PendingRun, Renewal


@dataclass(frozen=True)
class RunDone:
    """A run's task ended and its row is settled (`follow_up`: the run the store queued)."""

    run_id: str
    outcome: str
    follow_up: PendingRun | None
    lost: bool


@dataclass(frozen=True)
class PhaseChanged:
    """A running run entered `phase` (for the progress view)."""

    run_id: str
    phase: str


@dataclass(frozen=True)
class LeasesRenewed:
    """A heartbeat's result: the leases `asked` for and what the store renewed."""

    renewal: Renewal
    asked: frozenset[str]


@dataclass(frozen=True)
class StopRequested:
    """`Coordinator.stop()` was called (twice: abort)."""


Event = RunDone | PhaseChanged | LeasesRenewed | StopRequested
