"""Shared line formats: GNU/busybox stat lines and sha256sum output."""

from __future__ import annotations

from testbed.probes.parsers.formats import parse_sha256_lines, parse_stat_lines


def test_stat_lines_gnu_quoting_busybox_and_continuations() -> None:
    unparsed: list[str] = []
    lines = [
        'regular file\t644\t0\troot\t0\troot\t5\t10\t"/tmp/caf\\303\\251 \\"q\\""',
        'symbolic link\t777\t0\troot\t0\troot\t4\t10\t"/tmp/l" -> "/etc/x y"',
        "symbolic link\t777\t0\troot\t0\troot\t4\t10\t'/tmp/bb' -> '/etc'",
        "regular empty file\t600\t1000\talice\t1000\talice\t0\t10\t/tmp/first",
        "second line of the name",
        "weird line",
    ]
    out = parse_stat_lines(lines[:5], unparsed)
    assert out['/tmp/café "q"']["mode"] == "0644"
    assert out["/tmp/l"]["target"] == "/etc/x y"
    assert out["/tmp/bb"] == {**out["/tmp/bb"], "type": "symlink", "target": "/etc"}
    assert out["/tmp/first\nsecond line of the name"]["owner"] == "alice"
    assert unparsed == []
    parse_stat_lines(lines[5:], unparsed)
    assert unparsed == ["weird line"]


def test_sha256_lines_gnu_escape_and_busybox_continuation() -> None:
    h = "a" * 64
    out = parse_sha256_lines([f"\\{h}  /etc/a\\nb", f"{h}  /etc/c d", f"{h}  /etc/e", "f"], [])
    assert out == {"/etc/a\nb": h, "/etc/c d": h, "/etc/e\nf": h}
