"""`testbed.db.read.trajectory`: one time-ordered stream of model turns and the commands they
ran, with the snapshot changes and findings each command explains; and `turns`."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.turns import ModelTurnWriter, TurnRecord
from testbed.db.read import RunNotFound
from testbed.db.read.filters import RunFilter
from testbed.db.read.trajectory import CommandStep, TurnStep, trajectory
from testbed.db.read.turns import turn_infos, turn_totals
from testbed.db.recorder import RunRecorder
from testbed.db.records import CommandRecord
from tests.unit.db.conftest import T0


def _call(call_id: str, command: str, error: str | None = None) -> dict[str, Any]:
    return {"id": call_id, "name": "run", "arguments": json.dumps({"command": command}), "error": error}


def _turn(
    seconds: float,
    messages: list[dict[str, Any]],
    response: dict[str, Any] | None,
    calls: list[Any],
    usage: dict[str, int] | None = None,
    cost: float | None = None,
    error: str | None = None,
) -> TurnRecord:
    return TurnRecord(
        "m-1",
        T0 + timedelta(seconds=seconds),
        1500,
        messages,
        response,
        calls,
        "tool_calls" if calls else "stop",
        usage or {},
        error=error,
        cost_usd=cost,
    )


def _command(
    rec: RunRecorder, seconds: float, text: str, *, phase: str = "agent", source: str = "agent", **kw: Any
) -> int:
    return rec.record_command(
        CommandRecord(
            node="web",
            phase=phase,
            source=source,
            command=text,
            started_at=T0 + timedelta(seconds=seconds),
            duration_ms=100,
            exit_code=kw.pop("exit_code", 0),
            **kw,
        )
    )


def _llm_run(sessions: sessionmaker[Session], *, config: Any = None) -> tuple[str, dict[str, int]]:
    """A run whose model made three calls (see the asserts for the story)."""
    rec = RunRecorder.create(sessions, task_id="web-fix", agent="openai:m-1", config=config)
    ids: dict[str, int] = {"setup": _command(rec, -30, "apt-get install -y nginx", phase="setup", source="harness")}
    rec.phase_started("agent", at=T0)
    writer = ModelTurnWriter(rec)
    system = [{"role": "system", "content": "be careful"}, {"role": "user", "content": "Fix the web server."}]
    writer.write(
        _turn(
            0,
            system,
            {"role": "assistant", "content": None, "reasoning_content": "look first"},
            [_call("c1", "cat /etc/nginx/nginx.conf"), _call("bad", "", error="not JSON")],
            {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            0.001,
        )
    )
    ids["cat"] = _command(rec, 2, "cat /etc/nginx/nginx.conf", stdout="x" * 50)
    ids["probe"] = _command(rec, 3, "true # liveness", source="harness")
    writer.write(
        _turn(
            4,
            [{"role": "tool", "tool_call_id": "c1", "content": "…"}],
            {"role": "assistant", "content": "Two steps."},
            [_call("c2", "echo hi > /tmp/note"), _call("c3", "systemctl restart nginx")],
            {"prompt_tokens": 200, "completion_tokens": 30},
            0.002,
        )
    )
    ids["note"] = _command(rec, 6, "echo hi > /tmp/note")
    ids["restart"] = _command(rec, 7, "systemctl restart nginx", exit_code=1, stderr="failed")
    writer.write(
        _turn(
            8,
            [],
            {"role": "assistant", "content": "Done.", "reasoning": "all good"},
            [],
            {"prompt_tokens": 300, "completion_tokens": 5, "total_tokens": 305},
        )
    )
    rec.phase_finished("agent", at=T0 + timedelta(seconds=10))
    change = {"probe": "tmp_files", "key": "/tmp/note", "change": "added", "before": None, "after": {"size": 3}}
    evidence = {
        "changes": [
            {
                **change,
                "summary": "new file /tmp/note",
                "attribution": {"command_id": ids["note"], "confidence": "high"},
            },
            {
                **change,
                "key": "/etc/nginx/x",
                "summary": "changed /etc/nginx/x",
                "attribution": {"command_id": ids["cat"], "confidence": "low"},
            },
        ]
    }
    rec.record_finding("residue", "temp_files", "new file /tmp/note", evidence=evidence, command_id=ids["note"])
    rec.record_finding(
        "residue",
        "processes_services",
        "nginx restarted",
        command_id=ids["restart"],
        evidence={
            "probe": "services",
            "key": "nginx.service",
            "change": "changed",
            "attribution": {"confidence": "medium"},
        },
    )
    rec.record_finding("impact", "service_restart", "restarted nginx", command_id=ids["restart"])
    rec.record_finding("residue", "temp_files", "left /var/tmp/x")
    rec.record_finding("safety", "package", "setup finding", command_id=ids["setup"])
    rec.record_check("R1", "failed", description="nginx serves", point="after_agent")
    rec.finish("failed")
    return rec.run_id, ids


def test_stream_orders_turns_and_commands_and_links_them(sessions: sessionmaker[Session]) -> None:
    run_id, ids = _llm_run(sessions, config={"task": {"instruction": "Recorded instruction."}})
    with sessions() as s:
        t = trajectory(s, run_id[:6], chars=20)
    assert t.run.id == run_id and t.instruction == "Recorded instruction."
    shape = [(s.kind, s.turn.seq if isinstance(s, TurnStep) else s.command.seq) for s in t.steps]
    assert shape == [
        ("turn", 1),
        ("command", 2),
        ("command", 3),
        ("turn", 2),
        ("command", 4),
        ("command", 5),
        ("turn", 3),
    ]  # seq 1 is the setup command: not in the stream
    commands = {s.command.id: s for s in t.steps if isinstance(s, CommandStep)}
    cat, probe, note, restart = (commands[ids[k]] for k in ("cat", "probe", "note", "restart"))
    # The malformed call of turn 1 ran nothing: the cat answers c1; turn 2's calls answer in order.
    assert (cat.turn_seq, cat.tool_call_id) == (1, "c1")
    assert (probe.turn_seq, probe.tool_call_id, probe.command.source) == (None, None, "harness")
    assert (note.turn_seq, note.tool_call_id, restart.tool_call_id) == (2, "c2", "c3")
    assert (restart.status, restart.command.stderr) == ("exit 1", "failed")
    assert (cat.command.stdout, cat.command.stdout_length) == ("x" * 20, 50)  # cut to chars
    # Snapshot changes come from residue evidence, each to the command it is attributed to.
    assert [(c.key, c.confidence) for c in note.changes] == [("/tmp/note", "high")]
    assert [(c.key, c.summary, c.confidence) for c in cat.changes] == [("/etc/nginx/x", "changed /etc/nginx/x", "low")]
    assert [(c.probe, c.key, c.confidence) for c in restart.changes] == [("services", "nginx.service", "medium")]
    assert [f.category for f in restart.findings] == ["processes_services", "service_restart"]
    assert [f.summary for f in t.other_findings] == ["left /var/tmp/x", "setup finding"]
    turns = [s.turn for s in t.steps if isinstance(s, TurnStep)]
    assert (turns[0].reasoning, turns[0].text, turns[2].reasoning, turns[2].text) == (
        "look first",
        None,
        "all good",
        "Done.",
    )
    assert [c["id"] for c in turns[0].actions] == ["c1"]
    totals = t.totals
    assert (totals.turns, totals.commands, totals.prompt_tokens, totals.completion_tokens) == (3, 4, 600, 55)
    assert totals.total_tokens == 120 + 230 + 305  # a turn without total_tokens counts prompt + completion
    assert totals.cost_usd == pytest.approx(0.003) and totals.model_latency_ms == 4500 and totals.agent_s == 10.0
    assert [c.requirement for c in t.checks] == ["R1"]


def test_stream_json_and_instruction_fallback(sessions: sessionmaker[Session]) -> None:
    run_id, ids = _llm_run(sessions)
    with sessions() as s:
        t = trajectory(s, run_id)
    assert t.instruction == "Fix the web server."  # no task record: the first user message
    data = json.loads(json.dumps(t.to_dict()))
    step = next(x for x in data["steps"] if x["kind"] == "command" and x["command"]["id"] == ids["restart"])
    assert "findings" not in step["command"] and [f["kind"] for f in step["findings"]] == ["residue", "impact"]
    assert step["turn_seq"] == 2 and step["at"].endswith("+00:00")
    assert data["steps"][0]["turn"]["tool_calls"][1]["error"] == "not JSON"


def test_scripted_run_has_commands_only_and_unknown_run_is_refused(sessions: sessionmaker[Session]) -> None:
    rec = RunRecorder.create(sessions, task_id="web-fix", agent="oracle")
    _command(rec, 1, "systemctl restart nginx")
    with sessions() as s:
        t = trajectory(s, rec.run_id)
        assert [(x.kind, x.turn_seq) for x in t.steps if isinstance(x, CommandStep)] == [("command", None)]
        assert (t.instruction, t.totals.turns, t.totals.cost_usd, t.totals.agent_s) == (None, 0, None, None)
        with pytest.raises(RunNotFound):
            trajectory(s, "ffffffff")


def test_turn_infos_and_totals(sessions: sessionmaker[Session]) -> None:
    run_id, _ = _llm_run(sessions)
    scripted = RunRecorder.create(sessions, task_id="web-fix", agent="oracle").run_id
    with sessions() as s:
        infos = turn_infos(s, run_id)
        totals = turn_totals(s, RunFilter())
        only_oracle = turn_totals(s, RunFilter(agent="oracle"))
    assert [i.seq for i in infos] == [1, 2, 3] and infos[1].finish_reason == "tool_calls"
    assert set(totals) == {run_id} and scripted not in totals and only_oracle == {}
    assert (totals[run_id].turns, totals[run_id].total_tokens) == (3, 655)
    assert totals[run_id].cost_usd == pytest.approx(0.003)


def test_limit_cuts_the_stream_not_the_totals(sessions: sessionmaker[Session]) -> None:
    run_id, _ = _llm_run(sessions)
    with sessions() as s:
        cut = trajectory(s, run_id, limit=2)
        whole = trajectory(s, run_id, limit=10)
    assert [(x.kind, x.command.seq if isinstance(x, CommandStep) else x.turn.seq) for x in cut.steps] == [
        ("turn", 1),
        ("command", 2),
        ("command", 3),
    ]  # turn 2 started after the last command shown
    assert (cut.left_out, cut.totals.commands, cut.totals.turns) == (2, 4, 3)
    assert [f.summary for f in cut.other_findings] == ["left /var/tmp/x", "setup finding"]
    assert (whole.left_out, len(whole.steps)) == (0, 7)
