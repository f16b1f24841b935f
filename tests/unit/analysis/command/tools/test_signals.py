"""Signal grammars: kill, pkill, killall, killall5, skill."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import SignalOp
from testbed.analysis.command.tools.signals import is_kill_signal, is_signal, named_signals


@pytest.mark.parametrize(
    ("args", "signals"),
    [
        (["-9", "1"], ["9"]),
        (["-KILL", "1"], ["KILL"]),
        (["-sKILL", "1"], ["KILL"]),
        (["-s", "HUP", "1"], ["HUP"]),
        (["-n", "15", "1"], ["15"]),
        (["--signal=TERM", "1"], ["TERM"]),
        (["--signal", "USR1", "x"], ["USR1"]),
        (["-f", "-u", "bob", "x"], []),
        (["--", "-9"], []),
        (["-skill", "x"], ["kill"]),
    ],
)
def test_named_signals(args: list[str], signals: list[str]) -> None:
    assert named_signals(args) == signals


def test_signal_names() -> None:
    assert is_kill_signal("sigkill") and is_kill_signal("9") and not is_kill_signal("TERM")
    assert is_signal("RTMIN+3") and is_signal("0") and not is_signal("65") and not is_signal("f")


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("kill -9 123 456", SignalOp("kill", "process", ("9",), True, ("123", "456"))),
        ("pkill -HUP nginx", SignalOp("pkill", "process", ("HUP",), False, ("nginx",))),
        ("killall nginx", SignalOp("killall", "process", (), False, ("nginx",))),
        ("kill -0 123", SignalOp("kill", "process", ("0",), False, ("123",), sends=False)),
        ("kill -l", SignalOp("kill", "process", (), False, (), sends=False)),
        ("killall --help", SignalOp("killall", "process", (), False, (), sends=False)),
    ],
)
def test_signal_ops(text: str, op: SignalOp) -> None:
    assert effects_of(text).steps[-1].signals == [op]
