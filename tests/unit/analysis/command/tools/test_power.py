"""Power-state grammar."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("reboot", [Fact("reboot")]),
        ("shutdown -h now", [Fact("shutdown", ("-h", "now"))]),
        ("shutdown -c", []),
        ("init 6", [Fact("init-6", ("6",))]),
        ("init 3", []),
        ("systemctl reboot", [Fact("systemctl-reboot")]),
        ("loginctl poweroff", [Fact("loginctl-poweroff")]),
        ("systemctl isolate reboot.target", [Fact("systemctl-power-target", ("reboot.target",))]),
        ("systemctl start nginx", []),
        ("kexec -e", [Fact("kexec-exec")]),
        ("reboot --help", []),
        ("echo b | tee /proc/sysrq-trigger", [Fact("sysrq-trigger", ("/proc/sysrq-trigger",))]),
    ],
)
def test_power(text: str, facts: list[Fact]) -> None:
    assert [f for s in effects_of(text).steps for f in s.power] == facts
