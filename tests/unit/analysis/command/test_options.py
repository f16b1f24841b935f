"""`options.scan`: the one getopt-style scanner."""

from __future__ import annotations

from testbed.analysis.command.options import scan


def test_clusters_values_and_permutation() -> None:
    got = scan(["-xzf", "a.tgz", "dir", "-C", "/srv", "--exclude=*.o", "--file", "b"], "fC", ("file",))
    assert got.flags == {"-x", "-z", "-f", "-C", "--exclude", "--file"}
    assert got.values == {"-f": ("a.tgz",), "-C": ("/srv",), "--exclude": ("*.o",), "--file": ("b",)}
    assert got.operands == ("dir",)
    assert got.written == ("-xzf", "-C", "--exclude=*.o", "--file")


def test_attached_values_and_repeats() -> None:
    got = scan(["-uroot", "-u", "bob", "-o", "a", "-o", "b"], "uo")
    assert got.last("-u") == "bob"
    assert got.all("-o", "-u") == ["a", "b", "root", "bob"]
    assert got.last("-x") is None and not got.has("-x")


def test_double_dash_and_lone_dash() -> None:
    got = scan(["-r", "--", "-f", "-"])
    assert got.flags == {"-r"}
    assert got.operands == ("-f", "-")
    assert got.index == 2


def test_stop_at_operand() -> None:
    got = scan(["-u", "root", "systemctl", "-f", "stop"], "u", stop_at_operand=True)
    assert got.index == 2
    assert got.operands == ("systemctl", "-f", "stop")
    assert got.flags == {"-u"}


def test_value_option_at_the_end_takes_nothing() -> None:
    got = scan(["-o"], "o", ("out",))
    assert got.flags == {"-o"} and got.values == {}
    assert scan(["--out"], "", ("out",)).values == {}
