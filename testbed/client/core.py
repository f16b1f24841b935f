"""What the sync and async clients share: settings, request bodies, answers, errors.

Contracts:

- `ClientSettings.resolve(base_url, token)`: the URL (default `$TESTBED_ENV_URL`, else
  `http://127.0.0.1:8090`) and the token (default `$TESTBED_ENV_TOKEN`; None sends none,
  for a `--no-token` server).
- `StepResult` is one answer of the server: the observation (with `done`, `reward`,
  `metadata`), the step's reward (None at reset), done, and `info`; `text` renders it the
  way testbed's own LLM agent shows a command result to its model.
- `Episode` tracks the client's current episode: its id, rewards so far, done. The clients
  drive one episode at a time; `reset` ends a previous one that is still running.
- Every non-2xx answer raises `EnvError(status, message, run_id)`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from testbed.agents.base import Observation
from testbed.agents.openai_agent.prompt import format_observation

DEFAULT_URL = "http://127.0.0.1:8090"
DEFAULT_TIMEOUT_S = 900.0
"""A reset provisions a lab and runs setup (minutes on a cold start); a step may run a
command for up to the task's per-command limit."""


class EnvError(Exception):
    """The server refused a request (`status` is its HTTP status)."""

    def __init__(self, status: int, message: str, run_id: str | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.run_id = run_id


@dataclass(frozen=True)
class ClientSettings:
    base_url: str
    token: str | None
    timeout_s: float

    @classmethod
    def resolve(cls, base_url: str | None, token: str | None, timeout_s: float | None) -> ClientSettings:
        url = (base_url or os.environ.get("TESTBED_ENV_URL") or DEFAULT_URL).rstrip("/")
        given = token if token is not None else os.environ.get("TESTBED_ENV_TOKEN")
        return cls(url, given or None, timeout_s or DEFAULT_TIMEOUT_S)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@dataclass(frozen=True)
class StepResult:
    """One answer of the environment (see the module docstring)."""

    observation: dict[str, Any]
    reward: float | None
    done: bool
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def episode_id(self) -> str | None:
        value = (self.observation.get("metadata") or {}).get("episode_id")
        return str(value) if value else None

    @property
    def text(self) -> str:
        """The observation as text for a model: the instruction and nodes after a reset,
        else the command's node, exit status, stdout and stderr."""
        obs = self.observation
        if "instruction" in obs:
            return f"{obs['instruction'].rstrip()}\n\nNodes: {', '.join(obs.get('nodes') or [])}"
        if obs.get("error"):
            return str(obs["error"])
        return format_observation(
            Observation(
                node=str(obs.get("node") or ""),
                command=str(obs.get("command") or ""),
                stdout=str(obs.get("stdout") or ""),
                stderr=str(obs.get("stderr") or ""),
                exit_code=obs.get("exit_code"),
                timed_out=bool(obs.get("timed_out")),
                blocked=bool(obs.get("blocked")),
                message=obs.get("message"),
            )
        )


@dataclass
class Episode:
    """The client's current episode."""

    id: str
    rewards: list[float] = field(default_factory=list)
    done: bool = False
    last: StepResult | None = None

    @property
    def total(self) -> float:
        return round(sum(self.rewards), 6)

    def take(self, result: StepResult) -> StepResult:
        self.rewards.append(result.reward or 0.0)
        self.done = result.done
        self.last = result
        return result


class EpisodeHolder:
    """The current episode of a client."""

    episode: Episode | None

    def _current(self) -> Episode:
        if self.episode is None:
            raise RuntimeError("no episode: call reset(task) first")
        return self.episode


def reset_body(task: str, image: str | None, seed: int | None, agent: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"task": task}
    for key, value in (("image", image), ("seed", seed), ("agent", agent)):
        if value is not None:
            body[key] = value
    return body


def step_body(
    command: str | None, node: str | None, action: str | None, parameters: dict[str, Any] | None
) -> dict[str, Any]:
    """A free-form step (`command`, `node`), a named action, or `{"done": true}` (neither)."""
    if action is not None:
        return {"action": action, "parameters": parameters or {}}
    if command is None:
        return {"done": True}
    return {"command": command, **({"node": node} if node else {})}


def answer(status: int, payload: Any) -> Any:
    """`payload` of a 2xx answer; `EnvError` otherwise."""
    if 200 <= status < 300:
        return payload
    detail = payload.get("detail") if isinstance(payload, dict) else payload
    if isinstance(detail, dict):
        raise EnvError(status, str(detail.get("error", detail)), detail.get("run_id"))
    raise EnvError(status, str(detail))


def result_of(payload: dict[str, Any]) -> StepResult:
    return StepResult(
        payload["observation"], payload.get("reward"), bool(payload.get("done")), payload.get("info") or {}
    )
