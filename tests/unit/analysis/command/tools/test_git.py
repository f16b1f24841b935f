"""git: clone, clean, and the options that force or turn off TLS verification."""

from __future__ import annotations

import pytest

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import Fact, Removal


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


def test_clone_writes_its_directory() -> None:
    assert [(w.value, w.mode) for w in step("cd /srv && git clone --depth 1 https://x/app.git").writes] == [
        ("/srv/app", "tree"),
        ("/srv/app", "abs"),
    ]
    assert [w.value for w in step("git -C /tmp clone -b main https://x/r.git /opt/r").writes] == ["/opt/r", "/opt/r"]


def test_clean_is_a_removal() -> None:
    assert step("git clean -fdx").removals == [Removal("git", (), True, True)]
    assert step("git clean -n").removals == [Removal("git", (), False, False)]


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("git -c http.sslVerify=false pull", Fact("git-ssl-no-verify", ("http.sslVerify=false",))),
        ("git push -f origin main", Fact("git-push-force", ("-f",))),
        ("git push origin +main", Fact("git-push-force", ("-f",))),
        ("git branch -D topic", Fact("git-branch-force-delete", ("-D",))),
        ("git config --global http.sslVerify false", Fact("git-config-ssl-no-verify", ("http.sslverify", "false"))),
    ],
)
def test_bypasses(text: str, fact: Fact) -> None:
    assert step(text).bypasses == [fact]


def test_plain_use_bypasses_nothing() -> None:
    for text in ("git push origin main", "git branch -d topic", "git config user.name x", "git log -p"):
        assert step(text).bypasses == []
