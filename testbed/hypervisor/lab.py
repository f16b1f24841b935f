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
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncssh

from testbed.aio import run_to_completion
from testbed.config import Settings
from testbed.errors import GuestLost, HarnessError, InputError
from testbed.guest.dialects import dialect_for
from testbed.guest.readiness import wait_for_serial, wait_for_ssh
from testbed.guest.result import ExecResult
from testbed.guest.ssh import GuestSession, generate_key, public_key_line
from testbed.hypervisor.addressing import AddressPlan, plan_addresses
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.hypervisor.hostguard import ensure_host_guard
from testbed.hypervisor.labhost import LabHost, lab_host_for
from testbed.hypervisor.labstate import LabState, NodeState, all_lab_states
from testbed.hypervisor.leases import LabLease, LeaseStore
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

ProgressFn = Callable[[str, str], None]
"""Called with (node or "lab", event) as provisioning goes."""

KeepConsole = Callable[[str, Path], Awaitable[None]]
"""Called at teardown with (node, console log path) of every node that got a domain, before
the lab's files are removed (the runner keeps the logs with the run)."""


class GuestUnreachable(HarnessError):
    """The node has no working channel left (the agent cut SSH and the guest agent is gone)."""


@dataclass
class LabNode:
    """One running guest of a lab; `exec` is Harbor's environment interface.

    `access` is how `exec` reaches the guest: `ssh` (normally), `oob` (the guest agent, after
    the agent cut SSH: `testbed.runner.lockout`), or `none` (nothing answers; `exec` raises
    `GuestUnreachable`)."""

    name: str
    image: ImageDef
    domain: str
    mgmt_ip: str
    data_ips: dict[str, str]
    console_log: Path
    session: GuestSession
    hypervisor: Hypervisor | None = None
    oob: GuestAgentChannel | None = None
    access: str = "ssh"

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = 120.0,
        max_output: int = 64 * 1024,
        stdin: bytes | None = None,
        idle_timeout: float | None = None,
    ) -> ExecResult:
        """Run `command` on the guest. While it runs, the domain is watched: a guest that
        stops (destroyed, crashed, powered off) raises `GuestLost` within seconds instead of
        waiting for SSH keepalives to notice. `idle_timeout` ends it after that long
        without output (SSH only)."""
        if self.access == "oob" and self.oob is not None:
            return await self.oob.exec(command, timeout=timeout, max_output=max_output, stdin=stdin)
        if self.access != "ssh":
            raise GuestUnreachable(f"{self.name}: unreachable (neither SSH nor the guest agent answers)")
        work = asyncio.ensure_future(
            self.session.exec(command, timeout=timeout, max_output=max_output, stdin=stdin, idle_timeout=idle_timeout)
        )
        if self.hypervisor is None:
            return await work
        watch = asyncio.ensure_future(self._watch_domain())
        try:
            done, _ = await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
        if work in done:
            return work.result()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, HarnessError):
            await work
        await self.session.close()
        fault = watch.exception()
        if fault is not None and not isinstance(fault, GuestLost):
            raise fault  # libvirt itself failed (not the guest): the harness's error as it is
        raise GuestLost(f"{self.name}: guest {self.domain} stopped while running a command") from fault

    async def _watch_domain(self, interval: float = 2.0) -> None:
        """Returns (by raising `GuestLost`) only when the domain is no longer running."""
        while True:
            await asyncio.sleep(interval)
            if not await self.is_running():
                raise GuestLost(f"{self.name}: domain {self.domain} is not running")

    async def upload(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        await self.session.upload(data, path, mode=mode)

    async def download(self, path: str) -> bytes:
        return await self.session.download(path)

    async def is_running(self) -> bool:
        if self.hypervisor is None:
            return True
        return await self.hypervisor.domain_state(self.domain) == "running"


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
        await asyncio.gather(*(n.session.close() for n in self.nodes.values()))
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
        leased_nets = [n for n in topo.networks if n.subnet is None]
        nic_count = sum(1 + sum(1 for net in topo.networks if n.name in net.members) for n in topo.nodes)
        owner = Owner.current()
        self.lease = await asyncio.to_thread(
            self.leases.acquire,
            owner,
            subnets=1 + len(leased_nets),
            macs=nic_count,
            reserved_subnets=[n.subnet for n in topo.networks if n.subnet],
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
            topo, self.lease.subnets[0], {n.name: s for n, s in zip(leased_nets, self.lease.subnets[1:], strict=True)}
        )
        macs = iter(self.lease.macs)
        node_macs = {
            node.name: {
                "mgmt": next(macs),
                **{net.name: next(macs) for net in topo.networks if node.name in net.members},
            }
            for node in topo.nodes
        }
        client_key = generate_key()
        self.state.client_key_path.write_bytes(client_key.export_private_key("openssh"))
        self.state.client_key_path.chmod(0o600)
        self.progress("lab", f"lab {name} ({lab_id}): creating networks")
        await self._create_networks(plan, node_macs, images)
        self.progress("lab", "creating overlays and seeds")
        emulator = await self.hv.call(find_emulator, self.hv.conn, self.accel)
        specs = await asyncio.gather(
            *(
                self._prepare_node(node.name, images[node.name], plan, node_macs[node.name], client_key, emulator)
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
                name=f"{prefix}-{net.name}",
                bridge=bridge_name(self.lab_id, net.name),
                metadata_xml=self.metadata_for(None),
            )
            for net in self.topology.networks
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
        interfaces = [
            InterfaceConfig(
                mac=macs["mgmt"], address=f"{plan.mgmt[node_name]}/{plan.mgmt_subnet.prefixlen}", name="mgmt"
            )
        ]
        node_routes = plan.routes.get(node_name, [])
        for net, ip in plan.node_data_ips(node_name).items():
            interfaces.append(
                InterfaceConfig(
                    mac=macs[net],
                    address=f"{ip}/{plan.data_subnets[net].prefixlen}",
                    routes=[(dest, gw) for via, dest, gw in node_routes if via == net],
                    forward=spec_node.forward,
                    name=net,
                )
            )
        fwcfg: dict[str, str] = {}
        seed_iso: str | None = None
        if image.login.provision == "seed":
            seed_path = lab_dir / f"{node_name}.seed.tar"
            self.state.files.append(str(seed_path))
            write_seed(
                SeedSpec(
                    hostname=node_name,
                    authorized_keys=[client_pub],
                    host_key_private=host_key.export_private_key("openssh").decode(),
                    host_key_public=host_pub + "\n",
                    interfaces=interfaces,
                    hosts=plan.hosts_for(node_name),
                    forward=spec_node.forward,
                ),
                seed_path,
            )
            fwcfg[FWCFG_NAME] = await self._on_host(seed_path)
        elif image.login.provision == "cloud-init":
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
            seed_iso = await self._on_host(local_iso)
        domain = f"{prefix}-{node_name}"
        console_log = files.console_log(lab_dir, self.lab_id, node_name)
        nics = [Nic(f"{prefix}-mgmt", macs["mgmt"])] + [
            Nic(f"{prefix}-{net}", macs[net]) for net in plan.node_data_ips(node_name)
        ]
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
            nics=nics,
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
        state = NodeState(
            name=node_name,
            image=image.name,
            domain=domain,
            mgmt_ip=plan.mgmt[node_name],
            host_key=host_pub,
            user=image.login.user,
            dialect=image.dialect,
            readiness=image.readiness.method,
            data_ips=plan.node_data_ips(node_name),
            console_log=console_log,
        )
        session = GuestSession(
            plan.mgmt[node_name],
            client_key=client_key,
            host_key=host_pub,
            username=image.login.user,
            dialect=image.dialect,
            tunnel=self.host.link,
        )
        return spec, state, session

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
        )
        self.nodes[node.name] = node
        gate = self.boot_gate or contextlib.nullcontext()
        async with gate:
            self.progress(node.name, "booting")
            await self.hv.create_domain(render_domain(spec), autodestroy=self.autodestroy)
        self.progress(node.name, f"waiting for {image.readiness.method}")
        try:
            if image.readiness.method == "ssh":
                waited = await wait_for_ssh(
                    session, timeout=image.readiness.timeout_s, alive=node.is_running, name=node.name
                )
            else:
                waited = await wait_for_serial(
                    node.console_log,
                    image.readiness.prompt,
                    timeout=image.readiness.timeout_s,
                    alive=node.is_running,
                    name=node.name,
                )
        except HarnessError as exc:
            raise type(exc)(f"{exc}; {self._console_hint(node)}") from exc
        self.progress(node.name, f"ready after {waited:.1f} s")

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
        await asyncio.gather(*(n.session.close() for n in self.nodes.values()), return_exceptions=True)
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

    ethernets: dict[str, Any] = {}
    for i, iface in enumerate(interfaces):
        entry: dict[str, Any] = {"match": {"macaddress": iface.mac}, "set-name": f"eth{i}"}
        if iface.address:
            entry["addresses"] = [iface.address]
        else:
            entry["dhcp4"] = True
        if iface.routes:
            entry["routes"] = [{"to": d, "via": g} for d, g in iface.routes]
        ethernets[f"eth{i}"] = entry
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
