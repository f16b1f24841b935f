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

Segments and links are both networks of the lab (a link's NICs named as the topology says,
`testbed.hypervisor.addressing` and `testbed.hypervisor.nodeprep`); a console-managed node
is bootstrapped on its serial console once it shows its prompt
(`testbed.hypervisor.consoleboot`). The nodes themselves are `testbed.hypervisor.node`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import asyncssh

from testbed.aio import run_to_completion
from testbed.config import Settings
from testbed.errors import HarnessError, InputError
from testbed.guest.dialects import dialect_for
from testbed.guest.readiness import wait_for_serial, wait_for_ssh
from testbed.guest.ssh import GuestSession, generate_key, public_key_line
from testbed.hypervisor.addressing import AddressPlan, leased_networks, plan_addresses
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.console import LibvirtConsole
from testbed.hypervisor.consoleboot import bootstrap_values, console_bootstrap
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.hypervisor.hostguard import ensure_host_guard
from testbed.hypervisor.labhost import LabHost, lab_host_for
from testbed.hypervisor.labstate import LabState, NodeState, all_lab_states
from testbed.hypervisor.leases import LabLease, LeaseStore
from testbed.hypervisor.node import GuestUnreachable, LabNode, agent_session
from testbed.hypervisor.nodeprep import cloud_init_ethernets, interfaces_for, node_macs, seed_extras
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.platform import find_emulator
from testbed.hypervisor.removal import LabRemains, remove_lab
from testbed.hypervisor.seed import FWCFG_NAME, InterfaceConfig, SeedSpec, write_seed
from testbed.hypervisor.xml import (
    DhcpHost,
    DomainSpec,
    LabMetadata,
    NetworkSpec,
    Nic,
    render_domain,
    render_network,
)
from testbed.images.store import ImageStore, StoredImage
from testbed.model.images import ImageDef
from testbed.model.topology import Topology

log = logging.getLogger(__name__)
__all__ = ["GuestUnreachable", "KeepConsole", "Lab", "LabNode", "bridge_name", "keep_consoles"]

ProgressFn = Callable[[str, str], None]
"""Called with (node or "lab", event) as provisioning goes."""

KeepConsole = Callable[[str, Path], Awaitable[None]]
"""Called at teardown with (node, console log path) of every node that got a domain, before
the lab's files are removed (the runner keeps the logs with the run)."""


def bridge_name(lab_id: str, network: str) -> str:
    name = f"tb{lab_id}-{network}"
    if len(name) > 15:
        raise HarnessError(f"bridge name {name} exceeds 15 characters")
    return name


def check_name_free(labs_dir: Path, name: str, lab_id: str | None = None) -> None:
    """Refuse `name` when another lab (not `lab_id`) already has it (`InputError`, `--name`)."""
    for other in all_lab_states(labs_dir):
        if other.name == name and other.lab_id != lab_id:
            raise InputError(
                None,
                "--name",
                f"a lab named '{name}' already exists ({other.lab_id}); "
                "pick another name or run `testbed lab down` first",
            )


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
        images = self._resolve_images()
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
    def _resolve_images(self) -> dict[str, tuple[ImageDef, StoredImage]]:
        resolved: dict[str, tuple[ImageDef, StoredImage]] = {}
        for node in self.topology.nodes:
            name = node.image or ""
            image = self.catalog.get(name)
            if image is None:
                raise InputError(None, f"nodes[{node.name}].image", f"unknown image '{name}'")
            stored = self.store.require(image, f"nodes[{node.name}].image")
            if self.host.remote and image.readiness.method != "ssh":
                raise InputError(
                    None,
                    f"nodes[{node.name}].image",
                    f"image '{name}' is ready on a serial prompt, which needs a local lab host "
                    f"({self.hv.uri} is remote); run it on a local host",
                )
            _check_node_fits(self.topology, node.name, image)
            resolved[node.name] = (image, stored)
        return resolved

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
        topo = self.topology
        # before anything exists: a lab never comes up with its guests able to reach the host
        self.progress("lab", f"host guard: {await ensure_host_guard(self.hv.uri, self.host.link)}")
        owned = await self.hv.owned_objects()
        existing_ids = {o.metadata.lab_id for o in owned}
        existing_ids |= {s.lab_id for s in all_lab_states(self.settings.labs_dir)}
        existing_ids |= await self.host.files.lab_ids()
        leased_nets = leased_networks(topo)
        members = topo.members()
        nic_count = sum(1 + sum(1 for ms in members.values() if n.name in ms) for n in topo.nodes)
        owner = Owner.current()
        self.lease = await asyncio.to_thread(
            self.leases.acquire,
            owner,
            subnets=1 + len(leased_nets),
            macs=nic_count,
            reserved_subnets=[n.subnet for n in topo.networks if n.subnet]
            + [lk.subnet for lk in topo.links if lk.subnet],
            exclude_lab_ids=existing_ids,
            exclude_subnets=await self.hv.network_subnets(),
        )
        lab_id = self.lease.lab_id
        lab_dir = self.settings.labs_dir / lab_id
        lab_dir.mkdir(parents=True, exist_ok=False)
        name = self.requested_name or f"{topo.name}-{lab_id}"
        check_name_free(self.settings.labs_dir, name, lab_id)
        self.state = LabState(
            lab_id=lab_id,
            name=name,
            directory=str(lab_dir),
            owner=owner,
            uri=self.hv.uri,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            topology=topo.name,
            run_id=self.run_id,
            job_id=self.job_id,
            host_cache=self.host.cache,
        )
        self.state.save()
        self.plan = plan = plan_addresses(
            topo, self.lease.subnets[0], dict(zip(leased_nets, self.lease.subnets[1:], strict=True))
        )
        self.state.links = [list(row) for row in plan.link_map()]
        macs = node_macs(topo, plan, iter(self.lease.macs))
        client_key = generate_key()
        self.state.client_key_path.write_bytes(client_key.export_private_key("openssh"))
        self.state.client_key_path.chmod(0o600)
        self.progress("lab", f"lab {name} ({lab_id}): creating networks")
        await self._create_networks(plan, macs, images)
        self.progress("lab", "creating overlays and seeds")
        emulator = await self.hv.call(find_emulator, self.hv.conn, self.accel)
        specs = await asyncio.gather(
            *(
                self._prepare_node(node.name, images[node.name], plan, macs[node.name], client_key, emulator)
                for node in topo.nodes
            )
        )
        self.state.save()
        await asyncio.gather(*(self._boot(spec) for spec in specs))
        self.state.status = "ready"
        self.state.save()

    async def _create_networks(
        self,
        plan: AddressPlan,
        node_macs: dict[str, dict[str, str]],
        images: dict[str, tuple[ImageDef, StoredImage]],
    ) -> None:
        assert self.state is not None
        prefix = self._prefix()
        needs_dhcp = any(img.login.provision == "cloud-init" for img, _ in images.values())
        hosts = list(plan.mgmt_subnet.hosts())
        mgmt = NetworkSpec(
            name=f"{prefix}-mgmt",
            bridge=bridge_name(self.lab_id, "mgmt"),
            metadata_xml=self.metadata_for(None),
            host_ip=plan.host_ip,
            prefix=plan.mgmt_subnet.prefixlen,
            dhcp_hosts=[DhcpHost(node_macs[n]["mgmt"], n, ip) for n, ip in plan.mgmt.items()] if needs_dhcp else [],
            dhcp_start=str(hosts[199]) if needs_dhcp else None,
            dhcp_end=str(hosts[-2]) if needs_dhcp else None,
        )
        specs = [mgmt] + [
            NetworkSpec(
                name=f"{prefix}-{net}",
                bridge=bridge_name(self.lab_id, net),
                metadata_xml=self.metadata_for(None),
            )
            for net in [*(n.name for n in self.topology.networks), *(str(lk.name) for lk in self.topology.links)]
        ]
        lock_path = self.settings.leases_dir / "networks.lock"
        for spec in specs:
            self.state.networks.append(spec.name)
            self.state.save()
            # libvirt can hand one bridge to networks defined in parallel: serialise host-wide.
            with lock_path.open("a+") as lock:
                await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
                try:
                    await self.hv.create_network(render_network(spec))
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    async def _prepare_node(
        self,
        node_name: str,
        image_pair: tuple[ImageDef, StoredImage],
        plan: AddressPlan,
        macs: dict[str, str],
        client_key: asyncssh.SSHKey,
        emulator: str,
    ) -> tuple[DomainSpec, NodeState, GuestSession]:
        assert self.state is not None
        image, stored = image_pair
        spec_node = self.topology.node(node_name)
        lab_dir = Path(self.state.directory)
        prefix = self._prefix()
        files = self.host.files
        base = await files.base(stored)
        overlay = await files.overlay(lab_dir, self.lab_id, node_name, base, stored)
        self.state.files.append(overlay)
        host_key = generate_key()
        host_pub = public_key_line(host_key, f"{node_name}@testbed")
        client_pub = public_key_line(client_key, "testbed-harness")
        interfaces = interfaces_for(self.topology, plan, node_name, image, macs)
        fwcfg, seed_iso = await self._seed(node_name, image, plan, interfaces, host_key, client_pub)
        domain = f"{prefix}-{node_name}"
        console_log = files.console_log(lab_dir, self.lab_id, node_name)
        spec = DomainSpec(
            name=domain,
            lab_name=self.state.name,
            node=node_name,
            accel=self.accel,
            memory_mb=max(spec_node.memory, image.min_memory_mb),
            vcpus=spec_node.vcpus,
            disk=overlay,
            console_log=console_log,
            metadata_xml=self.metadata_for(node_name),
            nics=[Nic(f"{prefix}-{net}", macs[net]) for net in ["mgmt", *(i.network for i in plan.ifaces[node_name])]],
            emulator=emulator,
            firmware=image.boot.firmware,
            nvram=files.nvram(lab_dir, self.lab_id, node_name) if image.boot.firmware == "uefi" else None,
            cpu_level=image.cpu_level,
            kernel=base.kernel if image.boot.mode == "kernel" else None,
            initrd=base.initrd if image.boot.mode == "kernel" else None,
            cmdline=image.boot.cmdline,
            seed_iso=seed_iso,
            fwcfg_files=fwcfg,
            disk_bus=image.boot.disk_bus,
            nic_model=image.boot.nic_model,
        )
        state = _node_state(node_name, image, domain, plan, host_pub, console_log, macs["mgmt"])
        session = GuestSession(
            plan.mgmt[node_name],
            client_key=client_key,
            host_key=host_pub,
            username=image.login.user,
            dialect=image.dialect,
            tunnel=self.host.link,
        )
        return spec, state, session

    async def _seed(
        self,
        node_name: str,
        image: ImageDef,
        plan: AddressPlan,
        interfaces: list[InterfaceConfig],
        host_key: asyncssh.SSHKey,
        client_pub: str,
    ) -> tuple[dict[str, str], str | None]:
        """Write the node's seed (testbed's fw_cfg tar or a NoCloud ISO) among the lab's
        files; the domain's fw_cfg entries and ISO path. A console-managed image gets none."""
        assert self.state is not None
        lab_dir = Path(self.state.directory)
        fwcfg: dict[str, str] = {}
        if image.login.provision == "seed":
            seed_path = lab_dir / f"{node_name}.seed.tar"
            self.state.files.append(str(seed_path))
            files, firstboot = seed_extras(self.topology, plan, node_name, image, client_pub)
            write_seed(
                SeedSpec(
                    hostname=node_name,
                    authorized_keys=[client_pub],
                    host_key_private=host_key.export_private_key("openssh").decode(),
                    host_key_public=public_key_line(host_key, f"{node_name}@testbed") + "\n",
                    interfaces=interfaces,
                    hosts=plan.hosts_for(node_name),
                    forward=self.topology.node(node_name).forward,
                    files=files,
                    firstboot=firstboot,
                ),
                seed_path,
            )
            fwcfg[FWCFG_NAME] = await self._on_host(seed_path)
            return fwcfg, None
        if image.login.provision == "cloud-init":
            local_iso = await asyncio.to_thread(
                _cloud_init_seed,
                lab_dir,
                node_name,
                self.lab_id,
                client_pub,
                host_key,
                interfaces,
                plan.hosts_for(node_name),
                image.login.user,
            )
            self.state.files.append(str(local_iso))
            return fwcfg, await self._on_host(local_iso)
        return fwcfg, None

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
        node = LabNode(
            name=node_state.name,
            image=image,
            domain=spec.name,
            mgmt_ip=node_state.mgmt_ip,
            data_ips=node_state.data_ips,
            console_log=Path(spec.console_log),
            session=session,
            hypervisor=self.hv,
            oob=GuestAgentChannel(self.hv, spec.name, dialect_for(image.dialect).shell) if spec.guest_agent else None,
            agent_session=agent_session(
                image,
                node_state.mgmt_ip,
                client_key=session.client_key,
                host_key=node_state.host_key,
                harness=session,
                tunnel=self.host.link,
            ),
        )
        self.nodes[node.name] = node
        gate = self.boot_gate or contextlib.nullcontext()
        async with gate:
            self.progress(node.name, "booting")
            await self.hv.create_domain(render_domain(spec), autodestroy=self.autodestroy)
        self.progress(node.name, f"waiting for {image.readiness.method}")
        try:
            waited = await self._wait_ready(node, node_state)
        except HarnessError as exc:
            raise type(exc)(f"{exc}; {self._console_hint(node)}") from exc
        self.progress(node.name, f"ready after {waited:.1f} s")

    async def _wait_ready(self, node: LabNode, node_state: NodeState) -> float:
        """Wait for SSH, or for the serial prompt (then, on a console-managed device, its
        console bootstrap and SSH); the seconds it took."""
        image = node.image
        if image.readiness.method == "ssh":
            return await wait_for_ssh(
                node.session, timeout=image.readiness.timeout_s, alive=node.is_running, name=node.name
            )
        waited = await wait_for_serial(
            node.console_log,
            image.readiness.prompt,
            timeout=image.readiness.timeout_s,
            alive=node.is_running,
            name=node.name,
        )
        if not image.console_managed:
            return waited
        assert image.console is not None and self.plan is not None
        t0 = time.monotonic()
        self.progress(node.name, "console bootstrap")
        values = bootstrap_values(
            hostname=node.name,
            mgmt_ip=node.mgmt_ip,
            mgmt_subnet=self.plan.mgmt_subnet,
            mgmt_mac=node_state.mgmt_mac,
            host_ip=self.plan.host_ip,
            public_key=public_key_line(node.session.client_key, "testbed-harness"),
        )
        stream = await LibvirtConsole.open(self.hv, node.domain)
        done = await console_bootstrap(stream, image.console, values, node.name)
        if done.channel is not None:
            node.console, node.access = done.channel, "console"
            return waited + time.monotonic() - t0
        assert done.host_key is not None
        for session in (node.session, node.agent_session):
            if session is not None:
                session.pin_host_key(done.host_key)
        node_state.host_key = done.host_key
        assert self.state is not None
        self.state.save()
        self.progress(node.name, "waiting for ssh")
        left = max(30.0, image.readiness.timeout_s - waited)
        await wait_for_ssh(node.session, timeout=left, alive=node.is_running, name=node.name)
        return waited + time.monotonic() - t0

    def _console_hint(self, node: LabNode) -> str:
        """Where the console log of a node that failed to come up can be read afterwards,
        and its last lines (the lab directory is removed at teardown)."""
        try:
            tail = node.console_log.read_bytes()[-1200:].decode(errors="replace").strip()
        except OSError:
            tail = ""
        where = (
            f"its console log is kept with the run: testbed runs show {self.run_id[:8]} --console {node.name}"
            if self.run_id
            else f"console log {node.console_log} (removed with the lab)"
        )
        return f"{where}; console ends: {tail[-600:]!r}" if tail else where

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


async def keep_consoles(state: LabState, keep: KeepConsole | None) -> None:
    """Hand every node's console log to `keep` (best effort: a failure is logged)."""
    if keep is None:
        return
    for node in state.nodes.values():
        if not node.console_log:
            continue
        try:
            await keep(node.name, Path(node.console_log))
        except Exception:
            log.exception("could not keep the console log of %s", node.name)


def _node_state(
    node: str, image: ImageDef, domain: str, plan: AddressPlan, host_pub: str, console_log: str, mgmt_mac: str
) -> NodeState:
    """The lab record of one node (what `testbed lab exec` and the reaper read back)."""
    agent = image.login.agent
    return NodeState(
        name=node,
        image=image.name,
        domain=domain,
        mgmt_ip=plan.mgmt[node],
        host_key=host_pub,
        user=image.login.user,
        dialect=image.dialect,
        readiness=image.readiness.method,
        data_ips=plan.node_data_ips(node),
        console_log=console_log,
        agent_user=agent.user if agent else None,
        agent_dialect=agent.dialect if agent else None,
        mgmt_mac=mgmt_mac,
    )


def _check_node_fits(topology: Topology, node: str, image: ImageDef) -> None:
    """What a topology validated against image names alone could not check: the node's NIC
    count and a starting router configuration fit its image."""
    nics = 1 + sum(1 for members in topology.members().values() if node in members)
    if nics > image.max_nics:
        raise InputError(
            None, f"nodes[{node}]", f"{nics} NICs (management included); image '{image.name}' can have {image.max_nics}"
        )
    if topology.node(node).router is not None and not (image.device and image.device.config_file):
        raise InputError(None, f"nodes[{node}].router", f"image '{image.name}' takes no starting router configuration")


def _set_domain_owner(hv: Hypervisor, domain: str, metadata_xml: str) -> None:
    import libvirt

    from testbed.config import METADATA_NS, METADATA_PREFIX

    dom = hv.conn.lookupByName(domain)
    dom.setMetadata(
        libvirt.VIR_DOMAIN_METADATA_ELEMENT, metadata_xml, METADATA_PREFIX, METADATA_NS, libvirt.VIR_DOMAIN_AFFECT_LIVE
    )


def _cloud_init_seed(
    lab_dir: Path,
    node: str,
    lab_id: str,
    client_pub: str,
    host_key: asyncssh.SSHKey,
    interfaces: list[InterfaceConfig],
    hosts: dict[str, str],
    user: str,
) -> Path:
    from testbed.images.cloudinit import make_nocloud_seed

    ethernets = cloud_init_ethernets(interfaces)
    host_priv = host_key.export_private_key("openssh").decode()
    host_pub = public_key_line(host_key)
    return make_nocloud_seed(
        lab_dir / f"{node}.seed.iso",
        hostname=node,
        instance_id=f"{lab_id}-{node}",
        authorized_keys=[client_pub],
        host_keys={"ed25519": (host_priv, host_pub)},
        network_config={"version": 2, "ethernets": ethernets},
        user=user,
    )
