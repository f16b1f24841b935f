"""What the HTTP routes and the WebSocket session share: starting an episode and turning
episode and validation errors into HTTP errors (the WebSocket session reports the same
status in its error messages)."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException
from pydantic import ValidationError

from testbed.errors import InputError
from testbed.server.envapi.episode import Episode
from testbed.server.envapi.episodes import EpisodeManager
from testbed.server.envapi.errors import (
    BusyError,
    CapacityError,
    DoneError,
    EpisodeError,
    NotFoundError,
    StepTimeout,
)
from testbed.server.envapi.payloads import CreateEpisode


def http_error(exc: Exception) -> HTTPException:
    """The HTTP error of an episode or input error."""
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


def unprocessable(exc: ValidationError) -> HTTPException:
    """A 422 listing what was wrong (without echoing the input)."""
    return HTTPException(422, exc.errors(include_url=False, include_context=False, include_input=False))


async def create_episode(body: CreateEpisode, manager: EpisodeManager, default_task: str | None) -> Episode:
    """Start the episode `body` asks for (the server's default task when it names none)."""
    task = body.task_id or default_task
    if not task:
        raise HTTPException(400, {"error": "no task given (and the server has no default task)"})
    try:
        return await manager.create(task, body.image, body.seed, body.agent)
    except (EpisodeError, InputError) as exc:
        raise http_error(exc) from exc
