"""The out-of-band channel: commands through the QEMU guest agent, over libvirt.

Every domain gets a virtio-serial port `org.qemu.guest_agent.0` (the domain template) and
images ship `qemu-guest-agent`. The channel needs no guest network, no sshd and no
firewall rule, so an agent cannot cut it by mistake while breaking SSH (it can stop the
guest agent on purpose, or take the whole guest down; then the channel says so).

Contract of `GuestAgentChannel`:
- `ping(timeout)` is True when the guest agent answers.
- `exec(command, timeout=…, max_output=…)` runs `command` with the node's shell (the
  dialect's: bash on Debian, as over SSH — `$SECONDS`, arrays and `[[` work the same) through
  `guest-exec` (output captured) and polls `guest-exec-status` until it exits: an
  `ExecResult` like SSH's (exit status, stdout/stderr bounded to `max_output` each, keeping
  head and tail; `timed_out` with no status when the deadline passed — the process is then
  killed with a second `guest-exec`). `stdin` is passed as `input-data`.
- A guest agent that does not answer, or a libvirt failure, raises `GuestAgentUnavailable`
  (a `HarnessError`): callers decide what that means (see `testbed.runner.lockout`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from datetime import UTC, datetime
from typing import Any

import libvirt

from testbed.errors import HarnessError
from testbed.guest.capture import BoundedCapture
from testbed.guest.result import ExecResult
from testbed.hypervisor.connection import Hypervisor

AGENT_TIMEOUT_S = 5
POLL_S = 0.2


class GuestAgentUnavailable(HarnessError):
    """The guest agent did not answer (or libvirt could not reach it)."""


class GuestAgentChannel:
    """Commands on domain `domain` through its guest agent; see module docstring."""

    def __init__(self, hypervisor: Hypervisor, domain: str, shell: str = "sh") -> None:
        self.hv = hypervisor
        self.domain = domain
        self.shell = shell

    async def ping(self, timeout: float = AGENT_TIMEOUT_S) -> bool:
        try:
            await self._command({"execute": "guest-ping"}, timeout)
        except GuestAgentUnavailable:
            return False
        return True

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = 64 * 1024,
        stdin: bytes | None = None,
    ) -> ExecResult:
        started_at = datetime.now(UTC)
        t0 = time.monotonic()
        args: dict[str, Any] = {"path": "/usr/bin/env", "arg": [self.shell, "-c", command], "capture-output": True}
        if stdin is not None:
            args["input-data"] = base64.b64encode(stdin).decode()
        reply = await self._command({"execute": "guest-exec", "arguments": args}, AGENT_TIMEOUT_S)
        pid = int(reply["pid"])
        deadline = None if timeout is None else t0 + timeout
        while True:
            status = await self._command({"execute": "guest-exec-status", "arguments": {"pid": pid}}, AGENT_TIMEOUT_S)
            if status.get("exited"):
                return _result(command, status, started_at, t0, max_output, timed_out=False)
            if deadline is not None and time.monotonic() >= deadline:
                await self._kill(pid)
                return _result(command, status, started_at, t0, max_output, timed_out=True)
            await asyncio.sleep(POLL_S)

    async def _kill(self, pid: int) -> None:
        kill = {"path": "/bin/kill", "arg": ["-KILL", str(pid)], "capture-output": False}
        with contextlib.suppress(GuestAgentUnavailable):
            await self._command({"execute": "guest-exec", "arguments": kill}, AGENT_TIMEOUT_S)

    async def _command(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One guest-agent command; its `return` value."""
        import libvirt_qemu

        def call() -> str:
            dom = self.hv.conn.lookupByName(self.domain)
            result: str = libvirt_qemu.qemuAgentCommand(dom, json.dumps(payload), int(max(1, timeout)), 0)
            return result

        try:
            raw = await asyncio.to_thread(call)
        except (libvirt.libvirtError, HarnessError) as exc:
            raise GuestAgentUnavailable(f"{self.domain}: guest agent: {exc}") from exc
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise GuestAgentUnavailable(f"{self.domain}: guest agent answered {raw[:200]!r}") from exc
        value = answer.get("return") if isinstance(answer, dict) else None
        return value if isinstance(value, dict) else {}


def _decoded(status: dict[str, Any], key: str, max_output: int) -> tuple[str, bool]:
    capture = BoundedCapture(max_output)
    data = status.get(key)
    if isinstance(data, str) and data:
        capture.feed(base64.b64decode(data))
    return capture.text(), capture.truncated or bool(status.get(key.replace("-data", "-truncated")))


def _result(
    command: str, status: dict[str, Any], started_at: datetime, t0: float, max_output: int, *, timed_out: bool
) -> ExecResult:
    stdout, out_cut = _decoded(status, "out-data", max_output)
    stderr, err_cut = _decoded(status, "err-data", max_output)
    code = status.get("exitcode")
    if code is None and status.get("signal") is not None:
        code = 128 + int(status["signal"])
    return ExecResult(
        command=command,
        exit_code=None if timed_out else (int(code) if code is not None else None),
        stdout=stdout,
        stderr=stderr,
        started_at=started_at,
        duration_ms=int((time.monotonic() - t0) * 1000),
        timed_out=timed_out,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
    )
