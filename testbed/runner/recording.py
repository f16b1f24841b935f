"""Execute a command on a node and record it before the next one starts.

Contract: every command that reaches a guest — setup, agent, verification, probes — gets a
row, committed before `run()` returns (so before the run's next command starts). A transport
failure is recorded too (exit status NULL, `error` set) and then re-raised as a harness
error. Redaction is the run recorder's (`RunRecorder.redactor`: every row it writes, of every
source, in its thread); `redact_output` True (the default) gives the recorder the redactor,
False takes it away. The agent itself still sees the raw output.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from testbed.analysis import classify
from testbed.analysis.redact import Redactor
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord
from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.hypervisor.lab import LabNode


@dataclass(frozen=True)
class Recorded:
    result: ExecResult
    command_id: int
    impact: list[str]


class CommandRecorder:
    def __init__(self, recorder: RunRecorder, *, redact_output: bool = True, max_output: int = 64 * 1024) -> None:
        self.recorder = recorder
        if not redact_output:
            recorder.redactor = None
        elif recorder.redactor is None:
            recorder.redactor = Redactor()
        self.max_output = max_output

    async def run(
        self,
        node: LabNode,
        command: str,
        *,
        phase: str,
        source: str,
        timeout: float | None,
        stored_stdout_limit: int | None = None,
        max_output: int | None = None,
    ) -> Recorded:
        impact = classify(command) if source == "agent" else []
        started = datetime.now(UTC)
        t0 = time.monotonic()
        try:
            result = await node.exec(command, timeout=timeout, max_output=max_output or self.max_output)
        except HarnessError as exc:  # SSH dropped or the guest is gone: record, then re-raise
            await self.store(
                CommandRecord(
                    node=node.name,
                    phase=phase,
                    source=source,
                    command=command,
                    started_at=started,
                    duration_ms=int((time.monotonic() - t0) * 1000),
                    impact=impact,
                    error=str(exc),
                )
            )
            raise
        command_id = await self.store(self.to_record(node.name, result, phase, source, impact, stored_stdout_limit))
        return Recorded(result, command_id, impact)

    async def store(self, record: CommandRecord) -> int:
        return await asyncio.to_thread(self.recorder.record_command, record)

    async def record_not_run(
        self, node: str, command: str, *, phase: str, source: str, reason: str, impact: list[str]
    ) -> int:
        """Record a command that was refused (blocked by policy, unknown node, over limits)."""
        return await self.store(
            CommandRecord(
                node=node,
                phase=phase,
                source=source,
                command=command,
                started_at=datetime.now(UTC),
                duration_ms=0,
                impact=impact,
                error=reason,
            )
        )

    def to_record(
        self, node: str, result: ExecResult, phase: str, source: str, impact: list[str], stored_stdout_limit: int | None
    ) -> CommandRecord:
        stdout = result.stdout
        stdout_truncated = result.stdout_truncated
        if stored_stdout_limit is not None and len(stdout) > stored_stdout_limit:
            stdout = (
                stdout[:stored_stdout_limit] + "\n[... stored copy truncated; the parsed data is in snapshots ...]\n"
            )
            stdout_truncated = True
        return CommandRecord(
            node=node,
            phase=phase,
            source=source,
            command=result.command,
            started_at=result.started_at,
            duration_ms=result.duration_ms,
            exit_code=result.exit_code,
            stdout=stdout,
            stderr=result.stderr,
            stdout_truncated=stdout_truncated,
            stderr_truncated=result.stderr_truncated,
            timed_out=result.timed_out,
            impact=impact,
        )
