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
    topology = "single"               # a name under topologies/, a .yaml path inside the task
                                      # directory, or an inline [topology] table
    images = ["debian-12"]            # image variants the task supports (first is the default)
    egress = "mirror"                 # optional: none (default) | mirror, or a table
                                      # [egress] allow = ["*.example.org"] (testbed.model.egress)

    [limits]                          # all optional; durations are finite, > 0 and at most
    agent_time_s = 2100               #   one day (MAX_SECONDS); the agent phase ends after this (default 35 min)
    command_time_s = 120              # per command (default 120 s)
    max_commands = 200                # 1..MAX_COMMANDS

    [[setup]]                         # steps of one stage run in parallel, stages in order
    node = "node"
    stage = 1
    script = "setup/break.sh"         # or: command = "..."; a script is a UTF-8 file INSIDE the
                                      # task directory (no absolute path, no `..` or symlink out)

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

    [actions.NAME] / [reward]         # the environment API's bounded actions and reward
                                      # shaping (format: testbed.model.actions)

Every file a task names (instruction.md, scripts, a topology path) must resolve, symlinks
followed, to a regular UTF-8 file inside the task directory; `load_task` reads them all, so
a loaded task never reads its directory again. Everything `run`, `launch`, `serve` and
`task validate` accept is decided here and by `load_task`'s cross-checks: they agree.
    split = "train"                   # or "heldout": refused by launch / the environment API
                                      # unless asked (--include-heldout; testbed.model.split)

    [parameters]                      # seeded variety (testbed.model.parameters): every
    port = { type = "port", min = 20000, max = 29999 }   # text of the task may use {{ port }}

Checks may use a primitive instead of `command` (testbed.model.checks):

    [[checks]]
    id = "R1"
    description = "nginx runs and starts at boot"
    node = "node"
    service = { name = "nginx", active = true, enabled = true }

Templates `{{ name }}` (task.toml strings, instruction.md, setup and solution scripts) must
name a declared parameter; `load_task` instantiates the task once (seed 0) so that a
parameter a field cannot take fails at load time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from testbed.errors import InputError
from testbed.model.actions import check_actions, check_reward
from testbed.model.checks import Port, PrimitiveFields
from testbed.model.egress import EgressSpec
from testbed.model.fields import Int, Seconds
from testbed.model.loading import read_toml, read_yaml, validate
from testbed.model.parameters import Parameter, Value, check_parameter_names, draw, render, value_names
from testbed.model.scenario import DEFAULT_SEED, render_definition, template_problem
from testbed.model.taskfiles import TaskFiles
from testbed.model.topology import Topology, topology_from_data

TASK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
Split = Literal["train", "heldout"]
SPLITS: tuple[str, ...] = ("train", "heldout")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_COMMANDS = 100_000
"""Most commands a task may allow an agent."""

MAX_STAGE = 1000


class Limits(_Strict):
    agent_time_s: Seconds = 35 * 60
    command_time_s: Seconds = 120
    max_commands: Int = Field(default=200, ge=1, le=MAX_COMMANDS)
    command_idle_s: Seconds | None = None
    """End an agent command that prints nothing for this long (None: only the time limit)."""


class Step(_Strict):
    """One command or script on one node. Scripts are read from the task directory."""

    node: str
    command: str | None = None
    script: str | None = None
    stage: Int = Field(default=1, ge=0, le=MAX_STAGE)
    id: str | None = None
    timeout_s: Seconds = 300

    @model_validator(mode="after")
    def _one_of(self) -> Step:
        if (self.command is None) == (self.script is None):
            raise ValueError("give exactly one of 'command' or 'script'")
        return self


class Check(_Strict, PrimitiveFields):
    """A requirement: a shell `command` judged by exit status and output pattern, or one
    check primitive (`service = {...}`, `port = {...}`, ...; `testbed.model.checks`).
    `indeterminate_exit`: an exit status of `command` that means "cannot decide" (the
    check is then `indeterminate`, not `failed`; `EXIT_UNDECIDED`, 3, by convention)."""

    id: str
    description: str
    node: str
    command: str | None = None
    expect_exit: Int | None = Field(default=None, ge=0, le=255)
    expect_output: str | None = None
    indeterminate_exit: int | None = None
    persist: bool = False
    timeout_s: Seconds = 60

    @field_validator("expect_output")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Check:
        given = self.given_primitives()
        if len(given) > 1:
            raise ValueError(f"give one primitive per check, not {', '.join(p.kind for p in given)}")
        if given:
            extra = [f for f in ("command", "expect_exit", "expect_output", "indeterminate_exit") if getattr(self, f)
                     is not None]  # fmt: skip
            if extra:
                raise ValueError(f"a '{given[0].kind}' check takes no {', '.join(extra)}")
            if self.persist and given[0].kind == "unchanged":
                raise ValueError("an 'unchanged' check is judged after the agent only (persist = false)")
        elif self.command is None:
            raise ValueError("give 'command' or one check primitive (service, port, http, file, ...)")
        if self.indeterminate_exit is not None and self.indeterminate_exit == self.effective_exit:
            raise ValueError(f"indeterminate_exit {self.indeterminate_exit} is also the expected exit status")
        return self

    @property
    def effective_exit(self) -> int | None:
        """The exit status required of a command check: the given one, else 0 when no
        output pattern is given (None for primitives)."""
        if self.command is None:
            return None
        if self.expect_exit is None and self.expect_output is None:
            return 0
        return self.expect_exit

    @property
    def effective_timeout_s(self) -> float:
        """The check's time limit: `timeout_s`, raised to leave a primitive its `wait_s`."""
        primitive = self.primitive
        return max(self.timeout_s, primitive.wait + 30) if primitive is not None else self.timeout_s


class Expected(_Strict):
    paths: list[str] = []
    units: list[str] = []
    packages: list[str] = []
    users: list[str] = []
    ports: list[Port] = []  # "{{ port }}" renders to the drawn integer
    router: list[str] = []  # globs over running-configuration paths (`block > line`)


class Oracle(_Strict):
    node: str | None = None
    script: str | None = None
    command: str | None = None
    steps: list[Step] = []

    @model_validator(mode="after")
    def _one_form(self) -> Oracle:
        single = (self.node, self.script, self.command) != (None, None, None)
        if self.steps and single:
            raise ValueError("give either node with script or command, or [[oracle.steps]], not both")
        if not self.steps:
            if self.node is None:
                raise ValueError("oracle needs 'node' with 'script' or 'command', or a list of steps")
            if (self.script is None) == (self.command is None):
                raise ValueError("give exactly one of 'script' or 'command'")
        return self

    def resolved_steps(self) -> list[Step]:
        if self.steps:
            return self.steps
        assert self.node is not None  # checked by the validator
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
    parameters: dict[str, Parameter] = {}  # seeded variety (testbed.model.parameters)
    split: Split = "train"  # "heldout" tasks are refused by launch and the environment API unless asked

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameter_names(cls, value: Any) -> Any:
        if isinstance(value, dict):
            check_parameter_names(value)
        return value

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not TASK_ID_RE.match(value):
            raise ValueError("must be lowercase letters, digits and '-', 2 to 63 characters")
        return value

    @field_validator("images")
    @classmethod
    def _known_images(cls, value: list[str], info: ValidationInfo) -> list[str]:
        known_images: set[str] | None = (info.context or {}).get("images")
        if known_images is not None:
            for image in value:
                if image not in known_images:
                    raise ValueError(f"unknown image variant '{image}' (known: {', '.join(sorted(known_images))})")
        return value

    @model_validator(mode="after")
    def _unique_checks(self) -> TaskDef:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise ValueError(f"duplicate check id '{check.id}'")
            seen.add(check.id)
        return self

    @property
    def persistence_required(self) -> bool:
        return any(c.persist for c in self.checks)


class Task:
    """A loaded, cross-checked task: definition, instruction, topology, its directory and the
    files it names (read when it was loaded).

    A task as loaded is a template (`values` None: `{{ name }}` as written); a scenario is
    the task instantiated for a seed (`instantiate` below): its
    definition, instruction and scripts with the drawn `values` put in, `template` the
    task it came from."""

    def __init__(
        self,
        directory: Path,
        definition: TaskDef,
        instruction: str,
        topology: Topology,
        files: TaskFiles | None = None,
        *,
        seed: int | None = None,
        values: dict[str, Value] | None = None,
        template: Task | None = None,
    ) -> None:
        self.directory = directory
        self.definition = definition
        self.instruction = instruction
        self.topology = topology
        self.files = files or TaskFiles(directory, directory / "task.toml")
        self.seed = seed
        self.values = values
        self.template = template

    @property
    def id(self) -> str:
        return self.definition.id

    def read_script(self, relative: str) -> str:
        """A script's text (inside the task directory; read when the task was loaded), with
        the scenario's values put in."""
        text = self.files.text(relative, "script")
        return render(text, self.values) if self.values is not None else text

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
    check_actions(definition.actions, toml_path)
    check_reward(definition.reward, toml_path)
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
    files = TaskFiles(directory, toml_path)
    if not (directory / "instruction.md").exists():
        raise InputError(directory, "instruction.md", "missing: the agent needs an instruction")
    instruction = files.text("instruction.md", "instruction.md").strip()
    if not instruction:
        raise InputError(directory / "instruction.md", None, "is empty")
    variant = image or definition.images[0]
    if variant not in definition.images:
        raise InputError(
            toml_path,
            "images",
            f"the task does not support image '{variant}' (supported: {', '.join(definition.images)})",
        )
    topology = _load_topology(definition, files, root, images, variant, memory_budget_mb)
    _check_nodes(definition, {n.name for n in topology.nodes}, toml_path)
    for field, step in _script_steps(definition):
        if step.script is not None:
            files.text(step.script, field)
    task = Task(directory, definition, instruction, topology, files)
    _check_templates(task, toml_path)
    instantiate(task, DEFAULT_SEED)  # a parameter a field cannot take fails now, not in a run
    return task


def load_task_variants(
    directory: Path, *, images: set[str] | None = None, root: Path | None = None, memory_budget_mb: int | None = None
) -> list[Task]:
    """The task loaded once per image variant it declares (what `task validate` checks: a
    run, job or episode may pick any of them)."""
    first = load_task(directory, images=images, root=root, memory_budget_mb=memory_budget_mb)
    others = [
        load_task(directory, images=images, root=root, image=variant, memory_budget_mb=memory_budget_mb)
        for variant in first.definition.images[1:]
    ]
    return [first, *others]


def _check_templates(task: Task, toml_path: Path) -> None:
    texts = {"instruction.md": task.instruction}
    steps = [*task.definition.setup, *(task.definition.oracle.resolved_steps() if task.definition.oracle else [])]
    for step in steps:
        if step.script is not None:
            texts[step.script] = task.read_script(step.script)
    declared = value_names(task.definition.parameters)
    problem = template_problem(read_toml(toml_path), texts, declared)
    if problem is not None:
        field, why = problem
        where = toml_path if field not in texts else task.directory / field
        raise InputError(where, None if field in texts else field, why)


def instantiate(task: Task, seed: int) -> Task:
    """The scenario of `task` for `seed` (see `Task`): parameters drawn, templates
    rendered. Instantiating a scenario again starts from its template. A parameter a
    field cannot take is an `InputError` naming task.toml and the field."""
    template = task.template or task
    toml_path = template.directory / "task.toml"
    d = template.definition
    try:
        values = draw(d.parameters, seed, d.id)
    except ValueError as exc:
        raise InputError(toml_path, "parameters", str(exc)) from exc
    definition = render_definition(d, values, toml_path) if values else d
    instruction = render(template.instruction, values)
    return Task(template.directory, definition, instruction, template.topology, template.files, seed=seed,
                values=values, template=template)  # fmt: skip


def _load_topology(
    definition: TaskDef,
    files: TaskFiles,
    root: Path | None,
    images: set[str] | None,
    variant: str,
    memory_budget_mb: int | None,
) -> Topology:
    if isinstance(definition.topology, dict):
        data, path, prefix = definition.topology, files.toml_path, "topology"
    else:
        path = _topology_path(definition.topology, files, root)
        data, prefix = read_yaml(path), ""
    return topology_from_data(
        data, path, images=images, default_image=variant, memory_budget_mb=memory_budget_mb, prefix=prefix
    )


def _topology_path(spec: str, files: TaskFiles, root: Path | None) -> Path:
    """A `.yaml` path inside the task directory, or a name under `topologies/`."""
    if "/" in spec or spec.endswith((".yaml", ".yml")):
        return files.path(spec, "topology")
    from testbed.config import project_root

    path = (root or project_root()) / "topologies" / f"{spec}.yaml"
    if not path.is_file():
        raise InputError(files.toml_path, "topology", f"no topology named '{spec}' (no file {path})")
    return path


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
    for name, action in definition.actions.items():
        node = action.get("node")
        need(node if isinstance(node, str) else None, f"actions.{name}.node")


def _script_steps(definition: TaskDef) -> list[tuple[str, Step]]:
    """Every step that may name a script, with its field path."""
    steps = [(f"setup[{s.id or i}].script", s) for i, s in enumerate(definition.setup)]
    oracle = definition.oracle
    if oracle is not None:
        if oracle.script is not None:
            steps.append(("oracle.script", Step(node=oracle.node or "", script=oracle.script)))
        steps += [(f"oracle.steps[{i}].script", s) for i, s in enumerate(oracle.steps)]
    return steps


def discover_tasks(root: Path) -> list[Path]:
    """Task directories under `root/tasks` (those holding a task.toml)."""
    return sorted(p.parent for p in (root / "tasks").glob("*/task.toml"))
