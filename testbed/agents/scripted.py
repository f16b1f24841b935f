"""Scripted agents: `noop`, `oracle` (the task's solution) and `replay:FILE` (JSONL); and
`make_agent`, which turns an `--agent` spec into an agent (built-ins, then plug-ins)."""

from __future__ import annotations

from pathlib import Path

from testbed.agents.base import Action, Agent, AgentContext, Observation
from testbed.agents.registry import plugin_agent
from testbed.errors import InputError
from testbed.model.loading import MAX_LOG_BYTES, parse_json, read_text
from testbed.model.task import Task


class NoopAgent(Agent):
    """Does nothing: the baseline every task must fail."""

    name = "noop"

    async def next_action(self, last: Observation | None) -> Action | None:
        return None


class SequenceAgent(Agent):
    """Issues a fixed list of actions in order, whatever they return."""

    def __init__(self, actions: list[Action], name: str) -> None:
        self.actions = list(actions)
        self.name = name
        self._next = 0

    async def next_action(self, last: Observation | None) -> Action | None:
        if self._next >= len(self.actions):
            return None
        action = self.actions[self._next]
        self._next += 1
        return action


def oracle_agent(task: Task) -> SequenceAgent:
    """Runs the task's oracle solution: each step's command or script text as one command."""
    if task.definition.oracle is None:
        raise InputError(task.directory / "task.toml", "oracle", "the task has no oracle solution")
    steps = task.definition.oracle.resolved_steps()
    return SequenceAgent([Action(s.node, task.step_command(s)) for s in steps], "oracle")


def replay_agent(path: Path) -> SequenceAgent:
    """Replays a JSONL file of `{"node": ..., "command": ...}` objects."""
    try:
        lines = read_text(path, limit=MAX_LOG_BYTES).splitlines()
    except InputError as exc:
        raise InputError(path, "--agent replay", exc.problem) from None
    actions: list[Action] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        item = parse_json(line, path, f"line {number}")
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("node"), str)
            or not isinstance(item.get("command"), str)
        ):
            raise InputError(path, f"line {number}", 'expected an object with string "node" and "command"')
        actions.append(Action(item["node"], item["command"]))
    return SequenceAgent(actions, f"replay:{path.name}")


BUILTINS = "oracle, noop, replay:FILE or openai:MODEL"


def make_agent(spec: str, task: Task) -> Agent:
    """The agent `spec` names: a built-in (`oracle`, `noop`, `replay:FILE`,
    `openai:MODEL[?options]`), else the installed plug-in of that name (`testbed.agents`
    entry points, see `testbed.agents.registry`); anything else is an `InputError`."""
    if spec == "noop":
        return NoopAgent()
    if spec == "oracle":
        return oracle_agent(task)
    if spec.startswith("replay:"):
        return replay_agent(Path(spec.removeprefix("replay:")))
    if spec.startswith("openai:"):
        from testbed.agents.openai_agent import OpenAIAgent  # the SDK is imported only for LLM runs

        return OpenAIAgent.from_spec(spec)
    return plugin_agent(spec, task, BUILTINS)


def check_agent_nodes(agent: Agent, context: AgentContext) -> None:
    """Scripted agents name nodes up front: refuse unknown ones before anything is created."""
    if isinstance(agent, SequenceAgent):
        for action in agent.actions:
            if action.node not in context.nodes:
                raise InputError(
                    None, f"--agent {agent.name}", f"unknown node '{action.node}' (nodes: {', '.join(context.nodes)})"
                )
