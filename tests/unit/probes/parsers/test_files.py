"""tmp_files, etc_files and secrets: stat listings with GNU and busybox names, /etc hashes, key
material found by name or header."""

from __future__ import annotations

from typing import Any


def test_debian_tmp_files(debian: dict[str, Any]) -> None:
    entries = debian["tmp_files"]["entries"]
    assert debian["tmp_files"]["count"] == 9
    notes = entries["/tmp/notes for agent.txt"]
    assert notes == {
        "type": "file",
        "mode": "0600",
        "uid": 1000,
        "owner": "debian",
        "gid": 1000,
        "group": "debian",
        "size": 0,
        "mtime": 1709633495,
    }
    assert entries["/tmp/odd\nname"]["size"] == 12
    assert entries["/tmp/latest"]["target"] == "/var/log/nginx"
    assert entries["/tmp"]["mode"] == "1777"


def test_debian_etc_files(debian: dict[str, Any]) -> None:
    files = debian["etc_files"]["files"]
    assert files["/etc/hostname"]["sha256"].startswith("a4f1c7a5")
    assert files["/etc/shadow"]["group"] == "shadow" and files["/etc/shadow"]["mode"] == "0640"
    assert files["/etc/localtime"]["target"] == "/usr/share/zoneinfo/Etc/UTC"
    assert "sha256" not in files["/etc/big.db"]  # >= 1 MiB: not hashed
    assert "sha256" in files["/etc/nginx/sites-enabled/my site.conf"]
    assert debian["etc_files"]["count"] == 7


def test_debian_secrets(debian: dict[str, Any]) -> None:
    files = debian["secrets"]["files"]
    assert files["/root/.ssh/id_ed25519"]["kind"] == "private_key"
    assert "ssh_private_key" in files["/root/.ssh/id_ed25519"]["kinds"]
    assert files["/home/deploy/.pgpass"]["kind"] == "credentials"
    assert files["/tmp/server.key"]["kind"] == "private_key"
    assert files["/opt/app/tls/server.crt"]["kind"] == "certificate"
    assert files["/srv/backup/old"]["kind"] == "private_key"  # found by content only
    assert files["/srv/backup/old"]["headers"] == ["-----BEGIN RSA PRIVATE KEY-----"]
    assert files["/tmp/server.key"]["sha256"] == "3" * 64
    assert files["/tmp/server.key"]["mode"] == "0600"


def test_rhel_has_no_secrets(rhel: dict[str, Any]) -> None:
    assert rhel["secrets"]["files"] == {}


def test_alpine_busybox_file_names(alpine: dict[str, Any]) -> None:
    entries = alpine["tmp_files"]["entries"]
    assert entries["/tmp/two\nlines"]["size"] == 3
    assert entries["/tmp/etc-link"]["target"] == "/etc"
    assert entries["/tmp/ctl.fifo"]["type"] == "fifo"
    assert entries["/tmp/agent script.sh"]["owner"] == "root"
    files = alpine["etc_files"]["files"]
    assert files["/etc/motd with\nnewline"]["sha256"].startswith("f6f6")
    assert files["/etc/mtab"]["target"] == "/proc/mounts"
    assert "unparsed" not in alpine["etc_files"]
    assert alpine["secrets"]["files"]["/root/.netrc"]["kind"] == "credentials"
