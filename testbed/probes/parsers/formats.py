"""Line formats that several probes share: ``KEY=VALUE`` lines, the script's stat format,
``sha256sum`` output, ``FILE<TAB>LINE`` records, tolerant number parsing.

Every parser here takes the lines and an ``unparsed`` list, appends what it cannot read to
that list and never raises on odd input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def to_int(text: str | None) -> int | None:
    """Parse an int, or return None."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def to_float(text: str | None) -> float | None:
    """Parse a float, or return None."""
    if text is None:
        return None
    try:
        return float(text.strip())
    except ValueError:
        return None


def kv_lines(lines: Iterable[str], unparsed: list[str]) -> dict[str, str]:
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


def file_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Split ``FILE<TAB>LINE`` records (as printed by the script's awk helpers)."""
    for line in lines:
        path, sep, rest = line.partition("\t")
        if sep:
            yield path, rest


def split_ws(line: str, maxsplit: int = -1) -> list[str]:
    """Whitespace split that tolerates leading blanks."""
    return line.strip().split(None, maxsplit)
