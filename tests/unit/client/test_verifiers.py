"""The verifiers hooks driven as `MultiTurnEnv.rollout` drives them (verifiers is not
installed: a minimal base class stands in for `vf.MultiTurnEnv`, and the loop below is
its rollout's: setup_state, then env_response after each model turn until
`final_env_response` is set)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from testbed.client.verifiers import RUN_TOOL, EpisodeEnvMixin, episode_reward
from tests.unit.server.envapi.lab import TOKEN


class MultiTurnBase:
    def __init__(self, max_turns: int = 10) -> None:
        self.max_turns = max_turns

    async def setup_state(self, state: dict[str, Any]) -> dict[str, Any]:
        state["base_setup"] = True
        return state


class Env(EpisodeEnvMixin, MultiTurnBase):
    pass


def call(command: str, call_id: str) -> dict[str, Any]:
    args = json.dumps({"command": command})
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": args}}


async def rollout(env: Env, replies: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    state = await env.setup_state({"info": {"task": "fake-task"}, "prompt": []})
    messages: list[dict[str, Any]] = []
    for reply in replies:
        messages.append({"role": "assistant", **reply})
        messages += await env.env_response(messages, state)
        if state.get("final_env_response") is not None:
            break
    return state, messages


def test_tool_calls_blocks_and_finish(live: tuple[str, Any]) -> None:
    url, _db = live
    env = Env(testbed_url=url, testbed_token=TOKEN, max_turns=5)
    replies = [
        {"content": None, "tool_calls": [call("systemctl status x", "c1"), {"id": "c2", "function": {"name": "rm"}}]},
        {"content": '<bash node="node">fix-service</bash>'},
        {"content": "Fixed."},
    ]

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]], float]:
        state, messages = await rollout(env, replies)
        return state, messages, await episode_reward(state)

    state, messages, reward = asyncio.run(go())
    assert state["base_setup"] is True and "The service is down" in state["testbed"]["instruction"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["c1", "c2"]
    assert "ran: systemctl status x" in tools[0]["content"] and tools[1]["content"].startswith("error: unknown tool")
    assert any(m["role"] == "user" and "ran: fix-service" in m["content"] for m in messages)
    assert state["final_env_response"] == []  # the reply that asked for nothing ended the episode
    assert reward == pytest.approx(1.08)
    assert RUN_TOOL["function"]["name"] == "run"
