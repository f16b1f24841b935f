"""Error types shared by every layer.

Contract: `InputError` means the user's input is wrong (exit status 2, nothing created);
`HarnessError` means the harness or the host failed (a run ends as `error`, never `failed`).
"""

from __future__ import annotations

from pathlib import Path


class TestbedError(Exception):
    """Base class of testbed's own errors."""


class InputError(TestbedError):
    """Bad user input: names the file, the field and the problem. CLI exit status 2."""

    def __init__(self, file: str | Path | None, field: str | None, problem: str) -> None:
        self.file = str(file) if file is not None else None
        self.field = field
        self.problem = problem
        super().__init__(self.render())

    def render(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.problem}" if prefix else self.problem


class HarnessError(TestbedError):
    """The harness, libvirt, SSH or a guest failed; not the agent's fault."""


class GuestLost(HarnessError):
    """A guest stopped answering or its domain vanished."""


class AgentFailure(TestbedError):
    """The agent, or the model behind it, failed in a way that is its own: a context-length
    overflow, a refusal, malformed tool calls repeated past a limit. The agent phase ends,
    the machines are still verified, and the run's outcome is `failed` with this reason —
    never `error` (which is only for faults outside the guest or in testbed itself)."""
