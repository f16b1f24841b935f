"""Generic force and trust options, host keys, short force flags."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.tools.trust import dpkg_force


def rules(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.id, f.targets) for s in effects_of(text).steps for f in s.bypasses]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dpkg --force-depends -i x.deb", [("option-force", ("--force-depends",))]),
        ("apt-get install --force-yes x", [("option-trust-bypass", ("--force-yes",))]),
        ("apt-get -o Dpkg::Options::=--force-confnew upgrade", []),
        ("pip install --force-reinstall x", []),
        ("mv --force a b", []),
        ("helm install --insecure-skip-tls-verify=false x", []),
        ("kubectl --insecure-skip-tls-verify get po", [("option-trust-bypass", ("--insecure-skip-tls-verify",))]),
        ("podman pull --tls-verify=false x", [("option-trust-bypass", ("--tls-verify=false",))]),
        ("yum --setopt=sslverify=0 install x", [("setopt-no-verify", ("sslverify=0",))]),
        ("grep --force --insecure f", []),
        ("scp -o UserKnownHostsFile=/dev/null a h:", [("ssh-no-host-key-check", ("UserKnownHostsFile=/dev/null",))]),
        ("umount -lf /mnt", [("umount-short-force", ("-f",))]),
        ("mkfs.ext4 -F /dev/vdb", [("mkfs.ext4-short-force", ("-F",))]),
        ("zpool import -f tank", [("zpool-force", ("-f",))]),
        ("apt-get -f install", []),
    ],
)
def test_bypasses(text: str, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert rules(text) == expected


def test_dpkg_force() -> None:
    assert dpkg_force("Dpkg::Options::=--force-all") and not dpkg_force("Dpkg::Options::=--force-confdef")
