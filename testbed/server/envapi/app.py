"""The environment API over HTTP and WebSocket (FastAPI).

Routes (every one but `/health` needs the token: `Authorization: Bearer TOKEN` or
`?token=TOKEN`; see `guard`):

    POST   /v1/episodes               {task | scenario_id, image?, seed?, agent?}
                                      → 201 {episode_id, run_id, observation, reward, done}
    POST   /v1/episodes/{id}/step     {node?, command} | {action, parameters} | {done: true}
                                      → {observation, reward, done, info}
    GET    /v1/episodes/{id}          the episode's state
    GET    /v1/episodes               every episode's state
    DELETE /v1/episodes/{id}          end it (verify, tear down); its final state
    POST   /reset                     OpenEnv / sysadmin-game: {task | scenario_id, image?, seed?}
                                      → {observation, reward, done, episode_id, run_id}
    POST   /step                      {action: {...}} | {command, node?} | {done: true}
                                      → {observation, reward, done, info, episode_id}
    GET    /state                     the session's episode (or ?episode_id=); else every episode
    WS     /ws                        OpenEnv's session protocol (`websocket`)
    GET    /tasks (/v1/tasks)         the task list with splits (?split=train|heldout)
    GET    /schema                    JSON schemas of action, observation, state and reset
    GET    /health                    {"status": "healthy"} (no token)
    GET    /docs, /openapi.json       the API's documentation (token too)

Sessions: a reset (`/reset` or `/v1/episodes`) sets the cookie `testbed_episode` to the new
episode's id, so `POST /step {"command": ...}` and `GET /state` from the same client (a
`requests.Session`, a browser) address that episode. A client without cookies names it in
the body (`episode_id`), the query (`?episode_id=`) or the header `X-Episode-Id`; the first
of body, query, header, cookie that is present wins.

Bodies: at most 1 MiB (413 beyond, before the body is read). Reset bodies and episode
creation are validated (422 on a wrong type, an over-long field, two different tasks); an
unknown task is 404 — never the default task. Step bodies are decoded by the handler
itself, so a body that is not JSON is an invalid action of that episode (scored 0 and
recorded), not a 422. Errors: 400 bad input, 401 no/bad token, 404 unknown episode or task,
409 done or busy, 413 body too large, 422 malformed fields, 429 too many episodes, 502 the
run failed on the harness side, 504 a step timed out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request, Response, WebSocket
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import ValidationError

from testbed.server.envapi.catalog import SPLITS
from testbed.server.envapi.episode import Episode
from testbed.server.envapi.episodes import EpisodeManager
from testbed.server.envapi.errors import EpisodeError
from testbed.server.envapi.guard import MAX_BODY, Guard
from testbed.server.envapi.operations import create_episode, http_error, unprocessable
from testbed.server.envapi.payloads import (
    ACTION_BODY,
    RESET_BODY,
    CreateEpisode,
    decode_body,
    reset_payload,
    schema_document,
    step_payload,
)
from testbed.server.envapi.websocket import serve_websocket

OpenManager = Callable[[], AbstractAsyncContextManager[EpisodeManager]]
SESSION_COOKIE = "testbed_episode"
EPISODE_HEADER = "x-episode-id"


def _remember(response: Response, episode: Episode) -> None:
    response.set_cookie(SESSION_COOKIE, episode.id, httponly=True, samesite="strict", path="/")


def _session_episode(request: Request, body: Any = None) -> str | None:
    """The episode a request addresses: body, query, header, then cookie."""
    given = body.get("episode_id") if isinstance(body, dict) else None
    for candidate in (
        given,
        request.query_params.get("episode_id"),
        request.headers.get(EPISODE_HEADER),
        request.cookies.get(SESSION_COOKIE),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def create_app(
    open_manager: OpenManager, token: str | None, *, default_task: str | None = None, max_body: int = MAX_BODY
) -> Guard:
    """The API app behind its `Guard`. `open_manager` yields the episode manager for the
    app's lifetime (the real one opens libvirt; tests pass fakes). `token` None disables
    authentication (only for loopback use; `serve_command` refuses it elsewhere)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_manager() as manager:
            await manager.start()
            app.state.manager = manager
            try:
                yield
            finally:
                await manager.shutdown()

    app = FastAPI(title="testbed environment API", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.max_body = max_body
    _add_meta_routes(app)
    _add_episode_routes(app, default_task)
    _add_openenv_routes(app, default_task)
    return Guard(app, token, max_body)


def manager_of(request: Request | WebSocket) -> EpisodeManager:
    manager: EpisodeManager = request.app.state.manager
    return manager


async def _step(manager: EpisodeManager, episode_id: str, payload: Any) -> dict[str, Any]:
    try:
        episode = manager.get(episode_id)
        return step_payload(episode, await manager.step(episode_id, payload))
    except EpisodeError as exc:
        raise http_error(exc) from exc


def _add_meta_routes(app: FastAPI) -> None:
    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return schema_document()

    @app.get("/tasks")
    @app.get("/v1/tasks")
    async def tasks(request: Request, split: str | None = Query(default=None, max_length=20)) -> dict[str, Any]:
        if split is not None and split not in SPLITS:
            raise HTTPException(422, [{"loc": ["query", "split"], "msg": f"must be one of {', '.join(SPLITS)}"}])
        return manager_of(request).backend.list_tasks(split)

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        given = request.query_params.get("token")
        url = "/openapi.json" + (f"?token={given}" if given else "")
        return get_swagger_ui_html(openapi_url=url, title="testbed environment API")


def _add_episode_routes(app: FastAPI, default_task: str | None) -> None:
    @app.post("/v1/episodes", status_code=201)
    async def new_episode(body: CreateEpisode, request: Request, response: Response) -> dict[str, Any]:
        episode = await create_episode(body, manager_of(request), default_task)
        _remember(response, episode)
        return reset_payload(episode)

    @app.get("/v1/episodes")
    async def list_episodes(request: Request) -> dict[str, Any]:
        manager = manager_of(request)
        return {"episodes": [e.state() for e in manager.episodes.values()], "active": manager.active()}

    @app.post("/v1/episodes/{episode_id}/step", openapi_extra=ACTION_BODY)
    async def episode_step(episode_id: str, request: Request) -> dict[str, Any]:
        return await _step(manager_of(request), episode_id, decode_body(await request.body()))

    @app.get("/v1/episodes/{episode_id}")
    async def episode_state(episode_id: str, request: Request) -> dict[str, Any]:
        try:
            return manager_of(request).get(episode_id).state()
        except EpisodeError as exc:
            raise http_error(exc) from exc

    @app.delete("/v1/episodes/{episode_id}")
    async def delete_episode(episode_id: str, request: Request) -> dict[str, Any]:
        try:
            return (await manager_of(request).delete(episode_id)).state()
        except EpisodeError as exc:
            raise http_error(exc) from exc


def _add_openenv_routes(app: FastAPI, default_task: str | None) -> None:
    @app.post("/reset", openapi_extra=RESET_BODY)
    async def reset(request: Request, response: Response) -> dict[str, Any]:
        raw = await request.body()
        data = decode_body(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            raise HTTPException(422, [{"loc": ["body"], "msg": "the reset body must be a JSON object"}])
        try:
            body = CreateEpisode.model_validate(data)
        except ValidationError as exc:
            raise unprocessable(exc) from exc
        episode = await create_episode(body, manager_of(request), default_task)
        _remember(response, episode)
        return reset_payload(episode)

    @app.post("/step", openapi_extra=ACTION_BODY)
    async def openenv_step(request: Request) -> dict[str, Any]:
        data = decode_body(await request.body())
        episode_id = _session_episode(request, data)
        payload: Any = data
        if isinstance(data, dict):
            wrapped = data.get("action")
            payload = wrapped if isinstance(wrapped, dict) else {k: v for k, v in data.items() if k != "episode_id"}
        if episode_id is None:
            raise HTTPException(
                400, {"error": "no episode: reset first, or name it (body episode_id, ?episode_id=, X-Episode-Id)"}
            )
        return {**await _step(manager_of(request), episode_id, payload), "episode_id": episode_id}

    @app.get("/state")
    async def state(request: Request) -> JSONResponse:
        manager = manager_of(request)
        episode_id = _session_episode(request)
        if episode_id is None:
            return JSONResponse({"episodes": [e.state() for e in manager.episodes.values()]})
        try:
            return JSONResponse(manager.get(episode_id).state())
        except EpisodeError as exc:
            raise http_error(exc) from exc

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        await serve_websocket(ws, manager_of(ws), default_task, app.state.max_body)
