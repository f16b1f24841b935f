"""The agent interface shared by scripted agents, LLM agents and the HTTP environment.

An agent sees the task's instruction and the node names, issues one command at a time on a
named node (`next_action`), receives stdout, stderr and the exit status of each
(`Observation`), and says it is done by returning None. The runner owns time limits,
command limits, the safety policy and recording; agents only decide.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from testbed.db.recorder import RunRecorder


@dataclass(frozen=True)
class AgentContext:
    task_id: str
    instruction: str
    nodes: list[str]
    max_commands: int
    agent_time_s: float
    command_time_s: float
    command_idle_s: float | None = None


@dataclass(frozen=True)
class Action:
    node: str
    command: str


@dataclass(frozen=True)
class Observation:
    """What the agent gets back for one action.

    `exit_code` is None when the command did not finish (timed out) or was not run (blocked,
    unknown node); `message` then says why.
    """

    node: str
    command: str
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    blocked: bool = False
    message: str | None = None
    duration_ms: int = 0


class CommandLog(Protocol):
    """How an agent records a command it refused to send (an invalid action)."""

    async def record_not_run(
        self, node: str, command: str, *, phase: str, source: str, reason: str, impact: list[str]
    ) -> int: ...


@dataclass(frozen=True)
class AgentBinding:
    """What the runner hands an agent before it starts: the run's recorder (for rows of
    the agent's own, such as an LLM's turns) and the run's command log."""

    recorder: RunRecorder
    commands: CommandLog

    @property
    def run_id(self) -> str:
        return self.recorder.run_id


class Agent(ABC):
    name: str = "agent"

    def bind(self, binding: AgentBinding) -> None:  # noqa: B027 - optional hook
        """Called once, before `start`, with the run this agent works in."""

    def observe(self, observation: Observation) -> None:  # noqa: B027 - optional hook
        """Called with the result of every action (even ones the agent did not await)."""

    async def start(self, context: AgentContext) -> None:  # noqa: B027 - optional hook
        """Called once before the first action."""

    @abstractmethod
    async def next_action(self, last: Observation | None) -> Action | None:
        """The next command to run, given the last observation; None when done."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Called once when the agent phase ends, however it ends."""
