"""OpenEnv's WebSocket protocol on `/ws`, spoken by the official `openenv-core` client
(`GenericEnvClient`, unmodified) against the app served by uvicorn on loopback, with the
fake lab behind it; protocol errors through Starlette's TestClient."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from openenv.core.generic_client import GenericEnvClient
from sqlalchemy import select
from starlette.websockets import WebSocketDisconnect

from testbed.db.models import Command, Run
from tests.unit.server.envapi.lab import LABS, TOKEN


def test_stock_openenv_client_resets_steps_and_reads_state(live_open: tuple[str, Any]) -> None:
    url, db = live_open
    with GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(task="fake-task", seed=3)
        assert first.done is False and first.reward is None
        assert first.observation["instruction"].startswith("The service is down")
        assert first.observation["done"] is False and first.observation["metadata"]["step"] == 0
        run_id = first.observation["metadata"]["run_id"]
        before = env.state()
        assert before["step_count"] == 0 and before["task"] == "fake-task" and before["seed"] == 3
        step = env.step({"command": "fix-service"})
        assert step.done is False and step.reward == pytest.approx(-0.01)
        assert step.observation["stdout"] == "ran: fix-service\n" and step.observation["exit_code"] == 0
        assert step.observation["metadata"]["episode_id"] == before["episode_id"]
        assert env.state()["step_count"] == 1
        final = env.step({"done": True})
        assert final.done is True and final.reward == pytest.approx(1.0)
        assert final.observation["metadata"]["outcome"] == "passed"
    with db() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.outcome == "passed"
        commands = s.scalars(select(Command.command).where(Command.run_id == run_id, Command.source == "agent"))
        assert list(commands) == ["fix-service"]


def test_stock_client_with_the_token_in_the_query(live: tuple[str, Any]) -> None:
    url, _db = live
    # the stock client appends "/ws" to the base URL: put the path and token first, and let
    # the trailing "&" turn its "/ws" into an empty query parameter
    with GenericEnvClient(base_url=f"{url}/ws?token={TOKEN}&").sync() as env:
        assert env.reset(scenario_id="fake-task").observation["nodes"] == ["node"]
    refused = GenericEnvClient(base_url=url).sync()
    with pytest.raises(ConnectionError):
        refused.connect()


def test_a_dropped_connection_ends_its_episode(live_open: tuple[str, Any]) -> None:
    url, db = live_open

    async def go() -> str:
        env = GenericEnvClient(base_url=url)
        await env.connect()
        result = await env.reset(task="fake-task")
        assert env._ws is not None
        await env._ws.close()  # no "close" message: the connection just goes away
        return str(result.observation["metadata"]["run_id"])

    run_id = asyncio.run(go())
    for _ in range(200):
        with db() as s:
            run = s.get(Run, run_id)
            if run is not None and run.state == "finished":
                break
        asyncio.run(asyncio.sleep(0.05))
    assert run is not None and run.state == "finished" and run.outcome == "failed"
    assert LABS[-1].down_called


def _ask(ws: Any, message: Any) -> dict[str, Any]:
    ws.send_text(message if isinstance(message, str) else json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.receive_text())
    return answer


def test_protocol_errors_keep_the_session(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    with c.websocket_connect("/ws", headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        assert _ask(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        assert _ask(ws, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert _ask(ws, {"type": "step", "data": {"command": "ls"}})["data"]["status"] == 409  # no reset yet
        assert _ask(ws, {"type": "state"})["data"]["episode_id"] is None
        unknown = _ask(ws, {"type": "reset", "data": {"scenario_id": "no-such-task"}})
        assert unknown["type"] == "error" and unknown["data"]["status"] == 404  # never the default task
        bad = _ask(ws, {"type": "reset", "data": {"task": ["fake-task"]}})
        assert bad["data"]["code"] == "VALIDATION_ERROR" and bad["data"]["status"] == 422
        first = _ask(ws, {"type": "reset", "data": {"task": "fake-task"}})
        second = _ask(ws, {"type": "reset", "data": {"task": "fake-task"}})  # ends the first episode
        assert first["type"] == second["type"] == "observation"
        assert LABS[0].down_called and not LABS[1].down_called
        assert _ask(ws, {"type": "step", "data": "not an object"})["data"]["reward"] == 0.0  # invalid action, scored 0
        assert _ask(ws, "x" * (2**20 + 1))["data"]["status"] == 413
        ws.send_text(json.dumps({"type": "close"}))
        with pytest.raises(WebSocketDisconnect):
            ws.receive_text()
    assert LABS[1].down_called


def test_handshake_without_the_token_is_refused(client: tuple[TestClient, Any]) -> None:
    c, _db = client
    with pytest.raises(WebSocketDisconnect), c.websocket_connect("/ws"):
        pass
    with c.websocket_connect(f"/ws?token={TOKEN}") as ws:
        assert _ask(ws, {"type": "state"})["type"] == "state"
