"""The grammar registry: option specs, dispatch, init scripts."""

from __future__ import annotations

import pytest

from testbed.analysis.attribution import command_effects
from testbed.analysis.command import Effects, effects_of, tools
from testbed.analysis.command.tools import BY_NAME, FIRST, LAST, is_init_script, spec_of, trust
from testbed.analysis.impact import classify


def test_option_specs() -> None:
    assert spec_of("systemctl")[0] == "tpPsHMno"
    assert spec_of("no-such-tool") == ("", ())
    assert spec_of("shred") == ("ns", ("iterations", "size", "random-source"))


def test_every_grammar_is_callable_and_generic_passes_run_for_all() -> None:
    assert all(callable(g) for gs in BY_NAME.values() for g in gs)
    assert trust.option in FIRST and trust.short_force in LAST
    assert len(BY_NAME["tee"]) == 2  # files (writes) and power (sysrq)


def test_init_scripts_are_recognised_by_path() -> None:
    assert is_init_script("/etc/init.d/nginx") and is_init_script("/etc/rc.d/sshd")
    assert not is_init_script("nginx") and not is_init_script("/etc/init.d/")
    eff = effects_of("/etc/init.d/ufw stop").steps[0]
    assert [op.tool for op in eff.services] == ["init.d"]
    assert eff.firewall == []  # the script is not the ufw tool


def test_a_grammar_failing_leaves_the_line_failed_and_every_consumer_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(eff: Effects, cwd: str | None) -> None:
        raise IndexError("grammar bug")

    monkeypatch.setitem(tools.BY_NAME, "frobnicate", (boom,))
    line = effects_of("frobnicate --x && rm -rf /srv/old")
    assert line.failed and line.steps == ()
    assert classify("frobnicate --x && rm -rf /srv/old") == []
    assert command_effects("frobnicate --x && rm -rf /srv/old").local.writes == []
