"""Saved post-setup states ("slots") of a task's lab: where they live, their key, their
records, and the lock one user holds. How a lab is saved into a slot and restored from it
is `testbed.hypervisor.savedstate`; the restored lab itself is
`testbed.hypervisor.restoredlab`.

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

The slot keeps the lab's lease (lab id, subnets, MACs) with a *detached* owner, so the lease
store never reclaims it and no other lab is given its addresses while the state exists.
`SlotStore.remove` releases it; removing a slot is the only way it goes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from testbed.config import Settings
from testbed.hypervisor.labstate import NodeState
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import Owner
from testbed.images.store import StoredImage
from testbed.model.images import ImageDef
from testbed.model.topology import Topology

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
BROKEN_MARK = "broken"  # a file in a slot directory: the slot failed to restore (`mark_broken`)


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

    def node_state(self, console_log: str, *, domain: str) -> NodeState:
        """The lab record of this node in a restored lab (its domain named `domain`)."""
        values = {f.name: getattr(self, f.name) for f in fields(NodeState)}
        return NodeState(**{**values, "data_ips": dict(self.data_ips), "console_log": console_log, "domain": domain})


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
        if (self.slot_dir(task, key) / BROKEN_MARK).exists():
            return None
        return meta

    @contextlib.contextmanager
    def lock(self, task: str, *, wait: bool, shared: bool = False) -> Iterator[SlotLock]:
        """Hold the task's slot lock (flock on `states/<task>.lock`): exclusive to build,
        invalidate or remove the task's slots, `shared` to restore from one (any number of
        restorers at once). Yields a `SlotLock` that is false (holding nothing) when `wait`
        is False and the lock is held the other way."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / f"{task}.lock").open("a+") as fh:
            held = SlotLock(fh, shared=shared)
            if not _flock(fh, wait, shared):
                yield SlotLock(None, shared=shared)
                return
            try:
                yield held
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def mark_broken(self, task: str, key: str) -> None:
        """Mark a slot that failed to restore: `load` no longer returns it, and the next
        build of the task (which holds the lock exclusively) removes it. Restorers holding
        the lock shared cannot remove a slot others may be restoring from."""
        with contextlib.suppress(OSError):
            (self.slot_dir(task, key) / BROKEN_MARK).touch()

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


class SlotLock:
    """A task's slot lock as held by one user (false when not held)."""

    def __init__(self, fh: IO[str] | None, *, shared: bool) -> None:
        self._fh = fh
        self.shared = shared

    def __bool__(self) -> bool:
        return self._fh is not None

    def downgrade(self) -> None:
        """Exclusive to shared (the slot is built: restorers may start while its builder
        goes on)."""
        if self._fh is not None and not self.shared:
            fcntl.flock(self._fh, fcntl.LOCK_SH)
            self.shared = True


def _flock(fh: IO[str], wait: bool, shared: bool = False) -> bool:
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fcntl.flock(fh, mode if wait else mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
