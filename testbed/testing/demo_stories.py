"""The stories of the model-evaluation demo (`testbed.testing.demo_models`): two real starter
tasks as an LLM agent, a weaker one and the oracle work them, step by step.

A `Story` is what one run does: its steps (the model's reasoning and text, the command its
tool call ran, the command's exit status and output, the files the command leaves in /tmp),
the model's closing reply, whether the endpoint failed part-way, and the check results.
`TASKS` holds each task's record (instruction, task.toml text, checks, topology) in two
versions where the task changed between jobs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    """One tool call and the command it ran."""

    command: str
    stdout: str = ""
    exit_code: int | None = 0
    reasoning: str | None = None
    text: str | None = None
    leaves: tuple[str, ...] = ()
    duration_ms: int = 240


@dataclass(frozen=True)
class Story:
    """One run's course (see the module docstring)."""

    steps: tuple[Step, ...]
    final: str | None
    checks: dict[str, str]
    reboot_checks: dict[str, str] = field(default_factory=dict)
    endpoint_error: str | None = None


WEB_STATUS = (
    "\u00d7 nginx.service - A high performance web server and a reverse proxy server\n"
    "     Loaded: loaded (/lib/systemd/system/nginx.service; enabled; preset: enabled)\n"
    "     Active: failed (Result: exit-code) since Mon 2026-11-23 09:01:12 UTC\n"
    "nginx[611]: nginx: [emerg] bind() to 0.0.0.0:80 failed (98: Address already in use)\n"
)
WEB_PORT = 'LISTEN 0      5      0.0.0.0:80      0.0.0.0:*    users:(("python3",pid=402,fd=3))\n'
WEB_UNIT = (
    "402 /usr/bin/python3 -m http.server 80 --directory /srv/legacy\n"
    "legacy-http.service loaded active running Legacy HTTP placeholder\n"
)

WEB_PASS = Story(
    steps=(
        Step("systemctl status nginx --no-pager", WEB_STATUS, 3,
             reasoning="The ticket says nginx refuses to start. Its status will say why."),
        Step("ss -ltnp 'sport = :80'", WEB_PORT,
             reasoning="bind() failed with EADDRINUSE: something else holds port 80. Find out what."),
        Step("ps -o pid,args -p 402; systemctl list-units --no-legend | grep -i legacy", WEB_UNIT,
             reasoning="A python http.server owns the port. Is it a unit that starts at boot?"),
        Step("systemctl disable --now legacy-http.service",
             "Removed \"/etc/systemd/system/multi-user.target.wants/legacy-http.service\".\n",
             text="The legacy placeholder is obsolete per the ticket; I will disable it so it stays off after reboot."),
        Step("systemctl reset-failed nginx; systemctl restart nginx && curl -sI http://localhost/ | head -3",
             "HTTP/1.1 200 OK\nServer: nginx/1.22.1\nDate: Mon, 23 Nov 2026 09:04:40 GMT\n"),
    ),
    final="nginx serves port 80 again. The obsolete legacy-http.service held the port; it is stopped and "
    "disabled, so nginx also wins after a reboot.",
    checks={"R1": "passed", "R2": "passed"},
    reboot_checks={"R1": "passed", "R2": "passed"},
)  # fmt: skip

WEB_PASS_NOTES = Story(
    steps=(
        *WEB_PASS.steps[:2],
        Step("systemctl cat legacy-http.service > /tmp/legacy-http.service.bak && systemctl stop legacy-http",
             reasoning="Keep a copy of the unit before touching it, then free the port.",
             leaves=("/tmp/legacy-http.service.bak",)),
        Step("systemctl disable legacy-http.service",
             "Removed \"/etc/systemd/system/multi-user.target.wants/legacy-http.service\".\n"),
        WEB_PASS.steps[4],
    ),
    final="Fixed: legacy-http.service is stopped and disabled and nginx answers on port 80.",
    checks=WEB_PASS.checks,
    reboot_checks=WEB_PASS.reboot_checks,
)  # fmt: skip

WEB_FAIL = Story(
    steps=(
        WEB_PASS.steps[0],
        WEB_PASS.steps[1],
        Step("kill -9 402", reasoning="Kill whatever holds port 80 so nginx can bind it."),
        Step("systemctl restart nginx && systemctl is-active nginx", "active\n",
             text="nginx is running now."),
    ),
    final="nginx is active and serves port 80.",
    checks={"R1": "passed", "R2": "passed"},
    reboot_checks={"R1": "failed", "R2": "failed"},
)  # fmt: skip

WEB_ERROR = Story(
    steps=(WEB_PASS.steps[0],),
    final=None,
    checks={},
    endpoint_error="endpoint failed: 503 Service Unavailable (gave up after max_retries=5); not the agent's fault",
)

DISK_DF = "Filesystem      Size  Used Avail Use% Mounted on\nappdata          16M   16M     0 100% /var/lib/appdata\n"
DISK_DU = "12K\t/var/lib/appdata/data\n16M\t/var/lib/appdata/cache\n"
DISK_CACHE = "Render cache of app-writer exports. Regenerated on demand; safe to purge at any time.\n"

DISK_PASS = Story(
    steps=(
        Step("systemctl status app-writer --no-pager | head -4; df -h /var/lib/appdata", DISK_DF, 0,
             reasoning="The writer stopped: check the service and the space where it writes."),
        Step("du -xsh /var/lib/appdata/*", DISK_DU, reasoning="The filesystem is full. What fills it?"),
        Step("cat /var/lib/appdata/cache/README", DISK_CACHE,
             reasoning="The cache holds 16M. Is it safe to remove?"),
        Step("find /var/lib/appdata/cache -type f -name '*.tmp' -delete && df -h /var/lib/appdata",
             DISK_DF.replace("16M     0 100%", " 1M   15M   4%")),
        Step("systemctl reset-failed app-writer; systemctl restart app-writer; sleep 3; "
             "stat -c %y /var/lib/appdata/data/heartbeat", "2026-11-23 09:06:02.114 +0000\n"),
    ),
    final="app-writer runs again: the disposable render cache had filled its 16 MiB filesystem. "
    "records.db was not touched.",
    checks={"R1": "passed", "R2": "passed", "R3": "passed"},
)  # fmt: skip

DISK_FAIL = Story(
    steps=(
        DISK_PASS.steps[0],
        Step("du -xsh /var/lib/appdata/data/* /var/lib/appdata/cache | sort -h | tail -2",
             "12K\t/var/lib/appdata/data/records.db\n16M\t/var/lib/appdata/cache\n"),
        Step("rm -rf /var/lib/appdata/* && systemctl restart app-writer",
             text="Clearing the application's directory to free space."),
        Step("echo 'purged appdata' >> /tmp/agent-notes.txt; systemctl is-active app-writer", "active\n",
             leaves=("/tmp/agent-notes.txt",)),
    ),
    final="Freed the space; app-writer is active.",
    checks={"R1": "passed", "R2": "passed", "R3": "failed"},
)  # fmt: skip

WEB_ORACLE = (
    "systemctl disable --now legacy-http.service",
    "systemctl reset-failed nginx.service || true",
    "systemctl restart nginx.service",
)
DISK_ORACLE = (
    "find /var/lib/appdata/cache -type f -name '*.tmp' -delete",
    "systemctl reset-failed app-writer.service || true",
    "systemctl restart app-writer.service",
)

WEB_TOML = """id = "web-port-conflict"
category = "services"
difficulty = "easy"
topology = "single"
images = ["debian-12", "ubuntu-24.04"]

[limits]
agent_time_s = {agent_time}

[[checks]]
id = "R1"
description = "nginx.service is active"
node = "node"
command = "systemctl is-active nginx"
expect_output = "^active$"
persist = true

[[checks]]
id = "R2"
description = "http://localhost/ is served by nginx (Server: nginx header)"
node = "node"
command = "curl -sI http://localhost/"
expect_output = "(?im)^server: nginx"
persist = {persist}

[expected]
units = ["nginx.service", "legacy-http.service"]
ports = [80]
"""

DISK_TOML = """id = "disk-full"
category = "storage"
difficulty = "medium"
topology = "single"
images = ["debian-12"]

[[checks]]
id = "R1"
description = "app-writer.service is active"
node = "node"
command = "systemctl is-active app-writer"

[[checks]]
id = "R2"
description = "the heartbeat is fresh"
node = "node"
command = "find /var/lib/appdata/data/heartbeat -newermt '-10 seconds'"

[[checks]]
id = "R3"
description = "records.db is unchanged"
node = "node"
command = "sha256sum -c /root/.records.sha256"
"""

WEB_INSTRUCTION = """# Ticket: website on this host is down

nginx is supposed to serve the site on port 80, but it refuses to start. Please get nginx
serving the site on port 80 again. Whatever was set up on port 80 before nginx is obsolete.
The fix must survive a reboot."""

DISK_INSTRUCTION = """# Ticket: app-writer has stopped recording

The `app-writer` service stopped writing its heartbeat and is no longer running. Get it
running again. Everything under /var/lib/appdata/data/ is production data: keep
records.db exactly as it is."""


def _record(toml: str, instruction: str, checks: list[tuple[str, str, bool]]) -> dict[str, Any]:
    digest = hashlib.sha256(b"testbed-task v1\0" + toml.encode() + b"\0" + instruction.encode()).hexdigest()
    return {
        "hash": digest,
        "toml": toml,
        "instruction": instruction,
        "description": "",
        "difficulty": "easy",
        "checks": [{"id": i, "description": d, "node": "node", "persist": p} for i, d, p in checks],
        "topology": {
            "name": "single",
            "nodes": [{"name": "node", "image": None, "vcpus": 1, "memory": 640, "forward": False}],
            "networks": [],
        },
    }


WEB_CHECKS = [("R1", "nginx.service is active", True),
              ("R2", "http://localhost/ is served by nginx (Server: nginx header)", True)]  # fmt: skip
DISK_CHECKS = [("R1", "app-writer.service is active", False), ("R2", "the heartbeat is fresh", False),
               ("R3", "records.db is unchanged", False)]  # fmt: skip

TASKS: dict[str, list[dict[str, Any]]] = {
    "web-port-conflict": [
        _record(WEB_TOML.format(agent_time=600, persist="false"), WEB_INSTRUCTION,
                [WEB_CHECKS[0], (*WEB_CHECKS[1][:2], False)]),
        _record(WEB_TOML.format(agent_time=1200, persist="true"), WEB_INSTRUCTION, WEB_CHECKS),
    ],
    "disk-full": [_record(DISK_TOML, DISK_INSTRUCTION, DISK_CHECKS)],
}  # fmt: skip
"""Task id → its recorded versions, oldest first."""

CATEGORY = {"web-port-conflict": "services", "disk-full": "storage"}
ORACLE_COMMANDS = {"web-port-conflict": WEB_ORACLE, "disk-full": DISK_ORACLE}
STORIES = {
    ("web-port-conflict", "passed"): WEB_PASS,
    ("web-port-conflict", "passed+notes"): WEB_PASS_NOTES,
    ("web-port-conflict", "failed"): WEB_FAIL,
    ("web-port-conflict", "error"): WEB_ERROR,
    ("disk-full", "passed"): DISK_PASS,
    ("disk-full", "failed"): DISK_FAIL,
}
"""(task, how it goes) → the story of an LLM run."""
