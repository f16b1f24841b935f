"""Editing tools: sed/perl -i, editors, htpasswd, visudo, ssh-keygen, openssl."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of


def writes(text: str) -> list[tuple[str, str, str]]:
    return [(w.value, w.mode, w.verb) for w in effects_of(text).steps[-1].writes]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sed -i 's/a/b/' /etc/x", [("/etc/x", "abs", "sed -i")]),
        ("sed -i.bak -e 's/a/b/' /etc/x", [("/etc/x", "abs", "sed -i"), ("/etc/x.bak", "abs", "sed -i.bak (backup)")]),
        ("sed 's/a/b/' /etc/x", []),
        ("perl -pi -e 's/a/b/' /etc/y", [("/etc/y", "abs", "perl -i")]),
        ("vim +10 /etc/z", [("/etc/z", "abs", "vim")]),
        ("htpasswd -c /etc/nginx/.htpasswd bob", [("/etc/nginx/.htpasswd", "abs", "htpasswd")]),
        ("htpasswd -n bob", []),
        ("visudo", [("/etc/sudoers", "abs", "visudo")]),
        ("visudo -f /etc/sudoers.d/x", [("/etc/sudoers.d/x", "abs", "visudo")]),
        ("visudo -c", []),
        (
            "ssh-keygen -t rsa -f /root/.ssh/k -N ''",
            [("/root/.ssh/k", "abs", "ssh-keygen"), ("/root/.ssh/k.pub", "abs", "ssh-keygen")],
        ),
        (
            "ssh-keygen -t ed25519",
            [(".ssh/id_ed25519", "home", "ssh-keygen"), (".ssh/id_ed25519.pub", "home", "ssh-keygen")],
        ),
        ("ssh-keygen -l -f /root/.ssh/k", []),
        ("ssh-keygen -A", [("/etc/ssh", "tree", "ssh-keygen")]),
        (
            "openssl req -x509 -keyout /etc/k.pem -out /etc/c.pem",
            [("/etc/k.pem", "abs", "openssl -keyout"), ("/etc/c.pem", "abs", "openssl -out")],
        ),
    ],
)
def test_writes(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert writes(text) == expected
