"""Shell history tampering."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact
from testbed.analysis.command.tools.history import history_assignment, is_history_file


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("history -c", [Fact("history-clear", ("-c",))]),
        ("history -d 12", [Fact("history-clear", ("-d", "12"))]),
        ("history 20", []),
        ("unset HISTFILE", [Fact("unset-histfile", ("HISTFILE",))]),
        ("set +o history", [Fact("set-no-history")]),
        ("export HISTFILE=/dev/null", [Fact("histfile-disabled", ("HISTFILE=/dev/null",))]),
        ("HISTSIZE=0 bash", [Fact("histfile-disabled", ("HISTSIZE=0",))]),
        ("rm -f ~/.bash_history", [Fact("history-file-rm", ("~/.bash_history",))]),
        ("ln -sf /dev/null /root/.zsh_history", [Fact("history-file-ln", ("/root/.zsh_history",))]),
        ("cp /dev/null $HISTFILE", [Fact("history-file-cp", ("$HISTFILE",))]),
        ("cat ~/.bash_history", []),
        ("> ~/.bash_history", [Fact("history-file-truncated", ("~/.bash_history",))]),
        ("echo x >> ~/.bash_history", []),
    ],
)
def test_history(text: str, facts: list[Fact]) -> None:
    assert [f for s in effects_of(text).steps for f in s.history] == facts


def test_helpers() -> None:
    assert history_assignment("HISTFILE=") and history_assignment("SAVEHIST='0'")
    assert not history_assignment("HISTSIZE=1000")
    assert is_history_file("/home/a/.history/") and not is_history_file("/home/a/history.txt")
