"""Loading a task directory into a `Task` (`testbed.model.task` is the schema), with every
cross-check the schema alone cannot make: nodes named by steps and checks exist in the
topology, templates name declared parameters and instantiate at seed 0, scripts and the
topology file resolve inside the task directory. Every problem is an `InputError` naming the
file and field; nothing is read from the directory after loading.
"""

from __future__ import annotations

from pathlib import Path

from testbed.errors import InputError
from testbed.model.actions import check_actions, check_reward
from testbed.model.loading import read_toml, read_yaml, validate
from testbed.model.parameters import draw, render, value_names
from testbed.model.scenario import DEFAULT_SEED, render_definition, template_problem
from testbed.model.task import Step, Task, TaskDef
from testbed.model.taskfiles import TaskFiles
from testbed.model.topology import Topology, topology_from_data


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
