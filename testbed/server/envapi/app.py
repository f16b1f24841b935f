"""The environment API over HTTP (FastAPI).

Routes (every one but `/health` needs `Authorization: Bearer TOKEN`):

    POST   /v1/episodes               {task, image?, seed?, agent?}
                                      → 201 {episode_id, run_id, observation, reward, done}
    POST   /v1/episodes/{id}/step     {node, command} | {action, parameters} | {done: true}
                                      → {observation, reward, done, info}
    GET    /v1/episodes/{id}          the episode's state
    GET    /v1/episodes               every episode's state
    DELETE /v1/episodes/{id}          end it (verify, tear down); its final state
    POST   /reset                     OpenEnv: {task?, image?, seed?} → {observation, reward, done, episode_id}
    POST   /step                      OpenEnv: {episode_id, action: {...}} (or ?episode_id=)
                                      → {observation, reward, done}
    GET    /state?episode_id=ID       OpenEnv: the episode's state
    GET    /health                    {"status": "healthy"}
    GET    /schema                    JSON schemas of action, observation and state

Step bodies are decoded by the handler itself, so a body that is not JSON is an invalid
action of that episode (scored 0 and recorded), not a bare 422. Errors: 400 bad input,
401 no/bad token, 404 unknown episode or task, 409 done or busy, 429 too many episodes,
502 the run failed on the harness side, 504 a step timed out.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from testbed.errors import InputError
from testbed.server.envapi.episodes import (
    BusyError,
    CapacityError,
    DoneError,
    Episode,
    EpisodeError,
    EpisodeManager,
    NotFoundError,
    StepOutcome,
    StepTimeout,
)

OpenManager = Callable[[], AbstractAsyncContextManager[EpisodeManager]]

OBSERVATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "node": {"type": "string"},
        "command": {"type": "string"},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "exit_code": {"type": ["integer", "null"]},
        "timed_out": {"type": "boolean"},
        "blocked": {"type": "boolean"},
        "message": {"type": ["string", "null"]},
        "error": {"type": "string"},
        "instruction": {"type": "string", "description": "reset only"},
        "nodes": {"type": "array", "items": {"type": "string"}, "description": "reset only"},
    },
}
FREE_ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "node": {"type": "string"},
        "command": {"type": "string"},
        "done": {"type": "boolean", "description": "true (without command) ends the episode"},
    },
}
BOUNDED_ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"action": {"type": "string"}, "parameters": {"type": "object"}, "done": {"type": "boolean"}},
    "description": "for tasks that declare [actions.NAME]; see the episode's reset observation for the list",
}
STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode_id": {"type": "string"},
        "run_id": {"type": ["string", "null"]},
        "task": {"type": "string"},
        "step_count": {"type": "integer"},
        "return": {"type": "number"},
        "done": {"type": "boolean"},
        "done_reason": {"type": ["string", "null"]},
        "outcome": {"type": ["string", "null"]},
        "checks": {"type": "array"},
    },
}


class CreateEpisode(BaseModel):
    task: str | None = None
    image: str | None = None
    seed: int | None = None
    agent: str | None = None  # a label for the client's policy, stored as the run's agent `env-api:LABEL`
    episode_id: str | None = None  # OpenEnv clients may send one; ignored (the server picks the id)


def reset_payload(episode: Episode) -> dict[str, Any]:
    """The first observation of an episode, in both API shapes."""
    context = episode.agent.context
    observation: dict[str, Any] = {
        "episode_id": episode.id,
        "task": episode.task.id,
        "instruction": episode.task.instruction,
        "nodes": episode.nodes,
        "limits": {
            "max_commands": context.max_commands if context else None,
            "agent_time_s": context.agent_time_s if context else None,
            "command_time_s": context.command_time_s if context else None,
        },
    }
    if episode.actions.bounded:
        observation["actions"] = {
            name: {"description": a.description, "parameters": a.parameters}
            for name, a in sorted(episode.actions.actions.items())
        }
    return {
        "episode_id": episode.id,
        "run_id": episode.run_id,
        "observation": observation,
        "reward": None,
        "done": False,
    }


def step_payload(outcome: StepOutcome) -> dict[str, Any]:
    return {"observation": outcome.observation, "reward": outcome.reward, "done": outcome.done, "info": outcome.info}


def _http_error(exc: Exception) -> HTTPException:
    run_id = getattr(exc, "run_id", None)
    detail: dict[str, Any] = {"error": str(exc)}
    if run_id:
        detail["run_id"] = run_id
    if isinstance(exc, NotFoundError):
        return HTTPException(404, detail)
    if isinstance(exc, CapacityError):
        return HTTPException(429, detail)
    if isinstance(exc, DoneError | BusyError):
        return HTTPException(409, detail)
    if isinstance(exc, StepTimeout):
        return HTTPException(504, detail)
    if isinstance(exc, InputError):
        return HTTPException(400, {"error": str(exc)})
    return HTTPException(502, detail)


def _decode(raw: bytes) -> Any:
    """The JSON body, or the raw text when it is not JSON (an invalid action)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def create_app(open_manager: OpenManager, token: str | None, *, default_task: str | None = None) -> FastAPI:
    """The API app. `open_manager` yields the episode manager for the app's lifetime (the
    real one opens libvirt; tests pass fakes). `token` None disables authentication (only
    for loopback use; `serve_command` refuses it elsewhere)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_manager() as manager:
            await manager.start()
            app.state.manager = manager
            try:
                yield
            finally:
                await manager.shutdown()

    app = FastAPI(title="testbed environment API", lifespan=lifespan)

    def authorize(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            raise HTTPException(401, {"error": "missing or invalid bearer token"}, {"WWW-Authenticate": "Bearer"})

    def manager_of(request: Request) -> EpisodeManager:
        manager: EpisodeManager = request.app.state.manager
        return manager

    auth = [Depends(authorize)]

    async def create(body: CreateEpisode, manager: EpisodeManager) -> Episode:
        task = body.task or default_task
        if not task:
            raise HTTPException(400, {"error": "no task given (and the server has no default task)"})
        try:
            return await manager.create(task, body.image, body.seed, body.agent)
        except (EpisodeError, InputError) as exc:
            raise _http_error(exc) from exc

    async def step(manager: EpisodeManager, episode_id: str, payload: Any) -> StepOutcome:
        try:
            return await manager.step(episode_id, payload)
        except EpisodeError as exc:
            raise _http_error(exc) from exc

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/schema", dependencies=auth)
    async def schema() -> dict[str, Any]:
        return {
            "action": {"oneOf": [FREE_ACTION_SCHEMA, BOUNDED_ACTION_SCHEMA]},
            "observation": OBSERVATION_SCHEMA,
            "state": STATE_SCHEMA,
        }

    @app.post("/v1/episodes", dependencies=auth, status_code=201)
    async def new_episode(body: CreateEpisode, request: Request) -> dict[str, Any]:
        return reset_payload(await create(body, manager_of(request)))

    @app.get("/v1/episodes", dependencies=auth)
    async def list_episodes(request: Request) -> dict[str, Any]:
        manager = manager_of(request)
        return {"episodes": [e.state() for e in manager.episodes.values()], "active": manager.active()}

    @app.post("/v1/episodes/{episode_id}/step", dependencies=auth)
    async def episode_step(episode_id: str, request: Request) -> dict[str, Any]:
        payload = _decode(await request.body())
        return step_payload(await step(manager_of(request), episode_id, payload))

    @app.get("/v1/episodes/{episode_id}", dependencies=auth)
    async def episode_state(episode_id: str, request: Request) -> dict[str, Any]:
        try:
            return manager_of(request).get(episode_id).state()
        except EpisodeError as exc:
            raise _http_error(exc) from exc

    @app.delete("/v1/episodes/{episode_id}", dependencies=auth)
    async def delete_episode(episode_id: str, request: Request) -> dict[str, Any]:
        try:
            return (await manager_of(request).delete(episode_id)).state()
        except EpisodeError as exc:
            raise _http_error(exc) from exc

    # --- OpenEnv shape -------------------------------------------------------------------

    @app.post("/reset", dependencies=auth)
    async def reset(request: Request) -> dict[str, Any]:
        raw = await request.body()
        data = _decode(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            raise HTTPException(400, {"error": "the reset body must be a JSON object"})
        body = CreateEpisode.model_validate({k: v for k, v in data.items() if k in CreateEpisode.model_fields})
        return reset_payload(await create(body, manager_of(request)))

    @app.post("/step", dependencies=auth)
    async def openenv_step(request: Request) -> dict[str, Any]:
        data = _decode(await request.body())
        episode_id = request.query_params.get("episode_id") or request.headers.get("x-episode-id")
        payload: Any = data
        if isinstance(data, dict):
            episode_id = data.get("episode_id") or episode_id
            wrapped = data.get("action")
            payload = wrapped if isinstance(wrapped, dict) else {k: v for k, v in data.items() if k != "episode_id"}
        if not isinstance(episode_id, str) or not episode_id:
            raise HTTPException(400, {"error": "episode_id is required (body, ?episode_id= or X-Episode-Id)"})
        out = await step(manager_of(request), episode_id, payload)
        return {**step_payload(out), "episode_id": episode_id}

    @app.get("/state", dependencies=auth)
    async def state(request: Request, episode_id: str | None = None) -> JSONResponse:
        manager = manager_of(request)
        if episode_id is None:
            return JSONResponse({"episodes": [e.state() for e in manager.episodes.values()]})
        try:
            return JSONResponse(manager.get(episode_id).state())
        except EpisodeError as exc:
            raise _http_error(exc) from exc

    return app
