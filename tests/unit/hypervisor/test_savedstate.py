"""Saved post-setup states (fast reset): the key, invalidation, removal, the slot lock, and
that a slot's lease survives the reaper's lease reclaim."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testbed.config import Settings
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.savedstate import replace_metadata
from testbed.hypervisor.slots import SlotMeta, SlotNode, SlotStore, state_key
from testbed.images.store import ImageManifest, StoredImage
from testbed.model.task import Task
from testbed.model.taskload import load_task
from testbed.runtime import image_catalog

ROOT = Path(__file__).resolve().parents[3]
TASK = "web-port-conflict"


def _task(tmp_path: Path) -> Task:
    directory = tmp_path / "tasks" / TASK
    if not directory.exists():
        shutil.copytree(ROOT / "tasks" / TASK, directory)
    return load_task(directory, images=set(image_catalog()), root=ROOT)


def _image(key: str = "k1", sha: str = "a" * 64) -> StoredImage:
    return StoredImage(ImageManifest("debian-12", key, "debootstrap", sha, 1), Path("/nonexistent"))


def _key(task: Task, image: StoredImage | None = None, **kw: str) -> str:
    args = {"variant": "debian-12", "accel": "tcg"} | kw
    return state_key(task.directory, {"node": image or _image()}, task.topology, **args)


def test_key_is_stable_and_changes_with_every_input(tmp_path: Path) -> None:
    task = _task(tmp_path)
    base = _key(task)
    assert base == _key(_task(tmp_path))
    assert len(base) == 20 and all(c in "0123456789abcdef" for c in base)
    # compiled files do not matter
    (task.directory / "__pycache__").mkdir()
    (task.directory / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert _key(task) == base
    changed = {
        "image key": _key(task, _image(key="k2")),
        "image sha": _key(task, _image(sha="b" * 64)),
        "variant": _key(task, variant="debian-12-other"),
        "accel": _key(task, accel="kvm"),
    }
    topo = task.topology.model_copy(update={"name": "other"})
    changed["topology"] = state_key(task.directory, {"node": _image()}, topo, variant="debian-12", accel="tcg")
    script = task.directory / "setup" / "break.sh"
    script.write_text(script.read_text() + "\n# changed\n")
    changed["setup script"] = _key(task)
    (task.directory / "task.toml").write_text((task.directory / "task.toml").read_text() + "\n# changed\n")
    changed["task.toml"] = _key(task)
    (task.directory / "extra.txt").write_text("new file")
    changed["new file"] = _key(task)
    values = list(changed.values())
    assert base not in values, changed
    assert len(set(values)) == len(values), changed


def _settings(home: Path) -> Settings:
    return Settings(
        home=home, libvirt_uri="test:///default", memory_budget_mb=4096, subnet_pool="10.99.0.0/16", accel="tcg"
    )


def _fake_slot(store: SlotStore, task: str, key: str) -> tuple[SlotMeta, str]:
    """A slot directory as `save_lab` leaves it, holding a detached lease."""
    lease = store.leases.acquire(Owner.current(), subnets=1, macs=1)
    store.leases.set_owner(lease.lab_id, store.orphan_owner())
    directory = store.slot_dir(task, key)
    directory.mkdir(parents=True)
    node = SlotNode(
        "node", "debian-12", "tb-x-node", "10.99.0.2", "ssh-ed25519 AAAA", "root", "debian", "ssh", {}, xml="<domain/>"
    )
    meta = SlotMeta(
        task=task,
        key=key,
        variant="debian-12",
        created_at="2026-01-01T00:00:00+00:00",
        built_by_run="r1",
        lab_id=lease.lab_id,
        lab_name="single-x",
        lab_dir=str(store.settings.labs_dir / lease.lab_id),
        topology="single",
        subnets=lease.subnets,
        macs=lease.macs,
        networks={"tb-x-mgmt": "<network/>"},
        nodes={"node": node},
    )
    (directory / "meta.json").write_text(meta.to_json())
    disk = directory / "node.disk.qcow2"
    disk.write_bytes(b"qcow")
    disk.chmod(0o444)
    return meta, lease.lab_id


def test_load_roundtrip_and_rejects_incomplete(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    meta, _ = _fake_slot(store, TASK, "key1")
    loaded = store.load(TASK, "key1")
    assert loaded == meta
    assert store.load(TASK, "other") is None
    (store.slot_dir(TASK, "tmpkey.tmp-1")).mkdir()  # a half-written slot is never loaded
    assert store.load(TASK, "tmpkey.tmp-1") is None
    wrong = json.loads((store.slot_dir(TASK, "key1") / "meta.json").read_text())
    wrong["key"] = "elsewhere"
    (store.slot_dir(TASK, "key1") / "meta.json").write_text(json.dumps(wrong))
    assert store.load(TASK, "key1") is None


def test_invalidate_keeps_only_the_current_key_and_releases_leases(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    _, old_lab = _fake_slot(store, TASK, "old")
    _, cur_lab = _fake_slot(store, TASK, "current")
    _, other_lab = _fake_slot(store, "config-permissions", "k")
    assert store.invalidate(TASK, keep="current") == ["old"]
    assert not store.slot_dir(TASK, "old").exists() and store.load(TASK, "current") is not None
    leases = store.leases.all()
    assert old_lab not in leases and {cur_lab, other_lab} <= set(leases)
    assert [(i.task, i.key) for i in store.list()] == [("config-permissions", "k"), (TASK, "current")]
    assert store.remove(TASK) == [f"{TASK}/current"]
    assert store.remove() == ["config-permissions/k"]
    assert store.list() == [] and store.leases.all() == {}
    assert not any(store.root.glob("*/*"))


def test_slot_lease_survives_reclaim_of_dead_owners(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    _, lab_id = _fake_slot(store, TASK, "k")
    dead = Owner(pid=999_999_999, starttime=1, host=Owner.current().host)
    gone = store.leases.acquire(dead, subnets=1, macs=1)
    assert LeaseStore(store.settings.leases_dir, store.settings.subnet_pool).reclaim_dead() == [gone.lab_id]
    assert lab_id in store.leases.all()


def test_slot_lock_is_exclusive(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    with store.lock(TASK, wait=False) as first:
        assert first
        with store.lock(TASK, wait=False) as second:
            assert not second
        with store.lock("config-permissions", wait=False) as other_task:
            assert other_task
    with store.lock(TASK, wait=False) as again:
        assert again


def test_replace_metadata() -> None:
    xml = "<domain><name>x</name><metadata>\n  <tb:lab xmlns:tb='u' owner='1'/>\n</metadata><devices/></domain>"
    out = replace_metadata(xml, "<tb:lab xmlns:tb='u' owner='2'/>")
    assert "owner='2'" in out and "owner='1'" not in out and out.endswith("<devices/></domain>")
    with pytest.raises(Exception, match="metadata"):
        replace_metadata("<domain/>", "<x/>")


def test_journal_rows_copy_into_another_run(tmp_path: Path) -> None:
    """What a slot stores of the run that built it (snapshots, commands, OS release) comes
    from the run's journal (as stored, never read back) and is recorded as-is into a run
    restored from it."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from testbed.db.engine import open_database
    from testbed.db.models import Command, Snapshot
    from testbed.db.recorder import RunRecorder
    from testbed.db.records import CommandRecord
    from testbed.model.vocab import SnapshotPoint
    from testbed.runner.fastreset import PREPARED_POINTS, command_data, command_record
    from testbed.runner.journal import RunJournal

    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    built = RunRecorder.create(db, task_id=TASK, agent="env-api")
    journal = RunJournal()
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    journal.add_command(
        built.store_command(
            CommandRecord(node="node", phase="probe", source="harness", command="probe", started_at=at, duration_ms=5)
        )
    )
    journal.add_command(
        built.store_command(
            CommandRecord(
                node="node",
                phase="setup",
                source="harness",
                command="break\x00",
                started_at=at,
                duration_ms=7,
                exit_code=0,
                stdout="ok\n",
                impact=[],
            )
        )
    )
    journal.add_snapshot("node", SnapshotPoint.BEFORE_SETUP, {"os": {"pretty_name": "Debian"}})
    journal.add_snapshot("node", SnapshotPoint.AFTER_SETUP, {"units": ["legacy-http"]})
    journal.add_snapshot("node", SnapshotPoint.AFTER_AGENT, {"units": []})
    snapshots = journal.snapshots_at(*PREPARED_POINTS)
    commands = [command_data(c) for c in journal.commands]
    assert set(snapshots) == {"before_setup", "after_setup"}
    assert [c["command"] for c in commands] == ["probe", "break\ufffd"]  # as stored (cleaned)
    assert [c.seq for c in journal.commands] == [1, 2]
    json.dumps([snapshots, commands])  # stored in meta.json

    episode = RunRecorder.create(db, task_id=TASK, agent="env-api")
    for data in json.loads(json.dumps(commands)):
        episode.record_command(command_record(data))
    with db() as s:
        rows = s.scalars(select(Command).where(Command.run_id == episode.run_id).order_by(Command.seq)).all()
        assert [(r.seq, r.phase, r.command, r.exit_code, r.stdout) for r in rows] == [
            (1, "probe", "probe", None, ""),
            (2, "setup", "break\ufffd", 0, "ok\n"),
        ]
        assert rows[1].started_at.replace(tzinfo=UTC) == at
        assert s.scalars(select(Snapshot).where(Snapshot.run_id == episode.run_id)).all() == []


def test_a_crashed_replica_is_reaped_like_any_lab_and_the_slot_stays(tmp_path: Path) -> None:
    """A restored lab is a replica with its own lab id (a lease without subnets): when its
    process dies, `testbed reap` removes its directory and releases its lab id; the slot and
    the slot's lease (the subnets every replica uses) stay."""
    import asyncio
    import subprocess
    import sys

    from testbed.hypervisor.connection import Hypervisor
    from testbed.hypervisor.labstate import LabState
    from testbed.hypervisor.reaper import reap

    settings = _settings(tmp_path)
    store = SlotStore(settings)
    meta, slot_lab = _fake_slot(store, TASK, "k1")
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    dead = Owner(pid, 1, Owner.current().host)
    replica = store.leases.acquire(dead, subnets=0, macs=0)
    lab_dir = settings.labs_dir / replica.lab_id
    lab_dir.mkdir(parents=True)
    (lab_dir / "node.qcow2").write_bytes(b"overlay")
    LabState(replica.lab_id, f"single-{replica.lab_id}", str(lab_dir), dead, "test:///default", "now", "single",
             domains=["tb-y-node"], networks=["tb-y-mgmt"]).save()  # fmt: skip

    async def run() -> None:
        async with Hypervisor("test:///default") as hv:
            await reap(hv, settings)

    asyncio.run(run())
    assert not lab_dir.exists()
    leases = store.leases.all()
    assert replica.lab_id not in leases and slot_lab in leases
    assert store.load(TASK, "k1") == meta


def test_shared_slot_lock_admits_restorers_and_a_build_downgrades(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    with store.lock(TASK, wait=False, shared=True) as a, store.lock(TASK, wait=False, shared=True) as b:
        assert a and b  # two restorers at once
        with store.lock(TASK, wait=False) as builder:
            assert not builder  # no build (or removal) while anyone restores
    with store.lock(TASK, wait=False) as builder:
        assert builder and not builder.shared
        with store.lock(TASK, wait=False, shared=True) as early:
            assert not early  # the state is being built
        builder.downgrade()
        assert builder.shared
        with store.lock(TASK, wait=False, shared=True) as after:
            assert after  # built: restorers start while the builder goes on
        with store.lock(TASK, wait=False) as other:
            assert not other


def test_a_broken_slot_is_never_loaded_and_the_next_build_removes_it(tmp_path: Path) -> None:
    store = SlotStore(_settings(tmp_path))
    _fake_slot(store, TASK, "k1")
    store.mark_broken(TASK, "k1")
    assert store.load(TASK, "k1") is None
    assert store.invalidate(TASK, keep="k2.tmp-1") == ["k1"]
