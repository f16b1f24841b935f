"""Parse the output of ``snapshot.sh`` into a JSON-able dict keyed by probe name.

Output grammar (see the header of ``snapshot.sh``; NONCE is random per run and a line is a
marker only when it carries that run's NONCE, so probe output can never forge one)::

    @@testbed-snapshot v=1 nonce=NONCE pid=PID up=SECONDS@@
    @@testbed-probe NONCE NAME up=SECONDS@@
    @@testbed-part NONCE PART@@
    ...output lines...
    @@testbed-truncated NONCE max_lines=N more=0|1 long_lines=M@@
    @@testbed-stderr NONCE@@ TEXT
    @@testbed-partend NONCE PART rc=RC@@
    @@testbed-unavailable NONCE NAME: REASON@@
    @@testbed-end NONCE NAME rc=0|1 up=SECONDS@@
    @@testbed-done NONCE probes=COUNT up=SECONDS@@

Contract of :func:`parse_snapshot`: it never raises. It returns ``{probe: value}`` for every
probe in :data:`PROBES` plus ``"_meta"`` (script version, completion flag, per-probe timing).
``value`` is either ``{"unavailable": reason}`` (the probe could not run: tool missing, init
system absent, probe missing from truncated output) or the probe's parsed dict. Parsed dicts
may carry these diagnostic keys, present only when relevant: ``unparsed`` (lines the parser
did not understand), ``stderr`` ({part: lines}), ``truncated`` ({part: cap info}),
``unavailable_parts`` ({part: reason}), and always ``part_rc`` ({part: exit status}).
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from testbed.probes.secretnames import name_kinds

SCRIPT_NAME = "snapshot.sh"
SCRIPT_PATH: Path = Path(__file__).with_name(SCRIPT_NAME)
"""Path of the snapshot script inside the installed package."""

PROBES: tuple[str, ...] = (
    "boot",
    "os",
    "tmp_files",
    "services",
    "listening",
    "processes",
    "users",
    "sudoers",
    "authorized_keys",
    "packages",
    "repos",
    "pkg_health",
    "firewall",
    "cron",
    "mounts",
    "sysctl",
    "etc_files",
    "secrets",
    "app_files",
    "network",
)
"""Probe names in the order the script runs them."""

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

_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_HEADER_RE = re.compile(r"^@@testbed-snapshot v=(\S+) nonce=(\S+) pid=(\S*) up=(\S*)@@$")


def snapshot_script() -> str:
    """Return the text of ``snapshot.sh`` (package data shipped next to this module)."""
    try:
        return resources.files("testbed.probes").joinpath(SCRIPT_NAME).read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return SCRIPT_PATH.read_text("utf-8")


def snapshot_command(remote_path: str, probes: Iterable[str] | None = None) -> str:
    """Return the shell command that runs the uploaded script at *remote_path*.

    *probes* restricts the run to those probe names (default: all of :data:`PROBES`).
    """
    args = ["sh", remote_path, *(probes or ())]
    return " ".join(shlex.quote(a) for a in args)


# ------------------------------------------------------------------------------ framing


@dataclass
class Part:
    """One command's output inside a probe section."""

    name: str
    lines: list[str] = field(default_factory=list)
    rc: int | None = None
    stderr: list[str] = field(default_factory=list)
    truncated: dict[str, int] | None = None


@dataclass
class Section:
    """One probe's section of the output: its parts, unavailable markers and timing."""

    name: str
    parts: dict[str, Part] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)
    rc: int | None = None
    started: float | None = None
    ended: float | None = None

    def lines(self, part: str) -> list[str]:
        """Lines of *part*, or an empty list when the part did not run."""
        p = self.parts.get(part)
        return p.lines if p else []

    def has(self, part: str) -> bool:
        """True when *part* ran (whatever its exit status)."""
        return part in self.parts


@dataclass
class ParseContext:
    """Facts about the run that some parsers need (the script's own pid, for one)."""

    script_pid: int | None = None


@dataclass
class Framed:
    """The snapshot split into sections, before any probe-specific parsing."""

    version: str | None = None
    nonce: str | None = None
    script_pid: int | None = None
    started: float | None = None
    ended: float | None = None
    complete: bool = False
    sections: dict[str, Section] = field(default_factory=dict)
    stray: list[str] = field(default_factory=list)


def _to_int(text: str | None) -> int | None:
    """Parse an int, or return None."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _to_float(text: str | None) -> float | None:
    """Parse a float, or return None."""
    if text is None:
        return None
    try:
        return float(text.strip())
    except ValueError:
        return None


def _marker_patterns(nonce: str) -> dict[str, re.Pattern[str]]:
    """Compile the marker regexes bound to this run's nonce."""
    n = re.escape(nonce)
    return {
        "probe": re.compile(rf"^@@testbed-probe {n} (\S+) up=(\S*)@@$"),
        "end": re.compile(rf"^@@testbed-end {n} (\S+) rc=(-?\d+) up=(\S*)@@$"),
        "part": re.compile(rf"^@@testbed-part {n} (\S+)@@$"),
        "partend": re.compile(rf"^@@testbed-partend {n} (\S+) rc=(-?\d+)@@$"),
        "unavailable": re.compile(rf"^@@testbed-unavailable {n} (\S+): (.*)@@$"),
        "truncated": re.compile(rf"^@@testbed-truncated {n} max_lines=(\d+) more=(\d+) long_lines=(\d+)@@$"),
        "stderr": re.compile(rf"^@@testbed-stderr {n}@@ ?(.*)$"),
        "done": re.compile(rf"^@@testbed-done {n} probes=(\d+) up=(\S*)@@$"),
    }


class _Framer:
    """State machine that assigns every output line to a section and part."""

    def __init__(self, nonce: str) -> None:
        self.pat = _marker_patterns(nonce)
        self.framed = Framed(nonce=nonce)
        self.section: Section | None = None
        self.part: Part | None = None

    def feed(self, line: str) -> None:
        """Consume one output line."""
        if line.startswith("@@testbed-") and self._marker(line):
            return
        if self.part is not None:
            self.part.lines.append(line)
        elif self.section is not None:
            self.section.loose.append(line)
        elif line.strip():
            self.framed.stray.append(line)

    def _marker(self, line: str) -> bool:
        """Handle *line* if it is a marker of this run; return whether it was."""
        for kind, pat in self.pat.items():
            m = pat.match(line)
            if m:
                getattr(self, "_on_" + kind)(m)
                return True
        return False

    def _on_probe(self, m: re.Match[str]) -> None:
        self.section = Section(name=m.group(1), started=_to_float(m.group(2)))
        self.framed.sections[self.section.name] = self.section
        self.part = None

    def _on_end(self, m: re.Match[str]) -> None:
        if self.section is not None and self.section.name == m.group(1):
            self.section.rc = _to_int(m.group(2))
            self.section.ended = _to_float(m.group(3))
        self.section = None
        self.part = None

    def _on_part(self, m: re.Match[str]) -> None:
        if self.section is None:
            return
        self.part = Part(name=m.group(1))
        self.section.parts[self.part.name] = self.part

    def _on_partend(self, m: re.Match[str]) -> None:
        if self.part is not None and self.part.name == m.group(1):
            self.part.rc = _to_int(m.group(2))
        self.part = None

    def _on_unavailable(self, m: re.Match[str]) -> None:
        if self.section is not None:
            self.section.unavailable[m.group(1)] = m.group(2)

    def _on_truncated(self, m: re.Match[str]) -> None:
        if self.part is not None:
            self.part.truncated = {
                "max_lines": int(m.group(1)),
                "more": int(m.group(2)),
                "long_lines": int(m.group(3)),
            }

    def _on_stderr(self, m: re.Match[str]) -> None:
        if self.part is not None:
            self.part.stderr.append(m.group(1))

    def _on_done(self, m: re.Match[str]) -> None:
        self.framed.complete = True
        self.framed.ended = _to_float(m.group(2))
        self.section = None
        self.part = None


def frame_snapshot(text: str) -> Framed:
    """Split raw script output into sections. Never raises; without a header, no sections."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _HEADER_RE.match(ln)), None)
    if start is None:
        return Framed(stray=[ln for ln in lines if ln.strip()][:50])
    head = _HEADER_RE.match(lines[start])
    assert head is not None
    framer = _Framer(head.group(2))
    framer.framed.version = head.group(1)
    framer.framed.script_pid = _to_int(head.group(3))
    framer.framed.started = _to_float(head.group(4))
    for line in lines[start + 1 :]:
        framer.feed(line)
    return framer.framed


# ------------------------------------------------------------------------- shared helpers


def _kv_lines(lines: Iterable[str], unparsed: list[str]) -> dict[str, str]:
    """Parse ``KEY=VALUE`` lines (os-release style: optional quotes, shell escapes)."""
    out: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _KV_RE.match(line.strip())
        if not m:
            unparsed.append(line)
            continue
        out[m.group(1)] = _unquote_shell(m.group(2))
    return out


def _unquote_shell(value: str) -> str:
    """Undo os-release quoting: ``"a b"`` → ``a b``; falls back to the raw text."""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        inner = v[1:-1]
        if v[0] == '"':
            inner = re.sub(r'\\([\\"$`])', r"\1", inner)
        return inner
    return v


_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _c_unquote(text: str, start: int) -> tuple[str, int] | None:
    """Decode a C-style quoted string (GNU ``QUOTING_STYLE=c``) beginning at ``text[start]``.

    Returns the decoded string and the index just past the closing quote, or None.
    """
    if start >= len(text) or text[start] != '"':
        return None
    buf = bytearray()
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return buf.decode("utf-8", "backslashreplace"), i + 1
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            octal = re.match(r"[0-7]{1,3}", text[i + 1 : i + 4])
            if octal:
                buf.append(int(octal.group(0), 8) & 0xFF)
                i += 1 + len(octal.group(0))
                continue
            buf.extend(_C_ESCAPES.get(nxt, nxt).encode("utf-8", "surrogateescape"))
            i += 2
            continue
        buf.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    return None


def _stat_name(raw: str, is_link: bool) -> tuple[str, str | None]:
    """Decode stat's ``%N``: GNU C-quoted ``"p" -> "t"``, busybox ``'p' -> 't'`` or raw ``p``.

    Returns (path, symlink target or None).
    """
    first = _c_unquote(raw, 0)
    if first is not None:
        path, end = first
        rest = raw[end:]
        if rest.startswith(" -> "):
            second = _c_unquote(rest, 4)
            if second is not None:
                return path, second[0]
        return path, None
    if is_link:
        m = re.match(r"^'(.*)' -> '(.*)'$", raw, re.S)
        if m:
            return m.group(1), m.group(2)
    return raw, None


_STAT_TYPES = {
    "regular file": "file",
    "regular empty file": "file",
    "directory": "dir",
    "symbolic link": "symlink",
    "fifo": "fifo",
    "socket": "socket",
    "character special file": "char",
    "block special file": "block",
}
_STAT_RE = re.compile(
    r"^([a-z][a-z ]*)\t([0-7]{1,4})\t(\d+)\t([^\t]*)\t(\d+)\t([^\t]*)\t(\d+)\t(-?\d+)\t(.*)$",
    re.S,
)


def _join_continuations(
    lines: Iterable[str],
    record: re.Pattern[str],
    can_continue: Callable[[re.Match[str]], bool] = lambda m: True,
) -> Iterator[str]:
    """Yield records, gluing a line that does not match *record* to the previous record with
    a newline when that record is valid and *can_continue* (busybox prints file names that
    contain newlines raw). Other odd lines are yielded alone, for the caller to reject."""
    current: str | None = None
    glue = False
    for line in lines:
        m = record.match(line)
        if current is not None and m is None and glue:
            current += "\n" + line
            continue
        if current is not None:
            yield current
        current = line
        glue = m is not None and can_continue(m)
    if current is not None:
        yield current


def _stat_name_is_raw(m: re.Match[str]) -> bool:
    """True for busybox's unquoted names, which may continue on the next line; GNU's
    C-quoted names never span lines."""
    return not m.group(9).startswith('"')


def parse_stat_lines(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """Parse the script's stat format into ``{path: {type, mode, uid, owner, gid, group, size,
    mtime[, target]}}``; ``mode`` is a 4-digit octal string."""
    out: dict[str, dict[str, Any]] = {}
    for rec in _join_continuations(lines, _STAT_RE, _stat_name_is_raw):
        m = _STAT_RE.match(rec)
        if not m:
            unparsed.append(rec)
            continue
        ftype = _STAT_TYPES.get(m.group(1), m.group(1))
        path, target = _stat_name(m.group(9), ftype == "symlink")
        entry: dict[str, Any] = {
            "type": ftype,
            "mode": m.group(2).zfill(4),
            "uid": int(m.group(3)),
            "owner": m.group(4),
            "gid": int(m.group(5)),
            "group": m.group(6),
            "size": int(m.group(7)),
            "mtime": int(m.group(8)),
        }
        if target is not None:
            entry["target"] = target
        out[path] = entry
    return out


_SHA_RE = re.compile(r"^(\\?)([0-9a-f]{64}) [ *](.*)$", re.S)


def parse_sha256_lines(lines: Iterable[str], unparsed: list[str]) -> dict[str, str]:
    """Parse ``sha256sum`` output (GNU escaped names with a leading backslash; busybox raw
    names, possibly spanning lines) into ``{path: hex digest}``."""
    out: dict[str, str] = {}
    for rec in _join_continuations(lines, _SHA_RE):
        m = _SHA_RE.match(rec)
        if not m:
            unparsed.append(rec)
            continue
        name = m.group(3)
        if m.group(1):
            name = re.sub(r"\\(.)", lambda x: {"n": "\n", "r": "\r"}.get(x.group(1), x.group(1)), name)
        out[name] = m.group(2)
    return out


def _file_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Split ``FILE<TAB>LINE`` records (as printed by the script's awk helpers)."""
    for line in lines:
        path, sep, rest = line.partition("\t")
        if sep:
            yield path, rest


def _split_ws(line: str, maxsplit: int = -1) -> list[str]:
    """Whitespace split that tolerates leading blanks."""
    return line.strip().split(None, maxsplit)


# ------------------------------------------------------------------------- probe parsers


def parse_boot(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"boot_id": str|None, "uptime_s": float|None, "clock": int|None}``."""
    kv = _kv_lines(sec.lines("boot"), unparsed)
    return {
        "boot_id": kv.get("boot_id") or None,
        "uptime_s": _to_float(kv.get("uptime")),
        "clock": _to_int(kv.get("clock")),
    }


def parse_os(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"os_release": {KEY: value}, "id", "id_like", "version_id", "pretty_name",
    "kernel": {"sysname", "release", "machine", "version"}, "hostname"}``."""
    rel = _kv_lines(sec.lines("os_release"), unparsed)
    kern = _kv_lines(sec.lines("kernel"), unparsed)
    return {
        "os_release": rel,
        "id": rel.get("ID"),
        "id_like": rel.get("ID_LIKE", "").split(),
        "version_id": rel.get("VERSION_ID"),
        "pretty_name": rel.get("PRETTY_NAME"),
        "kernel": {k: kern.get(k) for k in ("sysname", "release", "machine", "version")},
        "hostname": kern.get("hostname"),
    }


def parse_tmp_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": {path: stat entry}, "count": int}`` for /tmp, /var/tmp and /dev/shm."""
    entries = parse_stat_lines(sec.lines("entries"), unparsed)
    return {"entries": entries, "count": len(entries)}


def _systemd_units(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, str]]:
    """Parse ``systemctl list-units --plain --no-legend``: UNIT LOAD ACTIVE SUB DESCRIPTION."""
    out: dict[str, dict[str, str]] = {}
    for line in lines:
        if not line.strip():
            continue
        parts = _split_ws(line.lstrip("● *"), 4)
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
        failed = _systemd_units(sec.lines("systemd_failed"), unparsed)
        out["units"] = _systemd_units(sec.lines("systemd_services"), unparsed)
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


_SS_PROC_RE = re.compile(r'\("([^"]*)",pid=(\d+)')


def _split_hostport(text: str) -> tuple[str, str]:
    """``0.0.0.0:22`` → (0.0.0.0, 22); ``[::]:22`` / ``:::22`` → (::, 22); ``*:*`` → (*, *)."""
    host, _, port = text.rpartition(":")
    if host.startswith("[") and "]" in host:
        host = host[1 : host.index("]")] + host[host.index("]") + 1 :]
    return host, port


def _socket_key(proto: str, addr: str, port: str) -> str:
    """Stable key ``proto:addr:port``; IPv6 addresses are bracketed."""
    shown = f"[{addr}]" if ":" in addr else addr
    return f"{proto}:{shown}:{port}"


def _socket(proto: str, local: str, peer: str, state: str, procs: list[dict[str, Any]]) -> dict[str, Any]:
    """Build one listening-socket record."""
    proto = proto.rstrip("6")
    addr, port = _split_hostport(local)
    return {
        "key": _socket_key(proto, addr, port),
        "proto": proto,
        "address": addr,
        "port": _to_int(port) if port.isdigit() else port,
        "peer": peer,
        "state": state,
        "processes": procs,
    }


def _parse_ss(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """Parse ``ss -Htlnup`` (or ``ss -tlnup`` with its header)."""
    out = []
    for line in lines:
        parts = line.split()
        if not parts or parts[0] == "Netid":
            continue
        if len(parts) < 6 or parts[0] not in ("tcp", "udp", "raw", "sctp", "tcp6", "udp6"):
            unparsed.append(line)
            continue
        procs = [{"name": n, "pid": int(p)} for n, p in _SS_PROC_RE.findall(" ".join(parts[6:]))]
        out.append(_socket(parts[0], parts[4], parts[5], parts[1], procs))
    return out


def _parse_netstat(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """Parse ``netstat -tulnp`` (net-tools or busybox; PID/Program column optional)."""
    out = []
    for line in lines:
        parts = line.split()
        if not parts or parts[0] in ("Active", "Proto"):
            continue
        if len(parts) < 5 or not parts[0].startswith(("tcp", "udp", "raw")):
            unparsed.append(line)
            continue
        rest = parts[5:]
        state = rest.pop(0) if rest and not re.match(r"^(\d+/|-$)", rest[0]) else ""
        if parts[0].startswith("udp") and not state:
            state = "UNCONN"
        procs = []
        if rest and "/" in rest[0]:
            pid, _, name = rest[0].partition("/")
            if pid.isdigit():
                procs.append({"name": name, "pid": int(pid)})
        out.append(_socket(parts[0], parts[3], parts[4], state, procs))
    return out


def parse_listening(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"source": "ss"|"netstat", "sockets": [{key, proto, address, port, peer, state,
    processes: [{name, pid}]}]}``; proto is tcp/udp (``tcp6`` folded into ``tcp``)."""
    if sec.has("ss"):
        return {"source": "ss", "sockets": _parse_ss(sec.lines("ss"), unparsed)}
    return {"source": "netstat", "sockets": _parse_netstat(sec.lines("netstat"), unparsed)}


def _is_kernel_thread(pid: int, ppid: int, command: str) -> bool:
    """Kernel threads are kthreadd (pid 2) and its children, shown as ``[name]``."""
    bracketed = command.startswith("[") and command.endswith("]")
    return bracketed and (ppid == 2 or (pid == 2 and ppid == 0))


def _descendants(root: int, parent: dict[int, int]) -> set[int]:
    """Pids of *root* and everything below it in the process tree."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def parse_processes(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"processes": [{pid, ppid, user, command}], "kernel_threads": int,
    "excluded_self": int}``: kernel threads and the snapshot script with its descendants are
    left out. ``user`` is a name (ps) or a numeric uid (the /proc fallback)."""
    rows: list[dict[str, Any]] = []
    for line in sec.lines("ps") or sec.lines("proc"):
        parts = _split_ws(line, 3)
        if len(parts) >= 2 and parts[0] == "PID":
            continue
        if len(parts) < 4 or not (parts[0].isdigit() and parts[1].isdigit()):
            unparsed.append(line)
            continue
        rows.append({"pid": int(parts[0]), "ppid": int(parts[1]), "user": parts[2], "command": parts[3]})
    own: set[int] = set()
    if ctx.script_pid is not None:
        own = _descendants(ctx.script_pid, {r["pid"]: r["ppid"] for r in rows})
    kthreads = {r["pid"] for r in rows if _is_kernel_thread(r["pid"], r["ppid"], r["command"])}
    kept = [r for r in rows if r["pid"] not in own and r["pid"] not in kthreads]
    return {
        "processes": kept,
        "kernel_threads": len(kthreads),
        "excluded_self": sum(1 for r in rows if r["pid"] in own),
    }


def _parse_passwd(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """``/etc/passwd`` → {name: {uid, gid, gecos, home, shell}}."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        f = line.split(":")
        if len(f) != 7 or _to_int(f[2]) is None or _to_int(f[3]) is None:
            if line.strip():
                unparsed.append(line)
            continue
        out[f[0]] = {"uid": int(f[2]), "gid": int(f[3]), "gecos": f[4], "home": f[5], "shell": f[6]}
    return out


def _parse_group(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """``/etc/group`` → {name: {gid, members}}."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        f = line.split(":")
        if len(f) != 4 or _to_int(f[2]) is None:
            if line.strip():
                unparsed.append(line)
            continue
        members = sorted(m for m in f[3].split(",") if m)
        out[f[0]] = {"gid": int(f[2]), "members": members}
    return out


def parse_users(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"users": {name: {uid, gid, gecos, home, shell[, password, password_changed]}},
    "groups": {name: {gid, members}}}``. ``password`` (from /etc/shadow, computed on the
    guest; no hash ever leaves it) is ``set``, ``locked`` or ``empty``."""
    users = _parse_passwd(sec.lines("passwd"), unparsed)
    for line in sec.lines("shadow"):
        f = line.split(":")
        if len(f) < 3 or f[0] not in users:
            unparsed.append(line)
            continue
        users[f[0]]["password"] = f[1]
        users[f[0]]["password_changed"] = _to_int(f[2])
    return {"users": users, "groups": _parse_group(sec.lines("group"), unparsed)}


def _files_with_hashes(sec: Section, unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """Merge the ``files`` (stat) and ``sha256`` parts: {path: stat entry + sha256}."""
    files = parse_stat_lines(sec.lines("files"), unparsed)
    for path, digest in parse_sha256_lines(sec.lines("sha256"), unparsed).items():
        files.setdefault(path, {})["sha256"] = digest
    return files


def parse_sudoers(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {type, mode, owner, ..., sha256}}, "rules": [{file, line}]}`` for
    /etc/sudoers, /etc/sudoers.d/*, /etc/doas.conf and /etc/doas.d/*; rules are the
    non-comment lines (``#include``/``@include`` and ``#uid`` specs kept)."""
    rules = [{"file": p, "line": ln.strip()} for p, ln in _file_lines(sec.lines("lines"))]
    return {"files": _files_with_hashes(sec, unparsed), "rules": rules}


_KEY_TYPE_RE = re.compile(r"^(ssh-|ecdsa-sha2-|sk-)[a-z0-9@.\-]+$")


def _split_key_options(line: str) -> tuple[str, str]:
    """Split an authorized_keys line into (options, rest) honouring quoted option values."""
    in_quote = escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            in_quote = not in_quote
        elif ch in " \t" and not in_quote:
            return line[:i], line[i:].strip()
    return line, ""


def _fingerprint(blob_b64: str) -> str | None:
    """OpenSSH SHA256 fingerprint of a base64 key blob (as ``ssh-keygen -l`` prints it)."""
    try:
        raw = base64.b64decode(blob_b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    return "SHA256:" + digest


def parse_authorized_key(line: str) -> dict[str, Any] | None:
    """Describe one authorized_keys line: {type, comment, fingerprint, options, line_sha256}.

    The key material itself is not kept. Returns None when no key type is found."""
    text = line.strip()
    options = ""
    if not _KEY_TYPE_RE.match(text.split(None, 1)[0] if text else ""):
        options, text = _split_key_options(text)
    fields = text.split(None, 2)
    if len(fields) < 2 or not _KEY_TYPE_RE.match(fields[0]):
        return None
    return {
        "type": fields[0],
        "comment": fields[2] if len(fields) > 2 else "",
        "fingerprint": _fingerprint(fields[1]),
        "options": options,
        "line_sha256": hashlib.sha256(line.strip().encode("utf-8", "surrogateescape")).hexdigest(),
    }


def parse_authorized_keys(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {mode, owner, ..., sha256}}, "keys": [{file, type, comment,
    fingerprint, options, line_sha256}]}`` for every user's AuthorizedKeysFile (root's
    included). Unrecognised lines are reported by their hash only."""
    keys = []
    for path, line in _file_lines(sec.lines("keys")):
        key = parse_authorized_key(line)
        if key is None:
            digest = hashlib.sha256(line.strip().encode("utf-8", "surrogateescape")).hexdigest()
            unparsed.append(f"{path}: unrecognised key line sha256={digest}")
            continue
        keys.append({"file": path, **key})
    return {"files": _files_with_hashes(sec, unparsed), "keys": keys}


_APK_RE = re.compile(r"^(.+)-([^-]+-r\d+)$")


def _parse_dpkg(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\t${db:Status-Abbrev}'``."""
    out = []
    for line in lines:
        f = line.split("\t")
        if len(f) < 4 or not f[0]:
            unparsed.append(line)
            continue
        status = f[3].strip()
        out.append(
            {
                "name": f[0],
                "version": f[1],
                "arch": f[2],
                "status": status,
                "installed": status[1:2] in ("i", "U", "F", "W", "t") if status else False,
            }
        )
    return out


def _parse_rpm(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """``rpm -qa --qf '%{NAME}\\t[EPOCH:]%{VERSION}-%{RELEASE}\\t%{ARCH}'``."""
    out = []
    for line in lines:
        f = line.split("\t")
        if len(f) < 3 or not f[0]:
            unparsed.append(line)
            continue
        out.append({"name": f[0], "version": f[1], "arch": f[2], "status": "installed", "installed": True})
    return out


def _parse_apk(lines: Iterable[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """``apk info -v``: ``name-version-rN`` per line."""
    out = []
    for line in lines:
        text = line.strip()
        m = _APK_RE.match(text)
        if not m:
            if text and not text.startswith("WARNING"):
                unparsed.append(line)
            continue
        out.append({"name": m.group(1), "version": m.group(2), "arch": "", "status": "installed", "installed": True})
    return out


def parse_packages(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"manager": "dpkg"|"rpm"|"apk", "packages": [{name, version, arch, status,
    installed}], "count": int}``. dpkg entries keep their status abbreviation (``ii``,
    ``rc`` ...); ``installed`` is False for removed-but-configured packages."""
    parsers: dict[str, Callable[[Iterable[str], list[str]], list[dict[str, Any]]]] = {
        "dpkg": _parse_dpkg,
        "rpm": _parse_rpm,
        "apk": _parse_apk,
    }
    for manager, parse in parsers.items():
        if sec.has(manager):
            pkgs = parse(sec.lines(manager), unparsed)
            return {"manager": manager, "packages": pkgs, "count": sum(1 for p in pkgs if p["installed"])}
    return {"manager": None, "packages": [], "count": 0}


def _apt_line(path: str, line: str) -> dict[str, Any] | None:
    """One-line apt source: ``deb [opts] URI SUITE [COMPONENT...]``."""
    m = re.match(r"^\s*(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
    if not m:
        return None
    return {
        "file": path,
        "format": "apt",
        "types": [m.group(1)],
        "uris": [m.group(3)],
        "suites": [m.group(4)],
        "components": m.group(5).split(),
        "options": (m.group(2) or "").split(),
        "enabled": True,
    }


def _deb822_entry(path: str, stanza: dict[str, str]) -> dict[str, Any]:
    """One deb822 ``.sources`` stanza as a repo record."""
    signed = stanza.get("signed-by", "")
    return {
        "file": path,
        "format": "deb822",
        "types": stanza.get("types", "").split(),
        "uris": stanza.get("uris", "").split(),
        "suites": stanza.get("suites", "").split(),
        "components": stanza.get("components", "").split(),
        "options": [f"signed-by={'inline' if chr(10) in signed else signed}"] if signed else [],
        "enabled": stanza.get("enabled", "yes").strip().lower() not in ("no", "false", "0"),
    }


def _parse_deb822(path: str, lines: list[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """deb822 stanzas separated by blank lines; continuation lines start with a blank."""
    out: list[dict[str, Any]] = []
    stanza: dict[str, str] = {}
    last = ""
    for line in [*lines, ""]:
        if not line.strip():
            if stanza:
                out.append(_deb822_entry(path, stanza))
            stanza, last = {}, ""
        elif line[0] in " \t" and last:
            stanza[last] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            last = key.strip().lower()
            stanza[last] = value.strip()
        else:
            unparsed.append(f"{path}\t{line}")
    return out


def _parse_yum_repo(path: str, lines: list[str], unparsed: list[str]) -> list[dict[str, Any]]:
    """``.repo`` ini file: one record per ``[id]`` section."""
    out: list[dict[str, Any]] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith(("#", ";")):
            continue
        head = re.match(r"^\[([^\]]+)\]$", text)
        if head:
            out.append({"file": path, "format": "yum", "id": head.group(1), "enabled": True})
        elif "=" in text and out:
            key, _, value = text.partition("=")
            key, value = key.strip().lower(), value.strip()
            out[-1][key] = value
            if key == "enabled":
                out[-1]["enabled"] = value not in ("0", "false", "no")
        else:
            unparsed.append(f"{path}\t{line}")
    return out


def _parse_apk_repos(path: str, lines: list[str]) -> list[dict[str, Any]]:
    """``/etc/apk/repositories``: one URI per line, optionally tagged ``@tag URI``."""
    out = []
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        tag = parts[0][1:] if parts[0].startswith("@") and len(parts) > 1 else ""
        out.append({"file": path, "format": "apk", "uris": [parts[-1]], "tag": tag, "enabled": True})
    return out


def parse_repos(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"repos": [record]}``; every record has ``file``, ``format`` (apt | deb822 | yum |
    apk) and ``enabled``; apt/deb822 add types, uris, suites, components, options; yum adds
    ``id`` and its keys (baseurl, mirrorlist, metalink, gpgcheck ...); apk adds uris, tag."""
    by_file: dict[str, list[str]] = {}
    for path, line in _file_lines(sec.lines("lines")):
        by_file.setdefault(path, []).append(line)
    repos: list[dict[str, Any]] = []
    for path, lines in by_file.items():
        if path.endswith(".sources"):
            repos += _parse_deb822(path, lines, unparsed)
        elif path.endswith(".repo"):
            repos += _parse_yum_repo(path, lines, unparsed)
        elif path.endswith("apk/repositories"):
            repos += _parse_apk_repos(path, lines)
        else:
            for line in lines:
                rec = _apt_line(path, line)
                if rec:
                    repos.append(rec)
                elif line.strip():
                    unparsed.append(f"{path}\t{line}")
    return {"repos": repos}


_HEALTH_COMMANDS = {
    "dpkg_audit": "dpkg --audit",
    "rpm_verify": "rpm -Va --nofiles --noscripts --nodigest --nosignature",
    "dnf_check": "dnf -q -C check",
    "apk_audit": "apk audit --system",
}


def parse_pkg_health(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"ok": bool, "checks": {name: {command, rc, ok, output: [line]}}}``; a check is ok
    when it exited 0 and printed nothing (all four tools print only problems). A timeout
    (rc 124) is not ok."""
    checks: dict[str, Any] = {}
    for name, part in sec.parts.items():
        output = [ln for ln in part.lines if ln.strip()]
        checks[name] = {
            "command": _HEALTH_COMMANDS.get(name, name),
            "rc": part.rc,
            "ok": part.rc == 0 and not output,
            "output": output,
        }
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}


_NFT_VOLATILE = [
    (re.compile(r"\s*\bpackets \d+ bytes \d+"), ""),
    (re.compile(r"\s*# handle \d+"), ""),
    (re.compile(r"\s*\bexpires \d[\w.]*"), ""),
    (re.compile(r"\s*\bused \d+ bytes"), ""),
]


def normalize_nft(lines: Iterable[str]) -> list[str]:
    """Flatten ``nft list ruleset`` into ``"<block path>: <statement>"`` strings without
    counters, handles or expiry times, e.g. ``table inet filter > chain input: tcp dport 22
    accept``. Chain policies appear as the chain's ``type ... policy drop;`` statement."""
    stack: list[str] = []
    out: list[str] = []
    for line in lines:
        text = line.strip()
        for pat, repl in _NFT_VOLATILE:
            text = pat.sub(repl, text)
        if not text or text.startswith("#"):
            continue
        if text.endswith("{"):
            stack.append(text[:-1].strip())
            continue
        if not text.replace("}", "").strip():
            del stack[len(stack) - min(len(stack), text.count("}")) :]
            continue
        out.append(f"{' > '.join(stack)}: {text}")
    return out


def normalize_iptables(lines: Iterable[str]) -> list[str]:
    """Flatten ``iptables-save`` into ``"<table> <rule>"`` strings: chain policies as
    ``filter :INPUT DROP`` (counters dropped), rules as ``filter -A INPUT ...``."""
    table = ""
    out: list[str] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#") or text == "COMMIT":
            continue
        if text.startswith("*"):
            table = text[1:]
            continue
        text = re.sub(r"^\[\d+:\d+\]\s*", "", text)
        if text.startswith(":"):
            text = re.sub(r"\s*\[\d+:\d+\]$", "", text)
        out.append(f"{table} {text}")
    return out


def parse_firewall(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"nft"|"iptables"|"ip6tables": {"raw": text, "rules": [normalised], "rc": int}
    (present when the tool ran), "rules": [all normalised rules prefixed with the source]}``.
    ``raw`` drops iptables-save's timestamped ``#`` comment lines."""
    out: dict[str, Any] = {}
    combined: list[str] = []
    norm: dict[str, Callable[[Iterable[str]], list[str]]] = {
        "nft": normalize_nft,
        "iptables": normalize_iptables,
        "ip6tables": normalize_iptables,
    }
    for name, normalize in norm.items():
        part = sec.parts.get(name)
        if part is None:
            continue
        raw = [ln for ln in part.lines if not (name != "nft" and ln.startswith("#"))]
        rules = normalize(part.lines) if part.rc == 0 else []
        out[name] = {"raw": "\n".join(raw), "rules": rules, "rc": part.rc}
        combined += [f"{name} {r}" for r in rules]
    out["rules"] = combined
    return out


_CRON_SYSTEM_FILES = ("/etc/crontab", "/etc/cron.d/")
_CRON_SCHED_RE = re.compile(r"^(@\w+|(?:\S+\s+){4}\S+)\s+(.*)$")


def parse_cron_line(path: str, line: str) -> dict[str, Any]:
    """Classify one crontab line: ``{file, line, kind: job|env|anacron|other, schedule,
    user, command}``. System crontabs (/etc/crontab, /etc/cron.d) carry a user field;
    spool crontabs are owned by the user named like the file."""
    text = line.strip()
    rec: dict[str, Any] = {"file": path, "line": text, "kind": "other", "schedule": None, "user": None, "command": None}
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", text):
        rec["kind"] = "env"
        return rec
    if path.endswith("anacrontab"):
        rec["kind"] = "anacron"
        parts = text.split(None, 3)
        if len(parts) == 4:
            rec.update(schedule=" ".join(parts[:3]), command=parts[3], user="root")
        return rec
    m = _CRON_SCHED_RE.match(text)
    if not m:
        return rec
    rec["kind"] = "job"
    rec["schedule"] = " ".join(m.group(1).split())
    rest = m.group(2)
    if path == "/etc/crontab" or path.startswith(_CRON_SYSTEM_FILES[1]):
        fields = rest.split(None, 1)
        rec["user"] = fields[0]
        rec["command"] = fields[1] if len(fields) > 1 else ""
    else:
        rec["user"], rec["command"] = path.rsplit("/", 1)[-1], rest
    return rec


def parse_cron(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": [cron line record], "scripts": {path: sha256}, "timers": {unit: {load,
    active, sub, description}} | None}`` — scripts are cron.{hourly,daily,...}, Alpine
    /etc/periodic and at jobs; timers is None when systemd is not running."""
    entries = [parse_cron_line(p, ln) for p, ln in _file_lines(sec.lines("entries"))]
    timers = _systemd_units(sec.lines("systemd_timers"), unparsed) if sec.has("systemd_timers") else None
    return {"entries": entries, "scripts": parse_sha256_lines(sec.lines("scripts"), unparsed), "timers": timers}


def _mount_unescape(text: str) -> str:
    """/proc/mounts escapes blanks and backslashes as ``\\040``-style octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def parse_mounts(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"mounts": [{device, mountpoint, fstype, options: [..]}], "df": [{filesystem,
    size_kb, used_kb, avail_kb, capacity_pct, mountpoint}]}``."""
    mounts = []
    for line in sec.lines("mounts"):
        f = line.split()
        if len(f) < 4:
            unparsed.append(line)
            continue
        mounts.append(
            {
                "device": _mount_unescape(f[0]),
                "mountpoint": _mount_unescape(f[1]),
                "fstype": f[2],
                "options": f[3].split(","),
            }
        )
    df = []
    for line in sec.lines("df"):
        f = line.split(None, 5)
        if f and f[0] == "Filesystem":
            continue
        if len(f) < 6 or not f[1].isdigit():
            unparsed.append(line)
            continue
        df.append(
            {
                "filesystem": f[0],
                "size_kb": int(f[1]),
                "used_kb": _to_int(f[2]),
                "avail_kb": _to_int(f[3]),
                "capacity_pct": _to_int(f[4].rstrip("%")),
                "mountpoint": f[5],
            }
        )
    return {"mounts": mounts, "df": df}


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


def parse_etc_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {type, mode, uid, owner, gid, group, size, mtime[, target]
    [, sha256]}}, "count": int}``: everything under /etc; regular files < 1 MiB hashed."""
    files = parse_stat_lines(sec.lines("stat"), unparsed)
    for path, digest in parse_sha256_lines(sec.lines("sha256"), unparsed).items():
        files.setdefault(path, {})["sha256"] = digest
    return {"files": files, "count": len(files)}


_SECRET_PRIORITY = (
    "private_key",
    "ssh_private_key",
    "pgp_private_key",
    "password_store",
    "credentials",
    "pkcs12",
    "keystore",
    "putty_key",
    "key_file",
    "certificate",
    "certificate_request",
    "public_key",
    "pgp",
    "pem_file",
    "certificate_file",
)


def _header_kind(header: str) -> str:
    """Kind of a PEM ``-----BEGIN X-----`` header."""
    label = header.strip("-").removeprefix("BEGIN ").strip()
    if label == "PGP PRIVATE KEY BLOCK":
        return "pgp_private_key"
    if "PRIVATE KEY" in label:
        return "private_key"
    if "CERTIFICATE REQUEST" in label:
        return "certificate_request"
    if "CERTIFICATE" in label:
        return "certificate"
    if "PUBLIC KEY" in label:
        return "public_key"
    return "pem:" + label.lower().replace(" ", "_")



def parse_secrets(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {kind, kinds: [..], headers: [..], size, mode, owner, uid,
    sha256?}}}`` for key material, certificates and credential stores found outside system
    paths; ``kind`` is the most sensitive of ``kinds``. No content is ever recorded."""
    files = _files_with_hashes(sec, unparsed)
    headers: dict[str, list[str]] = {}
    for line in sec.lines("headers"):
        path, sep, header = line.rpartition(":-----BEGIN ")
        if not sep:
            unparsed.append(line)
            continue
        headers.setdefault(path, []).append("-----BEGIN " + header)
    out: dict[str, dict[str, Any]] = {}
    for path, info in files.items():
        hdrs = headers.get(path, [])
        kinds = name_kinds(path) | {_header_kind(h) for h in hdrs}
        ranked = sorted(
            kinds, key=lambda k: (_SECRET_PRIORITY.index(k) if k in _SECRET_PRIORITY else len(_SECRET_PRIORITY), k)
        )
        out[path] = {
            "kind": ranked[0] if ranked else "unknown",
            "kinds": ranked,
            "headers": sorted(set(hdrs)),
            **{k: info[k] for k in ("type", "size", "mode", "owner", "uid", "mtime", "sha256") if k in info},
        }
    return {"files": out}


def parse_app_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": {path: stat entry}, "count": int}``: regular files, symlinks and
    directories at most 6 levels below the application/data roots (/srv, /var/www, /opt,
    /root, /home, /usr/local), without dot-directories, ``__pycache__`` and /opt/testbed;
    dependency trees (node_modules, site-/dist-packages) are listed but not entered. No
    content hashes: changes show in size, mode, owner or mtime. A listing cut at 5000
    entries carries ``truncated``."""
    entries = parse_stat_lines(sec.lines("entries"), unparsed)
    return {"entries": entries, "count": len(entries)}


_IP_ADDR_RE = re.compile(r"^\d+:\s+(\S+?)(?:@\S+)?\s+(inet6?)\s+(\S+)(.*)$")


def parse_network(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"addresses": [{ifname, family, address, prefixlen, scope, key}], "routes": [str],
    "routes6": [str]}``; address lifetimes and route expiry times are dropped."""
    addrs = []
    for line in sec.lines("addr"):
        m = _IP_ADDR_RE.match(line.split("\\")[0].rstrip())
        if not m:
            unparsed.append(line)
            continue
        address, _, prefix = m.group(3).partition("/")
        scope = re.search(r"\bscope (\S+)", m.group(4))
        addrs.append(
            {
                "ifname": m.group(1),
                "family": m.group(2),
                "address": address,
                "prefixlen": _to_int(prefix),
                "scope": scope.group(1) if scope else None,
                "key": f"{m.group(1)}:{m.group(3)}",
            }
        )

    def routes(part: str) -> list[str]:
        cleaned = (re.sub(r"\s*\bexpires \S+", "", ln) for ln in sec.lines(part))
        return [" ".join(ln.split()) for ln in cleaned if ln.strip()]

    return {"addresses": addrs, "routes": routes("route"), "routes6": routes("route6")}


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
    probe sections. ``_meta`` = ``{version, complete, script_pid, duration_s,
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
        "duration_s": duration,
        "probe_seconds": seconds,
        "probe_rc": {n: s.rc for n, s in framed.sections.items()},
        "stray": framed.stray[:50],
    }
