"""The one lab teardown: directory and lease go only once domains and networks are gone;
a lost or failing libvirt connection is never taken for "gone"."""

from __future__ import annotations

import asyncio
from pathlib import Path

import libvirt
import pytest

from testbed.errors import HarnessError
from testbed.hypervisor.connection import Hypervisor, means_gone
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.removal import LabRemains, remove_lab


class FlakyHypervisor:
    """Destroying domain `bad` fails the way a lost libvirt connection does."""

    uri = "qemu+ssh://lab-host/system"  # remote: no policy rules to sweep on this host

    def __init__(self) -> None:
        self.destroyed: list[str] = []

    async def destroy_domain(self, name: str) -> bool:
        if name == "bad":
            raise HarnessError("cannot look up domain bad: End of file while reading data")
        self.destroyed.append(name)
        return True

    async def destroy_network(self, name: str) -> bool:
        self.destroyed.append(name)
        return True


def _lab(tmp_path: Path) -> tuple[LeaseStore, str, Path]:
    leases = LeaseStore(tmp_path / "leases")
    lease = leases.acquire(Owner.current(), subnets=1, macs=1)
    directory = tmp_path / "labs" / lease.lab_id
    directory.mkdir(parents=True)
    (directory / "node.qcow2").write_bytes(b"overlay")
    return leases, lease.lab_id, directory


def test_everything_gone_removes_directory_and_lease(tmp_path: Path) -> None:
    leases, lab_id, directory = _lab(tmp_path)
    hv = FlakyHypervisor()
    errors = asyncio.run(remove_lab(hv, None, LabRemains(lab_id, str(directory), ("ok",), ("net",)), leases))  # type: ignore[arg-type]
    assert errors == [] and hv.destroyed == ["ok", "net"]
    assert not directory.exists() and lab_id not in leases.all()


def test_unconfirmed_domain_keeps_directory_and_lease(tmp_path: Path) -> None:
    leases, lab_id, directory = _lab(tmp_path)
    hv = FlakyHypervisor()
    remains = LabRemains(lab_id, str(directory), ("ok", "bad"), ("net",))
    errors = asyncio.run(remove_lab(hv, None, remains, leases))  # type: ignore[arg-type]
    assert any("End of file" in e for e in errors) and any("testbed reap" in e for e in errors)
    assert directory.exists() and lab_id in leases.all()  # nothing a new lab could reuse too early


class SlowDestroyHypervisor:
    """Each destroy waits like libvirt's does (its 200 ms look after SIGTERM); network
    `badnet` fails."""

    uri = "qemu+ssh://lab-host/system"

    def __init__(self) -> None:
        self.events: list[str] = []

    async def _destroy(self, name: str) -> bool:
        self.events.append(f"start {name}")
        await asyncio.sleep(0.05)
        if name == "badnet":
            raise HarnessError("cannot destroy network badnet: busy")
        self.events.append(f"end {name}")
        return True

    destroy_domain = destroy_network = _destroy


def test_domains_and_networks_are_destroyed_at_once_and_every_failure_is_reported(tmp_path: Path) -> None:
    leases, lab_id, directory = _lab(tmp_path)
    hv = SlowDestroyHypervisor()
    remains = LabRemains(lab_id, str(directory), ("node",), ("net", "badnet"))
    errors = asyncio.run(remove_lab(hv, None, remains, leases))  # type: ignore[arg-type]
    assert hv.events[:3] == ["start node", "start net", "start badnet"]  # no wait for the domain
    assert "end node" in hv.events and "end net" in hv.events
    assert any("badnet: busy" in e for e in errors) and directory.exists() and lab_id in leases.all()


def test_keep_lease_for_a_saved_state(tmp_path: Path) -> None:
    leases, lab_id, directory = _lab(tmp_path)
    errors = asyncio.run(
        remove_lab(FlakyHypervisor(), None, LabRemains(lab_id, str(directory)), leases, keep_lease=True)  # type: ignore[arg-type]
    )
    assert errors == [] and not directory.exists() and lab_id in leases.all()


def test_libvirt_no_such_object_is_gone_but_other_errors_are_not() -> None:
    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            assert await hv.destroy_domain("no-such-domain") is False
            assert await hv.domain_state("no-such-domain") == "missing"
            assert await hv.destroy_network("no-such-network") is False
            with pytest.raises(libvirt.libvirtError) as info:
                hv.conn.lookupByName("no-such-domain")
            assert means_gone(info.value)
            # a closed connection is not "no such domain"
            await hv.close()
            with pytest.raises(HarnessError):
                await hv.domain_state("test")

    asyncio.run(scenario())


def test_dead_connection_is_reopened_for_lookups() -> None:
    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            old = hv.conn
            old.close()  # what a libvirtd restart does to the client's connection
            assert await hv.domain_state("test") == "running"  # the test driver's built-in domain
            assert hv.reconnects == 1 and hv.conn is not old

    asyncio.run(scenario())


def test_stop_events_say_how_a_domain_ended() -> None:
    """libvirt's lifecycle events (through the event loop thread) are remembered per domain:
    the only record of how a transient domain stopped once it is gone."""
    import time

    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            dom = hv.conn.lookupByName("test")
            dom.destroy()
            deadline = time.monotonic() + 5
            while hv.events.last_stop("test") is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            stop = hv.events.last_stop("test")
            assert stop is not None and stop.kind == "destroyed"
            status = await hv.domain_status("test")
            assert (status.state, status.reason) == ("shutoff", "destroyed")
            dom.create()
            deadline = time.monotonic() + 5
            while hv.events.last_stop("test") is not None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert hv.events.last_stop("test") is None  # a start clears it

    asyncio.run(scenario())
