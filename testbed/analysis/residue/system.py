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


def _h_os(ctx: _Ctx, d: ProbeDiff) -> None:
    for c in d.items():
        if c.collection == "kernel" and c.key == "hostname":
            b, a = _d(c.before).get("value"), _d(c.after).get("value")
            ctx.add("os", c, "system_config", "hostname", f"hostname changed {b} → {a}", Target("hostname", str(a)))
