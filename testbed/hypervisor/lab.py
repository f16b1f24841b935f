"""A lab: an isolated multi-node set of guests for one run (or one `testbed lab up`).

`Lab` is an async context manager. Entering it leases a lab id, subnets and MACs, creates
qcow2 overlays over the cached base images, renders and creates transient isolated
networks and domains, and waits until every node is ready (SSH with a pinned host key, or
a serial prompt). Leaving it — normally, on error, or on cancellation — tears everything
down: domains, networks, files and leases. Each object is recorded in the lab's state file
before it is created, and carries the lab's metadata, so the reaper can finish the job for
a process that died.

The lab host may be remote (`qemu+ssh://`): where the overlays, seeds and console logs live
and how guests are reached is the `LabHost`'s business (`testbed.hypervisor.labhost`); the
lab's files there are all named by its id, so removing them needs no per-file record.

Segments and links are both networks of the lab (`testbed.hypervisor.labnetworks`; a
link's NICs named as the topology says, `testbed.hypervisor.addressing` and
`testbed.hypervisor.nodeprep`). Each node gets an overlay, a seed
(`testbed.hypervisor.nodeseed`) and a domain (`testbed.hypervisor.nodespec`); readiness,
including a console-managed node's bootstrap on its serial console, is
`testbed.hypervisor.nodeready`. The nodes themselves are `testbed.hypervisor.node`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import asyncssh

from testbed.aio import run_to_completion
from testbed.config import Settings
from testbed.errors import HarnessError
from testbed.guest.ssh import GuestSession, generate_key, public_key_line
from testbed.hypervisor.addressing import AddressPlan, leased_networks, plan_addresses
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.hostguard import ensure_host_guard
from testbed.hypervisor.labhost import LabHost, lab_host_for
from testbed.hypervisor.labnetworks import create_networks, lab_network_specs, network_lock_path
from testbed.hypervisor.labstate import LabState, NodeState, all_lab_states, check_name_free
from testbed.hypervisor.leases import LabLease, LeaseStore
from testbed.hypervisor.node import GuestUnreachable, LabNode
from testbed.hypervisor.nodeprep import interfaces_for, node_macs
from testbed.hypervisor.nodeready import console_hint, wait_ready
from testbed.hypervisor.nodeseed import SeedInputs, seed_file, write_node_seed
from testbed.hypervisor.nodespec import DomainPlace, NodeFiles, domain_spec, lab_node, node_record, resolve_images
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.platform import find_emulator
from testbed.hypervisor.removal import KeepConsole, LabRemains, keep_consoles, remove_lab
from testbed.hypervisor.seed import FWCFG_NAME
from testbed.hypervisor.xml import (
    DomainSpec,
    LabMetadata,
    render_domain,
)
from testbed.images.store import ImageStore, StoredImage
from testbed.model.images import ImageDef
from testbed.model.topology import Topology

log = logging.getLogger(__name__)
__all__ = ["GuestUnreachable", "Lab", "LabNode"]

ProgressFn = Callable[[str, str], None]
"""Called with (node or "lab", event) as provisioning goes."""


class Lab:
    """See module docstring. Build with the constructor, then `async with lab:`."""

    def __init__(
        self,
        topology: Topology,
        catalog: dict[str, ImageDef],
        *,
        settings: Settings,
        hypervisor: Hypervisor,
        accel: str,
        name: str | None = None,
        run_id: str | None = None,
        job_id: str | None = None,
        autodestroy: bool = True,
        progress: ProgressFn | None = None,
        boot_gate: asyncio.Semaphore | None = None,
        lab_host: LabHost | None = None,
        keep_console: KeepConsole | None = None,
    ) -> None:
        """`lab_host`: the host's files and SSH link, shared by the labs of one host (the
        default builds a private one for `hypervisor`, closed at teardown)."""
        self.topology = topology
        self.catalog = catalog
        self.settings = settings
        self.hv = hypervisor
        self.accel = accel
        self.requested_name = name
        self.run_id = run_id
        self.job_id = job_id
        self.autodestroy = autodestroy
        self.progress = progress or (lambda _who, _what: None)
        self.boot_gate = boot_gate
        self.keep_console = keep_console
        self.host = lab_host or lab_host_for(hypervisor)
        self._own_host = lab_host is None
        self.store = ImageStore(settings.images_dir)
        self.leases = LeaseStore(settings.leases_dir, settings.subnet_pool)
        self.nodes: dict[str, LabNode] = {}
        self.state: LabState | None = None
        self.lease: LabLease | None = None
        self.plan: AddressPlan | None = None

    # -- public -----------------------------------------------------------------------
    async def __aenter__(self) -> Lab:
        await self.up()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.down()

    @property
    def lab_id(self) -> str:
        assert self.lease is not None
        return self.lease.lab_id

    @property
    def name(self) -> str:
        assert self.state is not None
        return self.state.name

    async def up(self) -> None:
        """Provision the whole lab; on any failure everything created is torn down."""
        remote = self.hv.uri if self.host.remote else None
        images = resolve_images(self.topology, self.catalog, self.store, remote_uri=remote)
        try:
            await self._provision(images)
        except BaseException:
            await self.down()
            raise

    async def down(self) -> None:
        """Tear down everything; runs to completion even if the caller is cancelled."""
        await run_to_completion(self._teardown())

    async def detach(self) -> None:
        """Hand the lab over to no process: it stays until `testbed lab down`."""
        assert self.state is not None and self.lease is not None
        owner = self.state.owner.detach()
        self.state.owner = owner
        self.state.save()
        self.leases.set_owner(self.lab_id, owner)
        for node in self.nodes.values():
            await self.hv.call(_set_domain_owner, self.hv, node.domain, self.metadata_for(node.name, owner))
        await asyncio.gather(*(n.close() for n in self.nodes.values()))
        self.nodes = {}
        self.state = None
        self.lease = None

    # -- provisioning -----------------------------------------------------------------
    def metadata_for(self, node: str | None, owner: Owner | None = None) -> str:
        """The `<tb:lab>` metadata XML of this lab's objects (`node` None: its networks)."""
        assert self.state is not None
        return LabMetadata(
            lab_id=self.state.lab_id,
            lab_name=self.state.name,
            lab_dir=self.state.directory,
            owner=owner or self.state.owner,
            created_at=self.state.created_at,
            run_id=self.run_id,
            job_id=self.job_id,
            node=node,
        ).to_xml()

    def _prefix(self) -> str:
        short = self.run_id[:8] if self.run_id else self.lab_id
        return f"tb-{short}"

    async def _provision(self, images: dict[str, tuple[ImageDef, StoredImage]]) -> None:
        # before anything exists: a lab never comes up with its guests able to reach the host
        self.progress("lab", f"host guard: {await ensure_host_guard(self.hv.uri, self.host.link)}")
        leased_nets = leased_networks(self.topology)
        owner = Owner.current()
        self.lease = await self._acquire_lease(owner, len(leased_nets))
        state = self.state = self._new_state(owner)
        self.plan = plan = plan_addresses(
            self.topology,
            self.lease.subnets[0],
            dict(zip(leased_nets, self.lease.subnets[1 : 1 + len(leased_nets)], strict=True)),
        )
        state.links = [list(row) for row in plan.link_map()]
        macs = node_macs(self.topology, plan, iter(self.lease.macs))
        client_key = generate_key()
        state.client_key_path.write_bytes(client_key.export_private_key("openssh"))
        state.client_key_path.chmod(0o600)
        self.progress("lab", f"lab {state.name} ({state.lab_id}): creating networks")
        await self._create_networks(plan, macs, images)
        self.progress("lab", "creating overlays and seeds")
        emulator = await self.hv.call(find_emulator, self.hv.conn, self.accel)
        specs = await asyncio.gather(
            *(
                self._prepare_node(node.name, images[node.name], plan, macs[node.name], client_key, emulator)
                for node in self.topology.nodes
            )
        )
        state.save()
        await asyncio.gather(*(self._boot(spec) for spec in specs))
        state.status = "ready"
        state.save()

    async def _acquire_lease(self, owner: Owner, leased_nets: int) -> LabLease:
        """A lab id no libvirt object, state file or lab file uses; subnets and MACs."""
        topo = self.topology
        existing_ids = {o.metadata.lab_id for o in await self.hv.owned_objects()}
        existing_ids |= {s.lab_id for s in all_lab_states(self.settings.labs_dir)}
        existing_ids |= await self.host.files.lab_ids()
        members = topo.members()
        nic_count = sum(1 + sum(1 for ms in members.values() if n.name in ms) for n in topo.nodes)
        return await asyncio.to_thread(
            self.leases.acquire,
            owner,
            subnets=1 + leased_nets,
            macs=nic_count,
            reserved_subnets=[n.subnet for n in topo.networks if n.subnet]
            + [lk.subnet for lk in topo.links if lk.subnet],
            exclude_lab_ids=existing_ids,
            exclude_subnets=await self.hv.network_subnets(),
        )

    def _new_state(self, owner: Owner) -> LabState:
        """The lab's directory and state file, saved before any object of the lab exists."""
        assert self.lease is not None
        lab_id = self.lease.lab_id
        lab_dir = self.settings.labs_dir / lab_id
        lab_dir.mkdir(parents=True, exist_ok=False)
        name = self.requested_name or f"{self.topology.name}-{lab_id}"
        check_name_free(self.settings.labs_dir, name, lab_id)
        state = LabState(
            lab_id=lab_id,
            name=name,
            directory=str(lab_dir),
            owner=owner,
            uri=self.hv.uri,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            topology=self.topology.name,
            run_id=self.run_id,
            job_id=self.job_id,
            host_cache=self.host.cache,
        )
        state.save()
        return state

    async def _create_networks(
        self,
        plan: AddressPlan,
        node_macs: dict[str, dict[str, str]],
        images: dict[str, tuple[ImageDef, StoredImage]],
    ) -> None:
        state = self.state
        assert state is not None
        specs = lab_network_specs(
            self.topology,
            plan,
            node_macs,
            prefix=self._prefix(),
            lab_id=self.lab_id,
            metadata_xml=self.metadata_for(None),
            dhcp=any(img.login.provision == "cloud-init" for img, _ in images.values()),
        )

        def record(network: str) -> None:
            state.networks.append(network)
            state.save()

        await create_networks(self.hv, specs, network_lock_path(self.settings.leases_dir), record)

    async def _prepare_node(
        self,
        node_name: str,
        image_pair: tuple[ImageDef, StoredImage],
        plan: AddressPlan,
        macs: dict[str, str],
        client_key: asyncssh.SSHKey,
        emulator: str,
    ) -> tuple[DomainSpec, NodeState, GuestSession]:
        """The node's overlay and seed among the lab's files, its domain, lab record and
        harness session (nothing booted yet)."""
        assert self.state is not None
        image, stored = image_pair
        lab_dir = Path(self.state.directory)
        files = self.host.files
        base = await files.base(stored)
        overlay = await files.overlay(lab_dir, self.lab_id, node_name, base, stored)
        self.state.files.append(overlay)
        host_key = generate_key()
        host_pub = public_key_line(host_key, f"{node_name}@testbed")
        client_pub = public_key_line(client_key, "testbed-harness")
        inputs = SeedInputs(self.lab_id, node_name, interfaces_for(self.topology, plan, node_name, image, macs),
                            host_key, client_pub)  # fmt: skip
        fwcfg, seed_iso = await self._seed(image, plan, inputs)
        domain = f"{self._prefix()}-{node_name}"
        node_files = NodeFiles(
            base=base,
            overlay=overlay,
            console_log=files.console_log(lab_dir, self.lab_id, node_name),
            nvram=files.nvram(lab_dir, self.lab_id, node_name) if image.boot.firmware == "uefi" else None,
            fwcfg=fwcfg,
            seed_iso=seed_iso,
        )
        place = DomainPlace(domain, self.state.name, self._prefix(), self.metadata_for(node_name), self.accel, emulator)
        spec = domain_spec(self.topology, node_name, image, place, node_files, plan=plan, macs=macs)
        state = node_record(node_name, image, domain, plan, host_pub, node_files.console_log, macs["mgmt"])
        session = GuestSession(
            plan.mgmt[node_name],
            client_key=client_key,
            host_key=host_pub,
            username=image.login.user,
            dialect=image.dialect,
            tunnel=self.host.link,
        )
        return spec, state, session

    async def _seed(self, image: ImageDef, plan: AddressPlan, inputs: SeedInputs) -> tuple[dict[str, str], str | None]:
        """Write the node's seed (testbed's fw_cfg tar or a NoCloud ISO) among the lab's
        files; the domain's fw_cfg entries and ISO path. A console-managed image gets none."""
        assert self.state is not None
        seed = seed_file(Path(self.state.directory), inputs.node, image)
        if seed is None:
            return {}, None
        self.state.files.append(str(seed.path))
        await asyncio.to_thread(write_node_seed, seed, self.topology, plan, image, inputs)
        on_host = await self._on_host(seed.path)
        return ({FWCFG_NAME: on_host}, None) if seed.kind == "fwcfg" else ({}, on_host)

    async def _on_host(self, local: Path) -> str:
        """The path of lab file `local` on the lab host (uploaded there when remote)."""
        if not self.host.files.remote:
            return str(local)
        assert self.state is not None
        data = await asyncio.to_thread(local.read_bytes)
        return await self.host.files.put(Path(self.state.directory), self.lab_id, local.name, data)

    async def _boot(self, prepared: tuple[DomainSpec, NodeState, GuestSession]) -> None:
        assert self.state is not None
        spec, node_state, session = prepared
        image = self.catalog[node_state.image]
        self.state.domains.append(spec.name)
        self.state.nodes[node_state.name] = node_state
        self.state.save()
        node = lab_node(spec, node_state, image, self.hv, session, tunnel=self.host.link)
        self.nodes[node.name] = node
        gate = self.boot_gate or contextlib.nullcontext()
        async with gate:
            self.progress(node.name, "booting")
            await self.hv.create_domain(render_domain(spec), autodestroy=self.autodestroy)
        self.progress(node.name, f"waiting for {image.readiness.method}")
        try:
            assert self.plan is not None
            plan, save = self.plan, self.state.save
            waited = await wait_ready(self.hv, node, node_state, plan, progress=self.progress, save=save)
        except HarnessError as exc:
            raise type(exc)(f"{exc}; {console_hint(node, self.run_id)}") from exc
        self.progress(node.name, f"ready after {waited:.1f} s")

    # -- teardown ---------------------------------------------------------------------
    async def _teardown(self) -> None:
        await asyncio.gather(*(n.close() for n in self.nodes.values()), return_exceptions=True)
        self.nodes = {}
        state, lease = self.state, self.lease
        errors: list[str] = []
        if state is not None:
            await keep_consoles(state, self.keep_console)
            state.status = "tearing-down"
            with contextlib.suppress(OSError):
                state.save()
            remains = LabRemains(state.lab_id, state.directory, tuple(state.domains), tuple(state.networks))
            errors = await remove_lab(self.hv, self.host.files, remains, self.leases if lease else None)
            self.state = None
        elif lease is not None:
            errors = await remove_lab(self.hv, None, LabRemains(lease.lab_id, None), self.leases)
        self.lease = None
        if self._own_host:
            await self.host.close()
        if errors:
            raise HarnessError("teardown incomplete: " + "; ".join(errors) + " (run `testbed reap`)")


def _set_domain_owner(hv: Hypervisor, domain: str, metadata_xml: str) -> None:
    import libvirt

    from testbed.config import METADATA_NS, METADATA_PREFIX

    dom = hv.conn.lookupByName(domain)
    dom.setMetadata(
        libvirt.VIR_DOMAIN_METADATA_ELEMENT, metadata_xml, METADATA_PREFIX, METADATA_NS, libvirt.VIR_DOMAIN_AFFECT_LIVE
    )
