"""Package manager grammars: transactions, names, removals, repositories, apt -o."""

from __future__ import annotations

import pytest

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import Fact, PackageOp
from testbed.analysis.command.tools.packages import package_name


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


@pytest.mark.parametrize(
    ("text", "op"),
    [
        (
            "apt-get install -yq nginx=1.2 curl",
            PackageOp("apt-get", "install", "apt-get-install", ("nginx=1.2", "curl"), ("nginx", "curl"), True, False),
        ),
        ("apt -o Debug::x=1 purge nginx", PackageOp("apt", "purge", "apt-purge", ("nginx",), ("nginx",), True, True)),
        ("aptitude autoremove", PackageOp("aptitude", "autoremove", "aptitude-autoremove", (), (), False, True)),
        (
            "dnf -y --setopt install_weak_deps=0 install @dev x",
            PackageOp("dnf", "install", "dnf-install", ("@dev", "x"), ("x",), True, False),
        ),
        ("apk del --purge curl", PackageOp("apk", "del", "apk-del", ("curl",), ("curl",), True, True)),
        ("snap remove lxd", PackageOp("snap", "remove", "snap-remove", ("lxd",), ("lxd",), True, True)),
        ("dpkg -i ./x_1.0_amd64.deb", PackageOp("dpkg", "dpkg", "dpkg", ("./x_1.0_amd64.deb",), ("x",), True, False)),
        ("dpkg --purge nginx", PackageOp("dpkg", "dpkg", "dpkg-remove", ("nginx",), ("nginx",), True, True)),
        ("rpm -ivh x-1.0-1.x86_64.rpm", PackageOp("rpm", "rpm", "rpm", ("x-1.0-1.x86_64.rpm",), ("x",), True, False)),
        ("rpm -e x", PackageOp("rpm", "rpm", "rpm-erase", ("x",), ("x",), True, True)),
        ("pacman -Rns x", PackageOp("pacman", "pacman", "pacman-remove", ("x",), ("x",), True, True)),
    ],
)
def test_transactions(text: str, op: PackageOp) -> None:
    assert step(text).packages == [op]


@pytest.mark.parametrize("text", ["apt-get update", "apt list --installed", "dpkg -l", "rpm -qa", "pacman -Ss x"])
def test_queries_are_not_transactions(text: str) -> None:
    assert step(text).packages == []


def test_repositories() -> None:
    assert step("add-apt-repository ppa:x/y").repo_change
    assert step("dnf config-manager --add-repo https://x/r.repo").repo_change
    assert not step("dnf repolist").repo_change


def test_apt_options_that_bypass_verification() -> None:
    assert step("apt-get -o Acquire::AllowInsecureRepositories=true update").bypasses == [
        Fact("apt-option-trust-bypass", ("Acquire::AllowInsecureRepositories=true",))
    ]
    assert step("apt-get -o Dpkg::Options::=--force-overwrite install x").bypasses[0].id == "apt-option-trust-bypass"
    assert step("apt-get -o Dpkg::Options::=--force-confold install x").bypasses == []


def test_package_name() -> None:
    assert [package_name(w) for w in ("nginx=1.2", "nginx/bookworm", "x:amd64", "/tmp/y-2.0.apk")] == [
        "nginx",
        "nginx",
        "x",
        "y",
    ]
