"""Bootable disk assembly (testbed.images.disk): the layout, GRUB's boot sector and core.img
patches, the GRUB configuration, and a real disk assembled with sfdisk, mkfs.ext4, mkfs.vfat
and mtools from a small tree (no loop device, no guest)."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
from pathlib import Path

import pytest

from testbed.errors import HarnessError
from testbed.images.disk import (
    BLOCKLIST,
    DRIVE_CHECK,
    ESP_TYPE,
    KERNEL_SECTOR,
    KERNEL_SEGMENT,
    MBR_CODE_END,
    SECTOR,
    BootIds,
    DiskLayout,
    GrubImages,
    assemble_disk,
    core_with_blocklist,
    default_grub,
    early_config,
    grub_config,
    mbr_with_boot_code,
)

IDS = BootIds.for_key("0123456789abcdef")
CMDLINE = "ro console=tty0 console=ttyS0,115200 net.ifnames=0"


def fake_boot_img() -> bytes:
    """A boot.img shaped like GRUB's: kernel sector 1, boot drive 0xff, `jmp` drive check."""
    img = bytearray(range(256)) * 2
    img[KERNEL_SECTOR : KERNEL_SECTOR + 8] = struct.pack("<Q", 1)
    img[DRIVE_CHECK : DRIVE_CHECK + 2] = b"\xeb\x05"
    img[510:512] = b"\x55\xaa"
    return bytes(img)


def fake_core_img(sectors: int) -> bytes:
    """A core.img shaped like grub-mkimage's: diskboot's default blocklist (start 2), the
    length of the rest, the kernel segment."""
    core = bytearray(b"\xaa" * (sectors * SECTOR - 100))
    core[BLOCKLIST - 12 : BLOCKLIST] = bytes(12)
    struct.pack_into("<QHH", core, BLOCKLIST, 2, sectors - 1, KERNEL_SEGMENT)
    return bytes(core)


def test_layout_is_aligned_and_fills_the_disk() -> None:
    layout = DiskLayout.for_size(3072)
    parts = (layout.bios, layout.esp, layout.root)
    assert [p.number for p in parts] == [1, 2, 3]
    assert all(p.start % 2048 == 0 for p in parts), "1 MiB alignment"
    assert layout.bios.start + layout.bios.size == layout.esp.start
    assert layout.esp.start + layout.esp.size == layout.root.start
    assert layout.root.start + layout.root.size == layout.total_sectors - 2048, "last MiB for the backup GPT"
    assert layout.esp.size * SECTOR == 128 << 20 and layout.esp.type == ESP_TYPE
    script = layout.sfdisk_script()
    assert script.startswith("label: gpt\n") and f"start={layout.root.start}," in script
    with pytest.raises(HarnessError):
        DiskLayout.for_size(300)


def test_boot_ids_are_reproducible_per_key() -> None:
    assert BootIds.for_key("0123456789abcdef") == IDS
    assert BootIds.for_key("fedcba9876543210").root_uuid != IDS.root_uuid
    assert len(IDS.esp_serial) == 8 and IDS.esp_fstab == f"UUID={IDS.esp_serial[:4]}-{IDS.esp_serial[4:]}"


def test_grub_configs_find_root_by_uuid_and_keep_the_console() -> None:
    assert early_config(IDS) == f"search.fs_uuid {IDS.root_uuid} root\nset prefix=($root)/boot/grub\n"
    cfg = grub_config(IDS, CMDLINE)
    assert f"linux /vmlinuz root=UUID={IDS.root_uuid} ro console=tty0 console=ttyS0,115200 net.ifnames=0\n" in cfg
    assert "initrd /initrd.img" in cfg and "serial --unit=0 --speed=115200" in cfg
    default = default_grub(CMDLINE)
    assert 'GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200 net.ifnames=0"' in default
    assert 'GRUB_TERMINAL="serial console"' in default


def test_boot_sector_points_at_core_and_keeps_the_partition_table() -> None:
    mbr = bytes(MBR_CODE_END) + b"\x11" * (510 - MBR_CODE_END) + b"\x55\xaa"
    patched = mbr_with_boot_code(mbr, fake_boot_img(), 2048)
    assert patched[MBR_CODE_END:] == mbr[MBR_CODE_END:], "partition table and signature untouched"
    assert struct.unpack_from("<Q", patched, KERNEL_SECTOR)[0] == 2048
    assert patched[DRIVE_CHECK : DRIVE_CHECK + 2] == b"\x90\x90"
    assert patched[:KERNEL_SECTOR] == fake_boot_img()[:KERNEL_SECTOR]
    with pytest.raises(HarnessError):
        mbr_with_boot_code(bytes(512), fake_boot_img(), 2048)  # no MBR signature


def test_core_blocklist_points_after_its_first_sector() -> None:
    core = fake_core_img(58)
    patched = core_with_blocklist(core, 2048, 2048)
    assert struct.unpack_from("<QHH", patched, BLOCKLIST) == (2049, 57, KERNEL_SEGMENT)
    assert patched[BLOCKLIST - 12 : BLOCKLIST] == bytes(12), "one entry, then the terminator"
    assert patched[SECTOR:] == core[SECTOR:]
    with pytest.raises(HarnessError, match="sectors"):
        core_with_blocklist(core, 2048, 40)  # does not fit the BIOS boot partition
    broken = bytearray(core)
    struct.pack_into("<H", broken, BLOCKLIST + 8, 3)
    with pytest.raises(HarnessError, match="blocklist"):
        core_with_blocklist(bytes(broken), 2048, 2048)


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def test_assembled_disk_has_every_part_in_place(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    (rootfs / "boot" / "grub").mkdir(parents=True)
    (rootfs / "boot" / "grub" / "grub.cfg").write_text(grub_config(IDS, CMDLINE))
    grub = GrubImages(tmp_path / "boot.img", tmp_path / "core.img", tmp_path / "BOOTX64.EFI")
    grub.boot_img.write_bytes(fake_boot_img())
    grub.core_img.write_bytes(fake_core_img(58))
    grub.efi_image.write_bytes(b"MZ-efi-application")
    raw = tmp_path / "disk.raw"
    layout = DiskLayout.for_size(400)
    asyncio.run(assemble_disk(raw, layout, rootfs, IDS, grub, None))

    table = json.loads(_run("sfdisk", "--json", str(raw)))["partitiontable"]
    assert table["label"] == "gpt"
    assert [(p["start"], p["size"]) for p in table["partitions"]] == [
        (p.start, p.size) for p in (layout.bios, layout.esp, layout.root)
    ]
    data = raw.read_bytes()
    assert struct.unpack_from("<Q", data, KERNEL_SECTOR)[0] == layout.bios.start
    assert data[450] == 0xEE, "the protective MBR entry is kept"
    core_at = layout.bios.offset
    assert struct.unpack_from("<Q", data, core_at + BLOCKLIST)[0] == layout.bios.start + 1
    root = data[layout.root.offset : layout.root.offset + layout.root.size * SECTOR]
    (tmp_path / "root.img").write_bytes(root)
    assert _run("blkid", "-o", "value", "-s", "UUID", str(tmp_path / "root.img")).strip() == IDS.root_uuid
    assert IDS.root_uuid in _run("debugfs", "-R", "cat /boot/grub/grub.cfg", str(tmp_path / "root.img"))
    esp = f"{raw}@@{layout.esp.offset}"
    assert "BOOTX64  EFI" in _run("mdir", "-i", esp, "::/EFI/BOOT")
    assert _run("mtype", "-i", esp, "::/EFI/BOOT/BOOTX64.EFI") == "MZ-efi-application"
    assert IDS.esp_serial[:4] in _run("minfo", "-i", esp)
