"""The `openai:MODEL` agent end to end: a real `AgentSession` on fake nodes, the official
SDK over HTTP to `FakeOpenAI` on loopback, model turns recorded into SQLite (no VMs)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import AgentBinding, AgentContext
from testbed.agents.openai_agent import OpenAIAgent
from testbed.agents.openai_agent.agent import CANCELLED
from testbed.agents.openai_agent.context import ELIDED_OUTPUT
from testbed.agents.openai_agent.prompt import TRUNCATED_REPLY
from testbed.agents.scripted import make_agent
from testbed.analysis import SafetyPolicy
from testbed.db.engine import open_database
from testbed.db.models import Command, ModelTurn
from testbed.db.recorder import RunRecorder
from testbed.errors import HarnessError
from testbed.runner.recording import CommandRecorder
from testbed.runner.session import AgentSession, SessionStats
from testbed.testing.nodes import ScriptedNode
from tests.unit.agents.openai_server import Completion, Failure, FakeOpenAI, text_reply, tool_call, tools_reply


class FakeNode(ScriptedNode):
    """`broken` until `fix-service` runs; `big N` prints N bytes."""

    def __init__(self, name: str, state: dict[str, Any]) -> None:
        super().__init__(name, image="fake", mgmt_ip="10.0.0.2")
        self.state = state

    async def answer(self, command: str) -> tuple[str, int]:
        self.state.setdefault("log", []).append((self.name, command))
        if command.strip() == "fix-service":
            self.state["fixed"] = True
            return "fixed\n", 0
        if command.strip() == "check-service":
            return ("active\n", 0) if self.state.get("fixed") else ("failed\n", 3)
        if command.startswith("big"):
            return command + ":" + "z" * int(command.split()[1]), 0
        return f"ran: {command}\n", 0


CONTEXT = AgentContext("t", "Fix the service.", ["node", "web"], 30, 600.0, 60.0)


class Drive:
    """One agent driven through a real AgentSession, recording into SQLite."""

    def __init__(self, agent: OpenAIAgent, tmp_path: Path, context: AgentContext = CONTEXT) -> None:
        self.db: sessionmaker[Session] = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
        recorder = RunRecorder.create(self.db, task_id="t", agent=agent.name)
        self.run_id = recorder.run_id
        commands = CommandRecorder(recorder)
        agent.bind(AgentBinding(recorder, commands))
        self.state: dict[str, Any] = {}
        nodes = {n: FakeNode(n, self.state) for n in context.nodes}
        session = AgentSession(nodes, commands, context, SafetyPolicy.from_table({}))  # type: ignore[arg-type]
        self.stats: SessionStats = asyncio.run(session.drive(agent))

    def turns(self) -> list[ModelTurn]:
        with self.db() as s:
            return list(s.scalars(select(ModelTurn).where(ModelTurn.run_id == self.run_id).order_by(ModelTurn.seq)))

    def commands(self) -> list[Command]:
        with self.db() as s:
            return list(s.scalars(select(Command).where(Command.run_id == self.run_id)))


def agent_for(fake: FakeOpenAI, options: str = "") -> OpenAIAgent:
    agent = make_agent(f"openai:m?base_url={fake.base_url}{options}", SimpleNamespace())  # type: ignore[arg-type]
    assert isinstance(agent, OpenAIAgent)
    return agent


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


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
        run = Drive(agent_for(fake, "&api_key_env=FAKE_KEY&max_steps=10&price_in=1&price_out=2"), tmp_path)
    assert run.stats.ended_by == "agent" and run.state["fixed"] is True
    assert [c for _, c in run.state["log"]] == ["check-service", "fix-service", "uptime", "check-service"]
    assert ("web", "uptime") in run.state["log"]
    assert len(fake.requests) == 4
    first = fake.requests[0]
    assert first["model"] == "m" and first["tools"][0]["function"]["name"] == "run"
    assert first["messages"][0]["role"] == "system" and "node, web" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "Fix the service."}
    assert fake.received[0].headers["authorization"] == "Bearer sk-test"
    third = fake.requests[2]["messages"]
    tool_msgs = [m for m in third if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3"]
    assert "exit status: 3" in tool_msgs[0]["content"] and "failed" in tool_msgs[0]["content"]
    turns = run.turns()
    assert [t.seq for t in turns] == [1, 2, 3, 4]
    assert turns[0].messages[0]["role"] == "system" and len(turns[0].messages) == 2
    assert [m["role"] for m in turns[2].messages] == ["assistant", "tool", "tool"]
    assert turns[1].tool_calls[0]["name"] == "run" and len(turns[1].tool_calls) == 2
    assert turns[3].tool_calls == [] and turns[3].finish_reason == "stop"
    assert turns[0].prompt_tokens == 101 and turns[0].completion_tokens == 7 and turns[0].total_tokens == 107
    assert turns[0].cost_usd == pytest.approx((101 * 1 + 7 * 2) / 1e6)
    assert all(t.latency_ms >= 0 and t.model == "m" and t.error is None for t in turns)
    commands = run.commands()
    assert len(commands) == 4 and all(c.source == "agent" for c in commands)


def test_bash_blocks_in_text(tmp_path: Path) -> None:
    script: list[Any] = [
        text_reply('Let me look.\n<bash>check-service</bash>\nand\n<bash node="web">hostname</bash>'),
        text_reply("Fixing: <bash node='node'>fix-service</bash>"),
        text_reply("Finished."),
    ]
    with FakeOpenAI(script) as fake:
        run = Drive(agent_for(fake, "&tools=0"), tmp_path)
    assert run.state["log"] == [("node", "check-service"), ("web", "hostname"), ("node", "fix-service")]
    assert "tools" not in fake.requests[0]
    results = fake.requests[1]["messages"][-1]
    assert results["role"] == "user" and "$ check-service" in results["content"] and "$ hostname" in results["content"]
    turns = run.turns()
    assert len(turns) == 3
    assert turns[0].tool_calls[1] == {"id": None, "name": "bash", "node": "web", "command": "hostname"}


def test_sampling_parameters_are_sent_only_when_given(tmp_path: Path) -> None:
    with FakeOpenAI([text_reply("nothing to do")]) as fake:
        Drive(agent_for(fake), tmp_path / "a")
    sent = fake.requests[0]
    for name in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "reasoning_effort"):
        assert name not in sent, name
    with FakeOpenAI([text_reply("nothing to do")]) as fake:
        Drive(agent_for(fake, "&temperature=0&reasoning_effort=high&max_completion_tokens=256&seed=3"), tmp_path / "b")
    sent = fake.requests[0]
    assert (sent["temperature"], sent["reasoning_effort"], sent["max_completion_tokens"], sent["seed"]) == (
        0, "high", 256, 3,
    )  # fmt: skip
    assert "top_p" not in sent and "max_tokens" not in sent


def test_reasoning_is_stored_but_not_sent_back(tmp_path: Path) -> None:
    script: list[Any] = [
        {**tools_reply(tool_call("uptime", call_id="r1")), "reasoning_content": "Check the load first."},
        {"role": "assistant", "content": "Done.", "reasoning": "It is fine."},
    ]
    with FakeOpenAI(script) as fake:
        run = Drive(agent_for(fake), tmp_path)
    turns = run.turns()
    assert turns[0].response["reasoning_content"] == "Check the load first."
    assert turns[1].response["reasoning"] == "It is fine."
    sent_back = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"]
    assert sent_back == [{"role": "assistant", "content": None, "tool_calls": script[0]["tool_calls"]}]


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"role": "assistant", "content": None, "refusal": "I can't help with that."},
         "model refused: I can't help with that."),
        (Completion(text_reply("partial"), finish_reason="content_filter"), "content filter"),
    ],
)  # fmt: skip
def test_a_refusal_ends_the_run_as_the_agents_failure(tmp_path: Path, item: Any, reason: str) -> None:
    with FakeOpenAI([tools_reply(tool_call("uptime")), item]) as fake:
        run = Drive(agent_for(fake), tmp_path)
    assert run.stats.ended_by == "agent_failure" and run.stats.failure is not None and reason in run.stats.failure
    turns = run.turns()
    assert len(turns) == 2 and turns[1].response is not None and turns[1].error is None  # the reply is stored


def test_a_context_length_error_ends_the_run_as_the_agents_failure(tmp_path: Path) -> None:
    overflow = Failure(400, {"message": "This model's maximum context length is 4096 tokens.",
                             "type": "invalid_request_error", "code": "context_length_exceeded"})  # fmt: skip
    with FakeOpenAI([tools_reply(tool_call("uptime")), overflow]) as fake:
        run = Drive(agent_for(fake), tmp_path)
    assert run.stats.ended_by == "agent_failure"
    assert run.stats.failure is not None and run.stats.failure.startswith("context length exceeded")
    failed = run.turns()[-1]
    assert failed.response is None and failed.error is not None and "maximum context length" in failed.error
    assert [m["role"] for m in failed.messages] == ["assistant", "tool"]  # what was added since the last turn


def test_malformed_replies_in_a_row_end_the_run(tmp_path: Path) -> None:
    bad = {"id": "b1", "type": "function", "function": {"name": "run", "arguments": "{not json"}}
    wrong_tool = {"id": "b2", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    script: list[Any] = [tools_reply(bad), tools_reply(wrong_tool), Completion(text_reply("long…"), "length")]
    with FakeOpenAI(script) as fake:
        run = Drive(agent_for(fake), tmp_path)
    assert run.stats.ended_by == "agent_failure" and run.stats.failure is not None
    assert "3 malformed replies in a row" in run.stats.failure and "cut off" in run.stats.failure
    assert fake.requests[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "b1", "content": fake.requests[1]["messages"][-1]["content"],
    }  # fmt: skip
    assert "not valid JSON" in fake.requests[1]["messages"][-1]["content"]
    assert "unknown tool 'shell'" in fake.requests[2]["messages"][-1]["content"]
    turns = run.turns()
    assert len(turns) == 3 and turns[0].tool_calls[0]["error"].startswith("arguments are not valid JSON")
    assert "log" not in run.state  # nothing ran


def test_a_good_reply_resets_the_malformed_count(tmp_path: Path) -> None:
    bad = {"id": "b1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    script: list[Any] = [
        tools_reply(bad),
        Completion(text_reply("I will now explain at great length"), "length"),
        tools_reply(tool_call("uptime", call_id="g1")),
        tools_reply(bad),
        tools_reply(bad),
        text_reply("Done."),
    ]
    with FakeOpenAI(script) as fake:
        run = Drive(agent_for(fake, "&max_malformed=3"), tmp_path)
    assert run.stats.ended_by == "agent" and run.state["log"] == [("node", "uptime")]
    assert fake.requests[2]["messages"][-1] == {"role": "user", "content": TRUNCATED_REPLY}
    assert len(fake.requests) == 6


def test_max_steps_ends_the_agent_phase(tmp_path: Path) -> None:
    script: list[Any] = [tools_reply(tool_call("uptime", call_id=f"u{i}")) for i in range(10)]
    with FakeOpenAI(script) as fake:
        run = Drive(agent_for(fake, "&max_steps=3"), tmp_path)
    assert len(fake.requests) == 3 and len(run.state["log"]) == 3 and run.stats.ended_by == "agent"


def test_endpoint_down_is_a_harness_error_and_the_failed_call_is_stored(tmp_path: Path) -> None:
    script: list[Any] = [tools_reply(tool_call("fix-service")), 500, 502]
    with FakeOpenAI(script) as fake, pytest.raises(HarnessError, match="HTTP 502"):
        Drive(agent_for(fake, "&max_retries=1"), tmp_path)
    assert len(fake.requests) == 3
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    with db() as s:
        turns = s.scalars(select(ModelTurn).order_by(ModelTurn.seq)).all()
        assert len(turns) == 2 and turns[0].error is None
        assert turns[1].error is not None and "HTTP 502" in turns[1].error and turns[1].response is None


def test_the_conversation_is_kept_inside_the_context_window(tmp_path: Path) -> None:
    def big(i: int) -> Any:
        def reply(body: dict[str, Any]) -> Completion:  # reports what a tokenizer of ~4 chars per token would
            prompt = sum(len(m.get("content") or "") for m in body["messages"]) // 4
            usage = {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}
            return Completion(tools_reply(tool_call(f"big {3000 + i}", call_id=f"k{i}")), usage=usage)

        return reply

    with FakeOpenAI([big(i) for i in range(8)]) as fake:
        run = Drive(agent_for(fake, "&context_tokens=2048&max_tokens=256"), tmp_path)
    assert run.stats.ended_by == "agent" and len(run.state["log"]) == 8
    last = fake.requests[-1]["messages"]
    assert last[0]["role"] == "system" and last[1] == {"role": "user", "content": "Fix the service."}
    tools = [m for m in last if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("node: node") and "big 3007:" in tools[-1]["content"]  # latest whole
    assert ELIDED_OUTPUT in [m["content"] for m in last]
    for request in fake.requests:  # never an orphan: every tool message answers a call just before it
        calls = {c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        assert all(m["tool_call_id"] in calls for m in request["messages"] if m["role"] == "tool")
        assert sum(len(m.get("content") or "") for m in request["messages"]) / 4 < 2048 - 256  # inside the window
    stored = [m for t in run.turns() for m in t.messages if m["role"] == "tool"]
    assert len(stored) == 8 and ELIDED_OUTPUT not in [m["content"] for m in stored]  # turns keep the originals


def test_a_call_cut_short_by_the_agent_time_limit_is_stored(tmp_path: Path) -> None:
    def slow(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(2.0)
        return text_reply("too late")

    with FakeOpenAI([slow]) as fake:
        run = Drive(agent_for(fake), tmp_path, AgentContext("t", "Fix it.", ["node"], 30, 0.5, 60.0))
    assert run.stats.ended_by == "time_limit"
    turns = run.turns()
    assert len(turns) == 1 and turns[0].error == CANCELLED and turns[0].response is None
