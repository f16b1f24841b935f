"""One episode as the environment API holds it: its run's task, agent and runner, its step
count and rewards, the state `GET /state` reports, and what one step returns. The manager
that creates, steps and ends episodes is `testbed.server.envapi.episodes`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from testbed.agents.base import Observation
from testbed.model.task import Task
from testbed.runner.request import RunResult
from testbed.server.envapi.actions import ActionSpace, RewardConfig
from testbed.server.envapi.external import ExternalAgent


class EpisodeBackend(Protocol):
    """What the manager needs from the lab side (injectable: tests use fakes)."""

    def load_task(self, task_id: str, image: str | None) -> Task:
        """The task, for `image` (None: its default); `InputError` when bad."""
        ...

    async def run(self, task: Task, image: str, agent: ExternalAgent) -> RunResult:
        """Execute one whole run of `task` with `agent` (provision → … → teardown)."""
        ...

    def database(self) -> sessionmaker[Session]:
        """The run database."""
        ...

    def list_tasks(self, split: str | None) -> dict[str, Any]:
        """The task list of `GET /tasks` (`testbed.server.envapi.catalog.task_catalog`)."""
        ...


@dataclass
class StepOutcome:
    """What one step returns to the client."""

    observation: dict[str, Any]
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Episode:
    id: str
    task: Task
    image: str
    seed: int | None
    agent: ExternalAgent
    runner: asyncio.Task[RunResult]
    actions: ActionSpace
    shaping: RewardConfig
    created: float = field(default_factory=time.monotonic)
    last_active: float = field(default_factory=time.monotonic)
    steps: int = 0
    invalid: int = 0
    rewards: list[float] = field(default_factory=list)
    diagnostic_used: bool = False
    done: bool = False
    done_reason: str | None = None
    result: RunResult | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ended_at: float | None = None

    @property
    def run_id(self) -> str | None:
        return self.agent.binding.run_id if self.agent.binding is not None else None

    @property
    def nodes(self) -> list[str]:
        return [n.name for n in self.task.topology.nodes]

    def state(self) -> dict[str, Any]:
        """The episode's state as the API reports it."""
        result = self.result
        return {
            "episode_id": self.id,
            "run_id": self.run_id,
            "task": self.task.id,
            "image": self.image,
            "seed": self.seed,
            "nodes": self.nodes,
            "step_count": self.steps,
            "invalid_actions": self.invalid,
            "return": round(sum(self.rewards), 6),
            "done": self.done,
            "done_reason": self.done_reason,
            "bounded": self.actions.bounded,
            "outcome": result.outcome if result else None,
            "error": result.error if result else None,
            "checks": [{"id": c.check.id, "point": c.point, "status": c.status} for c in result.checks]
            if result
            else [],
        }


def observation_dict(obs: Observation) -> dict[str, Any]:
    return {
        "node": obs.node,
        "command": obs.command,
        "stdout": obs.stdout,
        "stderr": obs.stderr,
        "exit_code": obs.exit_code,
        "timed_out": obs.timed_out,
        "blocked": obs.blocked,
        "message": obs.message,
        "duration_ms": obs.duration_ms,
    }
