"""`testbed lab ...` and `testbed reap`: labs from the command line.

`lab up` provisions a lab and *detaches* it: it outlives the command until `lab down`.
Other commands find labs by name or id through their state files.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Annotated

import asyncssh
import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import make_url

from testbed.config import Settings, project_root
from testbed.db.connect import sqlite_path
from testbed.db.engine import database_url, open_database
from testbed.errors import HarnessError, InputError
from testbed.guest.ssh import GuestSession
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.hostlink import HostLink, SshTarget
from testbed.hypervisor.lab import Lab
from testbed.hypervisor.labhost import files_of_lab, lab_host_for
from testbed.hypervisor.labstate import LabState, all_lab_states, check_name_free, find_lab
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.linkmap import graph, lab_map, topology_map
from testbed.hypervisor.reaper import ReapReport, reap
from testbed.hypervisor.removal import LabRemains, remove_lab
from testbed.images.store import ImageStore
from testbed.model.fields import positive_seconds
from testbed.model.topology import Topology, load_topology, resolve_topology_path
from testbed.render.netgraph import to_dot, to_svg
from testbed.runtime import image_catalog, runtime
from testbed.scheduler.orphans import finish_orphaned_runs

lab_app = typer.Typer(help="Bring labs up, run commands in them, take them down.", no_args_is_help=True)
console = Console(stderr=True)
DEFAULT_IMAGE = "debian-12"
LAB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _lab_or_fail(settings: Settings, name: str) -> LabState:
    state = find_lab(settings.labs_dir, name)
    if state is None:
        known = ", ".join(s.name for s in all_lab_states(settings.labs_dir)) or "none"
        raise InputError(None, "NAME", f"no lab named '{name}' (labs: {known})")
    return state


@lab_app.command("up")
def lab_up(
    topology: Annotated[str, typer.Argument(help="topology file, or a name under topologies/")],
    name: Annotated[str | None, typer.Option(help="lab name (default: TOPOLOGY-LABID)")] = None,
    image: Annotated[str, typer.Option(help="image for nodes that do not name one")] = DEFAULT_IMAGE,
) -> None:
    """Provision a lab, print its nodes and addresses, and leave it running."""
    settings = Settings.from_env()
    if name is not None:
        if not LAB_NAME_RE.match(name):
            problem = f"{name!r} is not a lab name (letters, digits, '.', '_' or '-', at most 63 characters)"
            raise InputError(None, "--name", problem)
        check_name_free(settings.labs_dir, name)
    catalog = image_catalog()
    path = resolve_topology_path(topology, project_root())
    topo = load_topology(path, images=catalog, default_image=image, memory_budget_mb=settings.memory_budget_mb)
    ImageStore(settings.images_dir).require_nodes(topo, catalog, path)
    asyncio.run(_lab_up(settings, topo, name))


async def _lab_up(settings: Settings, topo: Topology, name: str | None) -> None:
    async with runtime(settings) as rt:
        with console.status(f"provisioning {topo.name} ({rt.accel.label})") as status:
            lab = Lab(
                topo,
                rt.catalog,
                settings=settings,
                hypervisor=rt.hypervisor,
                accel=rt.accel.accel,
                name=name,
                autodestroy=False,
                progress=lambda who, what: status.update(f"{who}: {what}"),
                lab_host=rt.lab_host,
            )
            await lab.up()
        table = Table(title=f"lab {lab.name} ({lab.lab_id})")
        for col in ("node", "image", "domain", "mgmt address", "data addresses"):
            table.add_column(col)
        for node in lab.nodes.values():
            data = ", ".join(f"{net}={ip}" for net, ip in node.data_ips.items())
            table.add_row(node.name, node.image.name, node.domain, node.mgmt_ip, data)
        links = link_table(lab.plan.link_map() if lab.plan else [], f"link map of {lab.name}")
        lab_name = lab.name
        await lab.detach()
    Console().print(table)
    if links.row_count:
        Console().print(links)
    Console().print(f"run commands with: testbed lab exec {lab_name} NODE -- COMMAND")
    Console().print(f"draw the links with: testbed lab graph {lab_name} --out {lab_name}.svg")


def link_table(rows: list[tuple[str, str, str, str]], title: str) -> Table:
    """The link map: one row per data NIC (`-`: a segment's kernel-named NIC, or no address)."""
    table = Table(title=title)
    for col in ("network", "node", "interface", "address"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    return table


@lab_app.command("graph")
def lab_graph(
    name: Annotated[str, typer.Argument(help="a lab's name or id, or a topology file or name under topologies/")],
    out: Annotated[Path | None, typer.Option("--out", help="file to write (default: stdout)")] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help="svg or dot (default: from --out's suffix, else svg)")
    ] = None,
    image: Annotated[str, typer.Option(help="image for nodes that do not name one (topologies)")] = DEFAULT_IMAGE,
) -> None:
    """Write a lab's (or a topology's) link map as SVG or Graphviz dot."""
    chosen = fmt or ("dot" if out is not None and out.suffix in (".dot", ".gv") else "svg")
    if chosen not in ("svg", "dot"):
        raise InputError(None, "--format", f"'{chosen}' is neither svg nor dot")
    settings = Settings.from_env()
    catalog = image_catalog()
    state = find_lab(settings.labs_dir, name)
    if state is not None:
        picture = graph(state.name, {n.name: n.image for n in state.nodes.values()}, lab_map(state), catalog)
    else:
        path = resolve_topology_path(name, project_root())
        topo = load_topology(path, images=catalog, default_image=image)
        picture = graph(topo.name, {n.name: n.image or image for n in topo.nodes}, topology_map(topo), catalog)
    text = to_dot(picture) if chosen == "dot" else str(to_svg(picture))
    if out is None:
        sys.stdout.write(text)
        return
    out.write_text(text, encoding="utf-8")
    Console(stderr=True).print(f"wrote {out}")


@lab_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def lab_exec(
    name: Annotated[str, typer.Argument(help="lab name or id")],
    node: Annotated[str, typer.Argument(help="node name")],
    command: Annotated[list[str], typer.Argument(help="command (after --)")],
    timeout: Annotated[float, typer.Option(help="seconds before the command is ended")] = 120.0,
    agent: Annotated[
        bool, typer.Option("--agent", help="as the agent logs in (a router's CLI), not as the harness")
    ] = False,
) -> None:
    """Run COMMAND on NODE; prints its output and exits with its status."""
    settings = Settings.from_env()
    positive_seconds(timeout, "--timeout")
    state = _lab_or_fail(settings, name)
    if node not in state.nodes:
        raise InputError(None, "NODE", f"lab '{state.name}' has no node '{node}' (nodes: {', '.join(state.nodes)})")
    if agent and state.nodes[node].agent_user is None:
        raise InputError(
            None, "--agent", f"node '{node}' has no login of the agent's own (its agent logs in as the harness)"
        )
    text = " ".join(command)
    code = asyncio.run(_lab_exec(state, node, text, timeout, agent))
    raise typer.Exit(code)


async def _lab_exec(state: LabState, node: str, command: str, timeout: float, agent: bool = False) -> int:
    ns = state.nodes[node]
    key = asyncssh.read_private_key(str(state.client_key_path))
    target = SshTarget.from_uri(state.uri)
    link = HostLink(target) if target is not None else None  # a remote lab host: through its SSH
    user, dialect = (ns.agent_user or ns.user, ns.agent_dialect or ns.dialect) if agent else (ns.user, ns.dialect)
    session = GuestSession(
        ns.mgmt_ip,
        client_key=key,
        host_key=ns.host_key,
        username=user,
        dialect=dialect,
        tunnel=link,
        bind_device=state.mgmt_bridge,
    )
    try:
        result = await session.exec(command, timeout=timeout)
    finally:
        await session.close()
        if link is not None:
            await link.close()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.timed_out:
        console.print(f"[red]timed out after {timeout:.0f} s[/red]")
        return 124
    return result.exit_code if result.exit_code is not None else 255


@lab_app.command("list")
def lab_list() -> None:
    """Labs on this host with their owner, nodes and how many of their domains still run.

    A lab whose domains are gone (a libvirtd restart or host reboot ends transient domains;
    a detached lab has no owner process to notice) is shown as `dead` with the command that
    removes what is left of it.
    """
    settings = Settings.from_env()
    states = all_lab_states(settings.labs_dir)
    running = asyncio.run(_running_domains(states))
    table = Table()
    for col in ("name", "id", "status", "owner", "nodes", "created"):
        table.add_column(col)
    for s in states:
        owner = "detached" if s.owner.detached else f"pid {s.owner.pid}" + ("" if s.owner.is_alive() else " (dead)")
        nodes = ", ".join(f"{n.name}={n.mgmt_ip}" for n in s.nodes.values())
        table.add_row(s.name, s.lab_id, _lab_status(s, running.get(s.lab_id)), owner, nodes, s.created_at)
    Console().print(table)


def _lab_status(state: LabState, running: int | None) -> str:
    """`ready (2/2 running)`; `dead (0/2 running): testbed lab down NAME` once domains are gone."""
    total = len(state.domains)
    if running is None or total == 0:
        return state.status
    if state.status == "ready" and running < total:
        return f"[red]dead ({running}/{total} running)[/red]: testbed lab down {state.name}"
    return f"{state.status} ({running}/{total} running)"


async def _running_domains(states: list[LabState]) -> dict[str, int | None]:
    """Running-domain count per lab id; None where the lab's libvirt cannot be asked."""
    counts: dict[str, int | None] = {}
    for uri in {s.uri for s in states}:
        labs = [s for s in states if s.uri == uri]
        try:
            async with Hypervisor(uri) as hv:
                for s in labs:
                    found = await asyncio.gather(*(hv.domain_state(d) for d in s.domains))
                    counts[s.lab_id] = sum(1 for st in found if st == "running")
        except HarnessError:  # an unreachable libvirt only hides the count
            counts.update({s.lab_id: None for s in labs})
    return counts


@lab_app.command("down")
def lab_down(name: Annotated[str, typer.Argument(help="lab name or id")]) -> None:
    """Destroy a lab's domains and networks, remove its files and leases."""
    settings = Settings.from_env()
    state = _lab_or_fail(settings, name)
    errors = asyncio.run(_lab_down(settings, state))
    if errors:
        for err in errors:
            console.print(f"[red]{err}[/red]")
        raise typer.Exit(1)
    Console().print(f"lab {state.name} removed")


async def _lab_down(settings: Settings, state: LabState) -> list[str]:
    remains = LabRemains(state.lab_id, state.directory, tuple(state.domains), tuple(state.networks))
    leases = LeaseStore(settings.leases_dir, settings.subnet_pool)
    async with Hypervisor(state.uri) as hv:
        return await remove_lab(hv, lab_host_for(hv, cache=state.host_cache).files, remains, leases)


def reap_command(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be removed")] = False,
    db: Annotated[
        str | None, typer.Option("--db", help="run database whose orphaned runs to finish (default: TESTBED_DB)")
    ] = None,
) -> None:
    """Remove domains, networks, lab files and leases whose owner is gone (found by metadata),
    and finish run rows whose owner is gone (`error`, "owner lost")."""
    settings = Settings.from_env()
    url = database_url(db)  # a bad --db is refused before anything is reaped

    async def _go() -> ReapReport:
        async with Hypervisor(settings.libvirt_uri) as hv:
            host = lab_host_for(hv)
            return await reap(
                hv,
                settings,
                dry_run=dry_run,
                files_for=lambda state: files_of_lab(hv, host, state.host_cache if state else None),
            )

    report = asyncio.run(_go())
    runs = _finish_orphaned_runs(url, dry_run)
    verb = "would remove" if dry_run else "removed"
    out = Console()
    if report.empty and not runs:
        out.print("nothing to reap")
    for kind, items in (
        ("domain", report.domains),
        ("network", report.networks),
        ("lab directory", report.lab_dirs),
        ("lease", report.leases),
    ):
        for item in items:
            out.print(f"{verb} {kind} {item}")
    for run_id, reason in runs:
        out.print(f"{'would finish' if dry_run else 'finished'} run {run_id} as error ({reason})", markup=False)
    for err in report.errors:
        console.print(f"[red]{err}[/red]")
    if report.errors:
        raise typer.Exit(1)


def _finish_orphaned_runs(url: str, dry_run: bool) -> list[tuple[str, str]]:
    """Orphaned run rows of the run database at `url`, when there is one (a missing SQLite
    file is not created)."""
    path = sqlite_path(make_url(url)) if url.startswith("sqlite") else None
    if path is not None and not path.is_file():
        return []
    return finish_orphaned_runs(open_database(url), dry_run=dry_run)
