"""The reaper against libvirt's test:///default driver: orphans go, live owners stay."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from testbed.config import Settings
from testbed.hypervisor.connection import Hypervisor
from testbed.hypervisor.labstate import LabState
from testbed.hypervisor.leases import LeaseStore
from testbed.hypervisor.owner import Owner
from testbed.hypervisor.reaper import reap
from testbed.hypervisor.xml import DomainSpec, LabMetadata, NetworkSpec, render_domain, render_network


def dead_owner() -> Owner:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return Owner(pid=int(out.stdout), starttime=12345, host=Owner.current().host)


def make_lab(settings: Settings, lab_id: str, owner: Owner) -> LabState:
    directory = settings.labs_dir / lab_id
    directory.mkdir(parents=True)
    (directory / "node.qcow2").write_bytes(b"overlay")
    state = LabState(
        lab_id=lab_id,
        name=f"lab-{lab_id}",
        directory=str(directory),
        owner=owner,
        uri="test:///default",
        created_at="now",
        topology="t",
        domains=[f"tb-{lab_id}-node"],
        networks=[f"tb-{lab_id}-mgmt"],
    )
    state.save()
    return state


async def create_objects(hv: Hypervisor, state: LabState) -> None:
    meta = LabMetadata(state.lab_id, state.name, state.directory, state.owner, "now").to_xml()
    await hv.create_network(
        render_network(NetworkSpec(name=f"tb-{state.lab_id}-mgmt", bridge=f"tb{state.lab_id}-mgmt", metadata_xml=meta))
    )
    xml = render_domain(
        DomainSpec(
            name=f"tb-{state.lab_id}-node",
            lab_name=state.name,
            node="node",
            accel="test",
            memory_mb=128,
            vcpus=1,
            disk="/dev/null",
            console_log="/tmp/x.log",
            metadata_xml=meta,
            nics=[],
            run_as_root=False,
        )
    )
    await hv.create_domain(xml, autodestroy=False)


@pytest.fixture
def settings(testbed_home: Path) -> Settings:
    return replace(Settings.from_env(), libvirt_uri="test:///default")


def test_reap_removes_only_orphans(settings: Settings) -> None:
    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            leases = LeaseStore(settings.leases_dir)
            live, dead, kept = Owner.current(), dead_owner(), dead_owner().detach()
            states = {}
            for owner, label in ((live, "live"), (kept, "kept"), (dead, "dead")):  # dead last: acquire reclaims
                lease = leases.acquire(owner, subnets=1, macs=1)
                states[label] = make_lab(settings, lease.lab_id, owner)
                await create_objects(hv, states[label])
            foreign_before = {d.name() for d in hv.conn.listAllDomains(0)}

            dry = await reap(hv, settings, dry_run=True)
            dead_id = states["dead"].lab_id
            assert dry.domains == [f"tb-{dead_id}-node"]
            assert dry.networks == [f"tb-{dead_id}-mgmt"]
            assert dry.leases == [dead_id]
            assert {d.name() for d in hv.conn.listAllDomains(0)} == foreign_before, "dry run removes nothing"

            report = await reap(hv, settings)
            assert report.domains == dry.domains and not report.errors
            names = {d.name() for d in hv.conn.listAllDomains(0)}
            nets = {n.name() for n in hv.conn.listAllNetworks(0)}
            assert f"tb-{dead_id}-node" not in names and f"tb-{dead_id}-mgmt" not in nets
            for label in ("live", "kept"):
                lab_id = states[label].lab_id
                assert f"tb-{lab_id}-node" in names and f"tb-{lab_id}-mgmt" in nets
                assert Path(states[label].directory).exists()
            assert not Path(states["dead"].directory).exists()
            assert set(leases.all()) == {states["live"].lab_id, states["kept"].lab_id}

            again = await reap(hv, settings)
            assert again.empty

    asyncio.run(scenario())


def test_stray_lab_dir_without_state_is_reaped(settings: Settings) -> None:
    stray = settings.labs_dir / "zzzzz"
    stray.mkdir(parents=True)
    (stray / "half.qcow2").write_bytes(b"x")

    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            report = await reap(hv, settings)
        assert report.lab_dirs == [str(stray)]

    asyncio.run(scenario())
    assert not stray.exists()


def test_another_homes_lab_is_left_to_that_home(settings: Settings, tmp_path: Path) -> None:
    """Two TESTBED_HOMEs on one libvirtd: a dead-owner lab whose directory lives in the other
    (still existing) home is not this home's to reap (only that home knows if it was
    detached); one whose directory is gone altogether is reaped by whoever finds it."""
    other_home = replace(settings, home=tmp_path / "other-home")

    async def scenario() -> None:
        async with Hypervisor("test:///default") as hv:
            other = make_lab(other_home, "ot0a1", dead_owner())
            await create_objects(hv, other)
            homeless = make_lab(other_home, "ot0b2", dead_owner())
            await create_objects(hv, homeless)
            for path in Path(homeless.directory).iterdir():
                path.unlink()
            Path(homeless.directory).rmdir()

            report = await reap(hv, settings)
            names = {d.name() for d in hv.conn.listAllDomains(0)}
            nets = {n.name() for n in hv.conn.listAllNetworks(0)}
            assert "tb-ot0a1-node" in names and "tb-ot0a1-mgmt" in nets
            assert Path(other.directory).exists()
            assert report.domains == ["tb-ot0b2-node"] and report.networks == ["tb-ot0b2-mgmt"]
            assert "tb-ot0b2-node" not in names

    asyncio.run(scenario())
