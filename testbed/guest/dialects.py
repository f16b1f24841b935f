"""Per-OS command dialects: how a command is wrapped to run under a deadline.

The wrapper uses the guest's `timeout` so that the whole process group of the command is
signalled (TERM, then KILL 5 s later) — closing the SSH channel alone does not end it.
Exit statuses 124 and 137 after the deadline mean the command timed out.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

TIMEOUT_STATUSES = frozenset({124, 137, 143})


@dataclass(frozen=True)
class Dialect:
    name: str
    shell: str
    timeout_has_kill_after: bool = True

    def wrap(self, command: str, timeout_s: float | None) -> str:
        inner = f"{self.shell} -c {shlex.quote(command)}"
        if timeout_s is None:
            return inner
        secs = max(1, round(timeout_s))
        kill = "-k 5 " if self.timeout_has_kill_after else ""
        return f"timeout {kill}{secs} {inner}"


DIALECTS: dict[str, Dialect] = {
    "debian": Dialect("debian", "bash"),
    "rhel": Dialect("rhel", "bash"),
    "alpine": Dialect("alpine", "sh"),
    "vyos": Dialect("vyos", "bash"),
    "openwrt": Dialect("openwrt", "sh", timeout_has_kill_after=False),
    "opnsense": Dialect("opnsense", "sh", timeout_has_kill_after=False),
    "sonic": Dialect("sonic", "bash"),
}


def dialect_for(name: str) -> Dialect:
    return DIALECTS.get(name, DIALECTS["debian"])
