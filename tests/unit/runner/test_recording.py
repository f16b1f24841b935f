"""Command rows are written when a command is requested and completed when it ends: a
command in flight, cancelled or cut off by a crash is never lost from the record."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from testbed.db.engine import open_database
from testbed.db.models import Command
from testbed.db.recorder import RunRecorder
from testbed.errors import HarnessError
from testbed.guest.result import ExecResult
from testbed.runner.recording import CANCELLED, IN_FLIGHT, CommandRecorder


class SlowNode:
    name = "n"
    access = "ssh"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.fail = False

    async def exec(self, command: str, **_: object) -> ExecResult:
        self.started.set()
        await self.release.wait()
        if self.fail:
            raise HarnessError("ssh n: connection lost running a command")
        return ExecResult(command, 0, "done\n", "", datetime.now(UTC), 5)


@pytest.fixture
def recorder(tmp_path: Path) -> RunRecorder:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    return RunRecorder.create(db, task_id="t", agent="a")


def test_row_exists_while_in_flight_and_is_completed(recorder: RunRecorder) -> None:
    commands, node = CommandRecorder(recorder), SlowNode()

    async def go() -> None:
        task = asyncio.create_task(commands.run(node, "sleep 5", phase="agent", source="agent", timeout=10))  # type: ignore[arg-type]
        await node.started.wait()
        in_flight = await asyncio.to_thread(_rows, recorder)
        assert [(r.seq, r.command, r.exit_code, r.error) for r in in_flight] == [(1, "sleep 5", None, IN_FLIGHT)]
        node.release.set()
        recorded = await task
        assert recorded.command_id == in_flight[0].id

    asyncio.run(go())
    [row] = _rows(recorder)
    assert (row.exit_code, row.stdout, row.error) == (0, "done\n", None)


def _rows(recorder: RunRecorder) -> list[Command]:
    from sqlalchemy.orm import Session

    with Session(recorder._engine) as session:
        return list(session.scalars(select(Command).where(Command.run_id == recorder.run_id).order_by(Command.seq)))


def test_cancelled_in_flight_keeps_its_row(recorder: RunRecorder) -> None:
    commands, node = CommandRecorder(recorder), SlowNode()

    async def go() -> None:
        task = asyncio.create_task(commands.run(node, "sleep 60", phase="agent", source="agent", timeout=90))  # type: ignore[arg-type]
        await node.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    [row] = _rows(recorder)
    assert (row.command, row.exit_code, row.error) == ("sleep 60", None, CANCELLED)
    assert [c.record.error for c in commands.journal.commands] == [CANCELLED]


def test_transport_failure_completes_the_row_then_raises(recorder: RunRecorder) -> None:
    commands, node = CommandRecorder(recorder), SlowNode()
    node.fail = True
    node.release.set()
    with pytest.raises(HarnessError):
        asyncio.run(commands.run(node, "true", phase="verify", source="harness", timeout=10))  # type: ignore[arg-type]
    [row] = _rows(recorder)
    assert row.exit_code is None and "connection lost" in (row.error or "")


def test_secrets_in_the_requested_row_are_redacted(recorder: RunRecorder) -> None:
    commands, node = CommandRecorder(recorder), SlowNode()

    async def go() -> None:
        task = asyncio.create_task(
            commands.run(node, "mysql -pHunter2Secret -e 'select 1'", phase="agent", source="agent", timeout=10)  # type: ignore[arg-type]
        )
        await node.started.wait()
        in_flight = await asyncio.to_thread(_rows, recorder)
        assert "Hunter2Secret" not in in_flight[0].command
        node.release.set()
        await task

    asyncio.run(go())
    assert "Hunter2Secret" not in _rows(recorder)[0].command
