"""The `openai:MODEL` agent against a fake OpenAI-compatible server on loopback (no VMs).

`FakeOpenAI` (also used by tests/vm/test_envapi_vm.py) is a FastAPI app served by uvicorn in
a thread; it answers /v1/chat/completions from a script of replies and keeps every request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from sqlalchemy import select

from testbed.agents.base import Action, AgentBinding, AgentContext
from testbed.agents.openai_agent import OpenAIAgent, OpenAISettings, parse_bash_blocks
from testbed.agents.scripted import make_agent
from testbed.analysis import SafetyPolicy
from testbed.db.engine import open_database
from testbed.db.models import Command, ModelTurn
from testbed.db.recorder import RunRecorder
from testbed.errors import HarnessError, InputError
from testbed.guest.result import ExecResult
from testbed.runner.recording import CommandRecorder
from testbed.runner.session import AgentSession

Reply = dict[str, Any]


def tool_call(command: str, node: str = "node", call_id: str | None = None) -> dict[str, Any]:
    return {
        "id": call_id or f"call_{abs(hash((command, node))) % 10**8}",
        "type": "function",
        "function": {"name": "run", "arguments": json.dumps({"node": node, "command": command})},
    }


def tools_reply(*calls: dict[str, Any], content: str | None = None) -> Reply:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def text_reply(content: str) -> Reply:
    return {"role": "assistant", "content": content}


class FakeOpenAI:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (in a thread).

    Each request gets the next reply of `script` (a message dict, or a callable of the request
    body returning one, or an int HTTP status to fail with); after the script: a final text."""

    def __init__(self, script: list[Reply | int | Callable[[dict[str, Any]], Reply]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def complete(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            item = self.script.pop(0) if self.script else text_reply("All done.")
            if isinstance(item, int):
                from fastapi.responses import JSONResponse

                return JSONResponse({"error": {"message": "scripted failure"}}, status_code=item)
            message = item(body) if callable(item) else item
            return {
                "id": f"cmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100 + len(self.requests), "completion_tokens": 7, "total_tokens": 107},
            }

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


# --- a fake machine the agent repairs ---------------------------------------------------


class FakeNode:
    """Duck-typed `LabNode`: `broken` until `fix-service` runs."""
    access = "ssh"
    hypervisor = None

    def __init__(self, name: str, state: dict[str, Any]) -> None:
        self.name = name
        self.state = state
        self.image = SimpleNamespace(name="fake")
        self.domain, self.mgmt_ip = f"fake-{name}", "10.0.0.2"

    async def exec(
        self, command: str, *, timeout: float | None = 120.0, max_output: int = 65536, stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        self.state.setdefault("log", []).append((self.name, command))
        if command.strip() == "fix-service":
            self.state["fixed"] = True
            out, code = "fixed\n", 0
        elif command.strip() == "check-service":
            out, code = ("active\n", 0) if self.state.get("fixed") else ("failed\n", 3)
        else:
            out, code = f"ran: {command}\n", 0
        return ExecResult(command, code, out, "", datetime.now(UTC), 1)


CONTEXT = AgentContext("t", "Fix the service.", ["node", "web"], 20, 600.0, 60.0)


def drive(agent: OpenAIAgent, tmp_path: Path) -> tuple[str, Any, dict[str, Any]]:
    """Drive `agent` through a real AgentSession on fake nodes, recording into SQLite."""
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    recorder = RunRecorder.create(db, task_id="t", agent=agent.name)
    commands = CommandRecorder(recorder)
    agent.bind(AgentBinding(recorder, commands))
    state: dict[str, Any] = {}
    nodes = {n: FakeNode(n, state) for n in CONTEXT.nodes}
    session = AgentSession(nodes, commands, CONTEXT, SafetyPolicy.from_table({}))  # type: ignore[arg-type]
    asyncio.run(session.drive(agent))
    return recorder.run_id, db, state


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


def test_tool_calls_solve_and_turns_are_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    script: list[Any] = [
        tools_reply(tool_call("check-service", call_id="c1")),
        # two calls in one reply: both run in order, each answered by its own tool message
        tools_reply(tool_call("fix-service", call_id="c2"), tool_call("uptime", node="web", call_id="c3")),
        tools_reply(tool_call("check-service", call_id="c4")),
        text_reply("The service is active again. Done."),
    ]
    with FakeOpenAI(script) as fake:
        agent = OpenAIAgent.from_spec(f"openai:fake-model?base_url={fake.base_url}&api_key_env=FAKE_KEY&max_steps=10")
        run_id, db, state = drive(agent, tmp_path)
    assert state["fixed"] is True
    assert [c for _, c in state["log"]] == ["check-service", "fix-service", "uptime", "check-service"]
    assert ("web", "uptime") in state["log"]
    assert len(fake.requests) == 4
    first = fake.requests[0]
    assert first["model"] == "fake-model" and first["tools"][0]["function"]["name"] == "run"
    assert first["messages"][0]["role"] == "system" and "node, web" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "Fix the service."}
    assert fake.headers[0]["authorization"] == "Bearer sk-test"
    third = fake.requests[2]["messages"]
    tool_msgs = [m for m in third if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3"]
    assert "exit status: 3" in tool_msgs[0]["content"] and "failed" in tool_msgs[0]["content"]
    with db() as s:
        turns = s.scalars(select(ModelTurn).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq)).all()
        commands = s.scalars(select(Command).where(Command.run_id == run_id)).all()
        assert [t.seq for t in turns] == [1, 2, 3, 4]
        assert turns[0].messages[0]["role"] == "system" and len(turns[0].messages) == 2
        assert [m["role"] for m in turns[2].messages] == ["assistant", "tool", "tool"]
        assert turns[1].tool_calls[0]["name"] == "run" and len(turns[1].tool_calls) == 2
        assert turns[3].tool_calls == [] and turns[3].finish_reason == "stop"
        assert turns[0].prompt_tokens == 101 and turns[0].completion_tokens == 7 and turns[0].total_tokens == 107
        assert all(t.latency_ms >= 0 and t.model == "fake-model" for t in turns)
        assert len(commands) == 4 and all(c.source == "agent" for c in commands)


def test_bash_blocks_in_text(tmp_path: Path, no_key: None) -> None:
    script: list[Any] = [
        text_reply('Let me look.\n<bash>check-service</bash>\nand\n<bash node="web">hostname</bash>'),
        text_reply("Fixing: <bash node='node'>fix-service</bash>"),
        text_reply("Finished."),
    ]
    with FakeOpenAI(script) as fake:
        agent = OpenAIAgent(OpenAISettings("plain", base_url=fake.base_url, tools=False))
        run_id, db, state = drive(agent, tmp_path)
    assert state["log"] == [("node", "check-service"), ("web", "hostname"), ("node", "fix-service")]
    assert "tools" not in fake.requests[0]
    assert "Authorization" not in fake.headers[0] and "authorization" not in fake.headers[0]
    results = fake.requests[1]["messages"][-1]
    assert results["role"] == "user" and "$ check-service" in results["content"] and "$ hostname" in results["content"]
    with db() as s:
        turns = s.scalars(select(ModelTurn).where(ModelTurn.run_id == run_id).order_by(ModelTurn.seq)).all()
        assert len(turns) == 3 and turns[0].tool_calls[1] == {
            "id": None,
            "name": "bash",
            "node": "web",
            "command": "hostname",
        }


def test_bad_tool_arguments_are_answered_and_max_steps(tmp_path: Path, no_key: None) -> None:
    bad = {"id": "b1", "type": "function", "function": {"name": "run", "arguments": "{not json"}}
    script: list[Any] = [tools_reply(bad)] + [tools_reply(tool_call("uptime", call_id=f"u{i}")) for i in range(10)]
    with FakeOpenAI(script) as fake:
        agent = OpenAIAgent(OpenAISettings("m", base_url=fake.base_url, max_steps=3))
        _run_id, _db, state = drive(agent, tmp_path)
    assert len(fake.requests) == 3  # max_steps model calls
    assert fake.requests[1]["messages"][-1]["role"] == "tool"
    assert "not valid JSON" in fake.requests[1]["messages"][-1]["content"]
    assert len(state["log"]) == 2


def test_endpoint_retries_then_harness_error(tmp_path: Path, no_key: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("testbed.agents.openai_agent.RETRIES", 1)
    with FakeOpenAI([500, tools_reply(tool_call("fix-service")), 400]) as fake:
        agent = OpenAIAgent(OpenAISettings("m", base_url=fake.base_url))
        with pytest.raises(HarnessError, match="HTTP 400"):
            drive(agent, tmp_path)
    assert len(fake.requests) == 3
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    with db() as s:
        turns = s.scalars(select(ModelTurn).order_by(ModelTurn.seq)).all()
        assert turns[-1].error is not None and "HTTP 400" in turns[-1].error and turns[-1].response is None


def test_mock_transport_and_spec_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_OPENAI_BASE_URL", "http://example.invalid/v1/")
    settings = OpenAISettings.from_spec("openai:m1?temperature=0.5&max_tokens=99&tools=0&timeout=5")
    assert (settings.model, settings.base_url, settings.temperature, settings.max_tokens, settings.tools) == (
        "m1",
        "http://example.invalid/v1",
        0.5,
        99,
        False,
    )
    for bad in ("openai:", "openai:m?nope=1", "openai:m?temperature=hot", "openai:m?max_steps=0"):
        with pytest.raises(InputError):
            OpenAISettings.from_spec(bad)
    task = SimpleNamespace()
    assert isinstance(make_agent("openai:m1", task), OpenAIAgent)  # type: ignore[arg-type]

    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        message = tools_reply(tool_call("id")) if len(seen) == 1 else text_reply("done")
        return httpx.Response(200, json={"choices": [{"message": message, "finish_reason": "stop"}]})

    agent = OpenAIAgent(OpenAISettings("m", base_url="http://fake/v1"), transport=httpx.MockTransport(handler))

    async def go() -> list[Action | None]:
        await agent.start(CONTEXT)
        first = await agent.next_action(None)
        from testbed.agents.base import Observation

        second = await agent.next_action(Observation("node", "id", "uid=0(root)", "", 0))
        await agent.close()
        return [first, second]

    assert asyncio.run(go()) == [Action("node", "id"), None]
    assert seen[1]["messages"][-1]["role"] == "tool" and "uid=0(root)" in seen[1]["messages"][-1]["content"]
    assert agent.turns[0].usage == {}


def test_parse_bash_blocks() -> None:
    text = '<bash>ls\n</bash> x <bash node="db-1">a && b</bash><bash node=web >\n</bash>'
    assert parse_bash_blocks(text, "n0") == [Action("n0", "ls"), Action("db-1", "a && b")]
