"""Saved post-setup states ("slots") of a task's lab, for fast episode resets.

A slot is one task's lab, provisioned and set up once, then saved: every guest's memory
(`virDomainSave`), its domain XML, and the disk overlay it was using, which is frozen
(read-only) and becomes the slot's *post-setup disk*. The lab that built it goes on
restored in place (`restore_domains`). Any other lab restored from it is a *replica*
(`testbed.hypervisor.restoredlab`, `testbed.hypervisor.replica`): a fresh qcow2 overlay over
the post-setup disk per node, the lab's networks recreated under new names and bridges with
the same subnets and MACs (the guests' memory holds their network configuration), and the
memory image restored under a new domain name and UUID (`testbed.hypervisor.saveimage`).
After the episode the replica's domains are destroyed and its overlays deleted; the slot
stays. Any number of replicas run at once: each management network has the same host
address, with its route in a table of its own (`testbed.hypervisor.mgmtroute`; the
building lab's route moves there too when it is saved). Callers hold the task's slot lock
(`SlotStore.lock`) exclusively to build or remove a slot, shared while they restore from it.

The slots themselves (layout, key, records, lock) are `testbed.hypervisor.slots`; the
restored lab is `testbed.hypervisor.restoredlab`.

Leak-proofing:

- The slot keeps the lab's lease (lab id, subnets, MACs) with a *detached* owner, so the
  lease store never reclaims it and no other lab is given its addresses while the state
  exists. `SlotStore.remove` releases it; removing a slot is the only way it goes.
- A restored lab writes an ordinary lab record (`labs/<lab-id>/state.json`, owned by the
  current process) before it creates anything, and every network and domain carries
  `<tb:lab>` metadata naming the current process: if it dies, `testbed reap` removes the
  domains, networks and the lab directory, and leaves the slot and its lease alone.
- Restored domains cannot be started with `VIR_DOMAIN_START_AUTODESTROY` (restore takes no
  such flag): after a crash they run until `testbed reap`.

Names: a replica's domains and networks are `tb-<episode run>-<name>`, its bridges
`tb<its lab id>-<network>`, its directory `labs/<its lab id>`; the episode's run id is also
in every object's metadata.

Cost: `virDomainRestoreFlags` itself takes about a second, but libvirt looks up its QEMU
capabilities first; on a host where libvirt cannot keep them cached (it re-probes QEMU on
every domain start, e.g. when `/dev/kvm` is not accessible to the `qemu.conf` user) every
restore, like every cold boot, pays that probe too.

After a restore the guest's clock is behind by the time since the save, and SSH sessions
from before the save are dead: `RestoredLab` connects afresh and sets the guest clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncssh

from testbed.errors import HarnessError
from testbed.guest.readiness import wait_for_ssh
from testbed.guest.ssh import GuestSession
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.lab import Lab, LabNode
from testbed.hypervisor.labstate import NodeState
from testbed.hypervisor.node import agent_session
from testbed.hypervisor.overlays import create_overlay
from testbed.hypervisor.slots import SlotMeta, SlotNode, SlotStore
from testbed.model.images import ImageDef

log = logging.getLogger(__name__)

_METADATA_RE = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)


def replace_metadata(xml: str, metadata_xml: str) -> str:
    new, count = _METADATA_RE.subn(lambda _m: f"<metadata>\n{metadata_xml}\n</metadata>", xml, count=1)
    if count != 1:
        raise HarnessError("saved XML has no <metadata> element")
    return new


# -- saving -------------------------------------------------------------------------------


async def save_lab(
    lab: Lab,
    store: SlotStore,
    *,
    task: str,
    key: str,
    variant: str,
    run_id: str | None,
    snapshots: dict[str, dict[str, Any]],
    commands: list[dict[str, Any]],
    os_release: dict[str, str],
) -> SlotMeta:
    """Save the running `lab` as slot `key` of `task` and stop its guests (all are paused
    before the first is saved; restores resume them).

    Afterwards the lab's domains are gone (saved), its networks still exist, its overlays
    have moved into the slot (frozen), and its lease belongs to the slot (the lab will not
    release it). `restore_domains` brings the guests back in the same lab directory. On
    failure the partial slot is removed; the lab keeps its lease and tears down as usual.
    """
    assert lab.state is not None and lab.lease is not None
    state, lease = lab.state, lab.lease
    final = store.slot_dir(task, key)
    tmp = final.with_name(f"{key}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        await asyncio.gather(*(n.session.close() for n in lab.nodes.values()))
        networks = await _network_xmls(lab)
        nodes = await _save_guests(lab, tmp)
        shutil.copy2(state.client_key_path, tmp / "id_ed25519")
        meta = SlotMeta(
            task=task,
            key=key,
            variant=variant,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            built_by_run=run_id,
            lab_id=state.lab_id,
            lab_name=state.name,
            lab_dir=state.directory,
            topology=state.topology,
            subnets=list(lease.subnets),
            macs=list(lease.macs),
            networks=networks,
            nodes=nodes,
            snapshots=snapshots,
            commands=commands,
            os_release=os_release,
        )
        (tmp / "meta.json").write_text(meta.to_json(), encoding="utf-8")
        store.invalidate(task, keep=tmp.name)  # the caller holds the lock: no other slot of this task stays
        store.leases.set_owner(state.lab_id, store.orphan_owner())
        os.replace(tmp, final)
    except BaseException:
        _discard(tmp)
        raise
    lab.lease = None  # the slot owns it now
    state.files = [f for f in state.files if not f.endswith(".qcow2")]
    state.save()
    return meta


async def _network_xmls(lab: Lab) -> dict[str, str]:
    """The definition of each of the lab's networks, by name (restores re-create them)."""
    assert lab.state is not None
    networks = {}
    for name in lab.state.networks:
        net = await lab.hv.call(lab.hv.conn.networkLookupByName, name)
        networks[name] = await lab.hv.call(net.XMLDesc, 0)
    return networks


async def _save_guests(lab: Lab, tmp: Path) -> dict[str, SlotNode]:
    """Pause every guest (the nodes' saved states are one consistent cut), then save each:
    memory, the XML in its save image, its seeds, and its overlay (frozen) into `tmp`."""
    import libvirt

    assert lab.state is not None
    state, lab_dir = lab.state, Path(lab.state.directory)
    domains = {n: await lab.hv.call(lab.hv.conn.lookupByName, s.domain) for n, s in state.nodes.items()}
    for dom in domains.values():
        await lab.hv.call(dom.suspend)
    nodes: dict[str, SlotNode] = {}
    for node_state in state.nodes.values():
        mem = str(tmp / f"{node_state.name}.mem")
        await lab.hv.call(domains[node_state.name].save, mem)
        # the XML stored in the save image (the one a restore's XML must match, e.g. its
        # CPU check mode, which the live XML reports differently)
        xml = await lab.hv.call(lab.hv.conn.saveImageGetXMLDesc, mem, libvirt.VIR_DOMAIN_SAVE_IMAGE_XML_SECURE)
        seeds = []
        for seed in lab_dir.glob(f"{node_state.name}.seed.*"):
            shutil.copy2(seed, tmp / seed.name)
            seeds.append(seed.name)
        disk = tmp / f"{node_state.name}.disk.qcow2"
        shutil.move(lab_dir / f"{node_state.name}.qcow2", disk)
        disk.chmod(0o444)
        nodes[node_state.name] = SlotNode.of(node_state, xml, seeds)
    return nodes


def _discard(tmp: Path) -> None:
    """Remove a partial slot directory (its frozen disks made writable first)."""
    for f in tmp.glob("*.disk.qcow2"):
        with contextlib.suppress(OSError):
            f.chmod(0o644)
    shutil.rmtree(tmp, ignore_errors=True)


# -- restoring ----------------------------------------------------------------------------


def _restore_sync(hv: Hypervisor, mem: str, dxml: str) -> None:
    import libvirt

    hv.conn.restoreFlags(mem, dxml, libvirt.VIR_DOMAIN_SAVE_RUNNING)


async def restore_domains(hv: Hypervisor, store: SlotStore, meta: SlotMeta, metadata: Mapping[str, str]) -> None:
    """Restore every node of `meta` in place, into `meta.lab_dir` (the lab that built the
    slot; the directory and the networks exist): a fresh overlay `<node>.qcow2` over the
    post-setup disk, then the memory state with the saved XML (`metadata[node]` replacing
    its `<metadata>`, the seed paths pointing into the slot)."""
    slot = store.slot_dir(meta.task, meta.key)
    lab_dir = Path(meta.lab_dir)

    async def one(node: SlotNode) -> None:
        await create_overlay(slot / f"{node.name}.disk.qcow2", lab_dir / f"{node.name}.qcow2")
        dxml = replace_metadata(node.xml, metadata[node.name])
        for seed in node.seed_files:
            dxml = dxml.replace(str(lab_dir / seed), str(slot / seed))
        await hv.call(_restore_sync, hv, str(slot / f"{node.name}.mem"), dxml)

    await asyncio.gather(*(one(n) for n in meta.nodes.values()))


async def reconnect(
    nodes: Mapping[str, LabNode],
    *,
    timeout: float = 120.0,
    background: bool = False,
    first: Callable[[], Awaitable[object]] | None = None,
) -> list[asyncio.Task[None]]:
    """Fresh SSH sessions after a restore (those from before the save are dead), and each
    guest's clock set to the host's (it stopped while the state was saved) by the first
    command of the new session (one round trip: the clock command is the readiness probe).
    A background reconnect awaits `first()` before it starts (`RestoreTraffic.quiet`: other
    restores go first, `testbed.hypervisor.restorefirst`).

    With `background`, each node's reconnect runs in a task its harness session (and the
    agent's own login beside it) waits for (`GuestSession.defer`): this returns at once, so
    a restored episode is ready while SSH is still being set up, and the first command on a
    node waits for that node's reconnect and clock. A reconnect that fails surfaces at that
    first command as `SessionNotReady` (a fault outside the guest, never the agent's).
    Returns the background tasks (none without `background`)."""

    def set_clock() -> str:
        return f"date -u -s @{time.time():.3f} >/dev/null || true"  # as before: a clock refusal is not fatal

    async def one(node: LabNode) -> None:
        await wait_for_ssh(node.session, timeout=timeout, alive=node.is_running, name=node.name, probe=set_clock)

    async def later(node: LabNode) -> None:
        if first is not None:
            await first()
        await one(node)

    ssh_nodes = [n for n in nodes.values() if n.image.readiness.method == "ssh"]
    if not background:
        await asyncio.gather(*(one(n) for n in ssh_nodes))
        return []
    tasks = []
    for node in ssh_nodes:
        tasks.append(task := node.session.defer(functools.partial(later, node)))
        if node.agent_session is not None:
            node.agent_session.wait_for(task)
    return tasks


def new_session(node: NodeState, client_key: asyncssh.SSHKey, *, bind_device: str | None = None) -> GuestSession:
    return GuestSession(
        node.mgmt_ip,
        client_key=client_key,
        host_key=node.host_key,
        username=node.user,
        dialect=node.dialect,
        bind_device=bind_device,
    )


def restored_sessions(
    node: NodeState, image: ImageDef, client_key: asyncssh.SSHKey, *, bind_device: str | None
) -> tuple[GuestSession, GuestSession | None]:
    """A restored node's harness session and the agent's own login beside it (None when the
    image has none), both bound to `bind_device` (the shared management bridge)."""
    session = new_session(node, client_key, bind_device=bind_device)
    agent = agent_session(
        image, node.mgmt_ip, client_key=client_key, host_key=node.host_key, harness=session, bind_device=bind_device
    )
    return session, agent
