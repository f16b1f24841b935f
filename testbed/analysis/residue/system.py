"""Handlers of the remaining system probes: ``sysctl``, ``mounts`` and ``os`` (hostname);
everything they queue is category ``system_config``.
"""

from __future__ import annotations

import re

from testbed.analysis.attribution import Target, command_effects
from testbed.analysis.residue.context import _Ctx, _d
from testbed.analysis.residue.model import REBOOT_POINT
from testbed.analysis.residue.paths import _prefixed
from testbed.probes.diff import ProbeDiff

_PER_IFACE_SYSCTL = re.compile(r"^net\.(ipv4|ipv6)\.(conf|neigh)\.[^.]+\.")
_MODULE_SYSCTL = re.compile(r"^net\.(netfilter\.|nf_conntrack_max$)")
"""Keys that appear when a stateful firewall rule loads nf_conntrack (their defaults)."""


_BOOT_SIZED_SYSCTL = re.compile(
    r"^(net\.ipv4\.(tcp_mem|tcp_rmem|tcp_wmem|udp_mem|tcp_max_orphans|tcp_max_syn_backlog|inet_peer_threshold)"
    r"|net\.sctp\.sctp_[rw]?mem|net\.netfilter\.nf_conntrack_(max|buckets)|net\.nf_conntrack_max"
    r"|fs\.file-max|fs\.epoll\.max_user_watches|fs\.inotify\.max_user_watches|kernel\.threads-max"
    r"|vm\.min_free_kbytes|user\.max_\w+)$"
)
"""Keys the kernel sizes from the memory it finds at boot: a reboot can move them by a few
pages (the first boot and the reboot free slightly different amounts), so at the
after-reboot comparison a change of at most `_BOOT_SIZE_TOLERANCE` in every number is noise.
A value the agent set and persisted differs by more, and its sysctl file is judged anyway."""
_BOOT_SIZE_TOLERANCE = 0.02
_BOOT_SIZED_MOUNT_OPTIONS = ("size=", "nr_inodes=")
_MEMORY_FS = ("tmpfs", "devtmpfs")


def _numbers(value: object) -> list[int] | None:
    words = str(value).split()
    return [int(w) for w in words] if words and all(w.isdigit() for w in words) else None


def _resized_at_boot(ctx: _Ctx, key: str, before: object, after: object) -> bool:
    """At the after-reboot comparison, a boot-sized key moved by at most the tolerance."""
    if ctx.point != REBOOT_POINT or not _BOOT_SIZED_SYSCTL.match(key):
        return False
    b, a = _numbers(before), _numbers(after)
    if b is None or a is None or len(a) != len(b):
        return False
    return all(abs(x - y) <= _BOOT_SIZE_TOLERANCE * max(x, y, 1) for x, y in zip(b, a, strict=True))


def _named_by_agent(ctx: _Ctx, key: str) -> bool:
    """An agent command names the sysctl key (it may have set it)."""
    return any(key in w for cmd in ctx.agent_cmds for w in command_effects(cmd.command).local.words)


def _h_sysctl(ctx: _Ctx, d: ProbeDiff) -> None:
    covers = ctx.expect.covers_sysctl_file()
    for c in d.items():
        key = c.key
        if c.change != "changed" and (_PER_IFACE_SYSCTL.match(key) or c.change == "removed"):
            ctx.exclude("sysctl", key, "noise (per-interface key of a new/removed interface)")
            continue
        if c.change == "added" and _MODULE_SYSCTL.match(key) and not _named_by_agent(ctx, key):
            ctx.exclude("sysctl", key, "noise (appeared with the conntrack module a firewall rule loaded)")
            continue
        if key in ("kernel.hostname", "kernel.domainname"):
            ctx.exclude("sysctl", key, "represented by the os probe / hostname")
            continue
        if covers and _sysctl_file_expected(ctx, key):
            ctx.exclude("sysctl", key, "set by an expected sysctl file")
            continue
        b, a = _d(c.before).get("value"), _d(c.after).get("value")
        if c.change == "changed" and _resized_at_boot(ctx, key, b, a):
            ctx.exclude("sysctl", key, "noise (sized by the kernel from memory at boot; moved a little at the reboot)")
            continue
        ctx.add("sysctl", c, "system_config", "sysctl:" + key, f"sysctl {key} changed {b} → {a}", Target("sysctl", key))


def _sysctl_file_expected(ctx: _Ctx, key: str) -> bool:
    """An agent command writes an expected sysctl file and names the key."""
    for cmd in ctx.agent_cmds:
        eff = command_effects(cmd.command).local
        named = any(key in w for w in eff.words)
        writes = any(
            w.mode == "abs"
            and (w.value == "/etc/sysctl.conf" or w.value.startswith("/etc/sysctl.d/"))
            and ctx.expect.path(w.value)
            for w in eff.writes
        )
        if named and writes:
            return True
    return False


_MOUNT_NOISE = ("/run/user/", "/run/credentials/", "/proc/", "/sys/", "/run/netns/", "/run/docker/", "/run/snapd/")


def _h_mounts(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        if c.collection != "mounts":
            continue
        mp = c.key.split("#", 1)[0]
        if _prefixed(mp + "/", _MOUNT_NOISE) or ctx.expect.path(mp):
            ctx.exclude("mounts", c.key, "noise or expected path")
            continue
        if c.change == "removed" and ctx.point == REBOOT_POINT:
            continue
        if c.change == "changed" and ctx.point == REBOOT_POINT and _memory_fs_resized(c.before, c.after):
            ctx.exclude("mounts", c.key, "noise (a memory file system sized from memory at boot)")
            continue
        rec = c.after or c.before or {}
        verb = {"added": "mounted", "removed": "unmounted"}.get(c.change, f"remounted ({', '.join(c.fields)})")
        ctx.add(
            "mounts",
            c,
            "system_config",
            "mount:" + mp,
            f"{mp} {verb} ({rec.get('device')}, {rec.get('fstype')})",
            Target("mount", mp, tokens=(str(rec.get("device")),)),
        )


def _memory_fs_resized(before: object, after: object) -> bool:
    """The same tmpfs/devtmpfs whose options differ only in the size the kernel derives from
    memory at boot (`size=`, `nr_inodes=`; shown only where it differs from the default).
    A size the agent set in /etc/fstab or a mount unit is judged by the file probes."""
    b, a = _d(before), _d(after)
    if b.get("fstype") not in _MEMORY_FS or (b.get("fstype"), b.get("device")) != (a.get("fstype"), a.get("device")):
        return False

    def fixed(rec: dict[str, object]) -> set[str]:
        options = rec.get("options")
        words = options if isinstance(options, list) else str(options or "").split(",")
        return {str(o) for o in words if not str(o).startswith(_BOOT_SIZED_MOUNT_OPTIONS)}

    return fixed(b) == fixed(a)


def _h_os(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        if c.collection == "kernel" and c.key == "hostname":
            b, a = _d(c.before).get("value"), _d(c.after).get("value")
            ctx.add("os", c, "system_config", "hostname", f"hostname changed {b} → {a}", Target("hostname", str(a)))
