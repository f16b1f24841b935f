"""The ``services`` probe: systemd units and unit-file states, OpenRC services and runlevels.

:func:`systemd_units` also reads the ``cron`` probe's timer listing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from testbed.probes.parsers.formats import split_ws
from testbed.probes.parsers.framing import ParseContext, Section


def systemd_units(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, str]]:
    """Parse ``systemctl list-units --plain --no-legend``: UNIT LOAD ACTIVE SUB DESCRIPTION."""
    out: dict[str, dict[str, str]] = {}
    for line in lines:
        if not line.strip():
            continue
        parts = split_ws(line.lstrip("● *"), 4)
        if len(parts) < 4:
            unparsed.append(line)
            continue
        out[parts[0]] = {
            "load": parts[1],
            "active": parts[2],
            "sub": parts[3],
            "description": parts[4] if len(parts) > 4 else "",
        }
    return out


def _systemd_unit_files(lines: Iterable[str], unparsed: list[str]) -> dict[str, str]:
    """Parse UNIT STATE [PRESET] lines: the script's enablement listing (enabled, masked,
    alias — from the symlinks under /etc/systemd/system) or ``systemctl list-unit-files``."""
    out: dict[str, str] = {}
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2 or "." not in parts[0]:
            unparsed.append(line)
            continue
        out[parts[0]] = parts[1]
    return out


_RC_STATUS_RE = re.compile(r"^\s*(\S+)\s+\[\s*([a-z]+)[^\]]*\]\s*$")


def _openrc_status(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, str]]:
    """Parse ``rc-status --all``: runlevel headings then `` name  [  state  ]`` lines."""
    out: dict[str, dict[str, str]] = {}
    runlevel = ""
    for line in lines:
        if not line.strip():
            continue
        head = re.match(r"^(?:Dynamic )?Runlevel:\s*(\S+)", line)
        if head:
            runlevel = head.group(1)
            continue
        m = _RC_STATUS_RE.match(line)
        if not m:
            unparsed.append(line)
            continue
        out.setdefault(m.group(1), {"state": m.group(2), "runlevel": runlevel})
    return out


def _openrc_runlevels(lines: Iterable[str], unparsed: list[str]) -> dict[str, list[str]]:
    """Parse ``rc-update show -v``: ``name | runlevel runlevel`` (empty when not added)."""
    out: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip():
            continue
        name, sep, levels = line.partition("|")
        if not sep or not name.strip():
            unparsed.append(line)
            continue
        out[name.strip()] = sorted(levels.split())
    return out


_OPENRC_FAILED = {"crashed", "failed"}


def parse_services(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"init": "systemd"|"openrc"|"unknown", "failed": [unit], "enabled": [unit],
    "units": {unit: {load, active, sub, description}}, "unit_files": {unit: state},
    "openrc": {"services": {name: {state, runlevel}}, "runlevels": {name: [runlevel]}}}``.

    ``failed`` and ``enabled`` are summaries across both init systems (OpenRC: state
    crashed/failed; added to any runlevel)."""
    out: dict[str, Any] = {"init": "unknown", "failed": [], "enabled": [], "units": {}, "unit_files": {}}
    if sec.has("systemd_failed") or sec.has("systemd_services"):
        out["init"] = "systemd"
        failed = systemd_units(sec.lines("systemd_failed"), unparsed)
        out["units"] = systemd_units(sec.lines("systemd_services"), unparsed)
        out["unit_files"] = _systemd_unit_files(sec.lines("systemd_unit_files"), unparsed)
        out["failed"] = sorted(failed)
        out["enabled"] = sorted(u for u, s in out["unit_files"].items() if s == "enabled")
    if sec.has("openrc_status") or sec.has("openrc_runlevels"):
        if out["init"] == "unknown":
            out["init"] = "openrc"
        status = _openrc_status(sec.lines("openrc_status"), unparsed)
        levels = _openrc_runlevels(sec.lines("openrc_runlevels"), unparsed)
        out["openrc"] = {"services": status, "runlevels": levels}
        out["failed"] = sorted(set(out["failed"]) | {n for n, s in status.items() if s["state"] in _OPENRC_FAILED})
        out["enabled"] = sorted(set(out["enabled"]) | {n for n, lv in levels.items() if lv})
    return out
