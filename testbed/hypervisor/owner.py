"""Who owns a lab, and whether that owner still exists.

An owner is a live process (pid + its start time from /proc, so a recycled pid is not
mistaken for it) on this host, or a *detached* lab kept on purpose (`testbed lab up`), which
only `testbed lab down` removes.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass
from typing import Any


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    # Field 2 (comm) may contain spaces and parentheses: split after the last ')'.
    rest = stat.rsplit(")", 1)[-1].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class Owner:
    pid: int
    starttime: int
    host: str
    detached: bool = False

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(pid=pid, starttime=process_start_time(pid) or 0, host=socket.gethostname())

    def detach(self) -> Owner:
        return Owner(self.pid, self.starttime, self.host, detached=True)

    def is_alive(self) -> bool:
        """Detached owners are alive until `lab down`; processes while their pid+start live.

        An owner recorded on another host is treated as alive (it cannot be checked here).
        """
        if self.detached:
            return True
        if self.host != socket.gethostname():
            return True
        return process_start_time(self.pid) == self.starttime

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Owner:
        return cls(
            pid=int(data["pid"]),
            starttime=int(data["starttime"]),
            host=str(data["host"]),
            detached=bool(data.get("detached", False)),
        )
