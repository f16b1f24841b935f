"""Account probes: ``users`` (passwd, group, password state from shadow), ``sudoers`` (sudo
and doas rules) and ``authorized_keys`` (SSH keys described by type and fingerprint, never
by their material).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from typing import Any

from testbed.probes.parsers.files import files_with_hashes
from testbed.probes.parsers.formats import file_lines, to_int
from testbed.probes.parsers.framing import ParseContext, Section


def _parse_passwd(lines: Iterable[str], unparsed: list[str]) -> dict[str, dict[str, Any]]:
    """``/etc/passwd`` → {name: {uid, gid, gecos, home, shell}}."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        f = line.split(":")
        if len(f) != 7 or to_int(f[2]) is None or to_int(f[3]) is None:
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
        if len(f) != 4 or to_int(f[2]) is None:
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
        users[f[0]]["password_changed"] = to_int(f[2])
    return {"users": users, "groups": _parse_group(sec.lines("group"), unparsed)}


def parse_sudoers(sec: Section, ctx: ParseContext, unparsed: list[str]) -> dict[str, Any]:
    """``{"files": {path: {type, mode, owner, ..., sha256}}, "rules": [{file, line}]}`` for
    /etc/sudoers, /etc/sudoers.d/*, /etc/doas.conf and /etc/doas.d/*; rules are the
    non-comment lines (``#include``/``@include`` and ``#uid`` specs kept)."""
    rules = [{"file": p, "line": ln.strip()} for p, ln in file_lines(sec.lines("lines"))]
    return {"files": files_with_hashes(sec, unparsed), "rules": rules}


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
    for path, line in file_lines(sec.lines("keys")):
        key = parse_authorized_key(line)
        if key is None:
            digest = hashlib.sha256(line.strip().encode("utf-8", "surrogateescape")).hexdigest()
            unparsed.append(f"{path}: unrecognised key line sha256={digest}")
            continue
        keys.append({"file": path, **key})
    return {"files": files_with_hashes(sec, unparsed), "keys": keys}
