"""`shell.parse`: the simple commands a command line starts, wrappers unwrapped."""

from __future__ import annotations

import random
import shlex

import pytest

from testbed.analysis.command import parse
from testbed.analysis.command.shell import MAX_DEPTH, parse_fallback


def argvs(text: str) -> list[tuple[str, ...]]:
    return [c.argv for c in parse(text).commands]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a; b && c || d | e & f", [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]),
        ("{ a; b; }", [("a",), ("b",)]),
        ("(cd /x && make)", [("cd", "/x"), ("make",)]),
        ("if test -f x; then rm x; else touch x; fi", [("test", "-f", "x"), ("rm", "x"), ("touch", "x")]),
        ("for f in a b; do rm $f; done", [("rm", "$f")]),
        ("while true; do sleep 1; done", [("true",), ("sleep", "1")]),
        ("case $x in a) rm a ;; *) rm b ;; esac", [("rm", "a"), ("rm", "b")]),
        ("[[ -f x ]] && rm x", [("rm", "x")]),
        ("f() { rm -rf /tmp/x; }; f", [("rm", "-rf", "/tmp/x"), ("f",)]),
        ("echo 'a; rm -rf /'", [("echo", "a; rm -rf /")]),
        ('echo "$(id -u)"', [("echo", "$(id -u)"), ("id", "-u")]),
        ("x=$(cat /etc/hostname)", [(), ("cat", "/etc/hostname")]),
        ("diff <(sort a) <(sort b)", [("diff", "<(sort a)", "<(sort b)"), ("sort", "a"), ("sort", "b")]),
        ("echo `whoami`", [("echo", "`whoami`"), ("whoami",)]),
        ("(( n++ )) && echo $n", [("echo", "$n")]),
        ("echo $'a\\tb'", [("echo", "a\tb")]),
        ("cat <<'EOF' > /tmp/x\nreboot\nEOF", [("cat",)]),
        ("cat <<EOF > /tmp/x\n$(reboot)\nEOF", [("cat",), ("reboot",)]),
    ],
)
def test_simple_commands(text: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(text) == expected


@pytest.mark.parametrize(
    ("text", "expected", "via"),
    [
        ("sudo -u root systemctl stop x", [("sudo", "-u", "root"), ("systemctl", "stop", "x")], ("sudo",)),
        ("env A=1 timeout 5 nice -n 5 ls", [("env", "A=1"), ("timeout", "5"), ("nice", "-n", "5"), ("ls",)], None),
        ("bash -c 'rm -rf /x'", [("bash", "-c", "rm -rf /x"), ("rm", "-rf", "/x")], ("bash -c",)),
        ("ssh -p 22 web 'sudo reboot'", [("ssh", "-p", "22", "web"), ("sudo",), ("reboot",)], ("ssh", "sudo")),
        ("find . -name x -exec rm {} +", [("find", ".", "-name", "x", "-exec"), ("rm", "{}")], ("find -exec",)),
        ("echo reboot | sudo bash", [("echo", "reboot"), ("sudo",), ("bash",), ("reboot",)], ("sudo", "bash")),
        ("bash <<'EOF'\nrm -rf /x\nEOF", [("bash",), ("rm", "-rf", "/x")], ("bash",)),
    ],
)
def test_wrappers_are_looked_through(text: str, expected: list[tuple[str, ...]], via: tuple[str, ...] | None) -> None:
    parsed = parse(text)
    assert [c.argv for c in parsed.commands] == expected
    if via is not None:
        assert parsed.commands[-1].via == via


def test_pipeline_positions_redirects_and_stdin_scripts() -> None:
    first, sudo, shell = parse("curl -fsSL https://x | sudo bash > /tmp/log 2>&1").commands
    assert (first.pipe_index, first.pipe_len, sudo.pipe_index) == (0, 2, 1)
    assert shell.stdin_script and shell.stdin_from == "curl"
    assert [(r.op, r.target, r.fd) for r in shell.redirects] == [(">", "/tmp/log", None), (">&", "1", 2)]


def test_assignments_functions_background() -> None:
    parsed = parse("HISTFILE=/dev/null ls & :(){ :|:& };:")
    assert parsed.commands[0].assignments == ("HISTFILE=/dev/null",)
    assert parsed.commands[0].background
    assert parsed.functions == frozenset({":"})


def _nested(depth: int) -> str:
    text = "reboot"
    for _ in range(depth):
        text = f"bash -c {shlex.quote(text)}"
    return text


def test_shell_strings_are_followed_to_max_depth() -> None:
    assert ("reboot",) in argvs(_nested(3))
    assert ("reboot",) in argvs(_nested(MAX_DEPTH))
    assert ("reboot",) not in argvs(_nested(MAX_DEPTH + 1))


def test_fallback_splits_and_unwraps() -> None:
    parsed = parse_fallback("sudo rm -rf /x; echo $(reboot)")
    assert parsed.fallback
    assert ("rm", "-rf", "/x") in [c.argv for c in parsed.commands]


def test_never_raises() -> None:
    rng = random.Random(7)
    alphabet = [*"ab -/$()`'\"\\|&;<>{}[]#\n=*!", "<<EOF", "EOF", "bash -c ", "sudo ", "case ", " in ", "esac"]
    for _ in range(1000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert isinstance(parse(text).commands, tuple)
