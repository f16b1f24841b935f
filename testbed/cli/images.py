"""`testbed image ...`: the image catalog and cache from the command line.

Commands: `list`, `show NAME`, `pull NAME`, `import NAME PATH`, `build NAME [--force]`.
The catalog is `images/*.yaml` under `testbed.config.project_root()`; the cache is
`Settings.from_env().images_dir`. Input errors (unknown name, bad definition, wrong source
type, bad path) print `error: ...` on stderr and exit with status 2; harness errors propagate
to the main CLI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from testbed.config import Settings, project_root
from testbed.errors import InputError
from testbed.images.availability import availability
from testbed.images.build import build_image
from testbed.images.importer import import_image
from testbed.images.pull import pull_image
from testbed.images.store import ImageStore, StoredImage
from testbed.model.images import DebootstrapSource, ImageDef, UrlSource, UserSource, load_catalog
from testbed.render.format import size
from testbed.render.terminal import json_text

app = typer.Typer(help="Image catalog and cache: list, show, pull, import, build.", no_args_is_help=True)


@contextmanager
def _input_errors() -> Iterator[None]:
    """Turn an `InputError` into `error: ...` on stderr and exit status 2."""
    try:
        yield
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _catalog() -> dict[str, ImageDef]:
    return load_catalog(project_root() / "images")


def _store() -> ImageStore:
    return ImageStore(Settings.from_env().images_dir)


def _lookup(catalog: dict[str, ImageDef], name: str) -> ImageDef:
    image = catalog.get(name)
    if image is None:
        known = ", ".join(sorted(catalog)) or "(none)"
        raise InputError(None, "NAME", f"unknown image '{name}'; known images: {known}")
    return image


def _report(name: str, stored: StoredImage) -> None:
    m = stored.manifest
    shared = f" (the build of {m.name})" if m.name != name else ""
    typer.echo(f"{name}: key {m.key[:16]}  {size(m.disk_size)}  {stored.disk}{shared}")


def _listing(catalog: dict[str, ImageDef], store: ImageStore) -> list[dict[str, object]]:
    """Every catalog image and every cached one outside the catalog, as `image list --json` prints them."""
    rows: list[dict[str, object]] = []
    for name, image in catalog.items():
        stored = store.get(name)
        rows.append({"name": name, "kind": image.kind, "os": f"{image.os.family} {image.os.release}",
                     "source": image.source.type, "present": stored is not None,
                     "key": stored.manifest.key if stored else None,
                     "size": stored.manifest.disk_size if stored else None,
                     "path": str(stored.disk) if stored else None})  # fmt: skip
    for stored in store.list():
        m = stored.manifest
        if m.name not in catalog:
            rows.append({"name": m.name, "kind": None, "os": None, "source": None, "present": True, "key": m.key,
                         "size": m.disk_size, "path": str(stored.disk)})  # fmt: skip
    return rows


@app.command("list")
def list_images(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every catalog image: how it gets here (build, pull, import), whether this host can do
    that now, and whether (and where) it is in the cache."""
    with _input_errors():
        catalog = _catalog()
        store = _store()
        if as_json:
            typer.echo(json_text(_listing(catalog, store)))
            return
        table = Table(title="images")
        for column in ("name", "OS", "init", "boot", "get", "this host", "cache", "key", "size"):
            table.add_column(column, no_wrap=True)
        table.add_column("path", overflow="fold")
        for name, image in catalog.items():
            state = availability(image, store)
            stored = state.stored
            cache = f"present (build of {state.shared_with})" if state.shared_with else state.state
            boot = "kernel" if image.boot.mode == "kernel" else f"disk/{image.boot.firmware}"
            table.add_row(
                name,
                f"{image.os.family} {image.os.release}",
                image.init,
                boot,
                state.method,
                state.here,
                cache,
                stored.manifest.key[:12] if stored else "",
                size(stored.manifest.disk_size) if stored else "",
                str(stored.disk) if stored else "",
            )
        for stored in store.list():
            if stored.directory.parent.name not in catalog:
                m = stored.manifest
                table.add_row(
                    stored.directory.parent.name, "(not in catalog)", "", "", "", "", "present",
                    m.key[:12], size(m.disk_size), str(stored.disk),
                )  # fmt: skip
        Console().print(table)


@app.command("show")
def show(name: Annotated[str, typer.Argument(help="catalog image name")]) -> None:
    """An image's definition and its cache state."""
    with _input_errors():
        image = _lookup(_catalog(), name)
        typer.echo(yaml.safe_dump(image.model_dump(mode="json"), sort_keys=False), nl=False)
        state = availability(image, _store())
        how = f"{state.command} {name}" + (" PATH" if state.method == "import" else "")
        stored = state.stored
        if stored is None:
            typer.echo(f"cache: not present (get it with `{how}`; this host: {state.here})")
        else:
            m = stored.manifest
            shared = f" (the build of {state.shared_with})" if state.shared_with else ""
            again = f" — the definition changed: `{how}` again" if state.state == "stale" else ""
            typer.echo(
                f"cache: {state.state}{shared}{again}, key {m.key}, {size(m.disk_size)}, created {m.created_at}\n"
                f"disk: {stored.disk}\nsource: {m.source}"
            )


@app.command("pull")
def pull(name: Annotated[str, typer.Argument(help="catalog image with source.type url")]) -> None:
    """Download a `url` image, verify its sha256 and cache it as qcow2."""
    with _input_errors():
        image = _lookup(_catalog(), name)
        console = Console(stderr=True)
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task(f"pull {name}", total=None)

            def progress(done: int, total: int | None) -> None:
                bar.update(task, completed=done, total=total)

            if isinstance(image.source, UrlSource):
                console.print(f"fetching {image.source.url}", highlight=False, markup=False)
            stored = asyncio.run(pull_image(image, _store(), progress=progress))
        _report(name, stored)


@app.command("import")
def import_(
    name: Annotated[str, typer.Argument(help="catalog image name")],
    path: Annotated[Path, typer.Argument(help="local qcow2 or raw disk image (left untouched)")],
) -> None:
    """Register a local disk file as catalog image NAME (copied or converted into the cache)."""
    with _input_errors():
        stored = import_image(name, path, _store(), _catalog())
        _report(name, stored)


@app.command("build")
def build(
    name: Annotated[str, typer.Argument(help="catalog image with source.type debootstrap")],
    force: Annotated[bool, typer.Option("--force", help="rebuild even if cached")] = False,
) -> None:
    """Build a debootstrap recipe locally (2-5 minutes); a cached build is reused, and a build
    of the same recipe under another name is shared."""
    with _input_errors():
        image = _lookup(_catalog(), name)
        if not isinstance(image.source, DebootstrapSource):
            hint = (
                f"`testbed image import {name} PATH` ({image.source.hint})"
                if isinstance(image.source, UserSource)
                else f"`testbed image pull {name}`"
            )
            raise InputError(
                f"images/{name}.yaml",
                "source.type",
                f"'{image.source.type}' images are not built locally; use {hint}",
            )
        console = Console(stderr=True)
        columns = (
            SpinnerColumn(finished_text="[green]done"),
            TextColumn("{task.fields[stage]:<12}", markup=False),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as bars:
            tasks: dict[str, TaskID] = {}

            def progress(stage: str, detail: str) -> None:
                if stage not in tasks:
                    for previous in tasks.values():
                        bars.update(previous, total=1, completed=1)
                    tasks[stage] = bars.add_task(detail, total=None, stage=stage)
                line = detail if len(detail) <= 100 else detail[:97] + "..."
                bars.update(tasks[stage], description=line)

            stored = asyncio.run(build_image(image, _store(), force=force, progress=progress))
            for task in tasks.values():
                bars.update(task, total=1, completed=1)
        _report(name, stored)
