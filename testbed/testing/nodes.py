"""Stand-ins for a lab node's parts, for tests of the runner without guests.

`FakeSession` is a `GuestSession` that is always reachable (or, with `reachable=False`,
never): `connect` and `close` only count calls. Tests give it to their fake nodes so the
steps that reconnect (the post-agent access check, the lockout diagnosis) have something to
talk to. `ScriptedNode` is a duck-typed `LabNode` whose commands a test answers by
overriding `answer`; `OneLogin` gives any fake node the Linux `as_source`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Self

from testbed.errors import HarnessError
from testbed.guest.result import ExecResult


class FakeSession:
    def __init__(self, reachable: bool = True) -> None:
        self.reachable = reachable
        self.connects = 0
        self.closes = 0

    async def connect(self, timeout: float = 10.0) -> None:
        self.connects += 1
        if not self.reachable:
            raise HarnessError("ssh: connection refused (fake session)")

    async def close(self) -> None:
        self.closes += 1


class OneLogin:
    """For fake nodes: the harness and the agent reach the node through the same login, as
    on a Linux `LabNode` (`as_source` returns the node itself)."""

    def as_source(self, source: str) -> Self:
        return self


class ScriptedNode(OneLogin):
    """A duck-typed `LabNode` reached over SSH, with a `FakeSession`: `exec` runs nothing and
    returns what `answer` says (default: `ran: COMMAND`, status 0), as a finished command of
    1 ms. Subclasses override `answer` (it may sleep, raise, or keep state)."""

    access = "ssh"
    hypervisor = None

    def __init__(self, name: str, *, image: str = "debian-12", mgmt_ip: str = "10.9.0.2") -> None:
        self.name = name
        self.image = SimpleNamespace(name=image)
        self.domain, self.mgmt_ip = f"fake-{name}", mgmt_ip
        self.console_log = Path("/nonexistent")
        self.session = FakeSession()

    async def answer(self, command: str) -> tuple[str, int]:
        """(stdout, exit status) of `command`."""
        return f"ran: {command}\n", 0

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = 65536,
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        started = datetime.now(UTC)
        out, code = await self.answer(command)
        return ExecResult(command, code, out, "", started, 1)
