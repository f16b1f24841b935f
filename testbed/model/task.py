"""Task definitions (`tasks/ID/task.toml` + `instruction.md` + scripts).

Layout of a task directory:

    task.toml          the definition below
    instruction.md     what the agent is told
    setup/*.sh         setup scripts (referenced by setup steps)
    solution/*.sh      the oracle solution (referenced by [oracle]); the oracle is an agent:
                       its steps go through the agent's login, so on a router whose agent
                       login is vtysh (frr-router) a step is CLI lines (solution/*.vtysh),
                       while setup and checks always run in the harness's root shell

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
    firewall = ["nft table * > chain forward"]   # firewall rule groups (`iptables nat *` too)
    addresses = ["eth1:192.168.60.100/*"]   # interface addresses (`IFNAME:ADDRESS/PREFIX`): a VIP
    routes = ["172.16.2.0/24 dev wg0*"]     # kernel routes (IPv4 and IPv6) as `ip route` prints them

    [oracle]                          # the reference solution
    node = "node"
    script = "solution/solve.sh"      # or: [[oracle.steps]] node/command/script

    [safety]                          # optional policy overrides (see testbed.analysis.safety)
    allow_power = false

    [actions.NAME] / [reward]         # the environment API's bounded actions and reward
                                      # shaping (format: testbed.model.actions)

Every file a task names (instruction.md, scripts, a topology path) must resolve, symlinks
followed, to a regular UTF-8 file inside the task directory; `load_task`
(`testbed.model.taskload`, the loader and its cross-checks) reads them all, so a loaded task
never reads its directory again. Everything `run`, `launch`, `serve` and `task validate`
accept is decided by this schema and by `load_task`'s cross-checks: they agree.
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

from testbed.model.checks import Port, PrimitiveFields
from testbed.model.egress import EgressSpec
from testbed.model.fields import Int, Seconds
from testbed.model.parameters import Parameter, Value, check_parameter_names, render
from testbed.model.taskfiles import TaskFiles
from testbed.model.topology import Topology

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
    firewall: list[str] = []  # globs over firewall rule groups (`nft table inet filter > chain forward`)
    addresses: list[str] = []  # globs over interface addresses (`eth1:192.168.60.100/24`, `*:10.0.0.5/*`)
    routes: list[str] = []  # globs over kernel routes as `ip route` prints them (`172.16.2.0/24 dev wg0*`)


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
