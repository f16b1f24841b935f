"""Probes of the running system itself: ``boot`` (boot id, uptime, clock), ``os`` (os-release,
kernel, hostname) and ``sysctl`` (net/kernel/vm keys without the ones that change by
themselves).
"""

from __future__ import annotations

import fnmatch
from typing import Any

from testbed.probes.parsers.formats import kv_lines, to_float, to_int
from testbed.probes.parsers.framing import ParseContext, Section

SYSCTL_PREFIXES: tuple[str, ...] = ("net.", "kernel.", "vm.")
"""Only sysctl keys under these trees are kept."""

SYSCTL_VOLATILE: tuple[str, ...] = (
    "kernel.random.*",  # boot_id, uuid, entropy_avail: change by themselves
    "kernel.ns_last_pid",  # last pid handed out
    "kernel.pty.nr",  # number of open ptys
    "kernel.perf_event_max_sample_rate",  # lowered by the kernel when sampling is slow
    "kernel.sched_domain.*",  # per-cpu scheduler internals
    "kernel.tainted",  # set by any module load (kept in os/kernel terms elsewhere)
    "kernel.hung_task_detect_count",
    "kernel.warn_count",
    "kernel.oops_count",
    "net.netfilter.nf_conntrack_count",  # live connection count
    "net.ipv4.tcp_fastopen_key",  # a per-boot secret: never recorded
    "net.core.netdev_rss_key",  # per-boot random hash key
    "net.ipv6.conf.*.stable_secret",  # secret, unreadable
    "vm.stat_refresh",
    # computed by the kernel from free memory at the moment: changes by itself
    "vm.user_reserve_kbytes",
    "vm.admin_reserve_kbytes",
    "vm.drop_caches",
    "vm.compact_memory",
)
"""fnmatch patterns of sysctl keys dropped because they change by themselves (counters, random
values, per-boot secrets) or are write-only triggers."""


def parse_boot(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"boot_id": str|None, "uptime_s": float|None, "clock": int|None}``."""
    kv = kv_lines(sec.lines("boot"), unparsed)
    return {
        "boot_id": kv.get("boot_id") or None,
        "uptime_s": to_float(kv.get("uptime")),
        "clock": to_int(kv.get("clock")),
    }


def parse_os(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"os_release": {KEY: value}, "id", "id_like", "version_id", "pretty_name",
    "kernel": {"sysname", "release", "machine", "version"}, "hostname"}``."""
    rel = kv_lines(sec.lines("os_release"), unparsed)
    kern = kv_lines(sec.lines("kernel"), unparsed)
    return os_record(rel, kern)


def os_record(rel: dict[str, str], kern: dict[str, str]) -> dict[str, Any]:
    """The ``os`` probe's data from os-release fields and kernel facts (also used for
    snapshots imported from elsewhere)."""
    return {
        "os_release": rel,
        "id": rel.get("ID"),
        "id_like": rel.get("ID_LIKE", "").split(),
        "version_id": rel.get("VERSION_ID"),
        "pretty_name": rel.get("PRETTY_NAME"),
        "kernel": {k: kern.get(k) for k in ("sysname", "release", "machine", "version")},
        "hostname": kern.get("hostname"),
    }


def sysctl_ignored(key: str) -> bool:
    """True when *key* is outside net/kernel/vm or matches :data:`SYSCTL_VOLATILE`."""
    if not key.startswith(SYSCTL_PREFIXES):
        return True
    return any(fnmatch.fnmatchcase(key, pat) for pat in SYSCTL_VOLATILE)


def parse_sysctl(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"values": {key: value}, "ignored": int}``; values have whitespace collapsed to one
    space. Accepts ``sysctl -a`` (``k = v``) and the ``grep -r /proc/sys`` fallback
    (``/proc/sys/a/b:v``)."""
    values: dict[str, str] = {}
    ignored = 0
    for line in sec.lines("sysctl"):
        if line.startswith("/proc/sys/"):
            path, _, value = line.partition(":")
            key = path[len("/proc/sys/") :].replace(".", "\0").replace("/", ".").replace("\0", "/")
        elif " = " in line or line.endswith(" ="):
            key, _, value = line.partition(" =")
        else:
            unparsed.append(line)
            continue
        key = key.strip()
        if sysctl_ignored(key):
            ignored += 1
            continue
        values[key] = " ".join(value.split())
    return {"values": values, "ignored": ignored}
