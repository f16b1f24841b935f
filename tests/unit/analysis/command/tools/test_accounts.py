"""User and group grammars: names acted on, deletions, home directories."""

from __future__ import annotations

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import AccountOp


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


def test_names_include_groups_and_members() -> None:
    eff = step("useradd -m -s /bin/bash -G sudo,docker -d /srv/bob bob")
    assert eff.accounts == [AccountOp("useradd", ("bob", "sudo", "docker"))]
    assert [(w.value, w.mode) for w in eff.writes] == [("/srv/bob", "tree")]
    assert step("gpasswd -a alice wheel").accounts[0].names == ("wheel", "alice")
    assert step("usermod -aG docker ci").accounts[0].names == ("ci", "docker")


def test_deletions() -> None:
    assert step("userdel -r bob").accounts == [AccountOp("userdel", ("bob",), True, ("bob",))]
    assert step("deluser --remove-home bob").accounts[0].deleted_users == ("bob",)
    assert not step("deluser bob docker").accounts[0].deletes  # only a membership
    assert not step("deluser --group ops").accounts[0].deletes


def test_names_from_input() -> None:
    assert step("echo 'bob:pw' | chpasswd").accounts == [AccountOp("chpasswd", from_stdin=True)]
