"""Lease owners: identities, liveness by owner lock or pid + start time, dead leases."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from testbed.db.types import utcnow
from testbed.hypervisor.owner import process_start_time
from testbed.scheduler.leaseowner import coordinator_identity, lease_dead, owner_alive

DEAD_OWNER = f"{socket.gethostname()}:4194000:12345:dead0000"


def test_owner_liveness() -> None:
    me = f"{socket.gethostname()}:{os.getpid()}:{process_start_time(os.getpid())}:n"
    assert owner_alive(me) is True
    assert owner_alive(DEAD_OWNER) is False
    assert owner_alive("otherhost:1:2:n") is None and owner_alive("nonsense") is None
    now = utcnow()
    assert lease_dead(me, now - timedelta(seconds=1), now)  # expired
    assert not lease_dead(me, now + timedelta(seconds=60), now)
    assert lease_dead(DEAD_OWNER, now + timedelta(seconds=60), now)  # dead process: no waiting
    assert lease_dead(None, now + timedelta(seconds=60), now)  # never leased


def test_this_process_identity_is_alive_by_its_owner_lock() -> None:
    identity = coordinator_identity()
    host, pid = identity.split(":")[:2]
    assert host == socket.gethostname() and int(pid) == os.getpid()
    assert "|" in identity and owner_alive(identity) is True
    assert coordinator_identity() != identity  # a fresh nonce each time
