"""What a run is asked to do (`RunRequest`) and what it reports back (`RunResult`), and the
one check of a task that every consumer shares (`admit_task`).

Contracts: `admit_task` is what `task validate`, `run` and `launch` load a task with:
`testbed.model.taskload.load_task` (format, limits, files inside the task directory, topology,
images, memory budget, `[actions]`, `[reward]`, templates) and the task's `[safety]` policy
— so `task validate` refuses exactly what a run or a job would. A `RunRequest` is made for
one scenario: on creation its task is instantiated for `seed` (None: `DEFAULT_SEED`;
`testbed.model.taskload.instantiate`), so the instruction, setup, oracle, checks and
`[expected]` the run uses have the seed's parameter values, and `config` gets `seed` and
`parameters` (stored on the run row as `runs.config`). `RunRequest.validated()` builds
the agent and the safety policy, so bad input fails as `InputError` before any run row or
libvirt object exists. `RunResult.outcome`
starts as `error` and is set by the lifecycle; `error` explains any outcome other than
`passed` when there is something to say (a harness fault, a lockout's reason).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.agents.base import Agent, AgentContext
from testbed.agents.scripted import check_agent_nodes, make_agent
from testbed.analysis import SafetyPolicy
from testbed.model.egress import EgressSpec, effective_egress
from testbed.model.scenario import DEFAULT_SEED, scenario_record
from testbed.model.task import Task
from testbed.model.taskload import instantiate, load_task
from testbed.runner.session import SessionStats
from testbed.runner.verify import CheckResult


@dataclass
class RunRequest:
    task: Task
    image: str
    agent: str
    attempt: int = 1
    job_id: str | None = None
    redact: bool = True
    agent_instance: Agent | None = None  # overrides `agent` (LLM agents, tests)
    policy: SafetyPolicy | None = None
    run_id: str | None = None  # an existing pending run row (created by the scheduler) to execute
    boot_gate: asyncio.Semaphore | None = None  # passed to the Lab: caps/staggers guest boots (scheduler)
    config: dict[str, Any] = field(default_factory=dict)  # merged into the run row's `config`
    egress: EgressSpec | None = None  # a job's override of the task's and topology's egress policy
    seed: int | None = None  # the scenario (testbed.model.parameters); None: DEFAULT_SEED

    def __post_init__(self) -> None:
        seed = DEFAULT_SEED if self.seed is None else self.seed
        if self.task.values is None or self.task.seed != seed:
            self.task = instantiate(self.task, seed)
        self.seed = seed
        self.config = {**self.config, **scenario_record(seed, self.task.values or {})}

    @property
    def egress_policy(self) -> EgressSpec:
        """The egress the run's lab gets: the job's override, else the task's, else the
        topology's, else none."""
        return effective_egress(self.egress, self.task.definition.egress, self.task.topology.egress)

    def validated(self) -> RunRequest:
        """Build the agent and the safety policy now, so bad input fails (as `InputError`)
        before any run row or libvirt object exists. Idempotent."""
        if self.agent_instance is None:
            self.agent_instance = make_agent(self.agent, self.task)
        check_agent_nodes(self.agent_instance, agent_context(self.task))
        if self.policy is None:
            self.policy = task_policy(self.task)
        return self


def task_policy(task: Task) -> SafetyPolicy:
    """The task's `[safety]` policy (`InputError` naming `safety.FIELD` on a bad table)."""
    return SafetyPolicy.from_table(task.definition.safety, task.directory / "task.toml")


def admit_task(
    directory: Path,
    *,
    images: set[str] | None,
    root: Path | None = None,
    image: str | None = None,
    memory_budget_mb: int | None = None,
) -> Task:
    """The task at `directory` for variant `image`, loaded and checked as the module
    contract says; every problem is an `InputError`."""
    task = load_task(directory, images=images, root=root, image=image, memory_budget_mb=memory_budget_mb)
    task_policy(task)
    return task


@dataclass
class RunResult:
    run_id: str
    outcome: str
    error: str | None = None
    checks: list[CheckResult] = field(default_factory=list)
    stats: SessionStats | None = None


def agent_context(task: Task) -> AgentContext:
    limits = task.definition.limits
    return AgentContext(
        task_id=task.id,
        instruction=task.instruction,
        nodes=[n.name for n in task.topology.nodes],
        max_commands=limits.max_commands,
        agent_time_s=limits.agent_time_s,
        command_time_s=limits.command_time_s,
        command_idle_s=limits.command_idle_s,
    )
