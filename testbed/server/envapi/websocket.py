"""OpenEnv's WebSocket session protocol on `/ws` (what `openenv-core`'s `EnvClient` and
`GenericEnvClient` speak).

Each connection is one session holding at most one episode at a time. Messages are JSON
text, one request, one answer, in order:

    {"type": "reset", "data": {task | scenario_id, image?, seed?, agent?}}
        → {"type": "observation", "data": {observation, reward, done}}
    {"type": "step", "data": ACTION}            (an action as `POST /v1/episodes/{id}/step` takes)
        → {"type": "observation", "data": {observation, reward, done}}
    {"type": "state"}  → {"type": "state", "data": STATE}   (episode_id null before a reset)
    {"type": "close"}  → the episode ends and the server closes the connection

A reset while the session's episode still runs ends that episode first (verified and torn
down like a DELETE); so does closing or dropping the connection. Failures are answered
`{"type": "error", "data": {"message", "code", "status"}}` and the session goes on: `code`
is one of OpenEnv's (`INVALID_JSON`, `UNKNOWN_TYPE`, `VALIDATION_ERROR`,
`CAPACITY_REACHED`, `EXECUTION_ERROR`) and `status` the HTTP status the same failure has
on the HTTP routes (404 unknown task, 409 done, …). A message over the body cap is a
`VALIDATION_ERROR`. The token is checked at the handshake (`guard`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from fastapi import HTTPException, WebSocket, WebSocketDisconnect
from pydantic import ValidationError

from testbed.server.envapi.episode import Episode
from testbed.server.envapi.episodes import EpisodeManager
from testbed.server.envapi.errors import EpisodeError
from testbed.server.envapi.operations import create_episode, http_error
from testbed.server.envapi.payloads import CreateEpisode, reset_payload, step_payload

log = logging.getLogger(__name__)

OPENENV_FIELDS = ("observation", "reward", "done")


def _error(message: str, code: str, status: int) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, "status": status}}


def _from_http(exc: HTTPException) -> dict[str, Any]:
    detail = exc.detail.get("error", exc.detail) if isinstance(exc.detail, dict) else exc.detail
    code = "CAPACITY_REACHED" if exc.status_code == 429 else "EXECUTION_ERROR"
    if exc.status_code == 422:
        code = "VALIDATION_ERROR"
    return _error(str(detail), code, exc.status_code)


def _observation(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "observation", "data": {k: payload[k] for k in OPENENV_FIELDS}}


class Session:
    """One connection's episode and the handling of its messages."""

    def __init__(self, manager: EpisodeManager, default_task: str | None) -> None:
        self.manager = manager
        self.default_task = default_task
        self.episode: Episode | None = None

    async def end(self) -> None:
        """End the session's episode (if any and not yet forgotten)."""
        episode, self.episode = self.episode, None
        if episode is not None and episode.id in self.manager.episodes:
            with contextlib.suppress(EpisodeError):
                await self.manager.delete(episode.id)

    async def reset(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            return _error("reset data must be an object", "VALIDATION_ERROR", 422)
        try:
            body = CreateEpisode.model_validate(data)
        except ValidationError as exc:
            return _error(str(exc.errors(include_url=False, include_input=False)), "VALIDATION_ERROR", 422)
        await self.end()
        self.episode = await create_episode(body, self.manager, self.default_task)
        return _observation(reset_payload(self.episode))

    async def step(self, data: Any) -> dict[str, Any]:
        if self.episode is None:
            return _error("no episode: send a reset first", "EXECUTION_ERROR", 409)
        try:
            outcome = await self.manager.step(self.episode.id, data)
        except EpisodeError as exc:
            raise http_error(exc) from exc
        return _observation(step_payload(self.episode, outcome))

    def state(self) -> dict[str, Any]:
        if self.episode is None:
            return {"type": "state", "data": {"episode_id": None, "step_count": 0, "done": False}}
        return {"type": "state", "data": self.episode.state()}

    async def answer(self, text: str, max_body: int) -> dict[str, Any] | None:
        """The answer to one message; None for `close`."""
        if len(text) > max_body:
            return _error(f"message over {max_body} bytes", "VALIDATION_ERROR", 413)
        try:
            message = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return _error(f"Invalid JSON: {str(exc)[:200]}", "INVALID_JSON", 400)
        kind = message.get("type") if isinstance(message, dict) else None
        try:
            if kind == "reset":
                return await self.reset(message.get("data") or {})
            if kind == "step":
                return await self.step(message.get("data"))
            if kind == "state":
                return self.state()
            if kind == "close":
                return None
        except HTTPException as exc:
            return _from_http(exc)
        return _error(f"Unknown message type: {str(kind)[:100]}", "UNKNOWN_TYPE", 400)


async def serve_websocket(ws: WebSocket, manager: EpisodeManager, default_task: str | None, max_body: int) -> None:
    """Serve one WebSocket session until the client closes it or goes away."""
    await ws.accept()
    session = Session(manager, default_task)
    try:
        while True:
            answer = await session.answer(await ws.receive_text(), max_body)
            if answer is None:
                break
            await ws.send_text(json.dumps(answer, default=str))
    except WebSocketDisconnect:
        pass
    finally:
        await session.end()
        with contextlib.suppress(RuntimeError):
            await ws.close()
