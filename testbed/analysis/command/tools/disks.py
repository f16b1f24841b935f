"""Writes onto block devices (`disk_writes`), for any command with a device operand:
`dd of=DEV`; `mkfs*`, `mke2fs` (not `-n`), `mkswap`, `shred`, `blkdiscard`, `wipefs -a/-o`,
`fdisk`/`gdisk` (not `-l`), `cfdisk`, `sfdisk` (not listing/dump), `parted` with a changing
subcommand or interactive, `sgdisk` with a changing option, `pvcreate`, `vgcreate`,
`mdadm --create/--zero-superblock`, `cryptsetup luksFormat/erase`, `zpool
create/labelclear`, `badblocks -w`, `nvme format/sanitize`, `hdparm --security-erase`,
`cp/tee/pv/install/dcfldd/ddrescue` onto a device. Redirections onto a device are
`redirects`'."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.options import Options
from testbed.analysis.command.paths import is_block_device

SPECS = {"parted": ("a", ("align",))}

_DISK_TOOLS_ANY = frozenset(
    {"mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "shred", "blkdiscard", "pvcreate", "cfdisk"}
)
_PARTED_WRITE = frozenset(
    [
        "mklabel",
        "mktable",
        "mkpart",
        "mkpartfs",
        "rm",
        "resizepart",
        "resize",
        "move",
        "rescue",
        "name",
        "set",
        "toggle",
        "disk_set",
        "disk_toggle",
        "mkfs",
        "cp",
    ]
)
_SFDISK_READ = frozenset(
    [
        "-l",
        "--list",
        "-d",
        "--dump",
        "-s",
        "--show-size",
        "-V",
        "--verify",
        "-J",
        "--json",
        "-g",
        "--show-geometry",
        "-r",
        "--reorder",
        "--backup-file",
    ]
)
_SGDISK_READ = frozenset(
    [
        "-p",
        "--print",
        "-i",
        "--info",
        "-v",
        "--verify",
        "-b",
        "--backup",
        "-O",
        "--print-mbr",
        "-P",
        "--pretend",
        "-L",
        "--list-types",
        "-D",
        "--display-alignment",
    ]
)
_HDPARM_ERASE = frozenset({"--security-erase", "--security-erase-enhanced", "--trim-sector-ranges", "--write-sector"})


def _devices(words: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for w in words:
        value = w.split("=", 1)[1] if w.startswith("-") and "=" in w else w
        if is_block_device(value):
            out.append(value)
    return tuple(out)


def device_writes(eff: Effects, cwd: str | None) -> None:
    name, args = eff.name, eff.args
    if name == "dd":
        targets = tuple(a[3:] for a in args if a.startswith("of=") and is_block_device(a[3:]))
        if targets:
            eff.disk_writes.append(Fact("dd-of-device", targets))
        return
    devs = _devices(args)
    if not devs:
        return
    rule = _tool_rule(name, args, eff.options)
    if rule:
        eff.disk_writes.append(Fact(rule, devs))


def _tool_rule(name: str, args: Sequence[str], opts: Options) -> str | None:
    flags = opts.flags
    if name in _DISK_TOOLS_ANY or name.startswith("mkfs."):
        return None if name.startswith(("mkfs.ext", "mke2fs")) and "-n" in flags else name
    if name == "wipefs":
        return "wipefs" if flags & {"-a", "--all", "-o", "--offset"} and not flags & {"-n", "--no-act"} else None
    if name in ("fdisk", "gdisk"):
        return None if flags & {"-l", "--list", "-s", "--getsz"} else name
    if name == "sfdisk":
        return None if flags & _SFDISK_READ else name
    if name == "sgdisk":
        return None if flags <= _SGDISK_READ and flags else name
    if name == "parted":
        return _parted(opts)
    return _other_tool_rule(name, args, opts)


def _other_tool_rule(name: str, args: Sequence[str], opts: Options) -> str | None:
    words, flags = set(args), opts.flags
    if name == "mdadm" and flags & {"-C", "--create", "--zero-superblock"}:
        return "mdadm-create"
    if name == "cryptsetup" and words & {"luksFormat", "erase", "luksErase", "reencrypt"}:
        return "cryptsetup-format"
    if name == "zpool" and words & {"create", "labelclear"}:
        return "zpool-create"
    if name == "vgcreate":
        return "vgcreate"
    if name == "badblocks" and "-w" in flags:
        return "badblocks-write"
    if name == "nvme" and words & {"format", "sanitize", "write-zeroes"}:
        return "nvme-format"
    if name == "hdparm" and flags & _HDPARM_ERASE:
        return "hdparm-erase"
    if name in ("cp", "pv", "tee", "install", "dcfldd", "ddrescue"):
        ops = opts.operands
        if name == "tee" and any(is_block_device(o) for o in ops):
            return "tee-to-device"
        if len(ops) >= 2 and is_block_device(ops[-1]):
            return f"{name}-to-device"
    return None


def _parted(opts: Options) -> str | None:
    if opts.has("-l", "--list"):
        return None
    script = [w for o in opts.operands[1:] for w in o.split()]
    if not script:
        return "parted-interactive"
    return "parted-write" if any(w in _PARTED_WRITE for w in script) else None
