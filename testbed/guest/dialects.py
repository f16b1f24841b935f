"""Per-OS command dialects: how a command is wrapped to run under a deadline.

POSIX-shell dialects (`session_marker`): the command runs directly in the shell sshd starts
for the channel — no extra process — after a builtin `printf` reports that shell's pid on
stderr (`PID_MARK`). sshd makes each non-pty session shell a session and process-group
leader, so at the deadline the host kills the whole group (`kill_group_command`) over a
second channel; closing the SSH channel alone would not end it.

Other dialects (network OSes whose login shell may not be POSIX) use the guest's `timeout`
instead, which signals the command's process group itself (TERM, then KILL 5 s later);
exit statuses 124/137/143 after the deadline then mean the command timed out.

CLI dialects (`cli`: the login shell is a network CLI, e.g. vtysh for a router's `admin`)
are not POSIX shells: the command is sent as it is, one CLI line per line of text (vtysh
runs them in order and stops at the first that fails). Exit status: the CLI's own — for
vtysh 0 when every line was accepted, 1 when one was refused (`% Unknown command`,
`% Command incomplete`, a configuration error). There is no pid marker and no `timeout`
wrapper: the host keeps the deadline itself, and the channel carries an environment token
(`ENV_MARK`, an `LC_*` name, which OpenSSH's default `AcceptEnv LANG LC_*` lets through).
At the deadline the session asks its reaper (the node's harness channel, which may be
root's shell) to kill the processes that carry the token (`kill_by_env_command`), then
drops the channel; the result is `timed_out` with no exit status. Without a reaper the
channel is only closed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

TIMEOUT_STATUSES = frozenset({124, 137, 143})
PID_MARK = b"\x1etestbed-pid "
ENV_MARK = "LC_TESTBED_CMD"
_TOKEN_RE = re.compile(r"^[A-Za-z0-9]{8,64}$")


def kill_by_env_command(token: str) -> str:
    """POSIX sh (GNU grep) that kills every process whose environment holds
    `ENV_MARK=token` (one grep over /proc, no process per pid)."""
    if not _TOKEN_RE.match(token):
        raise ValueError(f"not a command token: {token!r}")
    return (
        f"for f in $(grep -l -s -z -x '{ENV_MARK}={token}' /proc/[0-9]*/environ); do "
        'p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null; done; true'
    )


def kill_group_command(pid: int) -> str:
    """Shell text that ends process group `pid`: TERM, then KILL one second later."""
    return f"kill -TERM -- -{pid} 2>/dev/null; sleep 1; kill -KILL -- -{pid} 2>/dev/null; true"


@dataclass(frozen=True)
class Dialect:
    name: str
    shell: str
    timeout_has_kill_after: bool = True
    session_marker: bool = False
    cli: bool = False

    def wrap(self, command: str, timeout_s: float | None) -> str:
        if self.cli:
            return command
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
    # a router built here: root's bash for the harness, vtysh for the agent's login
    "frr": Dialect("frr", "bash", session_marker=True),
    "vtysh": Dialect("vtysh", "vtysh", cli=True),
    "vyos": Dialect("vyos", "bash"),
    "openwrt": Dialect("openwrt", "sh", timeout_has_kill_after=False),
    "opnsense": Dialect("opnsense", "sh", timeout_has_kill_after=False),
    "sonic": Dialect("sonic", "bash"),
}


def dialect_for(name: str) -> Dialect:
    return DIALECTS.get(name, DIALECTS["debian"])
