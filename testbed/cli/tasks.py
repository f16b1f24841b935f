"""`testbed task validate|list`: tasks checked and listed without running them.

`task validate DIR...` checks each task as `run`, `launch` and `serve` would (definition,
images in the catalog, memory budget, agent policy) for every image variant it declares and
stops at the first problem (`InputError`: file, field, reason; exit status 2). `task list
[--json]` shows the tasks under `tasks/` of the project root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from testbed.config import Settings, project_root
from testbed.model.task_record import task_hash
from testbed.model.taskload import discover_tasks, load_task, load_task_variants
from testbed.render.terminal import cell, json_text
from testbed.runner.request import task_policy
from testbed.runtime import image_catalog

task_app = typer.Typer(help="Validate and list tasks.", no_args_is_help=True)


@task_app.command("validate")
def task_validate(paths: Annotated[list[Path], typer.Argument(help="task directories")]) -> None:
    """Check every task as `run`, `launch` and `serve` would, for each image variant it
    declares; exit 2 on the first problem (file, field, reason)."""
    budget = Settings.from_env().memory_budget_mb
    images = set(image_catalog())
    for path in paths:
        variants = load_task_variants(path, images=images, memory_budget_mb=budget)
        for task in variants:
            task_policy(task)
        names = ", ".join(variants[0].definition.images)
        Console(highlight=False).print(cell(f"ok {variants[0].id} ({path}; images: {names})"))


@task_app.command("list")
def task_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """Tasks under tasks/ with category, difficulty, variants and checks."""
    images = set(image_catalog())
    tasks = [load_task(directory, images=images) for directory in discover_tasks(project_root())]
    if as_json:
        rows = [
            {"id": t.id, "category": t.definition.category, "difficulty": t.definition.difficulty,
             "images": list(t.definition.images), "nodes": [n.name for n in t.topology.nodes],
             "checks": [c.id for c in t.definition.checks], "persist": t.definition.persistence_required,
             "directory": str(t.directory), "hash": task_hash(t.directory)}
            for t in tasks
        ]  # fmt: skip
        typer.echo(json_text(rows))
        return
    table = Table()
    for col in ("id", "category", "difficulty", "images", "nodes", "checks", "persist", "split", "parameters"):
        table.add_column(col)
    for task in tasks:
        d = task.definition
        table.add_row(
            d.id,
            d.category,
            d.difficulty,
            ", ".join(d.images),
            str(len(task.topology.nodes)),
            str(len(d.checks)),
            "yes" if d.persistence_required else "",
            d.split,
            ", ".join(d.parameters),
        )
    Console().print(table)
