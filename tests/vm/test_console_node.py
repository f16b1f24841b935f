"""A console-managed device on a real guest: frr-router-console has no seed and its sshd
is off. testbed logs in on the serial console, pushes the bootstrap (management address,
key, sshd on), pins the host key it read there, and continues over SSH; a snapshot then
runs as on any node. The console stays usable as a command channel (the path of devices
whose SSH cannot be enabled).

Written for the lead to run (inside scripts/netns-run); not run where it was written.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from testbed.guest.console import ConsoleSession
from testbed.guest.consolexec import ConsoleChannel
from testbed.hypervisor.console import LibvirtConsole
from testbed.hypervisor.lab import Lab
from testbed.images.build import build_image
from testbed.images.store import ImageStore
from testbed.model.topology import topology_from_data
from testbed.probes import parse_snapshot, snapshot_script
from testbed.runner.snapshots import probe_command
from testbed.runtime import image_catalog, runtime

from .conftest import assert_clean

pytestmark = [pytest.mark.vm, pytest.mark.long, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def console_image(vm_home: Path) -> None:
    asyncio.run(build_image(image_catalog()["frr-router-console"], ImageStore(vm_home / "images")))


def test_console_bootstrap_then_ssh_then_a_snapshot(vm_home: Path, console_image: None, tmp_path: Path) -> None:
    asyncio.run(_console_node(tmp_path))
    assert_clean(vm_home)


async def _console_node(tmp_path: Path) -> None:
    async with runtime() as rt:
        data = {"name": "console", "nodes": [{"name": "r9", "image": "frr-router-console", "memory": 512}]}
        topo = topology_from_data(data, tmp_path / "console.yaml", images=rt.catalog)
        events: list[str] = []
        async with Lab(
            topo,
            rt.catalog,
            settings=rt.settings,
            hypervisor=rt.hypervisor,
            accel=rt.accel.accel,
            progress=lambda who, what: events.append(f"{who}: {what}"),
        ) as lab:
            node = lab.nodes["r9"]
            assert "r9: console bootstrap" in events
            assert lab.state is not None and lab.state.nodes["r9"].host_key.startswith("ssh-ed25519 ")
            # over SSH now, with the key read on the console pinned
            assert node.access == "ssh"
            assert (await node.exec("hostname")).stdout.strip() == "r9"
            assert (await node.exec("systemctl is-enabled ssh.service")).stdout.strip() == "enabled"
            mgmt = (await node.exec("ip -4 -o addr show")).stdout
            assert f"{node.mgmt_ip}/" in mgmt
            done = await node.exec(probe_command(), timeout=300, max_output=32 << 20, stdin=snapshot_script().encode())
            snap = parse_snapshot(done.stdout)
            assert snap["_meta"]["complete"] and "running" in snap["router"]
            assert "unavailable" not in snap["services"] and "unavailable" not in snap["users"]
            # the console is still a channel of its own: commands with their status over it
            spec = node.image.console
            assert spec is not None
            session = ConsoleSession(await LibvirtConsole.open(rt.hypervisor, node.domain), node.name)
            await session.login(spec)
            channel = ConsoleChannel(session, spec.work_dir)
            over_console = await channel.exec("echo $(hostname) on the console; exit 3", timeout=60)
            assert (over_console.exit_code, over_console.stdout) == (3, "r9 on the console\n")
            cut = await channel.exec("sleep 60", timeout=3)
            assert cut.timed_out and cut.exit_code is None
            await session.close()
