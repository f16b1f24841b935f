"""Per-OS command dialects: how a command is wrapped to run under a deadline.

POSIX-shell dialects (`session_marker`): the command runs directly in the shell sshd starts
for the channel — no extra process — after a builtin `printf` reports that shell's pid on
stderr (`PID_MARK`). sshd makes each non-pty session shell a session and process-group
leader, so at the deadline the host kills the whole group (`kill_group_command`) over a
second channel; closing the SSH channel alone would not end it.

Other dialects (network OSes whose login shell may not be POSIX) use the guest's `timeout`
instead, which signals the command's process group itself (TERM, then KILL 5 s later);
exit statuses 124/137/143 after the deadline then mean the command timed out.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

TIMEOUT_STATUSES = frozenset({124, 137, 143})
PID_MARK = b"\x1etestbed-pid "


def kill_group_command(pid: int) -> str:
    """Shell text that ends process group `pid`: TERM, then KILL one second later."""
    return f"kill -TERM -- -{pid} 2>/dev/null; sleep 1; kill -KILL -- -{pid} 2>/dev/null; true"


@dataclass(frozen=True)
class Dialect:
    name: str
    shell: str
    timeout_has_kill_after: bool = True
    session_marker: bool = False

    def wrap(self, command: str, timeout_s: float | None) -> str:
        if self.session_marker:
            # the marker goes first, on its own line, so any command text (comments,
            # here-documents, `exec`) keeps its meaning
            return f"printf '\\036testbed-pid %s\\n' \"$$\" >&2\n{command}"
        inner = f"{self.shell} -c {shlex.quote(command)}"
        if timeout_s is None:
            return inner
        secs = max(1, round(timeout_s))
        kill = "-k 5 " if self.timeout_has_kill_after else ""
        return f"timeout {kill}{secs} {inner}"


DIALECTS: dict[str, Dialect] = {
    "debian": Dialect("debian", "bash", session_marker=True),
    "rhel": Dialect("rhel", "bash", session_marker=True),
    "alpine": Dialect("alpine", "sh", session_marker=True),
    "vyos": Dialect("vyos", "bash"),
    "openwrt": Dialect("openwrt", "sh", timeout_has_kill_after=False),
    "opnsense": Dialect("opnsense", "sh", timeout_has_kill_after=False),
    "sonic": Dialect("sonic", "bash"),
}


def dialect_for(name: str) -> Dialect:
    return DIALECTS.get(name, DIALECTS["debian"])
