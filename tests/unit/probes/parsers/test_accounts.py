"""users, sudoers and authorized_keys: password state without hashes, sudo/doas rules, keys
described by fingerprint without their material."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from testbed.probes.parsers.accounts import parse_authorized_key
from tests.unit.probes.parsers.recorded import FP_ECDSA, FP_ED25519, FP_RSA


def test_debian_users(debian: dict[str, Any]) -> None:
    users, groups = debian["users"]["users"], debian["users"]["groups"]
    assert users["deploy"]["password"] == "empty"
    assert users["root"]["password"] == "set"
    assert users["daemon"]["password"] == "locked"
    assert users["debian"] == {
        "uid": 1000,
        "gid": 1000,
        "gecos": "Debian,,,",
        "home": "/home/debian",
        "shell": "/bin/bash",
        "password": "set",
        "password_changed": 19787,
    }
    assert groups["sudo"] == {"gid": 27, "members": ["debian", "deploy"]}
    assert groups["users"]["members"] == []


def test_debian_sudoers(debian: dict[str, Any]) -> None:
    sud = debian["sudoers"]
    assert sud["files"]["/etc/sudoers.d/90-deploy"]["mode"] == "0440"
    assert sud["files"]["/etc/sudoers.d/90-deploy"]["sha256"].startswith("9f1e2d3c")
    assert {"file": "/etc/sudoers.d/90-deploy", "line": "deploy ALL=(ALL) NOPASSWD:ALL"} in sud["rules"]
    assert {"file": "/etc/sudoers", "line": "@includedir /etc/sudoers.d"} in sud["rules"]


def test_debian_authorized_keys_keep_no_key_material(debian: dict[str, Any]) -> None:
    ak = debian["authorized_keys"]
    keys = {k["fingerprint"]: k for k in ak["keys"]}
    assert set(keys) == {FP_RSA, FP_ED25519}
    assert keys[FP_ED25519]["file"] == "/home/deploy/.ssh/authorized_keys"
    assert keys[FP_ED25519]["comment"] == "deploy@ci"
    rsa = keys[FP_RSA]
    assert rsa["type"] == "ssh-rsa" and rsa["comment"] == "alice@laptop"
    assert rsa["options"] == 'no-port-forwarding,command="/usr/local/bin/only-backup \\"x y\\""'
    assert len(rsa["line_sha256"]) == 64
    assert ak["files"]["/root/.ssh/authorized_keys"]["mode"] == "0600"
    assert len(ak["unparsed"]) == 1 and "sha256=" in ak["unparsed"][0]
    dumped = json.dumps(ak)
    assert "AAAAC3NzaC1lZDI1NTE5" not in dumped and "AAAAB3NzaC1yc2E" not in dumped
    assert "not a key line" not in dumped


def test_authorized_key_line_forms() -> None:
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIJDlgEZKClWmoHSHdf0m143xE29lJL8IOMsbe+Jx6+WF"
    plain = parse_authorized_key(f"ssh-ed25519 {blob}")
    assert plain is not None and plain["comment"] == "" and plain["fingerprint"] == FP_ED25519
    line = f'from="10.0.0.1" ssh-ed25519 {blob} a comment with spaces'
    opt = parse_authorized_key(line)
    assert opt is not None
    assert opt["options"] == 'from="10.0.0.1"' and opt["comment"] == "a comment with spaces"
    assert opt["line_sha256"] == hashlib.sha256(line.encode()).hexdigest()
    bad_blob = parse_authorized_key("ssh-ed25519 !!!notbase64 c")
    assert bad_blob is not None and bad_blob["fingerprint"] is None
    assert parse_authorized_key("") is None
    assert parse_authorized_key("hello world") is None


def test_rhel_accounts(rhel: dict[str, Any]) -> None:
    assert rhel["users"]["groups"]["wheel"]["members"] == ["almalinux"]
    assert rhel["authorized_keys"]["keys"][0]["fingerprint"] == FP_ECDSA
    assert rhel["authorized_keys"]["keys"][0]["comment"] == ""
    assert {"file": "/etc/sudoers", "line": "#includedir /etc/sudoers.d"} in rhel["sudoers"]["rules"]


def test_alpine_doas_rules(alpine: dict[str, Any]) -> None:
    assert alpine["sudoers"]["rules"][1] == {"file": "/etc/doas.d/wheel.conf", "line": "permit nopass alpine as root"}
