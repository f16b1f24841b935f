"""File-tree probes: ``tmp_files``, ``etc_files``, ``app_files`` (stat listings, /etc hashed)
and ``secrets`` (key material and credential stores, described without their content).

:func:`files_with_hashes` also serves the account probes' file listings.
"""

from __future__ import annotations

from typing import Any

from testbed.probes.parsers.formats import parse_sha256_lines, parse_stat_lines
from testbed.probes.parsers.framing import ParseContext, Section
from testbed.probes.secretnames import name_kinds


def files_with_hashes(sec: Section, unparsed: list[str], stat_part: str = "files") -> dict[str, dict[str, Any]]:
    """Merge the stat listing (part *stat_part*) and the ``sha256`` part: {path: stat entry
    + sha256}."""
    files = parse_stat_lines(sec.lines(stat_part), unparsed)
    for path, digest in parse_sha256_lines(sec.lines("sha256"), unparsed).items():
        files.setdefault(path, {})["sha256"] = digest
    return files


def _stat_listing(sec: Section, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": {path: stat entry}, "count": int}`` from the ``entries`` part."""
    entries = parse_stat_lines(sec.lines("entries"), unparsed)
    return {"entries": entries, "count": len(entries)}


def parse_tmp_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": {path: stat entry}, "count": int}`` for /tmp, /var/tmp and /dev/shm."""
    return _stat_listing(sec, unparsed)


def parse_etc_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {type, mode, uid, owner, gid, group, size, mtime[, target]
    [, sha256]}}, "count": int}``: everything under /etc; regular files < 1 MiB hashed."""
    files = files_with_hashes(sec, unparsed, stat_part="stat")
    return {"files": files, "count": len(files)}


def parse_app_files(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"entries": {path: stat entry}, "count": int}``: regular files, symlinks and
    directories at most 6 levels below the application/data roots (/srv, /var/www, /opt,
    /root, /home, /usr/local), without dot-directories, ``__pycache__`` and /opt/testbed;
    dependency trees (node_modules, site-/dist-packages) are listed but not entered. No
    content hashes: changes show in size, mode, owner or mtime. A listing cut at 5000
    entries carries ``truncated``."""
    return _stat_listing(sec, unparsed)


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
    files = files_with_hashes(sec, unparsed)
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
