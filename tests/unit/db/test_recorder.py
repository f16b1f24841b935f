"""RunRecorder: round trip, seq assignment under concurrency, commit visibility, redaction (SQLite)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.turns import ModelTurnWriter
from testbed.analysis.redact import Redactor
from testbed.db.engine import make_engine, open_database
from testbed.db.models import Command, Node, Phase, Run, Snapshot
from testbed.db.recorder import RunRecorder, clean_json, clean_text, create_job, create_run
from testbed.db.records import CommandRecord, TurnRecord
from testbed.db.types import utcnow
from testbed.runner.recording import CommandRecorder
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


# --- redaction: RunRecorder is where stored text is redacted, every field of every row --------

SECRETS = {
    "config": "CfgPassw0rd1",
    "phase": "PhaseSecr3t99",
    "agent_cmd": "AgentPw_1234",
    "agent_out": "OutPw_5678x",
    "agent_err": "ErrPw_9012y",
    "setup": "SetupPw_3456",
    "harness": "HarnessPw_7890",
    "transport": "TransportPw_11",
    "check": "CheckPw_33x",
    "check_tail": "TailPw_44x",
    "finding": "FindingPw_55",
    "evidence": "EvidencePw_66",
    "turn_msg": "TurnMsgPw_77",
    "turn_reply": "TurnReplyPw_88",
    "turn_call": "TurnCallPw_99",
    "turn_error": "TurnErrPw_00",
    "finish": "FinishPw_123",
}
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA\n-----END OPENSSH PRIVATE KEY-----"


def _command(source: str, phase: str, command: str, **extra: Any) -> CommandRecord:
    return CommandRecord(
        node="web", phase=phase, source=source, command=command, started_at=utcnow(), duration_ms=3, **extra
    )


def record_everything(recorder: RunRecorder) -> None:
    """One run with a secret in every text field the recorder writes."""
    s = SECRETS
    recorder.update_run(config={"db_password": s["config"]})
    recorder.phase_started("setup")
    recorder.record_command(_command("harness", "setup", f"echo 'DB_PASSWORD={s['setup']}' > /etc/app.env"))
    recorder.record_command(_command("harness", "verify", f"mysql -uroot -p{s['harness']} -e 'select 1'"))
    recorder.phase_finished("setup", "error", f"step failed: curl -u admin:{s['phase']} http://h\n{PEM}")
    recorder.phase_started("agent")
    recorder.record_command(
        _command(
            "agent",
            "agent",
            f"htpasswd -b /etc/nginx/.htpasswd admin {s['agent_cmd']}",
            exit_code=0,
            stdout=f"token: {s['agent_out']}\n",
            stderr=f"warning: PASSWORD={s['agent_err']}",
        )
    )
    recorder.record_command(
        _command(
            "agent",
            "agent",
            f"redis-cli -a {s['transport']} ping",
            error=f"ssh dropped while running: redis-cli -a {s['transport']} ping",
        )
    )
    recorder.record_check(
        "R1",
        "failed",
        description=f"login with password={s['check']}",
        point="after_agent",
        node="web",
        detail={"exit_code": 1, "stdout_tail": f"api_key={s['check_tail']}"},
    )
    recorder.record_finding(
        "residue",
        "file",
        f"left /tmp/x holding secret={s['finding']}",
        node="web",
        evidence={"line": f"export API_TOKEN={s['evidence']}", "password": s["evidence"]},
    )
    ModelTurnWriter(recorder).write(
        TurnRecord(
            model="m",
            started_at=utcnow(),
            latency_ms=5,
            messages=[{"role": "tool", "content": f"stdout:\nPASSWORD={s['turn_msg']}"}],
            response={"role": "assistant", "content": f"I will use the password {s['turn_reply']!r} now"},
            tool_calls=[{"name": "run", "arguments": f'{{"command": "sshpass -p {s["turn_call"]} ssh h"}}'}],
            error=f"HTTP 500: Authorization: Bearer {s['turn_error']}ABCDEFGH",
        )
    )
    recorder.phase_finished("agent")
    recorder.finish("error", f"verify: mysql --password={s['finish']} failed")


def stored_text(db_path: Path) -> str:
    """Every value of every row of every table, as text."""
    con = sqlite3.connect(db_path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(repr(row) for t in tables for row in con.execute(f'SELECT * FROM "{t}"'))
    finally:
        con.close()


def test_a_run_recorded_with_a_redactor_stores_no_secret(sessions: sessionmaker[Session], db_path: Path) -> None:
    recorder = RunRecorder.create(
        sessions, task_id="t", agent="a", config={"token": "CreateTok3n1"}, redactor=Redactor()
    )
    record_everything(recorder)
    text = stored_text(db_path)
    for name, secret in {**SECRETS, "create": "CreateTok3n1", "pem": "b3BlbnNzaC1rZXkt"}.items():
        assert secret not in text, name
    assert "[REDACTED:password]" in text and "[REDACTED:private_key]" in text
    con = sqlite3.connect(db_path)
    redacted = [r[0] for r in con.execute("SELECT redacted FROM commands ORDER BY seq")]
    con.close()
    assert all(r is not None and "password" in r for r in redacted), redacted


def test_without_a_redactor_text_is_stored_as_given(sessions: sessionmaker[Session], db_path: Path) -> None:
    recorder = RunRecorder.create(sessions, task_id="t", agent="a")
    record_everything(recorder)
    text = stored_text(db_path)
    assert [name for name, secret in SECRETS.items() if secret not in text] == []


def test_update_run_error_is_redacted(sessions: sessionmaker[Session], db_path: Path) -> None:
    recorder = RunRecorder.create(sessions, task_id="t", agent="a", redactor=Redactor())
    recorder.update_run(error="provisioning: password=ErrTok3nValue")
    assert "ErrTok3nValue" not in stored_text(db_path)


def test_command_recorder_gives_and_takes_the_redactor(sessions: sessionmaker[Session]) -> None:
    recorder = RunRecorder.create(sessions, task_id="t", agent="a")
    CommandRecorder(recorder)
    assert isinstance(recorder.redactor, Redactor)
    CommandRecorder(recorder, redact_output=False)
    assert recorder.redactor is None


def test_redaction_runs_off_the_event_loop(sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = RunRecorder.create(sessions, task_id="t", agent="a")
    commands = CommandRecorder(recorder)
    threads: list[threading.Thread] = []
    original = Redactor.text

    def spy(self: Redactor, value: str, kinds: set[str]) -> str:
        threads.append(threading.current_thread())
        return original(self, value, kinds)

    monkeypatch.setattr(Redactor, "text", spy)

    async def main() -> threading.Thread:
        await commands.record_not_run(
            "web", "mysql -pRefusedPw_22", phase="agent", source="agent", reason="blocked", impact=[]
        )
        return threading.current_thread()

    loop_thread = asyncio.run(main())
    assert threads and loop_thread not in threads
