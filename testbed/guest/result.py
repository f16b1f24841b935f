"""The outcome of one command on a guest (Harbor's exec shape plus bounds and timing)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class ExecResult:
    """`exit_code` is None only when the command never produced one (a timeout).

    `background` lists the processes the command left running that still held its output
    when its shell exited (`[{pid, args}]`; they are left alive); `idle_timed_out` says a
    timeout came from the no-output limit rather than the command's time limit."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    started_at: datetime
    duration_ms: int
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    background: tuple[dict[str, Any], ...] = ()
    idle_timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["started_at"] = self.started_at.isoformat()
        return data
