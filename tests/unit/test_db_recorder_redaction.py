"""RunRecorder is where stored text is redacted: every field of every row, every source."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.openai_agent import ModelTurnWriter
from testbed.analysis.redact import Redactor
from testbed.db.engine import open_database
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord, TurnRecord
from testbed.db.types import utcnow
from testbed.runner.recording import CommandRecorder

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


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "testbed.db"


@pytest.fixture
def sessions(db_path: Path) -> sessionmaker[Session]:
    return open_database(f"sqlite:///{db_path}")


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
