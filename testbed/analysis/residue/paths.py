"""Name rules for paths and units, shared by the handlers and importable on their own.

Pure functions of a path or name (no snapshot data): `is_backup_name`, `secret_name_kind`,
`path_category` (the category a changed path lands in when no handler routes it
otherwise), `etc_unit` (the unit an /etc path belongs to), and the small prefix helpers
`_under`/`_prefixed`. Unit names are spelt by `testbed.analysis.command.units`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from testbed.analysis.command.units import unit_name
from testbed.probes.secretnames import first_kind

TMP_ROOTS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")
HOME_ROOTS: tuple[str, ...] = ("/root", "/home")

_BACKUP_RE = re.compile(
    r"""(
        ~$
      | ^\#.+\#$
      | \.(bak|backup|bck|bkp|orig|old|save|sav|prev|dpkg-old|dpkg-dist|dpkg-bak|rpmsave|rpmorig|rpmnew
           |pacsave|pacnew|ucf-old|ucf-dist)\d*$
      | \.(bak|backup|orig|old|save)[._-][^/]+$
      | [._-](19|20)\d{2}-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01])([T_.-]?[0-2]\d:?[0-5]\d(:?[0-5]\d)?)?$
      | [._-]1[5-9]\d{8}$
    )""",
    re.X | re.I,
)
_EDITOR_TEMP_RE = re.compile(r"(^\.#|\.sw[a-p]$|^\.~lock\.)")
_LEFTOVER_RE = re.compile(r"\.(log|deb|rpm|apk|tgz|tbz2?|txz|zip|whl|run|tar(\.(gz|bz2|xz|zst))?)$", re.I)


def is_backup_name(path: str) -> bool:
    """True when the base name of `path` looks like a backup or dated copy (see the
    ``backup_files`` rules in the package doc)."""
    return bool(_BACKUP_RE.search(posixpath.basename(path)))


def secret_name_kind(path: str) -> str | None:
    """The kind of key material the path's name suggests (``/etc/ssl/private/*`` counts)."""
    kind = first_kind(path)
    if kind is not None:
        return kind
    if path.startswith("/etc/ssl/private/"):
        return "ssl_private"
    return None


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def path_category(path: str, secret_kind: str | None = None) -> str:
    """Category of a changed path: backup name → ``backup_files``; key material (by the
    secrets probe's kind or the name) → ``secrets``; temp dirs, editor swap files and
    log/installer leftovers in home dirs → ``temp_files``; /etc → ``system_config``;
    anything else → ``test_app_data``."""
    base = posixpath.basename(path)
    if is_backup_name(path):
        return "backup_files"
    if secret_kind or secret_name_kind(path):
        return "secrets"
    if _under(path, TMP_ROOTS) or _EDITOR_TEMP_RE.search(base):
        return "temp_files"
    if _under(path, HOME_ROOTS) and _LEFTOVER_RE.search(base):
        return "temp_files"
    if _under(path, ("/etc",)):
        return "system_config"
    return "test_app_data"


def _prefixed(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p.rstrip("/") or (p.endswith("/") and path.startswith(p)) for p in prefixes)


def etc_unit(path: str) -> str | None:
    """The unit an /etc path belongs to (unit files, drop-ins, enablement links, SysV and
    OpenRC scripts and runlevel links), or None. ``*.wants``/``*.requires`` directories
    themselves give ``""`` (noise: their links carry the information)."""
    if path.startswith(("/etc/systemd/system/", "/etc/systemd/user/")):
        base = posixpath.basename(path)
        parent = posixpath.basename(posixpath.dirname(path))
        if re.search(r"\.(wants|requires|upholds)$", base):
            return ""
        if parent.endswith(".d") and not base.endswith(".d"):
            return parent[:-2]
        if base.endswith(".d"):
            return base[:-2]
        return base
    m = re.match(r"^/etc/(init\.d|rc\d?\.d|rc\.d/rc\d\.d)/(?:[SK]\d\d)?([^/]+)$", path)
    if m:
        return unit_name(m.group(2))
    m = re.match(r"^/etc/runlevels/[^/]+/([^/]+)$", path)
    if m:
        return unit_name(m.group(1))
    return None
