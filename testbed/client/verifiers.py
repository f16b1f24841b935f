"""The hooks of a `verifiers` multi-turn environment for testbed episodes.

`verifiers`' `MultiTurnEnv.rollout` calls `setup_state(state)` once, then, after every model
turn, `env_response(messages, state)` for the messages that answer it, until a stop
condition holds (`state["final_env_response"]` set is one). Mix `EpisodeEnvMixin` in
before `vf.MultiTurnEnv`:

    import verifiers as vf
    from testbed.client.verifiers import EpisodeEnvMixin, episode_reward

    class Env(EpisodeEnvMixin, vf.MultiTurnEnv):
        pass

    env = Env(testbed_url="http://127.0.0.1:8090", testbed_token="T", dataset=ds,
              rubric=vf.Rubric(funcs=[episode_reward]), oai_tools=[RUN_TOOL])

Contracts:

- `setup_state` starts an episode of the row's task (`state["info"]["task"]`, else
  `state["answer"]`) and keeps the client in `state["testbed"]`.
- `env_response` runs the last assistant message's `run` tool calls (the tool of testbed's
  own LLM agent, `RUN_TOOL`) or, without tool calls, its `<bash node="…">…</bash>` blocks, in
  order, and answers with one `tool` message per call (one `user` message for blocks). A
  reply that asks for nothing finishes the episode and sets `state["final_env_response"]`;
  so does the episode ending by itself (a limit, a blocked command).
- `episode_reward(state)` ends the episode if it still runs and returns its return.
"""

from __future__ import annotations

from typing import Any

from testbed.agents.openai_agent.actions import RUN_TOOL, parse_bash_blocks, parse_tool_call
from testbed.client.http import AsyncEnvClient

__all__ = ["RUN_TOOL", "EpisodeEnvMixin", "episode_reward"]


class EpisodeEnvMixin:
    """Mixin of `setup_state` and `env_response` for a `vf.MultiTurnEnv` subclass."""

    def __init__(self, *args: Any, testbed_url: str | None = None, testbed_token: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.testbed_url = testbed_url
        self.testbed_token = testbed_token

    async def setup_state(self, state: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        info = state.get("info") or {}
        task = info.get("task") or state.get("answer")
        if not task:
            raise ValueError("no task: give each row info.task (or answer)")
        client = AsyncEnvClient(self.testbed_url, self.testbed_token)
        first = await client.reset(str(task), seed=info.get("seed"), agent="verifiers")
        state["testbed"] = {"client": client, "nodes": first.observation.get("nodes") or [], "instruction": first.text}
        parent = getattr(super(), "setup_state", None)
        return await parent(state, **kwargs) if parent is not None else state

    async def env_response(self, messages: list[dict[str, Any]], state: dict[str, Any], **kwargs: Any) -> list[Any]:
        client: AsyncEnvClient = state["testbed"]["client"]
        last: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "assistant"), {})
        default_node = (state["testbed"]["nodes"] or [""])[0]
        calls = [dict(c) for c in last.get("tool_calls") or []]
        replies: list[dict[str, Any]] = []
        for n, call in enumerate(calls):
            parsed = parse_tool_call(call, default_node, f"call_{len(messages)}_{n}")
            text = f"error: {parsed.problem}"
            if parsed.action is not None and not _ended(client):
                text = (await client.step(parsed.action.command, parsed.action.node)).text
            replies.append({"role": "tool", "tool_call_id": parsed.call_id, "content": text})
        blocks = [] if calls else parse_bash_blocks(str(last.get("content") or ""), default_node)
        outputs = [(await client.step(b.command, b.node)).text for b in blocks if not _ended(client)]
        if outputs:
            replies.append({"role": "user", "content": "\n\n".join(outputs)})
        if not calls and not blocks:
            await _finish(client)
        if _ended(client):
            state["final_env_response"] = replies
        return replies


def _ended(client: AsyncEnvClient) -> bool:
    return client.episode is None or client.episode.done


async def _finish(client: AsyncEnvClient) -> None:
    if not _ended(client):
        await client.finish()


async def episode_reward(state: dict[str, Any], **kwargs: Any) -> float:
    """The episode's return (ending it first if it still runs)."""
    client: AsyncEnvClient = state["testbed"]["client"]
    await _finish(client)
    total = client.episode.total if client.episode is not None else 0.0
    await client.http.aclose()
    return total
