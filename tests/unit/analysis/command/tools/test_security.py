"""SELinux, AppArmor and audit switched off."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("setenforce 0", [Fact("setenforce-permissive", ("0",))]),
        ("setenforce Permissive", [Fact("setenforce-permissive", ("Permissive",))]),
        ("setenforce 1", []),
        ("aa-complain /etc/apparmor.d/usr.sbin.nginx", [Fact("aa-complain", ("/etc/apparmor.d/usr.sbin.nginx",))]),
        ("auditctl -e 0", [Fact("auditctl-disable")]),
        ("auditctl -D", [Fact("auditctl-disable")]),
        ("auditctl -l", []),
    ],
)
def test_security(text: str, facts: list[Fact]) -> None:
    assert effects_of(text).steps[-1].security == facts
