"""Path words: normalisation, system/essential directories, block devices, brace
expansion, and the `Write` a path word means once the working directory is known.

Pure functions of their arguments; none raises on odd text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from testbed.analysis.command.effects import Write

ESSENTIAL_TOP = frozenset(
    {
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "root",
        "run",
        "sbin",
        "sys",
        "usr",
        "var",
    }
)
"""Top-level directories whose (recursive) removal or re-ownership wrecks the system."""

_SYSTEM_TOP = frozenset(
    {"bin", "boot", "etc", "lib", "lib32", "lib64", "libx32", "opt", "root", "sbin", "srv", "usr", "var"}
)

BLOCK_DEVICE = re.compile(
    r"^/dev/(?:"
    r"(?:sd|hd|vd|xvd)[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+|md/[^/]+"
    r"|loop\d+|nbd\d+(?:p\d+)?|sr\d+|rbd\d+|zd\d+|bcache\d+|root|mapper/(?!control$)[^/]+"
    r"|disk/by-[a-z-]+/[^/]+"
    r"|(?!(?:pts|fd|shm|net|input|snd|bus|char|cpu|dri|hugepages|mqueue|usb|v4l|block|disk"
    r"|mapper|md|vfio|serial|tty|hidraw|log)/)[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+-]+"
    r")$"
)
"""Block-device paths (disks, partitions, RAID, device-mapper, LVM `/dev/VG/LV`)."""

_DEVNULL = re.compile(r"^(/dev/(null|stdout|stderr|tty|fd/\d+|pts/\d+)|&?\d+|-)$")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


def normalize_path(path: str) -> str:
    """`//usr/./bin/` → `/usr/bin`; keeps a trailing `/*` glob as `/usr/*`."""
    star = path.endswith("/*") and len(path) > 2
    base = path[:-2] if star else path
    if not base.startswith("/"):
        return path
    norm = posixpath.normpath(base)
    norm = "/" + norm.lstrip("/")
    return (norm.rstrip("/") + "/*") if star else norm


def is_root_or_essential(path: str) -> bool:
    """True for `/`, `/*`, an essential top-level dir (`/usr`) or its contents glob (`/usr/*`)."""
    norm = normalize_path(path)
    if norm in ("/", "/*", "/.*"):
        return True
    if norm.endswith("/*"):
        norm = norm[:-2]
    parts = [p for p in norm.split("/") if p]
    return norm.startswith("/") and len(parts) == 1 and parts[0] in ESSENTIAL_TOP


def is_system_path(path: str) -> bool:
    """True for `/`, `/*` and paths under a system top-level directory (not `/var/tmp`)."""
    norm = normalize_path(path)
    if not norm.startswith("/"):
        return False
    if norm in ("/", "/*"):
        return True
    parts = [p for p in norm.split("/") if p]
    if parts[:2] == ["var", "tmp"]:
        return False
    return parts[0] in _SYSTEM_TOP


def is_block_device(path: str) -> bool:
    """True if `path` names a block device (not /dev/null, /dev/zero, ttys …)."""
    return bool(BLOCK_DEVICE.match(path))


def clean_path(path: str) -> str:
    """Normalise an absolute path (collapse `//`, `/./`, `/../`; no trailing slash)."""
    out = posixpath.normpath(path)
    return "/" if out == "//" else out


def brace_expand(word: str) -> list[str]:
    """Expand brace groups the way bash does for `file{,.bak}` or `/etc/{a,b}.conf`
    (nested braces are left alone; at most 64 results)."""
    m = _BRACE.search(word)
    if not m:
        return [word]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out += brace_expand(word[: m.start()] + alt + word[m.end() :])
        if len(out) >= 64:
            break
    return out[:64]


def path_write(word: str, verb: str, cwd: str | None, tree: bool = False) -> Write | None:
    """The `Write` for a path word as the command wrote it (None for /dev/null & co.)."""
    word = word.strip()
    if not word or _DEVNULL.match(word) or word.startswith(("http://", "https://", "ftp://")):
        return None
    if "$" in word or "`" in word:  # keep the literal tail after the last expansion
        tail = re.split(r"[$`][^/]*", word)[-1].strip("/")
        return Write(tail, "suffix", verb) if tail else None
    for home in ("~/", "$HOME/", "${HOME}/"):
        if word.startswith(home):
            rest = clean_path("/" + word[len(home) :]).lstrip("/")
            return Write(rest, "home", verb) if rest else None
    if word.startswith("/"):
        return Write(clean_path(word), "tree" if tree else "abs", verb)
    if word.startswith("~"):
        return None
    if cwd:
        return Write(clean_path(posixpath.join(cwd, word)), "tree" if tree else "abs", verb)
    rel = posixpath.normpath(word)
    if rel in (".", "..") or rel.startswith("../"):
        return None
    return Write(rel, "suffix", verb)


def path_writes(words: Iterable[str], verb: str, cwd: str | None, tree: bool = False) -> list[Write]:
    """The writes of `words` (each brace-expanded) by `verb`."""
    out: list[Write] = []
    for word in words:
        for one in brace_expand(word):
            w = path_write(one, verb, cwd, tree)
            if w:
                out.append(w)
    return out
