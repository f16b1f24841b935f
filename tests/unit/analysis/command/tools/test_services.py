"""Service manager grammars: systemctl, service, init scripts, boot links, supervisors."""

from __future__ import annotations

import pytest

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import ServiceOp, SignalOp, Write


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("systemctl stop nginx.service", ServiceOp("systemctl", "stop", ("nginx.service",), "stop")),
        ("systemctl --now disable a b", ServiceOp("systemctl", "disable", ("a", "b"), "disable", now=True)),
        ("systemctl -P MainPID show nginx", ServiceOp("systemctl", "show", ("nginx",))),
        (
            "systemctl --kill-whom=main kill -s KILL x",
            ServiceOp("systemctl", "kill", ("x",), "kill", signals=("KILL",)),
        ),
        ("systemctl mask x", ServiceOp("systemctl", "mask", ("x",), "disable")),
        ("systemctl rescue", ServiceOp("systemctl", "rescue", (), "isolate")),
        ("service nginx graceful-stop", ServiceOp("service", "graceful-stop", ("nginx",), "stop")),
        ("rc-service sshd zap", ServiceOp("rc-service", "zap", ("sshd",), "zap")),
        ("/etc/init.d/nginx stop", ServiceOp("init.d", "stop", ("nginx",), "stop")),
        ("/etc/rc.d/sshd start", ServiceOp("init.d", "start", ("sshd",))),
        ("update-rc.d -f nginx remove", ServiceOp("update-rc.d", "remove", ("nginx",), "disable")),
        ("rc-update del sshd default", ServiceOp("rc-update", "del", ("sshd",), "disable")),
        ("chkconfig --level 35 nginx off", ServiceOp("chkconfig", "off", ("nginx",), "disable")),
        ("chkconfig --add nginx", ServiceOp("chkconfig", "add", ("nginx",))),
        ("sv d nginx", ServiceOp("sv", "d", ("nginx",), "stop")),
        ("supervisorctl -c /etc/s.conf stop worker", ServiceOp("supervisorctl", "stop", ("worker",), "stop")),
    ],
)
def test_service_ops(text: str, op: ServiceOp) -> None:
    assert step(text).services == [op]


@pytest.mark.parametrize("text", ["systemctl", "service --status-all", "chkconfig --list nginx", "update-rc.d nginx"])
def test_no_action_no_op(text: str) -> None:
    assert step(text).services == []


def test_systemctl_kill_is_a_signal_to_the_unit() -> None:
    assert step("systemctl kill --signal=9 nginx").signals == [SignalOp("systemctl", "unit", ("9",), True, ("nginx",))]
    assert step("systemctl kill nginx").signals == [SignalOp("systemctl", "unit", (), False, ("nginx",))]


def test_systemctl_edit_writes_and_set_hostname() -> None:
    assert step("systemctl edit --full nginx").writes == [
        Write("/etc/systemd/system/nginx.service.d", "tree", "systemctl edit"),
        Write("/etc/systemd/system/nginx.service", "abs", "systemctl edit --full"),
    ]
    assert step("systemctl set-hostname web").hostname


def test_service_names_drop_paths_and_suffixes() -> None:
    assert step("systemctl stop /lib/systemd/system/a.service b.socket").services[0].services == ("a", "b")
