"""A lab restored from a slot (see `testbed.hypervisor.savedstate` for how and why, and
`testbed.hypervisor.replica` for the identity each restored lab gets)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import asyncssh

from testbed.aio import run_to_completion
from testbed.errors import HarnessError
from testbed.guest.dialects import dialect_for
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.hypervisor.hostguard import ensure_host_guard
from testbed.hypervisor.lab import LabNode
from testbed.hypervisor.labnetworks import network_lock, network_lock_path
from testbed.hypervisor.labstate import LabState, NodeState
from testbed.hypervisor.mgmtroute import host_address, isolate
from testbed.hypervisor.overlays import create_overlay
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.removal import KeepConsole, LabRemains, keep_consoles, remove_lab
from testbed.hypervisor.replica import Replica
from testbed.hypervisor.savedstate import reconnect, restored_sessions
from testbed.hypervisor.saveimage import restore_as
from testbed.hypervisor.slots import SlotMeta, SlotNode, SlotStore
from testbed.hypervisor.xml import LabMetadata
from testbed.model.images import ImageDef

log = logging.getLogger(__name__)


class RestoredLab:
    """A lab restored from a slot; the runner uses it like a `Lab` (`up`, `down`, `nodes`).

    Each one is a replica of the slot's lab (`testbed.hypervisor.replica`): its own lab id,
    directory, names, UUIDs and bridges, the slot's guests unchanged. Any number restore from
    one slot at once; callers hold the task's slot lock *shared* from before `up()` until
    after `down()` (so nobody removes the slot meanwhile).

    `up()` leases a lab id, writes the lab record, creates the networks (management route
    isolated, `testbed.hypervisor.mgmtroute`), restores the domains from the slot's memory
    images under their new identity (`testbed.hypervisor.saveimage`) and connects; on failure
    everything it created is removed. `down()` destroys domains and networks, removes the lab
    directory (the fresh overlays) and releases the lab id; the slot and its lease stay.
    """

    def __init__(
        self,
        meta: SlotMeta,
        store: SlotStore,
        catalog: Mapping[str, ImageDef],
        *,
        hypervisor: Hypervisor,
        run_id: str | None = None,
        job_id: str | None = None,
        keep_console: KeepConsole | None = None,
    ) -> None:
        self.meta = meta
        self.keep_console = keep_console
        self.store = store
        self.catalog = catalog
        self.hv = hypervisor
        self.run_id = run_id
        self.job_id = job_id
        self.nodes: dict[str, LabNode] = {}
        self.state: LabState | None = None
        self.replica: Replica | None = None
        self.restore_seconds: float | None = None
        self.failed = False  # up() or a node's background reconnect failed: the slot may be unusable
        # networks_s (networks + routes), memory_s (overlays + restore); the reconnect and clock
        # run in the background, awaited by each node's first command (`reconnect(background=True)`)
        self.timings: dict[str, float] = {}

    def _metadata(self, node: str | None) -> str:
        assert self.state is not None
        return LabMetadata(
            lab_id=self.state.lab_id,
            lab_name=self.state.name,
            lab_dir=self.state.directory,
            owner=self.state.owner,
            created_at=self.state.created_at,
            run_id=self.run_id,
            job_id=self.job_id,
            node=node,
        ).to_xml()

    async def up(self) -> None:
        t0 = time.monotonic()
        try:
            await self._up()
        except BaseException as exc:
            self.failed = not isinstance(exc, asyncio.CancelledError)
            await self.down()
            raise
        self.restore_seconds = time.monotonic() - t0

    async def _up(self) -> None:
        meta = self.meta
        await ensure_host_guard(self.hv.uri)
        owner = Owner.current()
        lease = await asyncio.to_thread(self.store.leases.acquire, owner, subnets=0, macs=0)
        self.replica = replica = Replica.of(meta, lease.lab_id, self.run_id)
        lab_dir = Path(replica.lab_dir)
        try:
            lab_dir.mkdir(parents=True)
        except BaseException:
            await asyncio.to_thread(self.store.leases.release, lease.lab_id)
            raise
        self.state = state = LabState(
            lab_id=replica.lab_id,
            name=f"{meta.topology}-{replica.lab_id}",
            directory=str(lab_dir),
            owner=owner,
            uri=self.hv.uri,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            topology=meta.topology,
            run_id=self.run_id,
            job_id=self.job_id,
        )
        state.save()
        slot = self.store.slot_dir(meta.task, meta.key)
        shutil.copy2(slot / "id_ed25519", state.client_key_path)
        client_key = asyncssh.import_private_key(state.client_key_path.read_bytes())
        t0 = time.monotonic()
        await self._create_networks(state, replica)
        self.timings["networks_s"] = time.monotonic() - t0
        for node in meta.nodes.values():
            domain = replica.domain(node.domain)
            state.domains.append(domain)
            state.files.append(str(lab_dir / f"{node.name}.qcow2"))
            state.nodes[node.name] = node.node_state(str(lab_dir / f"{node.name}.console.log"), domain=domain)
        state.save()
        t0 = time.monotonic()
        await self._restore_domains(replica, slot)
        self.timings["memory_s"] = time.monotonic() - t0
        for name, node in meta.nodes.items():
            self.nodes[name] = self._lab_node(state.nodes[name], node, lab_dir, client_key)
        # each node's first command waits for its reconnect, which waits for other restores
        for task in await reconnect(self.nodes, background=True, first=self.hv.restores.quiet):
            task.add_done_callback(self._note_reconnect)
        state.status = "ready"
        state.save()

    def _note_reconnect(self, task: asyncio.Task[None]) -> None:
        """A background reconnect that failed marks the slot unusable, as a failed `up` does."""
        if not task.cancelled() and task.exception() is not None:
            self.failed = True

    async def _create_networks(self, state: LabState, replica: Replica) -> None:
        """The slot's networks under the replica's names, each recorded in the state file
        before it is created, under the host-wide network lock (bridge names and subnets are
        checked there); a network with a host address gets its route isolated at once."""
        lock_path = network_lock_path(self.store.settings.leases_dir)
        for name, saved in self.meta.networks.items():
            xml = replica.network_xml(saved, self._metadata(None))
            state.networks.append(replica.rename(name))
            state.save()
            addr = host_address(xml)
            if addr is not None:
                state.mgmt_bridge = addr.bridge
            async with network_lock(lock_path):
                await self.hv.create_network(xml)
                if addr is not None:
                    await asyncio.to_thread(isolate, addr)

    async def _restore_domains(self, replica: Replica, slot: Path) -> None:
        """Every node: a fresh overlay over its frozen post-setup disk, then its memory image
        restored under the replica's XML (the image itself is only read)."""
        import libvirt

        lab_dir = Path(replica.lab_dir)

        async def one(node: SlotNode) -> None:
            await create_overlay(slot / f"{node.name}.disk.qcow2", lab_dir / f"{node.name}.qcow2")
            xml = replica.domain_xml(node.xml, self._metadata(node.name), slot_dir=slot, seed_files=node.seed_files)
            with self.hv.restores.restoring():
                await self.hv.call(
                    restore_as,
                    self.hv.conn,
                    slot / f"{node.name}.mem",
                    xml,
                    lab_dir / f"{node.name}.restore.fifo",
                    libvirt.VIR_DOMAIN_SAVE_RUNNING,
                )

        await asyncio.gather(*(one(n) for n in self.meta.nodes.values()))

    def _lab_node(self, state: NodeState, node: SlotNode, lab_dir: Path, client_key: asyncssh.SSHKey) -> LabNode:
        """The restored node's handle: its sessions (harness and agent, bound to the
        management bridge) and channels."""
        assert self.state is not None
        image = self.catalog[node.image]
        session, agent = restored_sessions(node, image, client_key, bind_device=self.state.mgmt_bridge)
        return LabNode(
            name=node.name,
            image=image,
            domain=state.domain,
            mgmt_ip=node.mgmt_ip,
            data_ips=node.data_ips,
            console_log=lab_dir / f"{node.name}.console.log",
            session=session,
            hypervisor=self.hv,
            oob=GuestAgentChannel(self.hv, state.domain, dialect_for(node.dialect).shell),
            agent_session=agent,
        )

    async def down(self) -> None:
        """Tear down (runs to completion even if the caller is cancelled)."""
        await run_to_completion(self._teardown())

    async def _teardown(self) -> None:
        await asyncio.gather(*(n.session.close(abandon=True) for n in self.nodes.values()), return_exceptions=True)
        self.nodes = {}
        state, self.state = self.state, None
        if state is None:
            return
        await keep_consoles(state, self.keep_console)
        remains = LabRemains(state.lab_id, state.directory, tuple(state.domains), tuple(state.networks))
        errors = await remove_lab(self.hv, None, remains, self.store.leases)  # its own lab id; the slot keeps its lease
        if errors:
            raise HarnessError("teardown incomplete: " + "; ".join(errors) + " (run `testbed reap`)")
