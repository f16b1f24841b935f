"""The release matrix built here, each image booted for real: debian-11, -12, -13 (systemd,
direct kernel boot), debian-12-openrc (sysvinit + OpenRC) and debian-13-cloud from its own
disk through GRUB and cloud-init's NoCloud seed, with BIOS and with UEFI.

One lab per image (its node `forward: true`), several assertions on it: ready, a command,
the boot path it took, forwarding switched on by the seed at the first boot and still on after
the reboot, /etc/hosts from the seed, a complete snapshot (every probe parsed, OpenRC's
services included), a harness reboot through the image's service manager, and the state
after it. The images must be in the image cache with their current recipe (`testbed image
build NAME` outside the namespace: a build needs Debian's mirror, which the namespace of
scripts/netns-run cannot reach).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from testbed.hypervisor.lab import LabNode
from testbed.model.vocab import SnapshotPoint
from testbed.probes import PROBES
from testbed.runner.reboot import reboot_node
from testbed.runner.snapshots import snapshot_node

from .onebox import one_box

pytestmark = [pytest.mark.vm, pytest.mark.long]

MATRIX = ["debian-11", "debian-12", "debian-13", "debian-12-openrc", "debian-13-cloud", "debian-13-cloud-uefi"]
VERSION_ID = {"debian-11": "11", "debian-12": "12", "debian-13": "13", "debian-12-openrc": "12"}


NO_ROUTER = {"unavailable": "vtysh not found"}
"""The router probe's answer on a Linux release without FRR (it reads FRR's view only)."""


def _incomplete(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Probes that are missing, unavailable or left lines unparsed (the router probe must
    say that vtysh is absent: these releases have no FRR)."""
    bad: dict[str, Any] = {}
    for probe in PROBES:
        data = snapshot.get(probe)
        if probe == "router":
            if data != NO_ROUTER:
                bad[probe] = data
        elif not isinstance(data, dict) or "unavailable" in data:
            bad[probe] = data
        elif data.get("unparsed"):
            bad[probe] = {"unparsed": data["unparsed"][:5]}
    return bad


async def _check_boot_path(node: LabNode, image: str) -> None:
    efi = await node.exec("test -d /sys/firmware/efi && echo uefi || echo bios")
    assert efi.stdout.strip() == ("uefi" if image.endswith("-uefi") else "bios")
    if image.startswith("debian-13-cloud"):
        # booted from its own disk: GRUB gave the kernel the root by UUID, not /dev/vda
        cmdline = (await node.exec("cat /proc/cmdline")).stdout
        assert "root=UUID=" in cmdline, cmdline
        ci = await node.exec("cloud-init status --wait --long; cat /run/cloud-init/result.json", timeout=600)
        assert ci.exit_code == 0 and "status: done" in ci.stdout, ci.stdout + ci.stderr
        assert "DataSourceNoCloud" in ci.stdout
        assert (await node.exec("findmnt -n -o FSTYPE /boot/efi")).stdout.strip() == "vfat"
    if image == "debian-12-openrc":
        assert (await node.exec("cat /proc/1/comm")).stdout.strip() == "init"
        assert (await node.exec("test -d /run/systemd/system")).exit_code != 0
        # ssh is Debian's LSB script: rc-service runs its own `status` (exit 0: running)
        ssh = await node.exec("rc-service ssh status")
        assert ssh.exit_code == 0, ssh.stdout + ssh.stderr
        stanza = await node.exec("cat /etc/network/interfaces.d/testbed-eth0")
        assert "iface eth0 inet static" in stanza.stdout, "the seed's network came through ifupdown"


async def _check_seeded(node: LabNode) -> None:
    """What every kind of seed gives a forwarding node, at every boot."""
    forwarding = await node.exec("cat /proc/sys/net/ipv4/ip_forward")
    assert forwarding.stdout.strip() == "1", "the seed's forward: true did not switch forwarding on"
    hosts = await node.exec("cat /etc/hosts")
    assert "127.0.1.1\tbox" in hosts.stdout, hosts.stdout


def _check_services(snapshot: dict[str, Any], image: str) -> None:
    services = snapshot["services"]
    if image == "debian-12-openrc":
        assert services["init"] == "openrc"
        states = services["openrc"]["services"]
        for name in ("ssh", "testbed-seed", "networking"):
            assert states[name]["state"] == "started", (name, states.get(name))
        assert "ssh" in services["enabled"] and services["failed"] == []
    else:
        assert services["init"] == "systemd"
        assert "ssh.service" in services["units"], sorted(services["units"])[:20]


async def _exercise(image: str, tmp_path: Path) -> None:
    async with one_box(image, tmp_path, memory=768, task_id="release-matrix", forward=True) as (box, commands):
        release = await box.exec(". /etc/os-release; echo $ID $VERSION_ID; hostname")
        assert release.exit_code == 0
        ident, version, hostname = release.stdout.split()
        assert ident == "debian" and hostname == "box"
        assert version == VERSION_ID.get(image, "13")
        await _check_boot_path(box, image)
        await _check_seeded(box)

        before = await snapshot_node(box, commands, SnapshotPoint.BEFORE_SETUP)
        assert _incomplete(before) == {}
        _check_services(before, image)

        took = await reboot_node(box, commands, timeout=900)
        assert took > 0
        after = await box.exec("hostname; cat /proc/sys/kernel/random/boot_id")
        assert after.stdout.split()[0] == "box"
        # the harness's reboot returned only once the boot had settled (no start job queued)
        settled = await box.exec(
            "systemctl is-system-running 2>/dev/null; pgrep -x openrc >/dev/null && echo openrc-still-starting; true"
        )
        assert "starting" not in settled.stdout, settled.stdout
        await _check_seeded(box)
        again = await snapshot_node(box, commands, SnapshotPoint.AFTER_REBOOT)
        assert _incomplete(again) == {}
        _check_services(again, image)
        assert again["boot"] != before["boot"], "the reboot shows in the boot probe"


@pytest.mark.parametrize("image", MATRIX)
def test_release_boots_snapshots_and_reboots(vm_home: Path, tmp_path: Path, image: str) -> None:
    asyncio.run(_exercise(image, tmp_path))
