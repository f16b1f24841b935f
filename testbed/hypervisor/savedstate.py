"""Saved post-setup states ("slots") of a task's lab, for fast episode resets.

A slot is one task's lab, provisioned and set up once, then saved: every guest's memory
(`virDomainSave`), its domain XML, and the disk overlay it was using, which is frozen
(read-only) and becomes the slot's *post-setup disk*. A restored lab is that state brought
back: a fresh qcow2 overlay over the post-setup disk per node, the lab's networks recreated
with the same names, bridges, subnets and MACs (the guests' memory holds their network
configuration), and `virDomainRestoreFlags` with the saved XML pointing at the fresh
overlay. After the episode the domains are destroyed and the overlays deleted; the slot
stays. Two labs restored from one slot can therefore never run at the same time (same
names, addresses and MACs): callers hold the task's slot lock (`SlotStore.lock`) for the
whole life of a restored lab.

Layout: `$TESTBED_HOME/states/<task>/<key>/` holding `meta.json` (`SlotMeta`),
`<node>.disk.qcow2` (post-setup disk, mode 0444), `<node>.mem` (memory state),
`<node>.seed.*` (the boot seed, which QEMU opens again on restore) and `id_ed25519` (the
harness's client key). A slot directory is written as `<key>.tmp-<pid>` and renamed into
place only when complete: a directory named exactly by a key is always whole.

Key (`state_key`): a hash of the task directory's content (every file: task.toml,
instruction, scripts), every node's stored image (name, cache key, disk sha256), the
resolved topology, the image variant and the accelerator (a TCG memory state cannot be
restored under KVM). Any change gives a new key; building a slot removes the task's slots
with other keys (`SlotStore.invalidate`), so a stale state is never restored.

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

Names: a restored lab keeps the names of the lab its slot was built from (domains
`tb-<building run>-<node>`, its networks and bridges, its lab id and directory): the
episode's own run id is in every object's metadata, not in the names.

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
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import asyncssh

from testbed.aio import run_to_completion
from testbed.config import Settings
from testbed.errors import HarnessError
from testbed.guest.readiness import wait_for_ssh
from testbed.guest.ssh import GuestSession
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.guestagent import GuestAgentChannel
from testbed.hypervisor.hostguard import ensure_host_guard
from testbed.hypervisor.lab import KeepConsole, Lab, LabNode, keep_consoles
from testbed.hypervisor.labstate import LabState, NodeState
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.node import agent_session
from testbed.hypervisor.overlays import create_overlay
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.removal import LabRemains, remove_lab
from testbed.hypervisor.xml import LabMetadata
from testbed.images.store import StoredImage
from testbed.model.images import ImageDef
from testbed.model.topology import Topology

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_METADATA_RE = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)


def state_key(
    task_dir: Path,
    images: Mapping[str, StoredImage],
    topology: Topology,
    *,
    variant: str,
    accel: str,
    image_defs: Mapping[str, ImageDef] | None = None,
) -> str:
    """The slot key of a task for one image variant (see the module docstring).
    `images` and `image_defs` are keyed by node name."""
    h = hashlib.sha256(f"testbed-state v{FORMAT_VERSION}\0{variant}\0{accel}\0".encode())
    files = sorted(
        p for p in task_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    )
    for path in files:
        rel = path.relative_to(task_dir).as_posix()
        h.update(b"file\0" + rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    for node in sorted(images):
        m = images[node].manifest
        h.update(f"image\0{node}\0{m.name}\0{m.key}\0{m.disk_sha256}\0".encode())
    for node, definition in sorted((image_defs or {}).items()):
        h.update(f"imagedef\0{node}\0".encode() + definition.model_dump_json().encode())
    h.update(b"topology\0" + topology.model_dump_json().encode())
    return h.hexdigest()[:20]


@dataclass
class SlotNode(NodeState):
    """A saved node: its lab record plus what restoring it needs (flat in meta.json)."""

    xml: str = ""  # the domain XML at save time (paths as in the lab directory)
    seed_files: list[str] = field(default_factory=list)  # file names copied from the lab dir

    @classmethod
    def of(cls, node: NodeState, xml: str, seed_files: list[str]) -> SlotNode:
        return cls(**asdict(node), xml=xml, seed_files=seed_files)

    def node_state(self, console_log: str) -> NodeState:
        """The lab record of this node in a restored lab."""
        values = {f.name: getattr(self, f.name) for f in fields(NodeState)}
        return NodeState(**{**values, "data_ips": dict(self.data_ips), "console_log": console_log})


@dataclass
class SlotMeta:
    """meta.json of a slot: the lab's identity and the run data every episode copies."""

    task: str
    key: str
    variant: str
    created_at: str
    built_by_run: str | None
    lab_id: str
    lab_name: str
    lab_dir: str  # labs/<lab-id>: restored labs use the very same directory path
    topology: str
    subnets: list[str]
    macs: list[str]
    networks: dict[str, str]  # name -> network XML at save time
    nodes: dict[str, SlotNode]
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)  # point -> node -> data
    commands: list[dict[str, Any]] = field(default_factory=list)  # recorded before the agent
    os_release: dict[str, str] = field(default_factory=dict)
    version: int = FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> SlotMeta:
        data = json.loads(text)
        data["nodes"] = {k: SlotNode(**v) for k, v in data["nodes"].items()}
        return cls(**data)


@dataclass(frozen=True)
class SlotInfo:
    task: str
    key: str
    directory: Path
    meta: SlotMeta | None  # None: unreadable (removed by `remove`, never restored)
    size_bytes: int


class SlotStore:
    """The saved states under `$TESTBED_HOME/states`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.home / "states"
        self.leases = LeaseStore(settings.leases_dir, settings.subnet_pool)

    def slot_dir(self, task: str, key: str) -> Path:
        return self.root / task / key

    def load(self, task: str, key: str) -> SlotMeta | None:
        """The complete slot `key` of `task`, or None."""
        try:
            meta = SlotMeta.from_json((self.slot_dir(task, key) / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        if meta.version != FORMAT_VERSION or meta.key != key:
            return None
        return meta

    @contextlib.contextmanager
    def lock(self, task: str, *, wait: bool) -> Iterator[bool]:
        """Hold the task's slot lock (flock on `states/<task>.lock`); yields False (holding
        nothing) when `wait` is False and another holder has it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / f"{task}.lock").open("a+") as fh:
            if not _flock(fh, wait):
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def invalidate(self, task: str, keep: str | None) -> list[str]:
        """Remove every slot of `task` but `keep` (call with the task's lock held);
        returns the keys removed."""
        removed: list[str] = []
        base = self.root / task
        if not base.is_dir():
            return removed
        for directory in sorted(base.iterdir()):
            if directory.name != keep:
                self._remove_dir(directory)
                removed.append(directory.name)
        return removed

    def remove(self, task: str | None = None, key: str | None = None) -> list[str]:
        """Remove slots (all, a task's, or one) and release their leases; returns
        "task/key" of each. Waits for each task's lock (no episode restores from a slot
        while it goes)."""
        removed = []
        for info in self.list():
            if (task is not None and info.task != task) or (key is not None and info.key != key):
                continue
            with self.lock(info.task, wait=True):
                self._remove_dir(info.directory)
            removed.append(f"{info.task}/{info.key}")
        return removed

    def list(self) -> list[SlotInfo]:
        infos: list[SlotInfo] = []
        if not self.root.is_dir():
            return infos
        for task_dir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for directory in sorted(p for p in task_dir.iterdir() if p.is_dir()):
                meta = self.load(task_dir.name, directory.name)
                size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
                infos.append(SlotInfo(task_dir.name, directory.name, directory, meta, size))
        return infos

    def _remove_dir(self, directory: Path) -> None:
        meta_path = directory / "meta.json"
        lab_id = None
        with contextlib.suppress(OSError, ValueError, KeyError):
            lab_id = json.loads(meta_path.read_text(encoding="utf-8"))["lab_id"]
        for f in directory.glob("*.disk.qcow2"):
            with contextlib.suppress(OSError):
                f.chmod(0o644)
        shutil.rmtree(directory, ignore_errors=True)
        if lab_id:
            self.leases.release(lab_id)
        with contextlib.suppress(OSError):
            directory.parent.rmdir()  # the task's directory, once empty

    def orphan_owner(self) -> Owner:
        """The detached owner a slot's lease carries."""
        return Owner.current().detach()


def _flock(fh: IO[str], wait: bool) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _replace_metadata(xml: str, metadata_xml: str) -> str:
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
    import libvirt

    assert lab.state is not None and lab.lease is not None
    state, lease = lab.state, lab.lease
    lab_dir = Path(state.directory)
    final = store.slot_dir(task, key)
    tmp = final.with_name(f"{key}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        await asyncio.gather(*(n.session.close() for n in lab.nodes.values()))
        networks = {}
        for name in state.networks:
            net = await lab.hv.call(lab.hv.conn.networkLookupByName, name)
            networks[name] = await lab.hv.call(net.XMLDesc, 0)
        # pause every guest first: the nodes' saved states are one consistent cut
        domains = {n: await lab.hv.call(lab.hv.conn.lookupByName, s.domain) for n, s in state.nodes.items()}
        for dom in domains.values():
            await lab.hv.call(dom.suspend)
        nodes: dict[str, SlotNode] = {}
        for node_state in state.nodes.values():
            dom = domains[node_state.name]
            mem = str(tmp / f"{node_state.name}.mem")
            await lab.hv.call(dom.save, mem)
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
        for f in tmp.glob("*.disk.qcow2"):
            with contextlib.suppress(OSError):
                f.chmod(0o644)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    lab.lease = None  # the slot owns it now
    state.files = [f for f in state.files if not f.endswith(".qcow2")]
    state.save()
    return meta


# -- restoring ----------------------------------------------------------------------------


def _restore_sync(hv: Hypervisor, mem: str, dxml: str) -> None:
    import libvirt

    hv.conn.restoreFlags(mem, dxml, libvirt.VIR_DOMAIN_SAVE_RUNNING)


async def restore_domains(hv: Hypervisor, store: SlotStore, meta: SlotMeta, metadata: Mapping[str, str]) -> None:
    """Restore every node of `meta` into `meta.lab_dir` (which must exist, as must the
    networks): a fresh overlay `<node>.qcow2` over the post-setup disk, then the memory
    state with the saved XML (`metadata[node]` replacing its `<metadata>`, the seed paths
    pointing into the slot)."""
    slot = store.slot_dir(meta.task, meta.key)
    lab_dir = Path(meta.lab_dir)

    async def one(node: SlotNode) -> None:
        await create_overlay(slot / f"{node.name}.disk.qcow2", lab_dir / f"{node.name}.qcow2")
        dxml = _replace_metadata(node.xml, metadata[node.name])
        for seed in node.seed_files:
            dxml = dxml.replace(str(lab_dir / seed), str(slot / seed))
        await hv.call(_restore_sync, hv, str(slot / f"{node.name}.mem"), dxml)

    await asyncio.gather(*(one(n) for n in meta.nodes.values()))


async def reconnect(nodes: Mapping[str, LabNode], *, timeout: float = 120.0) -> None:
    """Fresh SSH sessions after a restore (those from before the save are dead), then set
    each guest's clock to the host's (it stopped while the state was saved)."""

    async def one(node: LabNode) -> None:
        if node.image.readiness.method != "ssh":
            return
        await wait_for_ssh(node.session, timeout=timeout, alive=node.is_running, name=node.name)
        await node.session.exec(f"date -u -s @{time.time():.3f} >/dev/null", timeout=30)

    await asyncio.gather(*(one(n) for n in nodes.values()))


def new_session(node: NodeState, client_key: asyncssh.SSHKey) -> GuestSession:
    return GuestSession(
        node.mgmt_ip, client_key=client_key, host_key=node.host_key, username=node.user, dialect=node.dialect
    )


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
        lock_path = self.store.settings.leases_dir / "networks.lock"
        for name, xml in meta.networks.items():
            state.networks.append(name)
            state.save()
            with lock_path.open("a+") as lock:
                await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
                try:
                    await self.hv.create_network(_replace_metadata(xml, self._metadata(None)))
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        for node in meta.nodes.values():
            state.domains.append(node.domain)
            state.files.append(str(lab_dir / f"{node.name}.qcow2"))
            state.nodes[node.name] = node.node_state(str(lab_dir / f"{node.name}.console.log"))
        state.save()
        t0 = time.monotonic()
        await restore_domains(self.hv, self.store, meta, {n: self._metadata(n) for n in meta.nodes})
        self.timings["memory_s"] = time.monotonic() - t0
        for node in meta.nodes.values():
            image, session = self.catalog[node.image], new_session(node, client_key)
            self.nodes[node.name] = LabNode(
                name=node.name,
                image=image,
                domain=node.domain,
                mgmt_ip=node.mgmt_ip,
                data_ips=node.data_ips,
                console_log=lab_dir / f"{node.name}.console.log",
                session=session,
                hypervisor=self.hv,
                oob=GuestAgentChannel(self.hv, node.domain),
                agent_session=agent_session(
                    image, node.mgmt_ip, client_key=client_key, host_key=node.host_key, harness=session
                ),
            )
        t0 = time.monotonic()
        await reconnect(self.nodes)
        self.timings["ssh_s"] = time.monotonic() - t0
        state.status = "ready"
        state.save()

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
