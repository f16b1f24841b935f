"""chmod/chown/chgrp grammar: paths, recursion, what a mode grants."""

from __future__ import annotations

import pytest

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import ModeChange
from testbed.analysis.command.tools.modes import mode_bits


@pytest.mark.parametrize(
    ("mode", "bits"),
    [
        ("777", (True, False, False)),
        ("1777", (True, False, True)),
        ("4755", (False, True, False)),
        ("o+w", (True, False, False)),
        ("a+rwx", (True, False, False)),
        ("u+s", (False, True, False)),
        ("g-w", (False, False, False)),
        ("+t", (False, False, True)),
    ],
)
def test_mode_bits(mode: str, bits: tuple[bool, bool, bool]) -> None:
    assert mode_bits(mode) == bits


def test_mode_changes() -> None:
    (change,) = effects_of("chmod -R 777 /var/www").steps[0].modes
    assert change == ModeChange("chmod", ("/var/www",), True, "777", True, False, False)
    (change,) = effects_of("chown --reference=/etc/a /etc/b").steps[0].modes
    assert change == ModeChange("chown", ("/etc/b",), False)
    (change,) = effects_of("chown -R www-data: /srv").steps[0].modes
    assert (change.paths, change.recursive, change.mode) == (("/srv",), True, None)


def test_symbolic_mode_looking_like_an_option() -> None:
    (change,) = effects_of("chmod -w a b").steps[0].modes
    assert change.mode == "-w" and not change.world_writable


def test_writes() -> None:
    eff = effects_of("chmod -R o+w /srv/data").steps[0]
    assert [(w.value, w.mode) for w in eff.writes] == [("/srv/data", "tree"), ("/srv/data", "abs")]
