"""Package probes: ``packages`` (dpkg, rpm, apk), ``repos`` (apt one-line and deb822 sources,
yum/dnf .repo files, apk repositories) and ``pkg_health`` (the package managers' own
consistency checks).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from testbed.probes.parsers.formats import file_lines
from testbed.probes.parsers.framing import ParseContext, Section

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
    for path, line in file_lines(sec.lines("lines")):
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
