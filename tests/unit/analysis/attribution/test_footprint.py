"""Footprints of command lines: what attribution sees a command touch."""

from __future__ import annotations

import pytest

from testbed.analysis.attribution import CommandView, Target, attribute, command_effects


def view(text: str, seq: int = 1) -> CommandView:
    return CommandView(id=seq, seq=seq, node="n", phase="agent", source="agent", command=text, exit_code=0)


@pytest.mark.parametrize(
    ("text", "unit", "verb"),
    [
        ("/etc/init.d/nginx stop", "nginx.service", "stop"),
        ("sudo /etc/init.d/ssh restart", "ssh.service", "restart"),
        ("bash -c '/etc/rc.d/sshd start'", "sshd.service", "start"),
    ],
)
def test_init_scripts_run_by_path_act_on_their_unit(text: str, unit: str, verb: str) -> None:
    # bug fix: the init.d handler was never registered (handlers were looked up by name)
    assert command_effects(text).local.units == {unit: {verb}}
    got = attribute(Target("unit", unit), [view(text)], "n")
    assert (got.confidence, got.method) == ("high", f"acts on unit {unit} ({verb})")


def test_shred_u_removes_the_file_it_names() -> None:
    # bug fix: shred's -u (remove) was read as an option taking a value, hiding the file
    writes = command_effects("shred -u /home/app/.zsh_history").local.writes
    assert [(w.value, w.mode, w.verb) for w in writes] == [("/home/app/.zsh_history", "abs", "shred")]
    assert [(w.value, w.verb) for w in command_effects("shred -n 3 -u /tmp/k").local.writes] == [("/tmp/k", "shred")]


def test_cd_moves_the_working_directory_for_later_relative_paths() -> None:
    writes = command_effects("cd /srv/app && touch a && cd sub && touch b").local.writes
    assert [w.value for w in writes] == ["/srv/app/a", "/srv/app/sub/b"]
    assert [sc.argv for sc, _ in command_effects("cd /srv && touch a").parts] == [("touch", "a")]


def test_ssh_parts_are_remote() -> None:
    effects = command_effects("ssh db 'systemctl restart postgresql' && systemctl stop nginx")
    assert effects.remote.units == {"postgresql.service": {"restart"}}
    assert effects.local.units == {"nginx.service": {"stop"}}
