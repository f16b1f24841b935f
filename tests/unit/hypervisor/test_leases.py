"""The host-wide lease store: unique under concurrency, reclaimed when owners die."""

from __future__ import annotations

import ipaddress
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import Owner


def _grab(directory: str, count: int, queue, done) -> None:
    store = LeaseStore(Path(directory))
    for _ in range(count):
        lease = store.acquire(Owner.current(), subnets=2, macs=3)
        queue.put((lease.lab_id, lease.subnets, lease.macs))
    done.wait(60)  # stay alive (owning the leases) until every worker has acquired


def test_concurrent_processes_never_share_a_lease(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_grab, args=(str(tmp_path), 8, queue, done)) for _ in range(6)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in range(48)]
    done.set()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    ids = [r[0] for r in results]
    subnets = [ipaddress.IPv4Network(s) for r in results for s in r[1]]
    macs = [m for r in results for m in r[2]]
    assert len(set(ids)) == 48
    assert len(set(macs)) == 144
    for i, a in enumerate(subnets):
        for b in subnets[i + 1 :]:
            assert not a.overlaps(b)
    # the owners (the worker processes) are gone: their leases are reclaimed
    store = LeaseStore(tmp_path)
    assert sorted(store.reclaim_dead()) == sorted(ids)
    assert store.all() == {}


def test_dead_owner_is_reclaimed_on_acquire(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    store = LeaseStore(tmp_path, subnet_pool="10.9.0.0/23")
    ghost = Owner(pid=pid, starttime=1, host=Owner.current().host)
    first = store.acquire(ghost, subnets=2, macs=1)
    # the pool holds two /24s: while the ghost's lease is counted, three cannot be had...
    assert set(store.all()) == {first.lab_id}
    # ...but acquiring reclaims the dead owner's lease first
    second = store.acquire(Owner.current(), subnets=2, macs=1)
    assert set(second.subnets) == set(first.subnets), "the dead owner's subnets are reused"
    assert first.lab_id not in store.all()


def test_detached_and_fixed_subnets(tmp_path: Path) -> None:
    store = LeaseStore(tmp_path)
    kept = store.acquire(Owner.current().detach(), subnets=1, macs=0, reserved_subnets=["192.0.2.0/24"])
    assert "192.0.2.0/24" in kept.subnets
    # fixed subnets are isolated data networks: a second lab of the same topology may hold them too
    twin = store.acquire(Owner.current(), subnets=1, macs=0, reserved_subnets=["192.0.2.128/25"])
    assert "192.0.2.128/25" in twin.subnets and twin.lab_id != kept.lab_id
    # ...but the pool never hands out a subnet overlapping a fixed one
    pool = LeaseStore(tmp_path, subnet_pool="192.0.2.0/23")
    assert pool.acquire(Owner.current(), subnets=1, macs=0).subnets == ["192.0.3.0/24"]
    assert store.reclaim_dead() == []
    assert store.release(kept.lab_id) and not store.release(kept.lab_id)


def test_lease_file_is_plain_json(tmp_path: Path) -> None:
    store = LeaseStore(tmp_path)
    lease = store.acquire(Owner.current(), subnets=1, macs=1)
    data = json.loads((tmp_path / "leases.json").read_text())
    assert data[lease.lab_id]["owner"]["pid"] == Owner.current().pid
