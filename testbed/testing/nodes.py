"""Stand-ins for a lab node's parts, for tests of the runner without guests.

`FakeSession` is a `GuestSession` that is always reachable (or, with `reachable=False`,
never): `connect` and `close` only count calls. Tests give it to their fake nodes so the
steps that reconnect (the post-agent access check, the lockout diagnosis) have something to
talk to.
"""

from __future__ import annotations

from typing import Self

from testbed.errors import HarnessError


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
