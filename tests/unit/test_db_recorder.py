"""RunRecorder: round trip, seq assignment under concurrency, commit visibility (SQLite)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from testbed.db.engine import make_engine, open_database
from testbed.db.models import Command, Node, Phase, Run, Snapshot
from testbed.db.recorder import RunRecorder, clean_json, clean_text, create_job, create_run
from testbed.db.records import CommandRecord
from testbed.db.types import utcnow
from testbed.testing.sample_run import check_sample_run, record_sample_run


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "testbed.db"


@pytest.fixture
def sessions(db_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{db_path}")


def cmd(i: int = 0, *, phase: str = "agent", source: str = "agent") -> CommandRecord:
    return CommandRecord(
        node="web",
        phase=phase,
        source=source,
        command=f"echo {i}",
        started_at=utcnow(),
        duration_ms=5,
        exit_code=0,
        stdout=f"{i}\n",
    )


def test_round_trip(sessions: sessionmaker[Session]) -> None:
    run_id = record_sample_run(sessions)
    assert len(run_id) == 32
    check_sample_run(sessions, run_id)


def test_create_with_job(sessions: sessionmaker[Session]) -> None:
    job_id = create_job(sessions, "nightly", {"tasks": ["a"]})
    run_id = create_run(sessions, task_id="a", agent="noop", job_id=job_id, attempt=2)
    with sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        assert (run.job_id, run.attempt, run.state, run.outcome) == (job_id, 2, "pending", None)
        assert run.job is not None and run.job.config == {"tasks": ["a"]}


async def test_seq_is_monotonic_under_concurrency(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    per_task: dict[int, list[int]] = {}

    async def worker(w: int) -> None:
        ids = []
        for i in range(10):
            ids.append(await asyncio.to_thread(rec.record_command, cmd(w * 100 + i)))
        per_task[w] = ids

    await asyncio.gather(*(worker(w) for w in range(6)))
    with sessions() as session:
        rows = session.execute(
            select(Command.id, Command.seq, Command.command).where(Command.run_id == rec.run_id).order_by(Command.seq)
        ).all()
    assert [r.seq for r in rows] == list(range(1, 61))
    # seq order is commit order, which is id order
    assert [r.id for r in rows] == sorted(r.id for r in rows)
    seq_of = {r.id: r.seq for r in rows}
    for ids in per_task.values():  # each task's own commands keep their order
        seqs = [seq_of[i] for i in ids]
        assert seqs == sorted(seqs)


def test_seq_continues_when_reattached(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    rec.record_command(cmd(1))
    rec.record_command(cmd(2))
    again = RunRecorder(sessions, rec.run_id)
    again.record_command(cmd(3))
    with sessions() as session:
        seqs = session.scalars(select(Command.seq).where(Command.run_id == rec.run_id)).all()
    assert sorted(seqs) == [1, 2, 3]


def test_failed_insert_does_not_burn_a_seq(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    rec.record_command(cmd(1))
    with pytest.raises(ValueError, match="phase"):
        rec.record_command(cmd(2, phase="reboot"))
    bad = CommandRecord(
        node="web", phase="agent", source="agent", command="x", started_at=utcnow(), duration_ms=1, impact=[object()]
    )  # type: ignore[list-item]
    with pytest.raises(TypeError):
        rec.record_command(bad)
    rec.record_command(cmd(3))
    with sessions() as session:
        seqs = session.scalars(select(Command.seq).where(Command.run_id == rec.run_id)).all()
    assert sorted(seqs) == [1, 2]


def test_command_is_committed_when_record_command_returns(db_path: Path, sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    other = make_engine(f"sqlite:///{db_path}")  # a second engine: its own connections
    raw = sqlite3.connect(db_path)  # and a connection SQLAlchemy knows nothing about
    try:
        for i in range(1, 4):
            command_id = rec.record_command(cmd(i))
            with other.connect() as conn:
                row = conn.execute(select(Command.seq, Command.command).where(Command.id == command_id)).one()
            assert tuple(row) == (i, f"echo {i}")
            assert raw.execute("SELECT count(*) FROM commands").fetchone() == (i,)
    finally:
        raw.close()
        other.dispose()


def test_parallel_recorders_of_different_runs(sessions: sessionmaker[Session]) -> None:
    """Several runs writing at once (one thread each) must not hit 'database is locked'."""
    recs = [RunRecorder.create(sessions, task_id=f"t{i}", agent="a") for i in range(4)]
    errors: list[BaseException] = []

    def work(rec: RunRecorder) -> None:
        try:
            rec.set_state("agent")
            for i in range(25):
                rec.record_command(cmd(i))
                rec.record_check(f"R{i}", "passed")
            rec.finish("passed")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in recs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Command)) == 100
        assert set(session.scalars(select(Run.outcome))) == {"passed"}


def test_state_and_phases(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    with sessions() as session:
        run = session.get(Run, rec.run_id)
        assert run is not None and run.started_at is None
    rec.set_state("provisioning")
    start = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    rec.phase_started("verify", at=start)
    rec.phase_finished("verify", "failed", detail="R1 failed", at=start + timedelta(seconds=3))
    rec.phase_started("verify")
    rec.phase_started("reboot")
    with pytest.raises(ValueError, match="no open phase"):
        rec.phase_finished("setup")
    with pytest.raises(ValueError, match="phase status"):
        rec.phase_finished("reboot", "great")
    with pytest.raises(ValueError, match="finish"):
        rec.set_state("finished")
    with pytest.raises(ValueError, match="state"):
        rec.set_state("napping")
    rec.finish("error", error="libvirt: domain vanished")
    with sessions() as session:
        run = session.get(Run, rec.run_id)
        assert run is not None
        assert (run.state, run.outcome, run.error) == ("finished", "error", "libvirt: domain vanished")
        assert run.started_at is not None and run.finished_at is not None
        phases = session.scalars(select(Phase).order_by(Phase.id)).all()
        assert [(p.name, p.status) for p in phases] == [
            ("verify", "failed"),
            ("verify", "error"),
            ("reboot", "error"),
        ]
        assert phases[0].finished_at == start + timedelta(seconds=3)
        assert all(p.finished_at is not None for p in phases)


def test_nodes(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    rec.add_node("r1", "vyos", "tb-x-r1", None)
    rec.update_node("r1", mgmt_ip="10.0.0.5", os_release="VyOS 1.4")
    with pytest.raises(ValueError, match="cannot change"):
        rec.update_node("r1", name="r2")
    with pytest.raises(ValueError, match="no node"):
        rec.update_node("r9", mgmt_ip="1.2.3.4")
    with sessions() as session:
        node = session.scalars(select(Node)).one()
        assert (node.name, node.image, node.domain_name, node.mgmt_ip, node.os_release) == (
            "r1",
            "vyos",
            "tb-x-r1",
            "10.0.0.5",
            "VyOS 1.4",
        )


def test_snapshot_replaces_same_point(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    first = rec.record_snapshot("web", "after_agent", {"files": ["a"]})
    second = rec.record_snapshot("web", "after_agent", {"files": ["a", "b"]})
    assert first == second
    with pytest.raises(ValueError, match="snapshot point"):
        rec.record_snapshot("web", "whenever", {})
    with sessions() as session:
        snap = session.get(Snapshot, first)
        assert snap is not None and snap.data == {"files": ["a", "b"]}


def test_finding_must_reference_own_command(sessions: sessionmaker[Session]) -> None:
    a = RunRecorder.create(sessions, task_id="t", agent="a")
    b = RunRecorder.create(sessions, task_id="t", agent="a")
    cid = a.record_command(cmd())
    a.record_finding("safety", "rm-rf", "removed /", command_id=cid)
    with pytest.raises(ValueError, match="not a command of this run"):
        b.record_finding("safety", "rm-rf", "removed /", command_id=cid)
    with pytest.raises(ValueError, match="finding kind"):
        a.record_finding("gossip", "x", "y")


def test_text_and_json_are_cleaned(sessions: sessionmaker[Session]) -> None:
    assert clean_text("a\x00b") == "a\ufffdb"
    assert clean_text(b"ok\xff".decode("utf-8", "surrogateescape")) == "ok\ufffd"
    assert clean_json({"t": (1, 2.5, float("inf")), 3: datetime(2024, 1, 1, tzinfo=UTC)}) == {
        "t": [1, 2.5, None],
        "3": "2024-01-01T00:00:00+00:00",
    }
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    cid = rec.record_command(
        CommandRecord(
            node="web",
            phase="probe",
            source="harness",
            command="cat bin\x00",
            started_at=utcnow(),
            duration_ms=0,
            stdout="\x00\x01",
            redacted=["aws-key"],
            error=None,
        )
    )
    with sessions() as session:
        row = session.get(Command, cid)
        assert row is not None
        assert (row.command, row.stdout, row.redacted) == ("cat bin\ufffd", "\ufffd\x01", ["aws-key"])


def test_rejects_naive_and_bad_values(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="t", agent="a")
    naive = CommandRecord(
        node="web", phase="agent", source="agent", command="x", started_at=datetime(2024, 1, 1), duration_ms=1
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        rec.record_command(naive)
    with pytest.raises(ValueError, match="source"):
        rec.record_command(cmd(source="user"))
    with pytest.raises(ValueError, match="outcome"):
        rec.finish("won")
    with pytest.raises(ValueError, match="check status"):
        rec.record_check("R1", "false")
    with pytest.raises(ValueError, match="residue"):
        rec.set_residue("maybe")
    with pytest.raises(LookupError):
        RunRecorder(sessions, "0" * 32)
