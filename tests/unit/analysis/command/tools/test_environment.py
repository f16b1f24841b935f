"""Variables set by a command: environment trust bypasses."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("GIT_SSL_NO_VERIFY=true git pull", [Fact("env-trust-bypass", ("GIT_SSL_NO_VERIFY=true",))]),
        ("export NODE_TLS_REJECT_UNAUTHORIZED=0", [Fact("env-trust-bypass", ("NODE_TLS_REJECT_UNAUTHORIZED=0",))]),
        ("env PYTHONHTTPSVERIFY=0 python3 x.py", [Fact("env-trust-bypass", ("PYTHONHTTPSVERIFY=0",))]),
        (
            "ANSIBLE_HOST_KEY_CHECKING=False ansible-playbook p.yml",
            [Fact("env-trust-bypass", ("ANSIBLE_HOST_KEY_CHECKING=False",))],
        ),
        (
            "GIT_SSH_COMMAND='ssh -o StrictHostKeyChecking=no' git clone x",
            [Fact("env-ssh-no-host-key-check", ("GIT_SSH_COMMAND=ssh -o StrictHostKeyChecking=no",))],
        ),
        ("GIT_SSL_NO_VERIFY=0 git pull", []),
        ("export PATH=/usr/bin", []),
    ],
)
def test_env_bypasses(text: str, facts: list[Fact]) -> None:
    assert [f for s in effects_of(text).steps for f in s.env_bypasses] == facts
