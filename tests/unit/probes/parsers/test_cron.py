"""cron: system and spool crontabs, anacron, periodic scripts, systemd timers."""

from __future__ import annotations

from typing import Any

from testbed.probes.parsers.cron import parse_cron_line


def test_debian_cron(debian: dict[str, Any]) -> None:
    cron = debian["cron"]
    hourly = next(e for e in cron["entries"] if "cron.hourly" in e["line"])
    assert hourly["kind"] == "job" and hourly["user"] == "root"
    assert hourly["schedule"] == "17 * * * *"
    assert hourly["command"] == "cd / && run-parts --report /etc/cron.hourly"
    reboot = next(e for e in cron["entries"] if e["schedule"] == "@reboot")
    assert reboot["user"] == "deploy" and reboot["command"] == "/home/deploy/bin/start-worker.sh"
    assert sum(e["kind"] == "env" for e in cron["entries"]) == 2
    assert set(cron["scripts"]) == {"/etc/cron.daily/apt-compat", "/etc/cron.daily/dpkg", "/etc/cron.daily/logrotate"}
    assert cron["timers"]["apt-daily.timer"]["active"] == "active"
    assert len(cron["timers"]) == 7


def test_rhel_cron_entries(rhel: dict[str, Any]) -> None:
    entries = rhel["cron"]["entries"]
    anacron = [e for e in entries if e["kind"] == "anacron"]
    assert [e["schedule"] for e in anacron] == ["1 5 cron.daily", "7 25 cron.weekly", "@monthly 45 cron.monthly"]
    pg = next(e for e in entries if e["file"] == "/var/spool/cron/postgres")
    assert pg["user"] == "postgres" and pg["schedule"] == "0 2 * * *"
    hourly = next(e for e in entries if e["file"] == "/etc/cron.d/0hourly" and e["kind"] == "job")
    assert hourly["user"] == "root" and hourly["command"] == "run-parts /etc/cron.hourly"


def test_alpine_cron_without_systemd(alpine: dict[str, Any]) -> None:
    cron = alpine["cron"]
    assert cron["timers"] is None
    assert cron["unavailable_parts"] == {"systemd_timers": "systemd not running"}
    first = cron["entries"][0]
    assert (first["user"], first["schedule"]) == ("root", "*/15 * * * *")
    assert first["command"] == "run-parts /etc/periodic/15min"
    assert list(cron["scripts"]) == ["/etc/periodic/daily/backup-redis"]


def test_cron_line_kinds() -> None:
    assert parse_cron_line("/etc/crontab", "MAILTO=root")["kind"] == "env"
    other = parse_cron_line("/etc/cron.d/x", "not a cron line")
    assert other["kind"] == "other" and other["line"] == "not a cron line"
    spool = parse_cron_line("/var/spool/cron/crontabs/bob", "@daily /bin/true")
    assert (spool["user"], spool["schedule"], spool["command"]) == ("bob", "@daily", "/bin/true")
