"""Bootable partitioned disks for `boot.mode: disk` recipes, made without loop devices.

One raw file, GPT, 512-byte sectors, partitions aligned to 1 MiB:

    1  BIOS boot partition (1 MiB)   GRUB's core.img (i386-pc)
    2  EFI system partition (128 MiB, FAT32)   EFI/BOOT/BOOTX64.EFI (GRUB x86_64-efi)
    3  root (ext4, the rest, label `root`)   the guest, /boot/grub with both module sets

BIOS: GRUB's boot.img goes into the protective MBR's code area (its partition table is
kept) and points at core.img's first sector; that sector (diskboot) lists the rest of
core.img. This is what `grub-bios-setup` writes, done by hand because it wants a block
device. UEFI: OVMF boots the removable-media path EFI/BOOT/BOOTX64.EFI when NVRAM has no
boot entry, so a fresh NVRAM per domain (see the domain template) boots it. Both GRUB
images embed the same early config: find the root file system by UUID, then load
/boot/grub/grub.cfg, which boots /vmlinuz and /initrd.img (Debian's symlinks to the newest
kernel, kept current by kernel upgrades; an upgrade's `update-grub` regenerates grub.cfg
from /etc/default/grub, written here with the same console settings).

Tools: sfdisk writes the partition table into the plain file, `mkfs.ext4 -d -E offset=`
writes the root file system in place, `mkfs.vfat --offset` and mtools make the ESP, and
grub-mkimage runs inside the guest's own root (its grub-pc-bin and grub-efi-amd64-bin).
The UUIDs derive from the recipe key, so a build is reproducible in its identifiers.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
import uuid
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import HarnessError
from testbed.images.commands import ProgressFn, run_logged

SECTOR = 512
MIB_SECTORS = 2048
BIOS_BOOT_TYPE = "21686148-6449-6E6F-744E-656564454649"
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_FS_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
ESP_MB = 128
TOOLS = ("sfdisk", "mkfs.ext4", "mkfs.vfat", "mmd", "mcopy")

# boot.img / diskboot.img offsets (GRUB's include/grub/i386/pc/boot.h)
MBR_CODE_END = 0x1B8  # boot code ends where the disk signature and partition table begin
KERNEL_SECTOR = 0x5C  # LBA of core.img's first sector (8 bytes, little-endian)
DRIVE_CHECK = 0x66  # `jmp` over the BIOS drive check, replaced by two NOPs for hard disks
BLOCKLIST = SECTOR - 12  # diskboot's first blocklist: start (8), length (2), segment (2)
KERNEL_SEGMENT = 0x820
_NAMESPACE = uuid.UUID("6f2d6d55-7b1c-4c47-9a53-3f1f2d9d2a10")

CORE_MODULES = ("biosdisk", "part_gpt", "ext2", "search_fs_uuid")
EFI_MODULES = ("part_gpt", "ext2", "fat", "search_fs_uuid")


@dataclass(frozen=True)
class Partition:
    number: int
    start: int  # sectors
    size: int  # sectors
    type: str
    name: str

    @property
    def offset(self) -> int:
        return self.start * SECTOR


@dataclass(frozen=True)
class DiskLayout:
    total_sectors: int
    bios: Partition
    esp: Partition
    root: Partition

    @classmethod
    def for_size(cls, disk_mb: int) -> DiskLayout:
        total = disk_mb * MIB_SECTORS
        bios = Partition(1, MIB_SECTORS, MIB_SECTORS, BIOS_BOOT_TYPE, "bios-boot")
        esp = Partition(2, bios.start + bios.size, ESP_MB * MIB_SECTORS, ESP_TYPE, "esp")
        root_start = esp.start + esp.size
        # the last MiB stays free for the backup GPT (33 sectors) and alignment
        root = Partition(3, root_start, total - MIB_SECTORS - root_start, LINUX_FS_TYPE, "root")
        if root.size < 256 * MIB_SECTORS:
            raise HarnessError(f"disk_mb {disk_mb} leaves less than 256 MiB for the root file system")
        return cls(total, bios, esp, root)

    def sfdisk_script(self) -> str:
        lines = ["label: gpt", "unit: sectors", f"first-lba: {MIB_SECTORS}"]
        for part in (self.bios, self.esp, self.root):
            lines.append(f'start={part.start}, size={part.size}, type={part.type}, name="{part.name}"')
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class BootIds:
    """The file system identifiers of one build (derived from its recipe key)."""

    root_uuid: str
    esp_serial: str  # 8 hex digits, as mkfs.vfat -i takes it

    @classmethod
    def for_key(cls, key: str) -> BootIds:
        root = uuid.uuid5(_NAMESPACE, f"root:{key}")
        esp = uuid.uuid5(_NAMESPACE, f"esp:{key}").hex[:8].upper()
        return cls(str(root), esp)

    @property
    def esp_fstab(self) -> str:
        return f"UUID={self.esp_serial[:4]}-{self.esp_serial[4:]}"

    @property
    def root_fstab(self) -> str:
        return f"UUID={self.root_uuid}"


def early_config(ids: BootIds) -> str:
    """The config embedded in core.img and BOOTX64.EFI (as grub-install's load.cfg)."""
    return f"search.fs_uuid {ids.root_uuid} root\nset prefix=($root)/boot/grub\n"


def _extra_args(cmdline: str) -> str:
    """`cmdline` without root= and ro/rw (the boot entry and update-grub add those)."""
    return " ".join(t for t in cmdline.split() if t not in ("ro", "rw") and not t.startswith("root="))


def grub_config(ids: BootIds, cmdline: str) -> str:
    """/boot/grub/grub.cfg: one entry booting Debian's /vmlinuz and /initrd.img links."""
    mode = "rw" if "rw" in cmdline.split() else "ro"
    return (
        "# Written by testbed's image build; `update-grub` (run by kernel upgrades) replaces it\n"
        "# with one generated from /etc/default/grub.\n"
        "set timeout=1\n"
        "set default=0\n"
        "if serial --unit=0 --speed=115200; then\n"
        "  terminal_input serial console\n"
        "  terminal_output serial console\n"
        "fi\n"
        "insmod part_gpt\n"
        "insmod ext2\n"
        f"search --no-floppy --fs-uuid --set=root {ids.root_uuid}\n"
        "menuentry 'Debian GNU/Linux' {\n"
        f"  linux /vmlinuz root={ids.root_fstab} {mode} {_extra_args(cmdline)}\n"
        "  initrd /initrd.img\n"
        "}\n"
    )


def default_grub(cmdline: str) -> str:
    """/etc/default/grub, so a regenerated grub.cfg keeps the console and NIC naming."""
    return (
        "GRUB_DEFAULT=0\n"
        "GRUB_TIMEOUT=1\n"
        'GRUB_DISTRIBUTOR="Debian"\n'
        'GRUB_CMDLINE_LINUX_DEFAULT=""\n'
        f'GRUB_CMDLINE_LINUX="{_extra_args(cmdline)}"\n'
        'GRUB_TERMINAL="serial console"\n'
        'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"\n'
        "GRUB_DISABLE_OS_PROBER=true\n"
    )


def mbr_with_boot_code(mbr: bytes, boot_img: bytes, core_lba: int) -> bytes:
    """The protective MBR `mbr` with GRUB's boot.img code in front of its partition table,
    pointing at core.img's first sector `core_lba`."""
    if len(mbr) != SECTOR or len(boot_img) != SECTOR or mbr[510:512] != b"\x55\xaa":
        raise HarnessError("boot sector: expected a 512-byte MBR with its signature and a 512-byte boot.img")
    code = bytearray(boot_img[:MBR_CODE_END])
    code[KERNEL_SECTOR : KERNEL_SECTOR + 8] = struct.pack("<Q", core_lba)
    code[DRIVE_CHECK : DRIVE_CHECK + 2] = b"\x90\x90"
    return bytes(code) + mbr[MBR_CODE_END:]


def core_with_blocklist(core: bytes, core_lba: int, room_sectors: int) -> bytes:
    """core.img with its first blocklist pointing at the sectors after `core_lba`."""
    sectors = -(-len(core) // SECTOR)
    if sectors > room_sectors:
        raise HarnessError(f"core.img needs {sectors} sectors, the BIOS boot partition has {room_sectors}")
    start, length, segment = struct.unpack_from("<QHH", core, BLOCKLIST)
    if segment != KERNEL_SEGMENT or length != sectors - 1:
        raise HarnessError(
            f"core.img: unexpected blocklist (start {start}, length {length}, segment {segment:#x}); "
            f"expected {sectors - 1} sectors at segment {KERNEL_SEGMENT:#x}"
        )
    patched = bytearray(core)
    patched[BLOCKLIST - 12 : BLOCKLIST] = bytes(12)  # the terminator after the one entry
    struct.pack_into("<Q", patched, BLOCKLIST, core_lba + 1)
    return bytes(patched)


@dataclass(frozen=True)
class GrubImages:
    boot_img: Path
    core_img: Path
    efi_image: Path


async def prepare_boot_files(
    rootfs: Path, staging: Path, ids: BootIds, cmdline: str, progress: ProgressFn | None
) -> GrubImages:
    """Write /boot/grub (config, both module sets) and /etc/default/grub into `rootfs`, and
    make core.img and BOOTX64.EFI with the guest's own grub-mkimage."""
    libdir = rootfs / "usr" / "lib" / "grub"
    for platform in ("i386-pc", "x86_64-efi"):
        if not (libdir / platform).is_dir():
            raise HarnessError(f"no {libdir / platform}: the recipe needs grub-pc-bin and grub-efi-amd64-bin")
    for link in ("vmlinuz", "initrd.img"):
        if not (rootfs / link).is_symlink():
            raise HarnessError(f"no /{link} symlink in the guest: the kernel package did not make one")
    grub_dir = rootfs / "boot" / "grub"
    grub_dir.mkdir(parents=True, exist_ok=True)
    for platform in ("i386-pc", "x86_64-efi"):
        target = grub_dir / platform
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(libdir / platform, target)
    (grub_dir / "grub.cfg").write_text(grub_config(ids, cmdline), encoding="utf-8")
    (rootfs / "etc" / "default").mkdir(parents=True, exist_ok=True)
    (rootfs / "etc" / "default" / "grub").write_text(default_grub(cmdline), encoding="utf-8")
    work = rootfs / "tmp"
    (work / "testbed-load.cfg").write_text(early_config(ids), encoding="utf-8")
    images = {"i386-pc": ("testbed-core.img", CORE_MODULES), "x86_64-efi": ("testbed-bootx64.efi", EFI_MODULES)}
    for platform, (name, modules) in images.items():
        argv = ["chroot", str(rootfs), "grub-mkimage", "-O", platform, "-d", f"/usr/lib/grub/{platform}"]
        argv += ["-c", "/tmp/testbed-load.cfg", "-p", "/boot/grub", "-o", f"/tmp/{name}", *modules]
        await run_logged(argv, "bootloader", progress)
    (work / "testbed-load.cfg").unlink()
    result = GrubImages(staging / "boot.img", staging / "core.img", staging / "BOOTX64.EFI")
    shutil.copyfile(libdir / "i386-pc" / "boot.img", result.boot_img)
    shutil.move(work / "testbed-core.img", result.core_img)
    shutil.move(work / "testbed-bootx64.efi", result.efi_image)
    return result


async def assemble_disk(
    raw: Path,
    layout: DiskLayout,
    rootfs: Path,
    ids: BootIds,
    grub: GrubImages,
    progress: ProgressFn | None,
) -> None:
    """Write the whole disk into `raw`: partition table, root file system from `rootfs`,
    ESP with BOOTX64.EFI, and the BIOS boot code."""
    with raw.open("wb") as fh:
        fh.truncate(layout.total_sectors * SECTOR)
    sfdisk = ["sfdisk", "--quiet", "--no-reread", "--no-tell-kernel", str(raw)]
    await run_logged(sfdisk, "partition", progress, stdin=layout.sfdisk_script().encode())
    root, esp = layout.root, layout.esp
    ext4 = ["mkfs.ext4", "-q", "-F", "-L", "root", "-U", ids.root_uuid, "-E", f"offset={root.offset}"]
    await run_logged([*ext4, "-d", str(rootfs), str(raw), f"{root.size // 2}k"], "disk", progress)
    vfat = ["mkfs.vfat", "-F", "32", "-s", "2", "-n", "EFI", "-i", ids.esp_serial, "--offset", str(esp.start)]
    await run_logged([*vfat, str(raw), str(esp.size // 2)], "disk", progress)
    image = f"{raw}@@{esp.offset}"
    await run_logged(["mmd", "-i", image, "::/EFI", "::/EFI/BOOT"], "disk", progress)
    await run_logged(["mcopy", "-i", image, str(grub.efi_image), "::/EFI/BOOT/BOOTX64.EFI"], "disk", progress)
    await asyncio.to_thread(_write_bios_boot, raw, layout, grub)


def _write_bios_boot(raw: Path, layout: DiskLayout, grub: GrubImages) -> None:
    core = core_with_blocklist(grub.core_img.read_bytes(), layout.bios.start, layout.bios.size)
    with raw.open("r+b") as fh:
        mbr = fh.read(SECTOR)
        fh.seek(0)
        fh.write(mbr_with_boot_code(mbr, grub.boot_img.read_bytes(), layout.bios.start))
        fh.seek(layout.bios.offset)
        fh.write(core)
