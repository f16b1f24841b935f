"""LLM agents and the environment API on real guests (3 guest boots).

1. `openai:MODEL` against a fake OpenAI-compatible server on loopback, scripted to solve
   `web-port-conflict` through tool calls: the run passes and its model turns are stored;
   scripted to refuse after one command: the run ends `failed` with the refusal.
2. The environment API (real Runner backend): reset, steps and state against a real guest;
   a request without the token is refused; the episode is a run like any other.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from testbed.db.engine import open_database
from testbed.db.models import Command, ModelTurn, Run
from testbed.model.taskload import load_task
from testbed.runner.request import RunRequest
from testbed.runner.run import Runner
from testbed.runtime import image_catalog, runtime
from testbed.server.envapi.app import create_app
from testbed.server.envapi.backend import open_runner_manager
from tests.unit.agents.openai_server import FakeOpenAI, text_reply, tool_call, tools_reply

from .conftest import ROOT, assert_clean

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]

TASK = "web-port-conflict"
SOLVE = (ROOT / "tasks" / TASK / "solution" / "solve.sh").read_text()
DIAGNOSE = "systemctl status nginx --no-pager; ss -Hltnp 'sport = :80'"


@pytest.mark.long  # the refusal test below keeps the OpenAI agent on a guest in every CI run
def test_openai_agent_solves_task(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    task = load_task(ROOT / "tasks" / TASK, images=set(image_catalog()))
    script = [
        tools_reply(tool_call(DIAGNOSE, call_id="c1"), content="Looking at nginx and port 80 first."),
        tools_reply(tool_call(SOLVE, call_id="c2")),
        tools_reply(tool_call("systemctl is-active nginx", call_id="c3")),
        text_reply("legacy-http held port 80; it is disabled and nginx runs. Done."),
    ]
    with FakeOpenAI(script) as fake:
        request = RunRequest(task, task.definition.images[0], f"openai:fake-llm?base_url={fake.base_url}")

        async def go() -> str:
            async with runtime() as rt:
                result = await Runner(request, rt, db).execute()
                assert result.outcome == "passed", result.error
                return result.run_id

        run_id = asyncio.run(go())
    assert len(fake.requests) == 4
    assert "active" in fake.requests[3]["messages"][-1]["content"]
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.agent == "openai:fake-llm" and run.outcome == "passed"
        turns = s.scalars(select(ModelTurn).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq)).all()
        assert [t.seq for t in turns] == [1, 2, 3, 4]
        assert turns[0].tool_calls[0]["arguments"] and turns[-1].tool_calls == []
        assert all(t.total_tokens == 107 for t in turns)
        agent_cmds = list(s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent")))
        assert agent_cmds == [DIAGNOSE, SOLVE, "systemctl is-active nginx"]
    assert_clean(vm_home)


def test_openai_agent_refusal_fails_the_run(vm_home: Path, tmp_path: Path) -> None:
    """A model that runs one command and then refuses: the run ends `failed` with the refusal
    as its reason (never `error`), its command and both model turns stored."""
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    task = load_task(ROOT / "tasks" / TASK, images=set(image_catalog()))
    script = [
        tools_reply(tool_call(DIAGNOSE, call_id="c1")),
        {"role": "assistant", "content": None, "refusal": "I won't change this system."},
    ]
    with FakeOpenAI(script) as fake:
        request = RunRequest(task, task.definition.images[0], f"openai:fake-llm?base_url={fake.base_url}")

        async def go() -> tuple[str, str, str | None]:
            async with runtime() as rt:
                result = await Runner(request, rt, db).execute()
                return result.run_id, result.outcome, result.error

        run_id, outcome, error = asyncio.run(go())
    assert outcome == "failed" and error == "agent failed: model refused: I won't change this system."
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "failed" and run.error == error
        turns = s.scalars(select(ModelTurn).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq)).all()
        assert len(turns) == 2 and turns[1].response["refusal"] == "I won't change this system."
        agent_cmds = list(s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent")))
        assert agent_cmds == [DIAGNOSE]
    assert_clean(vm_home)


def test_envapi_on_real_guest(vm_home: Path, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    token = "vm-test-token"
    auth = {"Authorization": f"Bearer {token}"}
    app = create_app(open_runner_manager(db, ROOT, max_episodes=1, step_timeout_s=120), token)
    with TestClient(app) as c:
        assert c.post("/reset", json={"task": TASK}).status_code == 401
        reset = c.post("/reset", json={"task": TASK, "seed": 3}, headers=auth)
        assert reset.status_code == 200, reset.text
        body = reset.json()
        eid, run_id = body["episode_id"], body["run_id"]
        assert body["observation"]["nodes"] == ["node"] and "nginx" in body["observation"]["instruction"].lower()
        assert c.post("/reset", json={"task": TASK}, headers=auth).status_code == 429  # cap of 1
        first = c.post(
            "/step",
            json={"episode_id": eid, "action": {"node": "node", "command": DIAGNOSE}},
            headers=auth,
        ).json()
        assert first["done"] is False and first["reward"] == pytest.approx(0.09)
        assert ":80" in first["observation"]["stdout"] and first["observation"]["exit_code"] is not None
        assert c.post("/step", json={"episode_id": eid, "action": {"command": "true"}}).status_code == 401
        fix = c.post(f"/v1/episodes/{eid}/step", json={"node": "node", "command": SOLVE}, headers=auth).json()
        assert fix["observation"]["exit_code"] == 0, fix
        state = c.get("/state", params={"episode_id": eid}, headers=auth).json()
        assert state["step_count"] == 2 and state["done"] is False and state["run_id"] == run_id
        final = c.post(f"/v1/episodes/{eid}/step", json={"done": True}, headers=auth).json()
        assert final["done"] is True and final["info"]["outcome"] == "passed", final
        assert final["reward"] == pytest.approx(1.0)
        assert c.post(f"/v1/episodes/{eid}/step", json={"command": "true"}, headers=auth).status_code == 409
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.state == "finished" and run.outcome == "passed"
        assert run.config["episode"]["return"] == pytest.approx(1.08)
        agent_cmds = list(s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent")))
        assert agent_cmds == [DIAGNOSE, SOLVE]
    assert_clean(vm_home)
