"""Unit names: one home for every spelling rule."""

from __future__ import annotations

from testbed.analysis.command.units import service_name, unit_name, unit_stem


def test_unit_name() -> None:
    assert unit_name("nginx") == "nginx.service"
    assert unit_name(" nginx.socket ") == "nginx.socket"
    assert unit_name("getty@tty1.service") == "getty@tty1.service"


def test_unit_stem() -> None:
    assert unit_stem("getty@tty1.service") == "getty"
    assert unit_stem("nginx.service") == "nginx"


def test_service_name() -> None:
    assert service_name("/usr/lib/systemd/system/nginx.service") == "nginx"
    assert service_name("rescue.target") == "rescue"
    assert service_name("tmp.mount") == "tmp.mount"
