"""What a coordinator shows while it works (`Snapshot`, to a `ProgressSink` such as the live
panel of `testbed.scheduler.progress`) and what it returns when its loop ends (`JobSummary`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class HostView:
    name: str
    used_slots: int
    vm_slots: int
    booting: int


@dataclass
class Snapshot:
    """What the progress view shows."""

    job_id: str
    phases: dict[str, int]
    outcomes: dict[str, int]
    retries: int
    lost: int
    hosts: list[HostView]
    elapsed_s: float
    eta_s: float | None
    stopping: bool


class ProgressSink(Protocol):
    def update(self, snapshot: Snapshot) -> None: ...


@dataclass
class JobSummary:
    job_id: str
    outcomes: dict[str, int] = field(default_factory=dict)
    harness_errors: int = 0  # runs that ended as `error` (retried or not)
    agent_failures: int = 0  # runs that ended as `failed`
    retries: int = 0  # follow-up runs created for harness errors
    replaced: int = 0  # follow-up runs created for interrupted (cancelled) runs
    lost: int = 0  # runs of dead coordinators finished as `error` when this one recovered them
    started: int = 0  # runs this coordinator executed
    interrupted: bool = False  # stopped by stop() before the job was complete
    complete: bool = False  # no run of the job is left unfinished
    peak_slots: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
