"""packages (dpkg, rpm, apk), repos (apt, deb822, yum, apk) and pkg_health."""

from __future__ import annotations

from typing import Any


def test_debian_packages(debian: dict[str, Any]) -> None:
    pk = debian["packages"]
    assert pk["manager"] == "dpkg"
    by = {(p["name"], p["arch"]): p for p in pk["packages"]}
    assert by[("openssh-server", "amd64")]["version"] == "1:9.2p1-2+deb12u2"
    assert by[("libc6", "i386")]["version"] == "2.36-9+deb12u4"
    assert by[("rsync", "amd64")]["status"] == "rc"
    assert by[("rsync", "amd64")]["installed"] is False
    assert by[("tzdata", "all")]["status"] == "iU"
    assert pk["count"] == len(pk["packages"]) - 1


def test_debian_repos(debian: dict[str, Any]) -> None:
    repos = debian["repos"]["repos"]
    assert len(repos) == 4
    sec = next(r for r in repos if r["uris"] == ["http://deb.debian.org/debian-security"])
    assert sec["format"] == "deb822" and sec["suites"] == ["bookworm-security"]
    assert sec["options"] == ["signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"]
    src = next(r for r in repos if r["types"] == ["deb-src"])
    assert src["enabled"] is False
    nginx = next(r for r in repos if r["format"] == "apt")
    assert nginx["options"] == ["arch=amd64", "signed-by=/usr/share/keyrings/nginx-archive-keyring.gpg"]
    assert (nginx["suites"], nginx["components"]) == (["bookworm"], ["nginx"])


def test_debian_pkg_health_ok(debian: dict[str, Any]) -> None:
    health = debian["pkg_health"]
    assert health["ok"] is True
    assert health["checks"]["dpkg_audit"] == {"command": "dpkg --audit", "rc": 0, "ok": True, "output": []}


def test_rhel_rpm_packages(rhel: dict[str, Any]) -> None:
    pk = rhel["packages"]
    assert pk["manager"] == "rpm"
    kernels = sorted(p["version"] for p in pk["packages"] if p["name"] == "kernel")
    assert kernels == ["5.14.0-284.11.1.el9_2", "5.14.0-362.8.1.el9_3"]
    by = {p["name"]: p for p in pk["packages"]}
    assert by["openssl"]["version"] == "1:3.0.7-24.el9"
    assert by["gpg-pubkey"]["arch"] == "(none)"
    assert pk["count"] == 14


def test_rhel_yum_repos(rhel: dict[str, Any]) -> None:
    repos = {r["id"]: r for r in rhel["repos"]["repos"]}
    assert set(repos) == {"baseos", "baseos-debuginfo", "pgdg13"}
    assert repos["baseos"]["enabled"] is True
    assert repos["baseos"]["mirrorlist"].endswith("/baseos")
    assert repos["baseos-debuginfo"]["enabled"] is False
    assert repos["pgdg13"]["gpgcheck"] == "0"
    assert repos["pgdg13"]["baseurl"].startswith("https://download.postgresql.org/")
    assert repos["pgdg13"]["file"] == "/etc/yum.repos.d/pgdg.repo"


def test_rhel_pkg_health_reports_problems(rhel: dict[str, Any]) -> None:
    health = rhel["pkg_health"]
    assert health["ok"] is False
    rpm = health["checks"]["rpm_verify"]
    assert rpm["rc"] == 1 and rpm["ok"] is False
    assert rpm["output"][0] == "Unsatisfied dependencies for pgtool-2.1-1.el9.noarch:"
    assert health["checks"]["dnf_check"]["output"] == [
        "pgtool-2.1-1.el9.noarch has missing requires of libpq.so.5()(64bit)"
    ]


def test_alpine_apk_packages_and_repos(alpine: dict[str, Any]) -> None:
    pk = {p["name"]: p["version"] for p in alpine["packages"]["packages"]}
    assert pk["musl"] == "1.2.4_git20230717-r4"
    assert pk["py3-setuptools"] == "68.2.2-r0"
    assert pk["openssh-server"] == "9.6_p1-r0"
    assert pk["alpine-baselayout-data"] == "3.4.3-r2"
    assert "unparsed" not in alpine["packages"]  # the WARNING line is not a package
    assert alpine["packages"]["count"] == 14
    repos = alpine["repos"]["repos"]
    assert [r["tag"] for r in repos] == ["", "", "testing"]
    assert repos[2]["uris"] == ["https://dl-cdn.alpinelinux.org/alpine/edge/testing"]


def test_alpine_apk_audit(alpine: dict[str, Any]) -> None:
    audit = alpine["pkg_health"]["checks"]["apk_audit"]
    assert audit["ok"] is False and audit["output"][1] == "A usr/local/bin/helper"
