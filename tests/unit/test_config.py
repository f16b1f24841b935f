"""testbed.config: every TESTBED_* setting is checked in one place; a bad one names itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.config import Settings
from testbed.errors import InputError
from testbed.hypervisor.accel import choose_accel
from testbed.hypervisor.hostguard import guard_enabled
from testbed.hypervisor.labhost import remote_cache

SETTINGS = ("TESTBED_HOME", "TESTBED_LIBVIRT_URI", "TESTBED_MEMORY_BUDGET_MB", "TESTBED_SUBNET_POOL", "TESTBED_ACCEL",
            "TESTBED_HOST_GUARD", "TESTBED_SSH_CONFIG", "TESTBED_REMOTE_CACHE", "TESTBED_ROOT")  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "home"))


def test_defaults_and_good_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = Settings.from_env()
    assert (s.libvirt_uri, s.subnet_pool, s.accel) == ("qemu:///system", "10.213.0.0/16", None)
    assert s.memory_budget_mb > 0 and s.home == tmp_path / "home"
    for name, value in {"TESTBED_MEMORY_BUDGET_MB": "2048", "TESTBED_SUBNET_POOL": "192.168.0.0/20",
                        "TESTBED_ACCEL": "tcg", "TESTBED_HOST_GUARD": "off", "TESTBED_REMOTE_CACHE": "/srv/img",
                        "TESTBED_LIBVIRT_URI": "qemu+ssh://root@lab2:2222/system"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    s = Settings.from_env()
    assert (s.memory_budget_mb, s.subnet_pool, s.accel) == (2048, "192.168.0.0/20", "tcg")
    assert not guard_enabled() and remote_cache() == "/srv/img"
    monkeypatch.setenv("TESTBED_MEMORY_BUDGET_MB", "  ")  # blank is unset
    assert Settings.from_env().memory_budget_mb != 2048


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("TESTBED_MEMORY_BUDGET_MB", "lots", "'lots' is not a whole number of MiB"),
        ("TESTBED_MEMORY_BUDGET_MB", "-1", "not a whole number"),
        ("TESTBED_MEMORY_BUDGET_MB", "64", "outside 128.."),
        ("TESTBED_SUBNET_POOL", "10.0.0.0/33", "not an IPv4 network"),
        ("TESTBED_SUBNET_POOL", "10.1.2.0/25", "smaller than one /24"),
        ("TESTBED_SUBNET_POOL", "1.0.0.0/8", "not a private range"),
        ("TESTBED_ACCEL", "KVM!", "not kvm or tcg"),
        ("TESTBED_HOST_GUARD", "2", "not 1/true/yes/on"),
        ("TESTBED_SSH_CONFIG", "/nonexistent/ssh_config", "no such file"),
        ("TESTBED_REMOTE_CACHE", "images", "not an absolute path"),
        ("TESTBED_LIBVIRT_URI", "/var/run/libvirt", "not a libvirt URI"),
        ("TESTBED_ROOT", "/nonexistent/root", "is not a directory"),
    ],
)
def test_bad_settings_are_input_errors_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InputError) as info:
        Settings.from_env()
    assert info.value.field == name and needle in info.value.problem


def test_home_that_is_a_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("TESTBED_HOME", str(tmp_path / "f"))
    with pytest.raises(InputError, match=r"TESTBED_HOME: .* is not a directory"):
        Settings.from_env()


async def test_lower_layers_read_the_same_checked_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_ACCEL", "kvm")
    assert (await choose_accel(None)).accel == "kvm"
    monkeypatch.setenv("TESTBED_ACCEL", "fast")
    with pytest.raises(InputError, match="TESTBED_ACCEL"):
        await choose_accel(None)
