"""Check primitives on real guests: one list of checks, each with the status it must get,
evaluated on debian-12 (systemd) and debian-12-openrc (sysvinit + OpenRC) through the
runner's own check resolution (`testbed.runner.verify.run_check`): the same definitions
must pass, fail and be undecided alike on both init systems.

The images must be in the image cache (`testbed image build debian-12-openrc`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from testbed.model.task import Check
from testbed.runner.verify import run_check

from .onebox import one_box

pytestmark = [pytest.mark.vm, pytest.mark.long, pytest.mark.timeout(1200)]

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("service", {"name": "ssh", "active": True, "enabled": True}, "passed"),
    ("service", {"name": "no-such-service", "active": True, "wait_s": 0}, "failed"),
    ("port", {"port": 22, "address": "any", "process": "sshd"}, "passed"),
    ("port", {"port": 2, "wait_s": 0}, "failed"),
    ("file", {"path": "/etc/passwd", "type": "file", "mode": "0644", "owner": "root", "contains": "^root:"}, "passed"),
    ("file", {"path": "/etc/shadow", "mode_max": "0644"}, "passed"),
    ("file", {"path": "/etc/passwd", "mode_max": "0600"}, "failed"),
    ("package", {"name": "openssh-server"}, "passed"),
    ("package", {"name": "no-such-package"}, "failed"),
    ("user", {"name": "root", "uid": 0, "groups": ["root"]}, "passed"),
    ("group", {"name": "root", "gid": 0}, "passed"),
    ("cron", {"user": "root", "command": "testbed-primitive-probe", "schedule": "*/7 * * * *"}, "passed"),
    ("cron", {"user": "root", "command": "never-scheduled", "present": False}, "passed"),
    ("mount", {"path": "/", "mounted": True, "fstab": True}, "passed"),
    ("sysctl", {"key": "kernel.ostype", "value": "Linux"}, "passed"),
    ("sysctl", {"key": "vm.swappiness", "max": 0}, "failed"),
    ("reach", {"host": "127.0.0.1", "port": 22}, "passed"),
    ("reach", {"host": "127.0.0.1", "port": 2, "expect": "closed", "control_port": 22}, "passed"),
    ("reach", {"host": "127.0.0.1", "port": 2, "expect": "closed", "control_port": 3, "wait_s": 0}, "indeterminate"),
    ("http", {"url": "http://127.0.0.1:2/", "wait_s": 0}, "failed"),
    ("neighbor", {"protocol": "bgp", "peer": "10.0.0.2", "wait_s": 0}, "indeterminate"),  # no FRR on these images
]


async def _exercise(image: str, tmp_path: Path) -> list[tuple[str, dict[str, Any], str, str, str]]:
    async with one_box(image, tmp_path, memory=640, task_id="primitives") as (box, commands):
        setup = await box.exec("printf '*/7 * * * * /usr/local/bin/testbed-primitive-probe\\n' | crontab -")
        assert setup.exit_code == 0, setup.stderr
        got = []
        for i, (kind, args, want) in enumerate(CASES):
            check = Check.model_validate({"id": f"P{i}", "description": kind, "node": "box", kind: args})
            result = await run_check(check, box, commands, "after_agent")
            got.append((kind, args, want, result.status, str(result.detail.get("reason"))))
        return got


@pytest.mark.parametrize("image", ["debian-12", "debian-12-openrc"])
def test_one_definition_on_systemd_and_openrc(vm_home: Path, tmp_path: Path, image: str) -> None:
    results = asyncio.run(_exercise(image, tmp_path))
    wrong = [(kind, args, f"wanted {want}, got {status}: {reason}") for kind, args, want, status, reason in results
             if status != want]  # fmt: skip
    assert not wrong, wrong
