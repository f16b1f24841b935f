"""The ``cron`` probe: crontab lines classified (jobs, environment, anacron), periodic scripts
with their hashes, systemd timers.
"""

from __future__ import annotations

import re
from typing import Any

from testbed.probes.parsers.formats import file_lines, parse_sha256_lines
from testbed.probes.parsers.framing import ParseContext, Section
from testbed.probes.parsers.services import systemd_units

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
    entries = [parse_cron_line(p, ln) for p, ln in file_lines(sec.lines("entries"))]
    timers = systemd_units(sec.lines("systemd_timers"), unparsed) if sec.has("systemd_timers") else None
    return {"entries": entries, "scripts": parse_sha256_lines(sec.lines("scripts"), unparsed), "timers": timers}
