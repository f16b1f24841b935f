"""`EnvClient` and `AsyncEnvClient` against the app served by uvicorn on loopback (fake lab)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select

from testbed.client import AsyncEnvClient, EnvClient, EnvError
from testbed.db.models import Command, Run
from tests.unit.server.envapi.lab import LABS, TOKEN


def test_sync_episode_end_to_end(live: tuple[str, Any]) -> None:
    url, db = live
    with EnvClient(url, TOKEN) as env:
        assert [t["id"] for t in env.tasks()] == ["bounded-task", "fake-task", "short-task"]
        assert env.tasks("heldout") == []
        first = env.reset("fake-task", seed=5, agent="ppo")
        assert "The service is down" in first.text and "Nodes: node" in first.text and first.reward is None
        look = env.step("systemctl status foo")
        assert look.reward == pytest.approx(0.09) and "exit status: 0" in look.text and "ran: systemctl" in look.text
        env.step("fix-service", node="node")
        assert env.state()["step_count"] == 2
        final = env.finish()
        assert final.done and final.info["outcome"] == "passed" and env.episode is not None
        assert env.episode.total == pytest.approx(1.08)
        run_id = final.info["run_id"]
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.agent == "env-api:ppo" and run.config["episode"]["seed"] == 5
        cmds = s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent"))
        assert list(cmds) == ["systemctl status foo", "fix-service"]


def test_errors_and_reset_ends_the_previous_episode(live: tuple[str, Any]) -> None:
    url, _db = live
    with pytest.raises(EnvError) as refused:
        EnvClient(url, "wrong").tasks()
    assert refused.value.status == 401
    env = EnvClient(url, TOKEN)
    with pytest.raises(EnvError) as missing:
        env.reset("no-such-task")
    assert missing.value.status == 404
    with pytest.raises(RuntimeError, match="reset"):
        env.step("ls")
    env.reset("fake-task")
    env.reset("fake-task")  # the first episode is ended (torn down), not left running
    assert LABS[0].down_called and not LABS[1].down_called
    env.close()
    assert LABS[1].down_called


def test_named_actions(live: tuple[str, Any]) -> None:
    url, _db = live
    with EnvClient(url, TOKEN) as env:
        env.reset("bounded-task")
        ok = env.step(action="restart", parameters={"unit": "nginx"})
        assert ok.observation["command"] == "systemctl restart nginx"
        bad = env.step("fix-service")
        assert bad.reward == 0.0 and "bounded actions only" in bad.text


def test_async_client(live: tuple[str, Any]) -> None:
    url, _db = live

    async def go() -> tuple[float, str]:
        async with AsyncEnvClient(url, TOKEN) as env:
            assert len(await env.tasks()) == 3
            await env.reset("fake-task")
            await env.step("fix-service")
            assert (await env.state())["step_count"] == 1
            final = await env.finish()
            assert env.episode is not None
            return env.episode.total, str(final.info["outcome"])

    total, outcome = asyncio.run(go())
    assert outcome == "passed" and total == pytest.approx(0.99)


def test_no_token_server(live_open: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _db = live_open
    monkeypatch.delenv("TESTBED_ENV_TOKEN", raising=False)
    monkeypatch.setenv("TESTBED_ENV_URL", url)
    with EnvClient() as env:
        assert env.settings.token is None and "Authorization" not in env.http.headers
        assert len(env.tasks()) == 3
