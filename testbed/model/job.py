"""Job definitions (`jobs/*.yaml`, or the same settings as `testbed launch` flags).

A job is a batch of runs: an agent x task x image-variant (release) matrix, each cell run
`attempts` times, spread by the scheduler over one or more lab hosts.

    name: starter-oracle
    tasks: ["*"]                 # task directories: ids, paths or globs under tasks/
    categories: []               # keep only tasks of these categories (empty: all)
    images: default              # default (each task's first variant) | all | [debian-12, ...]
    agent: oracle                # one agent: oracle | noop | replay:FILE | openai:MODEL[?...] | a plug-in
    agents: []                   # or several, compared on the same cells: [openai:model-a, openai:model-b, oracle]
    agent_settings: {}           # recorded with the job; passed to agents that take settings
    attempts: 1                  # runs per matrix cell
    seeds: [0]                   # scenarios: every cell runs once per seed (testbed.model.parameters)
    split: train                 # train | heldout | all: which tasks of the selection run
    include_heldout: false       # held-out tasks are refused unless this is true (testbed.model.split)
    limits: {agent_time_s: 600}  # overrides of every task's [limits]
    run_timeout_s: null          # hard wall-clock cap per run (default: agent time + 30 min)
    retry: {limit: 2, backoff_s: 30, factor: 2, max_backoff_s: 600}
    redact: true
    warm: true                   # runs of a cell restore its saved post-setup state (false: every run boots)
    egress: null                 # overrides every task's egress policy: none | mirror | {allow: [...]}
    hosts:                       # empty: the local libvirt (TESTBED_LIBVIRT_URI) alone
      - name: local
        uri: qemu:///system
        vm_slots: 8              # VMs at once on this host
        vcpus: 16                # vCPUs at once (null: unlimited)
        memory_mb: 24000         # guest memory at once (null: TESTBED_MEMORY_BUDGET_MB)
        image_cache: null        # base-image cache on that host (local: $TESTBED_HOME/images;
                                 #   remote qemu+ssh:// hosts: required, a path there)
        boot_concurrency: 4      # guests booting at once
        boot_interval_s: 0       # pause between boot starts

Contracts: every problem is an `InputError(file, field, problem)`; `expand_matrix` never
returns an empty matrix (an empty selection is an error) and lists cells in a stable order
(task id, then image, then agent in the order given, then seed, then attempt). `agent` and
`agents` are exclusive (`JobSpec.agent_list` is the one the job runs); agent names are
checked for shape here (non-empty, no duplicates) and built with
`testbed.agents.scripted.make_agent` by `testbed.scheduler.launch.prepare`, which refuses
unknown agents and plug-ins. Tasks outside `split` are left out when a glob selected them
and refused when named (a held-out task named with `split: train`); held-out tasks that
remain are refused unless `include_heldout`. This module only reads files.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from testbed.config import MAX_BUDGET_MB, MIN_BUDGET_MB
from testbed.errors import InputError
from testbed.model.egress import EgressSpec
from testbed.model.fields import MAX_SECONDS, Delay, Int, Number, Seconds
from testbed.model.loading import read_yaml, validate
from testbed.model.scenario import DEFAULT_SEED
from testbed.model.split import SplitSelection, in_split, refuse_heldout
from testbed.model.task import MAX_COMMANDS, Limits, Task
from testbed.model.taskload import load_task

HOST_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
LOCAL_URI_RE = re.compile(r"^[a-z+]+:///")
"""A libvirt URI without a host part (qemu:///system, qemu:///session, test:///default)."""

MAX_BACKOFF_FACTOR = 100.0
MAX_RUN_TIMEOUT_S = 2 * MAX_SECONDS
"""Caps of `retry.factor` and `run_timeout_s` (two days: a one-day agent phase and the rest)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetryPolicy(_Strict):
    """Harness errors (outcome `error`) of a cell are retried up to `limit` times, the n-th
    retry waiting `backoff_s * factor**(n-1)` seconds (at most `max_backoff_s`)."""

    limit: Int = Field(default=2, ge=0, le=50)
    backoff_s: Delay = 30.0
    factor: Number = Field(default=2.0, ge=1, le=MAX_BACKOFF_FACTOR)
    max_backoff_s: Delay = 600.0

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        if retry <= 0:
            return 0.0
        return float(min(self.max_backoff_s, self.backoff_s * self.factor ** (retry - 1)))


class LimitsOverride(_Strict):
    agent_time_s: Seconds | None = None
    command_time_s: Seconds | None = None
    max_commands: Int | None = Field(default=None, ge=1, le=MAX_COMMANDS)

    def apply(self, limits: Limits) -> Limits:
        """`limits` with every field given here replaced."""
        return limits.model_copy(update=self.model_dump(exclude_none=True))


class HostSpec(_Strict):
    """One lab host: a libvirt URI with its budget and base-image cache."""

    name: str
    uri: str | None = None
    vm_slots: Int = Field(default=4, ge=1, le=10_000)
    vcpus: Int | None = Field(default=None, ge=1, le=1_000_000)
    memory_mb: Int | None = Field(default=None, ge=MIN_BUDGET_MB, le=MAX_BUDGET_MB)
    image_cache: str | None = None
    boot_concurrency: Int = Field(default=4, ge=1, le=10_000)
    boot_interval_s: Delay = 0.0

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not HOST_NAME_RE.match(value):
            raise ValueError("must be lowercase letters, digits, '.', '_' or '-' (at most 63 characters)")
        return value

    @model_validator(mode="after")
    def _remote_needs_cache(self) -> HostSpec:
        if self.uri and not LOCAL_URI_RE.match(self.uri):
            if not self.image_cache:
                raise ValueError(
                    "a remote host needs image_cache: the directory on that host where base images are kept"
                )
            if not self.image_cache.startswith("/"):
                raise ValueError("image_cache must be an absolute path on the lab host")
        return self

    def is_local(self, default_uri: str) -> bool:
        """Whether the host is this machine (its URI names no remote host)."""
        return bool(LOCAL_URI_RE.match(self.uri or default_uri))


class JobSpec(_Strict):
    name: str = Field(min_length=1, max_length=200)
    tasks: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    categories: list[str] = []
    images: Literal["default", "all"] | list[str] = "default"
    agent: str = "oracle"
    agents: list[str] = []
    agent_settings: dict[str, Any] = {}
    attempts: Int = Field(default=1, ge=1, le=1000)
    seeds: list[int] = Field(default_factory=lambda: [DEFAULT_SEED], min_length=1, max_length=1000)
    split: SplitSelection = "train"
    include_heldout: bool = False
    limits: LimitsOverride = LimitsOverride()
    run_timeout_s: Number | None = Field(default=None, gt=0, le=MAX_RUN_TIMEOUT_S)
    retry: RetryPolicy = RetryPolicy()
    redact: bool = True
    warm: bool = True  # runs of a cell start from its saved post-setup state (testbed.runner.warm)
    egress: EgressSpec | None = None
    hosts: list[HostSpec] = []

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name an agent (oracle, noop, replay:FILE, openai:MODEL or a plug-in)")
        return value.strip()

    @field_validator("agents")
    @classmethod
    def _agents(cls, values: list[str]) -> list[str]:
        cleaned = [v.strip() for v in values]
        for i, value in enumerate(cleaned):
            if not value:
                raise ValueError(f"agents[{i}] is empty")
            if value in cleaned[:i]:
                raise ValueError(f"agent '{value}' is listed twice")
        return cleaned

    @model_validator(mode="after")
    def _one_agent_field(self) -> JobSpec:
        if self.agents and "agent" in self.model_fields_set:
            raise ValueError("give either agent (one) or agents (a list), not both")
        return self

    @property
    def agent_list(self) -> list[str]:
        """The agents the job runs, in order."""
        return list(self.agents) or [self.agent]

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int]) -> list[int]:
        for seed in value:
            if not 0 <= seed < 2**63:
                raise ValueError(f"seed {seed} is not a non-negative 64-bit integer")
        if len(set(value)) != len(value):
            raise ValueError("seeds must not repeat")
        return value

    @model_validator(mode="after")
    def _unique_hosts(self) -> JobSpec:
        names = [h.name for h in self.hosts]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"duplicate host name '{name}'")
        return self

    def run_timeout(self, limits: Limits) -> float:
        """The hard wall-clock cap of one run with `limits` (after the job's overrides)."""
        if self.run_timeout_s is not None:
            return self.run_timeout_s
        return limits.agent_time_s + 1800.0


@dataclass(frozen=True)
class Cell:
    """One matrix cell x attempt: the unit the job creates one pending run row for."""

    task_id: str
    task_dir: Path
    image: str
    attempt: int
    category: str
    agent: str = "oracle"
    seed: int = DEFAULT_SEED


def load_job(path: Path) -> JobSpec:
    """Read and validate a job file."""
    return validate(JobSpec, read_yaml(path), path)


def job_from_options(data: dict[str, Any], file: Path | None = None) -> JobSpec:
    """Validate job settings given as CLI flags, merged over a job file's (`None` values
    are left to the defaults); problems name `file` if given."""
    try:
        return validate(JobSpec, {k: v for k, v in data.items() if v is not None}, file or Path("-"))
    except InputError as exc:
        raise InputError(file, exc.field, exc.problem) from exc


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def select_task_dirs(spec: JobSpec, root: Path, *, file: Path | None = None) -> list[Path]:
    """Task directories named by `spec.tasks` (ids, paths or globs under `root/tasks`),
    deduplicated, in sorted order. A pattern matching nothing is an `InputError`."""
    tasks_root = root / "tasks"
    found: dict[Path, None] = {}
    for index, pattern in enumerate(spec.tasks):
        candidates: list[Path] = []
        raw = Path(pattern)
        bases = [raw] if raw.is_absolute() else [tasks_root / pattern, root / pattern, Path.cwd() / pattern]
        for base in bases:
            if _is_glob(pattern):
                candidates += [Path(p) for p in sorted(glob.glob(str(base)))]
            elif base.exists():
                candidates.append(base)
        matched = [c.resolve() for c in candidates if (c / "task.toml").is_file()]
        if not matched:
            raise InputError(file, f"tasks[{index}]", f"'{pattern}' matches no task directory under {tasks_root}")
        for directory in matched:
            found[directory] = None
    return sorted(found, key=lambda p: p.name)


def expand_matrix(
    spec: JobSpec,
    root: Path,
    *,
    images: set[str] | None = None,
    file: Path | None = None,
) -> tuple[list[Cell], dict[str, Task]]:
    """The job's cells (task x supported image variant x agent x attempt) and the loaded
    tasks by id (loaded with their default variant; a cell's own variant is loaded by the
    scheduler)."""
    tasks: dict[str, Task] = {}
    for directory in select_task_dirs(spec, root, file=file):
        task = load_task(directory, images=images, root=root)
        if spec.categories and task.definition.category not in spec.categories:
            continue
        if task.id in tasks and tasks[task.id].directory != task.directory:
            raise InputError(file, "tasks", f"two task directories with id '{task.id}'")
        tasks[task.id] = task
    if not tasks:
        raise InputError(file, "categories", f"no selected task is in categories {', '.join(spec.categories)}")
    tasks = _by_split(spec, root, tasks, file)
    if isinstance(spec.images, list) and images is not None:
        for image in spec.images:
            if image not in images:
                raise InputError(file, "images", f"unknown image '{image}' (known: {', '.join(sorted(images))})")
    cells: list[Cell] = []
    for task_id in sorted(tasks):
        task = tasks[task_id]
        supported = task.definition.images
        if spec.images == "default":
            variants = supported[:1]
        elif spec.images == "all":
            variants = list(supported)
        else:
            variants = [v for v in spec.images if v in supported]
        for image in variants:
            for agent in spec.agent_list:
                for seed in spec.seeds:
                    for attempt in range(1, spec.attempts + 1):
                        cells.append(
                            Cell(task_id, task.directory, image, attempt, task.definition.category, agent, seed)
                        )
    if not cells:
        raise InputError(file, "images", "no selected task supports any of the requested image variants")
    return cells, tasks


def _by_split(spec: JobSpec, root: Path, tasks: dict[str, Task], file: Path | None) -> dict[str, Task]:
    """`tasks` of the job's split (see the module contract)."""
    named: set[Path] = set()
    for pattern in spec.tasks:
        if not _is_glob(pattern):
            named |= set(select_task_dirs(spec.model_copy(update={"tasks": [pattern]}), root, file=file))
    kept: dict[str, Task] = {}
    for task_id, task in tasks.items():
        if in_split(task, spec.split):
            kept[task_id] = task
        elif task.directory in named:
            raise InputError(
                file, "split", f"task {task_id} is in split '{task.definition.split}', the job selects '{spec.split}'"
            )
    if not kept:
        raise InputError(file, "split", f"no selected task is in split '{spec.split}'")
    refuse_heldout(kept.values(), spec.include_heldout, file, "include_heldout")
    return kept
