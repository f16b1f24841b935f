"""Kernel and host settings: `sysctl -w k=v` / `-p` / `--system`, mount points of
`mount`/`umount`/`swapon`/`swapoff` (`-a`: all of fstab), `hostname NAME` /
`hostnamectl set-hostname`, `crontab` (anything but `-l`)."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects
from testbed.analysis.command.paths import clean_path

_MOUNT_SPEC = ("tosLUTNB", ("types", "options", "source", "target"))

SPECS = {
    "sysctl": ("p", ("load",)),
    "mount": _MOUNT_SPEC,
    "swapon": _MOUNT_SPEC,
    "swapoff": _MOUNT_SPEC,
    "crontab": ("u", ()),
}


def sysctl(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    if opts.has("-p", "--load", "--system"):
        eff.sysctl_load = True
    for o in opts.operands:
        if "=" in o:
            eff.sysctl_keys.append(o.split("=", 1)[0].strip().replace("/", "."))


def mount(eff: Effects, cwd: str | None) -> None:
    opts = eff.options
    if opts.has("-a", "--all"):
        eff.mount_all = True
    target = opts.last("--target")
    if target is not None:
        eff.mounts.append(clean_path(target))
    eff.mounts += [clean_path(o) for o in opts.operands if o.startswith("/")]


def hostname(eff: Effects, cwd: str | None) -> None:
    ops = eff.options.operands
    setter = eff.name == "hostnamectl" and ops[:1] in (("set-hostname",), ("hostname",)) and len(ops) >= 2
    if setter or (eff.name == "hostname" and bool(ops)):
        eff.hostname = True


def crontab(eff: Effects, cwd: str | None) -> None:
    if "-l" not in eff.options.flags:
        eff.crontab = True


GRAMMARS = {
    "sysctl": sysctl,
    **{name: mount for name in ("mount", "umount", "swapon", "swapoff")},
    "hostname": hostname,
    "hostnamectl": hostname,
    "crontab": crontab,
}
