"""Execute a command on a node and record it before the next one starts.

Contract: every command that reaches a guest — setup, agent, verification, probes — gets a
row written *before* it is sent (`requested`: its text, node, phase, source and start time,
no exit status, `error` = `IN_FLIGHT`) and completed when it ends, both committed before
`run()` returns (so before the run's next command starts); the completed row is appended
to the run's in-memory `RunJournal`. A command cancelled in flight (Ctrl-C, job cancel, a
lost lease, server shutdown) completes its row with `error` = `CANCELLED`; a coordinator
that dies meanwhile leaves the requested row as it was, saying so — a command is never
lost from the record. A transport failure is recorded too (exit status NULL, `error` set)
and then re-raised as a harness error. Redaction is the run recorder's
(`RunRecorder.redactor`: every row it writes, of every source, in its thread);
`redact_output` True (the default) gives the recorder the redactor, False takes it away.
The agent itself still sees the raw output.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from testbed.aio import run_to_completion
from testbed.analysis import classify
from testbed.analysis.redact import Redactor
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord, StoredCommand
from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.hypervisor.lab import LabNode
from testbed.runner.journal import RunJournal

IN_FLIGHT = "requested: the harness stopped before this command completed (no result was recorded)"
CANCELLED = "cancelled while running: the run was cancelled before the command completed"
IDLE = "no output for too long: ended by the no-output timeout"


@dataclass(frozen=True)
class Recorded:
    result: ExecResult
    command_id: int
    impact: list[str]


class CommandRecorder:
    def __init__(
        self,
        recorder: RunRecorder,
        *,
        journal: RunJournal | None = None,
        redact_output: bool = True,
        max_output: int = 64 * 1024,
    ) -> None:
        self.recorder = recorder
        self.journal = journal if journal is not None else RunJournal()
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
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> Recorded:
        impact = classify(command) if source == "agent" else []
        started = datetime.now(UTC)
        t0 = time.monotonic()
        pending = CommandRecord(
            node=node.name,
            phase=phase,
            source=source,
            command=command,
            started_at=started,
            duration_ms=0,
            impact=impact,
            error=IN_FLIGHT,
        )
        requested = await asyncio.to_thread(self.recorder.store_command, pending)

        def failed(why: str) -> CommandRecord:
            return replace(pending, duration_ms=int((time.monotonic() - t0) * 1000), error=why)

        try:
            bound = max_output or self.max_output
            result = await node.exec(command, timeout=timeout, max_output=bound, stdin=stdin, idle_timeout=idle_timeout)
        except HarnessError as exc:  # SSH dropped or the guest is gone: record, then re-raise
            await self._complete(requested, failed(str(exc)))
            raise
        except asyncio.CancelledError:
            await run_to_completion(self._complete(requested, failed(CANCELLED)))
            raise
        record = self.to_record(node.name, result, phase, source, impact, stored_stdout_limit)
        await self._complete(requested, record)
        return Recorded(result, requested.id, impact)

    async def _complete(self, requested: StoredCommand, record: CommandRecord) -> None:
        stored = await asyncio.to_thread(self.recorder.complete_command, requested, record)
        self.journal.add_command(stored)

    async def store(self, record: CommandRecord) -> int:
        """Commit `record` (off the event loop), journal it as stored; its id."""
        stored = await asyncio.to_thread(self.recorder.store_command, record)
        self.journal.add_command(stored)
        return stored.id

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
        command, stdout, stderr = result.command, result.stdout, result.stderr
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
            command=command,
            started_at=result.started_at,
            duration_ms=result.duration_ms,
            exit_code=result.exit_code,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=stdout_truncated,
            stderr_truncated=result.stderr_truncated,
            timed_out=result.timed_out,
            impact=impact,
            background=[dict(b) for b in result.background] or None,
            error=IDLE if result.idle_timed_out else None,
        )
