"""File tool grammars: what rm, cp, mv, mkdir, touch, tee, dd, find … write or remove."""

from __future__ import annotations

from testbed.analysis.command import Effects, effects_of
from testbed.analysis.command.effects import Removal


def step(text: str) -> Effects:
    return effects_of(text).steps[-1]


def writes(text: str) -> list[tuple[str, str, str]]:
    return [(w.value, w.mode, w.verb) for w in step(text).writes]


def test_rm_is_a_removal_in_any_spelling() -> None:
    for text in ("rm -rf /srv/x", "rm -fR /srv/x", "rm /srv/x -r -f", "rm --force --recursive /srv/x"):
        assert step(text).removals == [Removal("rm", ("/srv/x",), True, True)]
    assert step("rm -r x").removals == [Removal("rm", ("x",), True, False)]
    assert step("rm -- -rf").removals == [Removal("rm", ("-rf",), False, False)]
    assert writes("rm -r /srv/x") == [("/srv/x", "tree", "rm"), ("/srv/x", "abs", "rm")]


def test_copies() -> None:
    assert writes("cp app.conf /etc/app/") == [("/etc/app", "abs", "cp"), ("/etc/app/app.conf", "abs", "cp")]
    assert writes("cp -t /opt a") == [("/opt", "abs", "cp"), ("/opt/a", "abs", "cp")]
    assert ("/tmp/a", "abs", "mv (source)") in writes("mv /tmp/a /srv/b")
    assert writes("scp x host:/tmp/") == []
    assert writes("install -d /opt/a /opt/b") == [("/opt/a", "abs", "install"), ("/opt/b", "abs", "install")]


def test_touch_family() -> None:
    assert [w[0] for w in writes("mkdir -p /a/b/c")] == ["/a", "/a/b", "/a/b/c"]
    assert writes("truncate -s 0 /var/log/x") == [("/var/log/x", "abs", "truncate")]
    assert writes("touch -d yesterday f") == [("f", "suffix", "touch")]
    assert writes("setfacl -m u:bob:r /srv/f") == [("/srv/f", "abs", "setfacl")]
    assert writes("shred -n 3 -u /tmp/k") == [("/tmp/k", "abs", "shred")]


def test_tee_dd_find() -> None:
    assert writes("tee -a /etc/hosts") == [("/etc/hosts", "abs", "tee")]
    assert writes("dd if=/dev/zero of=/tmp/img bs=1M") == [("/tmp/img", "abs", "dd")]
    assert step("find -L /tmp /var/tmp -mtime +7 -delete").removals == [
        Removal("find", ("/tmp", "/var/tmp"), True, True)
    ]
    assert step("find . -name x").removals == []
