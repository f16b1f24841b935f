"""Path words: normalisation, essential and system paths, devices, braces, writes."""

from __future__ import annotations

import pytest

from testbed.analysis.command.effects import Write
from testbed.analysis.command.paths import (
    brace_expand,
    is_block_device,
    is_root_or_essential,
    is_system_path,
    normalize_path,
    path_write,
)


def test_normalize_path() -> None:
    assert normalize_path("//usr/./bin/") == "/usr/bin"
    assert normalize_path("/tmp/../etc/*") == "/etc/*"
    assert normalize_path("rel/x") == "rel/x"


@pytest.mark.parametrize(("path", "yes"), [("/", True), ("/*", True), ("/usr/", True), ("/etc/*", True)])
def test_root_or_essential(path: str, yes: bool) -> None:
    assert is_root_or_essential(path) is yes
    assert not is_root_or_essential("/usr/local")
    assert not is_root_or_essential("/tmp")


def test_system_paths() -> None:
    assert is_system_path("/etc/ssh") and is_system_path("/opt/app")
    assert not is_system_path("/var/tmp/x") and not is_system_path("/home/bob") and not is_system_path("x")


@pytest.mark.parametrize("dev", ["/dev/sda", "/dev/vda1", "/dev/nvme0n1p2", "/dev/mapper/vg-root", "/dev/vg0/lv"])
def test_block_devices(dev: str) -> None:
    assert is_block_device(dev)
    assert not is_block_device("/dev/null") and not is_block_device("/dev/pts/0")


def test_brace_expand() -> None:
    assert brace_expand("/etc/x{,.bak}") == ["/etc/x", "/etc/x.bak"]
    assert len(brace_expand("{a,b}" * 10)) == 64


@pytest.mark.parametrize(
    ("word", "cwd", "expected"),
    [
        ("/etc//motd", None, Write("/etc/motd", "abs", "v")),
        ("conf", "/srv", Write("/srv/conf", "abs", "v")),
        ("conf", None, Write("conf", "suffix", "v")),
        ("~/.bashrc", None, Write(".bashrc", "home", "v")),
        ("$DIR/app.conf", None, Write("app.conf", "suffix", "v")),
        ("/dev/null", None, None),
        ("&2", None, None),
        ("https://x/y", None, None),
        ("../up", None, None),
    ],
)
def test_path_write(word: str, cwd: str | None, expected: Write | None) -> None:
    assert path_write(word, "v", cwd) == expected
    if expected is not None and expected.mode == "abs":
        assert path_write(word, "v", cwd, tree=True) == Write(expected.value, "tree", "v")
