"""What the environment API sends and accepts: schemas, the reset body, and the reset and
step payloads, shared by the HTTP routes and the WebSocket session.

Contracts:

- Every observation (reset and step, both API shapes) carries `done`, `reward` and
  `metadata` (episode id, run id, task, step number, and the step's info), as OpenEnv's
  `Observation` has them; the same `reward` and `done` are also at the top level of the
  payload, where OpenEnv's clients read them.
- A reset body names its task as `task` or `scenario_id` (sysadmin-game's name); naming two
  different tasks, a wrong type, or an over-long string is a `ValidationError` (422).
  Unknown keys are ignored (OpenEnv clients send their own, such as `episode_id`).
- `decode_body` never raises: a body that is not JSON (or nested too deeply to parse)
  comes back as its text, which the episode records as an invalid action.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from testbed.server.envapi.episode import Episode, StepOutcome

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
        "duration_ms": {"type": "integer"},
        "error": {"type": "string", "description": "an invalid action: what was wrong (scored 0)"},
        "instruction": {"type": "string", "description": "reset only"},
        "nodes": {"type": "array", "items": {"type": "string"}, "description": "reset only"},
        "limits": {"type": "object", "description": "reset only"},
        "actions": {"type": "object", "description": "reset only, tasks with named actions"},
        "done": {"type": "boolean", "description": "the episode has ended"},
        "reward": {"type": ["number", "null"], "description": "this step's reward (null at reset)"},
        "metadata": {
            "type": "object",
            "description": "episode_id, run_id, task, step, and the step's info (outcome and checks at the end)",
        },
    },
    "required": ["done", "reward", "metadata"],
}
FREE_ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "node": {"type": "string", "description": "optional on a single-node task"},
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
        "episode_id": {"type": ["string", "null"]},
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
RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "task id (GET /tasks lists them)"},
        "scenario_id": {"type": "string", "description": "the same, as sysadmin-game names it"},
        "image": {"type": "string"},
        "seed": {"type": "integer"},
        "agent": {"type": "string", "description": "a label for the policy, stored as the run's agent"},
    },
}

ACTION_BODY: dict[str, Any] = {
    "requestBody": {
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        FREE_ACTION_SCHEMA,
                        BOUNDED_ACTION_SCHEMA,
                        {
                            "type": "object",
                            "properties": {"episode_id": {"type": "string"}, "action": {"type": "object"}},
                        },
                    ]
                }
            }
        }
    }
}
"""OpenAPI request body of the step routes (decoded by the handler, so documented here)."""
RESET_BODY: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": RESET_SCHEMA}}}}
"""OpenAPI request body of `POST /reset`."""


def schema_document() -> dict[str, Any]:
    """What `/schema` answers."""
    return {
        "action": {"oneOf": [FREE_ACTION_SCHEMA, BOUNDED_ACTION_SCHEMA]},
        "observation": OBSERVATION_SCHEMA,
        "state": STATE_SCHEMA,
        "reset": RESET_SCHEMA,
    }


class CreateEpisode(BaseModel):
    """A reset: which task (`task` or `scenario_id`), image, seed, and the policy's label."""

    model_config = ConfigDict(extra="ignore")

    task: str | None = Field(default=None, max_length=200)
    scenario_id: str | None = Field(default=None, max_length=200)
    image: str | None = Field(default=None, max_length=200)
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)
    agent: str | None = Field(default=None, max_length=200)
    episode_id: str | None = Field(default=None, max_length=255)  # OpenEnv clients may send one; ignored

    @model_validator(mode="after")
    def _one_task(self) -> CreateEpisode:
        if self.task and self.scenario_id and self.task != self.scenario_id:
            raise ValueError("task and scenario_id name different tasks")
        return self

    @property
    def task_id(self) -> str | None:
        return self.task or self.scenario_id


def decode_body(raw: bytes) -> Any:
    """The JSON body, or the raw text when it is not JSON (an invalid action)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _metadata(episode: Episode, extra: dict[str, Any]) -> dict[str, Any]:
    return {"episode_id": episode.id, "run_id": episode.run_id, "task": episode.task.id, **extra}


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
    observation.update(done=False, reward=None, metadata=_metadata(episode, {"step": 0}))
    return {
        "episode_id": episode.id,
        "run_id": episode.run_id,
        "observation": observation,
        "reward": None,
        "done": False,
    }


def step_payload(episode: Episode, outcome: StepOutcome) -> dict[str, Any]:
    """One step's result: observation (with done, reward, metadata), reward, done, info."""
    observation = {
        **outcome.observation,
        "done": outcome.done,
        "reward": outcome.reward,
        "metadata": _metadata(episode, outcome.info),
    }
    return {"observation": observation, "reward": outcome.reward, "done": outcome.done, "info": outcome.info}
