"""snapshot_node and the native helper: the probe command asks for the helper, places it when
the guest lacks it (once), runs without it where it cannot run, and never reads the script
twice for one snapshot. The "guest" here is a local shell whose paths are moved under a
temporary directory."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

import testbed.runner.snapshots as snaps
from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.guest.result import ExecResult
from testbed.model.vocab import SnapshotPoint
from testbed.probes.native import binary_name
from testbed.runner.recording import CommandRecorder
from testbed.testing.nodes import ScriptedNode


class LocalShell(ScriptedNode):
    """A node whose commands run in a local `sh` (stdin passed through)."""

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
        pipe = asyncio.subprocess.PIPE
        proc = await asyncio.create_subprocess_exec("sh", "-c", command, stdin=pipe, stdout=pipe, stderr=pipe)
        out, err = await proc.communicate(stdin or b"")
        text, errors = out.decode(errors="replace"), err.decode(errors="replace")
        return ExecResult(command, proc.returncode, text, errors, started, 1)


@pytest.fixture()
def built(native_helper: Path) -> Path:
    return native_helper


@pytest.fixture()
def guest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: Path) -> Path:
    """The local "guest": the runner's remote paths and the helper's directory under tmp
    (and a TESTBED_HOME whose tools/ already holds the built helper)."""
    (tmp_path / "home" / "tools").mkdir(parents=True)
    shutil.copy2(built, tmp_path / "home" / "tools" / built.name)
    root = tmp_path / "guest"
    monkeypatch.setattr(snaps, "REMOTE_DIR", str(root / "run"))
    monkeypatch.setattr(snaps, "REMOTE_SCRIPT", str(root / "run" / "snapshot.sh"))
    monkeypatch.setattr(snaps, "REMOTE_WORK", str(root / "run" / "work"))
    monkeypatch.setattr(snaps, "REMOTE_CACHE", str(root / "run" / "cache"))
    monkeypatch.setattr(snaps, "GUEST_DIR", str(root / "shm"))
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))
    return root


def _recorder(tmp_path: Path) -> CommandRecorder:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    return CommandRecorder(RunRecorder.create(db, task_id="t", agent="harness"))


def _codes(commands: CommandRecorder) -> list[int | None]:
    return [c.record.exit_code for c in commands.journal.commands]


def test_the_helper_is_placed_once_per_boot_and_used(guest: Path, tmp_path: Path) -> None:
    node, commands = LocalShell("n"), _recorder(tmp_path)
    first = asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.BEFORE_SETUP))
    assert _codes(commands) == [snaps.EXIT_NO_HELPER, 0, 0]
    assert first["_meta"]["native"] is True and first["_meta"]["complete"] is True
    placed = guest / "shm" / binary_name()
    assert placed.is_file() and "version" in commands.journal.commands[1].record.command
    second = asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.AFTER_SETUP))
    assert _codes(commands) == [snaps.EXIT_NO_HELPER, 0, 0, 0], "found in place: one command"
    assert second["_meta"]["native"] is True
    placed.unlink()  # a reboot empties /dev/shm
    asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.AFTER_AGENT))
    assert _codes(commands)[4:] == [snaps.EXIT_NO_HELPER, 0, 0]
    (guest / "shm" / "tbprobe-0000000000000000").write_text("an older helper")
    placed.unlink()
    asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.AFTER_REBOOT))
    assert sorted(p.name for p in (guest / "shm").iterdir()) == [binary_name()], "older helpers are removed"


def test_a_guest_where_the_helper_cannot_run_is_snapshotted_without_it(
    guest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "tools" / binary_name()
    broken.parent.mkdir()
    broken.write_text("#!/nonexistent/interpreter\n")  # does not run: like another architecture
    monkeypatch.setattr(snaps, "helper_binary", lambda tools_dir: broken)
    node, commands = LocalShell("n"), _recorder(tmp_path)
    data = asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.BEFORE_SETUP))
    probe, place, again = _codes(commands)
    assert (probe, again) == (snaps.EXIT_NO_HELPER, 0) and place not in (0, None)
    assert data["_meta"]["native"] is False and data["_meta"]["complete"] is True
    assert not (guest / "shm" / binary_name()).exists() and not list((guest / "shm").glob("*.new"))
    asyncio.run(snaps.snapshot_node(node, commands, SnapshotPoint.AFTER_SETUP))
    assert len(commands.journal.commands) == 4, "remembered for the session: not asked for again"


def test_zero_free_memory_does_nothing_without_the_helper(guest: Path, tmp_path: Path) -> None:
    node, commands = LocalShell("n"), _recorder(tmp_path)
    asyncio.run(snaps.zero_free_memory(node, commands))
    (row,) = commands.journal.commands
    assert row.record.exit_code == 0 and row.record.phase == "setup" and "zerofree" in row.record.command
    assert not (guest / "shm").exists()


def test_the_helper_built_here_runs_version(built: Path) -> None:
    assert subprocess.run([str(built), "version"], capture_output=True, check=True).stdout == b"tbprobe 1\n"
    assert subprocess.run([str(built), "nonsense"], capture_output=True).returncode == 2
