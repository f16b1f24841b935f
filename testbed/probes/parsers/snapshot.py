"""Parse the whole output of ``snapshot.sh`` into a JSON-able dict keyed by probe name.

Contract of :func:`parse_snapshot`: it never raises. It returns ``{probe: value}`` for every
probe in :data:`~testbed.probes.script.PROBES` plus ``"_meta"`` (script version, completion
flag, per-probe timing). ``value`` is either ``{"unavailable": reason}`` (the probe could not
run: tool missing, init system absent, probe missing from truncated output) or the probe's
parsed dict. Parsed dicts may carry these diagnostic keys, present only when relevant:
``unparsed`` (lines the parser did not understand), ``stderr`` ({part: lines}),
``truncated`` ({part: cap info}), ``unavailable_parts`` ({part: reason}), and always
``part_rc`` ({part: exit status}).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from testbed.probes.parsers.accounts import parse_authorized_keys, parse_sudoers, parse_users
from testbed.probes.parsers.cron import parse_cron
from testbed.probes.parsers.files import parse_app_files, parse_etc_files, parse_secrets, parse_tmp_files
from testbed.probes.parsers.framing import Framed, ParseContext, Section, frame_snapshot
from testbed.probes.parsers.mounts import parse_mounts
from testbed.probes.parsers.network import parse_firewall, parse_listening, parse_network
from testbed.probes.parsers.packages import parse_packages, parse_pkg_health, parse_repos
from testbed.probes.parsers.processes import parse_processes
from testbed.probes.parsers.router import parse_router
from testbed.probes.parsers.services import parse_services
from testbed.probes.parsers.system import parse_boot, parse_os, parse_sysctl
from testbed.probes.script import PROBES

ProbeParser = Callable[[Section, ParseContext, list[str]], dict[str, Any]]

PARSERS: dict[str, ProbeParser] = {
    "boot": parse_boot,
    "os": parse_os,
    "tmp_files": parse_tmp_files,
    "services": parse_services,
    "listening": parse_listening,
    "processes": parse_processes,
    "users": parse_users,
    "sudoers": parse_sudoers,
    "authorized_keys": parse_authorized_keys,
    "packages": parse_packages,
    "repos": parse_repos,
    "pkg_health": parse_pkg_health,
    "firewall": parse_firewall,
    "cron": parse_cron,
    "mounts": parse_mounts,
    "sysctl": parse_sysctl,
    "etc_files": parse_etc_files,
    "secrets": parse_secrets,
    "app_files": parse_app_files,
    "network": parse_network,
    "router": parse_router,
}
"""One parser per probe: ``(section, context, unparsed) -> dict``; they append what they
cannot understand to ``unparsed`` instead of raising."""

_PARSE_ERRORS = (ValueError, KeyError, IndexError, TypeError, AttributeError, UnicodeError, re.error)


def parse_section(sec: Section, ctx: ParseContext | None = None) -> dict[str, Any]:
    """Parse one probe section into its dict (or ``{"unavailable": reason}``). Never raises."""
    ctx = ctx or ParseContext()
    if not sec.parts:
        reasons = [f"{k}: {v}" if k != sec.name else v for k, v in sec.unavailable.items()]
        return {"unavailable": "; ".join(reasons) or "probe produced no output"}
    unparsed: list[str] = [ln for ln in sec.loose if ln.strip()]
    parser = PARSERS.get(sec.name)
    result: dict[str, Any]
    try:
        result = parser(sec, ctx, unparsed) if parser else {"raw": {n: p.lines for n, p in sec.parts.items()}}
    except _PARSE_ERRORS as exc:  # a parser bug must not lose the snapshot
        result = {
            "parse_error": f"{type(exc).__name__}: {exc}",
            "raw": {n: p.lines[:200] for n, p in sec.parts.items()},
        }
    result["part_rc"] = {n: p.rc for n, p in sec.parts.items()}
    _add_diagnostics(result, sec, unparsed)
    return result


def _add_diagnostics(result: dict[str, Any], sec: Section, unparsed: list[str]) -> None:
    """Attach unparsed/stderr/truncated/unavailable_parts when non-empty."""
    if unparsed:
        result["unparsed"] = unparsed[:500]
    stderr = {n: p.stderr for n, p in sec.parts.items() if p.stderr}
    if stderr:
        result["stderr"] = stderr
    truncated = {n: p.truncated for n, p in sec.parts.items() if p.truncated}
    if truncated:
        result["truncated"] = truncated
    if sec.unavailable:
        result["unavailable_parts"] = dict(sec.unavailable)


def parse_snapshot(text: str) -> dict[str, Any]:
    """Parse the whole output of ``snapshot.sh``. Never raises.

    Returns ``{probe: parsed | {"unavailable": reason}, "_meta": {...}}`` with an entry for
    every probe in :data:`PROBES` (a probe absent from the output — script cut short or run
    with a probe subset — is ``{"unavailable": "missing from output"}``) plus any unknown
    probe sections. ``_meta`` = ``{version, complete, script_pid, native, duration_s,
    probe_seconds: {probe: s}, probe_rc: {probe: rc}, stray: [lines]}``.
    """
    framed = frame_snapshot(text)
    ctx = ParseContext(script_pid=framed.script_pid)
    out: dict[str, Any] = {}
    for name in PROBES:
        sec = framed.sections.get(name)
        out[name] = parse_section(sec, ctx) if sec else {"unavailable": "missing from output"}
    for name, sec in framed.sections.items():
        if name not in out:
            out[name] = parse_section(sec, ctx)
    out["_meta"] = _meta(framed)
    return out


def _meta(framed: Framed) -> dict[str, Any]:
    """Snapshot-level facts: completeness and timing."""
    seconds = {
        n: round(s.ended - s.started, 3)
        for n, s in framed.sections.items()
        if s.started is not None and s.ended is not None
    }
    duration = None
    if framed.started is not None and framed.ended is not None:
        duration = round(framed.ended - framed.started, 3)
    return {
        "version": framed.version,
        "complete": framed.complete,
        "script_pid": framed.script_pid,
        "native": framed.native,
        "duration_s": duration,
        "probe_seconds": seconds,
        "probe_rc": {n: s.rc for n, s in framed.sections.items()},
        "stray": framed.stray[:50],
    }
