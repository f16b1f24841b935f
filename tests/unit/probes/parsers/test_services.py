"""services: systemd (Debian, RHEL) and OpenRC (Alpine)."""

from __future__ import annotations

from typing import Any


def test_debian_services(debian: dict[str, Any]) -> None:
    svc = debian["services"]
    assert svc["init"] == "systemd"
    assert svc["failed"] == ["nginx.service"]
    assert "ssh.service" in svc["enabled"] and "rsync.service" not in svc["enabled"]
    assert svc["unit_files"]["ctrl-alt-del.target"] == "masked"
    assert svc["unit_files"]["sshd.service"] == "alias"
    assert svc["units"]["nginx.service"]["active"] == "failed"
    assert svc["units"]["systemd-tmpfiles-clean.service"]["sub"] == "dead"
    assert svc["units"]["cron.service"]["description"] == "Regular background program processing daemon"


def test_rhel_services_none_failed(rhel: dict[str, Any]) -> None:
    assert rhel["services"]["init"] == "systemd"
    assert rhel["services"]["failed"] == []


def test_alpine_openrc_services(alpine: dict[str, Any]) -> None:
    svc = alpine["services"]
    assert svc["init"] == "openrc"
    assert svc["failed"] == ["chronyd"]
    assert "sshd" in svc["enabled"] and "nginx" not in svc["enabled"]
    assert "local" not in svc["enabled"]
    services = svc["openrc"]["services"]
    assert services["sshd"] == {"state": "started", "runlevel": "default"}
    assert services["nginx"]["state"] == "stopped"
    assert services["localmount"]["runlevel"] == "needed/wanted"
    assert svc["openrc"]["runlevels"]["devfs"] == ["sysinit"]
    assert svc["openrc"]["runlevels"]["local"] == []
