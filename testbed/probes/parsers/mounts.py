"""The ``mounts`` probe: /proc/mounts entries and ``df`` usage."""

from __future__ import annotations

import re
from typing import Any

from testbed.probes.parsers.formats import to_int
from testbed.probes.parsers.framing import ParseContext, Section


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
                "used_kb": to_int(f[2]),
                "avail_kb": to_int(f[3]),
                "capacity_pct": to_int(f[4].rstrip("%")),
                "mountpoint": f[5],
            }
        )
    return {"mounts": mounts, "df": df}
