"""Who holds a run's lease, and whether that holder is still alive.

A lease owner is a coordinator identity, `host:pid:starttime:nonce|LOCK`: LOCK is the
process's owner lock file (`testbed.hypervisor.owner`), which is what liveness is judged by
(right across PID namespaces); identities without one fall back to pid + start time. A lease
is dead when it expired or, without waiting, when its owner is a process on this host that is
gone (`testbed.scheduler.store` states the lease contract).
"""

from __future__ import annotations

import socket
import uuid
from datetime import datetime
from pathlib import Path

from testbed.hypervisor.owner import Owner, lock_is_held, process_start_time


def coordinator_identity() -> str:
    """A fresh lease-owner identity for this process: `host:pid:starttime:nonce|LOCK`, where
    LOCK is the process's owner lock file (`testbed.hypervisor.owner`)."""
    owner = Owner.current()
    return f"{owner.host}:{owner.pid}:{owner.starttime}:{uuid.uuid4().hex[:8]}|{owner.lock}"


def owner_alive(identity: str) -> bool | None:
    """False if `identity` names a process on this host that is gone; True if it is alive
    here; None when it cannot be told (another host, or not a coordinator identity). With an
    owner lock (`|LOCK`) liveness is the lock's, which is right across PID namespaces;
    identities without one fall back to pid + start time."""
    ident, _, lock = identity.partition("|")
    parts = ident.rsplit(":", 3)
    if len(parts) != 4:
        return None
    host, pid, start, _nonce = parts
    if host != socket.gethostname():
        return None
    if lock:
        return lock_is_held(Path(lock))
    try:
        return process_start_time(int(pid)) == int(start)
    except ValueError:
        return None


def lease_dead(owner: str | None, expires: datetime | None, now: datetime) -> bool:
    """Whether a lease no longer protects its run (see module contract)."""
    if owner is None:
        return True
    if expires is None or expires <= now:
        return True
    return owner_alive(owner) is False
