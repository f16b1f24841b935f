"""Writes onto block devices."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("dd if=/dev/zero of=/dev/sda bs=1M", "dd-of-device"),
        ("dd if=/dev/sda of=/tmp/img", None),
        ("mkfs.xfs /dev/vdb1", "mkfs.xfs"),
        ("mke2fs -n /dev/vdb1", None),
        ("wipefs -a /dev/vdb", "wipefs"),
        ("wipefs /dev/vdb", None),
        ("fdisk -l /dev/vda", None),
        ("fdisk /dev/vdb", "fdisk"),
        ("sfdisk --dump /dev/vda", None),
        ("sgdisk -p /dev/vda", None),
        ("sgdisk -Z /dev/vdb", "sgdisk"),
        ("parted /dev/vdb print", None),
        ("parted -s /dev/vdb mklabel gpt", "parted-write"),
        ("parted /dev/vdb", "parted-interactive"),
        ("mdadm --create /dev/md0 -l1 -n2 /dev/vdb /dev/vdc", "mdadm-create"),
        ("cryptsetup luksFormat /dev/vdb", "cryptsetup-format"),
        ("cp disk.img /dev/sdb", "cp-to-device"),
        ("blkid /dev/vda1", None),
    ],
)
def test_device_writes(text: str, rule: str | None) -> None:
    facts = effects_of(text).steps[-1].disk_writes
    assert [f.id for f in facts] == ([rule] if rule else [])
