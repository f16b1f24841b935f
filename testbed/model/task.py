"""Task definitions (`tasks/ID/task.toml` + `instruction.md` + scripts).

Layout of a task directory:

    task.toml          the definition below
    instruction.md     what the agent is told
    setup/*.sh         setup scripts (referenced by setup steps)
    solution/*.sh      the oracle solution (referenced by [oracle])

task.toml:

    id = "web-port-conflict"          # must equal the directory name
    category = "services"
    difficulty = "easy"               # easy | medium | hard
    tags = ["nginx"]
    topology = "single"               # a file under topologies/, or an inline [topology] table
    images = ["debian-12"]            # image variants the task supports (first is the default)
    egress = "mirror"                 # optional: none (default) | mirror, or a table
                                      # [egress] allow = ["*.example.org"] (testbed.model.egress)

    [limits]                          # all optional
    agent_time_s = 2100               # the agent phase ends after this (default 35 min)
    command_time_s = 120              # per command (default 120 s)
    max_commands = 200

    [[setup]]                         # steps of one stage run in parallel, stages in order
    node = "node"
    stage = 1
    script = "setup/break.sh"         # or: command = "..."

    [[checks]]
    id = "R1"                         # requirement id
    description = "nginx answers on port 80"
    node = "node"
    command = "curl -s -o /dev/null -w '%{http_code}' http://localhost/"
    expect_exit = 0                   # default 0 when no pattern is given
    expect_output = "^200$"           # regex searched in stdout (multiline)
    persist = false                   # must also hold after a harness-driven reboot

    [expected]                        # changes the task asks for: never reported as residue
    paths = ["/etc/nginx/sites-enabled/*"]   # glob patterns
    units = ["nginx.service"]
    packages = []
    users = []
    ports = [80]
    router = ["router ospf*"]         # router configuration (testbed.analysis.residue.router)

    [oracle]                          # the reference solution
    node = "node"
    script = "solution/solve.sh"      # or: [[oracle.steps]] node/command/script

    [safety]                          # optional policy overrides (see testbed.analysis.safety)
    allow_power = false
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from testbed.errors import InputError
from testbed.model.egress import EgressSpec
from testbed.model.loading import read_toml, validate
from testbed.model.topology import Topology, load_topology, resolve_topology_path, topology_from_data

TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Limits(_Strict):
    agent_time_s: float = Field(default=35 * 60, gt=0)
    command_time_s: float = Field(default=120, gt=0)
    max_commands: int = Field(default=200, ge=1)
    command_idle_s: float | None = Field(default=None, gt=0)
    """End an agent command that prints nothing for this long (None: only the time limit)."""


class Step(_Strict):
    """One command or script on one node. Scripts are read from the task directory."""

    node: str
    command: str | None = None
    script: str | None = None
    stage: int = Field(default=1, ge=0)
    id: str | None = None
    timeout_s: float = Field(default=300, gt=0)

    @model_validator(mode="after")
    def _one_of(self) -> Step:
        if (self.command is None) == (self.script is None):
            raise ValueError("give exactly one of 'command' or 'script'")
        return self


class Check(_Strict):
    id: str
    description: str
    node: str
    command: str
    expect_exit: int | None = None
    expect_output: str | None = None
    persist: bool = False
    timeout_s: float = Field(default=60, gt=0)

    @field_validator("expect_output")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @property
    def effective_exit(self) -> int | None:
        """The exit status required: the given one, else 0 when no output pattern is given."""
        if self.expect_exit is None and self.expect_output is None:
            return 0
        return self.expect_exit


class Expected(_Strict):
    paths: list[str] = []
    units: list[str] = []
    packages: list[str] = []
    users: list[str] = []
    ports: list[int] = []
    router: list[str] = []  # globs over running-configuration paths (`block > line`)


class Oracle(_Strict):
    node: str | None = None
    script: str | None = None
    command: str | None = None
    steps: list[Step] = []

    def resolved_steps(self) -> list[Step]:
        if self.steps:
            return self.steps
        if self.node is None:
            raise ValueError("oracle needs 'node' with 'script' or 'command', or a list of steps")
        return [Step(node=self.node, script=self.script, command=self.command)]


class TaskDef(_Strict):
    id: str
    category: str
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    tags: list[str] = []
    topology: str | dict[str, Any]
    images: list[str] = Field(min_length=1)
    limits: Limits = Limits()
    setup: list[Step] = []
    checks: list[Check] = Field(min_length=1)
    expected: Expected = Expected()
    oracle: Oracle | None = None
    safety: dict[str, Any] = {}
    egress: EgressSpec | None = None  # overrides the topology's (testbed.model.egress)
    description: str = ""
    # Environment API (testbed.server.envapi validates both): `[actions.NAME]` bounded actions
    # (description, command template, optional node, JSON-schema `parameters`) and `[reward]` shaping.
    actions: dict[str, dict[str, Any]] = {}
    reward: dict[str, Any] = {}

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not TASK_ID_RE.match(value):
            raise ValueError("must be lowercase letters, digits and '-', 2 to 63 characters")
        return value

    @model_validator(mode="after")
    def _unique_checks(self, info: ValidationInfo) -> TaskDef:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise ValueError(f"duplicate check id '{check.id}'")
            seen.add(check.id)
        known_images: set[str] | None = (info.context or {}).get("images")
        if known_images is not None:
            for image in self.images:
                if image not in known_images:
                    raise ValueError(f"unknown image variant '{image}' (known: {', '.join(sorted(known_images))})")
        return self

    @property
    def persistence_required(self) -> bool:
        return any(c.persist for c in self.checks)


class Task:
    """A loaded, cross-checked task: definition, instruction, topology and its directory."""

    def __init__(self, directory: Path, definition: TaskDef, instruction: str, topology: Topology) -> None:
        self.directory = directory
        self.definition = definition
        self.instruction = instruction
        self.topology = topology

    @property
    def id(self) -> str:
        return self.definition.id

    def read_script(self, relative: str) -> str:
        return (self.directory / relative).read_text(encoding="utf-8")

    def step_command(self, step: Step) -> str:
        """The shell text a step runs: its command, or its script's content."""
        if step.command is not None:
            return step.command
        assert step.script is not None
        return self.read_script(step.script)


def load_definition(directory: Path, *, images: set[str] | None = None) -> TaskDef:
    """Only the validated `task.toml` of a task directory (no topology, instruction or
    script is read); every problem is an `InputError`."""
    toml_path = directory / "task.toml"
    if not toml_path.exists():
        raise InputError(directory, None, "not a task directory: task.toml is missing")
    definition = validate(TaskDef, read_toml(toml_path), toml_path, context={"images": images})
    if definition.id != directory.name:
        raise InputError(toml_path, "id", f"'{definition.id}' does not match the directory name '{directory.name}'")
    return definition


def load_task(
    directory: Path,
    *,
    images: set[str] | None = None,
    root: Path | None = None,
    image: str | None = None,
    memory_budget_mb: int | None = None,
) -> Task:
    """Load and cross-check a task directory; every problem is an `InputError`.

    `image` picks the variant (default: the task's first image) that fills nodes which do
    not name their own image.
    """
    directory = directory.resolve()
    toml_path = directory / "task.toml"
    definition = load_definition(directory, images=images)
    instruction_path = directory / "instruction.md"
    if not instruction_path.exists():
        raise InputError(directory, "instruction.md", "missing: the agent needs an instruction")
    instruction = instruction_path.read_text(encoding="utf-8").strip()
    if not instruction:
        raise InputError(instruction_path, None, "is empty")
    variant = image or definition.images[0]
    if variant not in definition.images:
        raise InputError(
            toml_path,
            "images",
            f"the task does not support image '{variant}' (supported: {', '.join(definition.images)})",
        )
    topology = _load_topology(definition, toml_path, root, images, variant, memory_budget_mb)
    nodes = {n.name for n in topology.nodes}
    _check_nodes(definition, nodes, toml_path)
    _check_scripts(definition, directory, toml_path)
    return Task(directory, definition, instruction, topology)


def _load_topology(
    definition: TaskDef,
    toml_path: Path,
    root: Path | None,
    images: set[str] | None,
    variant: str,
    memory_budget_mb: int | None,
) -> Topology:
    if isinstance(definition.topology, dict):
        return topology_from_data(
            definition.topology, toml_path, images=images, default_image=variant, memory_budget_mb=memory_budget_mb
        )
    from testbed.config import project_root

    try:
        path = resolve_topology_path(definition.topology, root or project_root())
    except InputError as exc:
        raise InputError(toml_path, "topology", exc.problem) from exc
    return load_topology(path, images=images, default_image=variant, memory_budget_mb=memory_budget_mb)


def _check_nodes(definition: TaskDef, nodes: set[str], toml_path: Path) -> None:
    def need(node: str | None, field: str) -> None:
        if node is not None and node not in nodes:
            raise InputError(toml_path, field, f"undefined node '{node}' (nodes: {', '.join(sorted(nodes))})")

    for i, step in enumerate(definition.setup):
        need(step.node, f"setup[{step.id or i}].node")
    for check in definition.checks:
        need(check.node, f"checks[{check.id}].node")
    if definition.oracle is not None:
        need(definition.oracle.node, "oracle.node")
        for i, step in enumerate(definition.oracle.steps):
            need(step.node, f"oracle.steps[{i}].node")


def _check_scripts(definition: TaskDef, directory: Path, toml_path: Path) -> None:
    steps: list[tuple[str, Step]] = [(f"setup[{s.id or i}].script", s) for i, s in enumerate(definition.setup)]
    if definition.oracle is not None:
        if definition.oracle.script:
            path = directory / definition.oracle.script
            if not path.is_file():
                raise InputError(toml_path, "oracle.script", f"no such file {path}")
        steps += [(f"oracle.steps[{i}].script", s) for i, s in enumerate(definition.oracle.steps)]
    for field, step in steps:
        if step.script is not None and not (directory / step.script).is_file():
            raise InputError(toml_path, field, f"no such file {directory / step.script}")


def discover_tasks(root: Path) -> list[Path]:
    """Task directories under `root/tasks` (those holding a task.toml)."""
    return sorted(p.parent for p in (root / "tasks").glob("*/task.toml"))
