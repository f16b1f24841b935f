"""A lab restored from a slot (see `testbed.hypervisor.savedstate` for how and why)."""

from __future__ import annotations

import asyncio
import fcntl
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
from testbed.hypervisor.labstate import LabState
from testbed.hypervisor.node import agent_session
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.removal import KeepConsole, LabRemains, keep_consoles, remove_lab
from testbed.hypervisor.savedstate import new_session, reconnect, replace_metadata, restore_domains
from testbed.hypervisor.slots import SlotMeta, SlotNode, SlotStore
from testbed.hypervisor.xml import LabMetadata
from testbed.model.images import ImageDef

log = logging.getLogger(__name__)


class RestoredLab:
    """A lab restored from a slot; the runner uses it like a `Lab` (`up`, `down`, `nodes`).

    `up()` writes the lab record, recreates the networks, restores the domains and connects;
    on failure everything it created is removed. `down()` destroys domains and networks and
    removes the lab directory (the fresh overlays); the slot and its lease stay. The caller
    holds the slot's lock from before `up()` until after `down()`.
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
        self.restore_seconds: float | None = None
        self.failed = False  # up() failed: the slot may be unusable
        self.timings: dict[str, float] = {}  # memory_s (overlays + restore), ssh_s (reconnect + clock)

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
        lab_dir = Path(meta.lab_dir)
        if lab_dir.exists():
            await self._reap_crashed_user(lab_dir)
        lab_dir.mkdir(parents=True)
        self.state = state = LabState(
            lab_id=meta.lab_id,
            name=meta.lab_name,
            directory=str(lab_dir),
            owner=Owner.current(),
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
        await self._create_networks(state)
        for node in meta.nodes.values():
            state.domains.append(node.domain)
            state.files.append(str(lab_dir / f"{node.name}.qcow2"))
            state.nodes[node.name] = node.node_state(str(lab_dir / f"{node.name}.console.log"))
        state.save()
        t0 = time.monotonic()
        await restore_domains(self.hv, self.store, meta, {n: self._metadata(n) for n in meta.nodes})
        self.timings["memory_s"] = time.monotonic() - t0
        for name, node in meta.nodes.items():
            self.nodes[name] = self._lab_node(node, lab_dir, client_key)
        t0 = time.monotonic()
        await reconnect(self.nodes)
        self.timings["ssh_s"] = time.monotonic() - t0
        state.status = "ready"
        state.save()

    async def _create_networks(self, state: LabState) -> None:
        """The slot's networks, each recorded in the state file before it is created, under
        the host-wide network lock (bridge names and subnets are checked there)."""
        lock_path = self.store.settings.leases_dir / "networks.lock"
        for name, xml in self.meta.networks.items():
            state.networks.append(name)
            state.save()
            with lock_path.open("a+") as lock:
                await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
                try:
                    await self.hv.create_network(replace_metadata(xml, self._metadata(None)))
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    def _lab_node(self, node: SlotNode, lab_dir: Path, client_key: asyncssh.SSHKey) -> LabNode:
        """The restored node's handle: its sessions (harness and agent) and channels."""
        image, session = self.catalog[node.image], new_session(node, client_key)
        return LabNode(
            name=node.name,
            image=image,
            domain=node.domain,
            mgmt_ip=node.mgmt_ip,
            data_ips=node.data_ips,
            console_log=lab_dir / f"{node.name}.console.log",
            session=session,
            hypervisor=self.hv,
            oob=GuestAgentChannel(self.hv, node.domain, dialect_for(node.dialect).shell),
            agent_session=agent_session(
                image, node.mgmt_ip, client_key=client_key, host_key=node.host_key, harness=session
            ),
        )

    async def _reap_crashed_user(self, lab_dir: Path) -> None:
        """The slot's lab directory is left by an earlier restore. If its owner is dead (the
        episode's process crashed; we hold the slot's lock, so no live process uses it),
        remove what it left — domains, networks, fresh overlays — and reuse the slot; the
        slot itself and its lease stay. A live owner means a wiring error: refuse."""
        meta = self.meta
        try:
            left = LabState.load(lab_dir / "state.json")
        except (OSError, ValueError, KeyError, TypeError):
            left = None
        if left is not None and left.owner.is_alive():
            raise HarnessError(f"lab directory {lab_dir} of saved state {meta.task}/{meta.key} is in use")
        domains = tuple(left.domains) if left else tuple(n.domain for n in meta.nodes.values())
        networks = tuple(left.networks) if left else tuple(meta.networks)
        errors = await remove_lab(self.hv, None, LabRemains(meta.lab_id, str(lab_dir), domains, networks), None)
        if errors:
            raise HarnessError(f"saved state {meta.task}/{meta.key}: cannot clear a crashed user: " + "; ".join(errors))
        log.info("saved state %s/%s: removed what a crashed episode left; reusing it", meta.task, meta.key)

    async def down(self) -> None:
        """Tear down (runs to completion even if the caller is cancelled)."""
        await run_to_completion(self._teardown())

    async def _teardown(self) -> None:
        await asyncio.gather(*(n.session.close() for n in self.nodes.values()), return_exceptions=True)
        self.nodes = {}
        state, self.state = self.state, None
        if state is None:
            return
        await keep_consoles(state, self.keep_console)
        remains = LabRemains(state.lab_id, state.directory, tuple(state.domains), tuple(state.networks))
        errors = await remove_lab(self.hv, None, remains, None, keep_lease=True)  # the slot keeps the lease
        if errors:
            raise HarnessError("teardown incomplete: " + "; ".join(errors) + " (run `testbed reap`)")
