"""The native snapshot helper (testbed/probes/native): built here, it must give what the
script's awk filter, its find walk and its grep of /proc/sys give, byte for byte — on
crafted filter input (every verb and mode, caps, errors, seeded random streams), on
planted trees and on this host's real /etc, and through the script's own tests run again
with the helper."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testbed.probes import SCRIPT_PATH, parse_snapshot
from testbed.probes.native import binary_name, helper_binary
from tests.unit.probes import test_script
from tests.unit.probes.test_script import SYSTEM_PATH, TREE_PROBES, _tree_env, tricky  # noqa: F401

NONCE = "0123abcd-4567-89ef-0123-456789abcdef"
STAT_X = 'regular file\t644\t0\t0\t0\t0\t5\t1\t"/x"\n'


@pytest.fixture(scope="module")
def native(native_helper: Path) -> Path:
    return native_helper


def _awk_filter(tmp_path: Path) -> Path:
    """The script's own awk filter program (TB_FILTER), as the script writes it."""
    text = SCRIPT_PATH.read_text()
    program = re.search(r"^TB_FILTER='(.*?)'$", text, re.S | re.M)  # the program holds no quote
    assert program is not None
    path = tmp_path / "filter.awk"
    path.write_text(program.group(1) + "\n")
    return path


def _both(native: Path, awk: Path, stream: bytes) -> tuple[bytes, bytes]:
    env = {**os.environ, "LC_ALL": "C"}
    a = subprocess.run(["awk", "-f", str(awk)], input=stream, capture_output=True, env=env, check=True).stdout
    n = subprocess.run([str(native), "filter"], input=stream, capture_output=True, env=env, check=True).stdout
    return a, n


def _ctl(*words: str) -> str:
    return "\036" + NONCE + " " + " ".join(words) + "\n"


def _files(tmp_path: Path) -> dict[str, Path]:
    """Inputs the filter reads itself (verb c and the walk's result files)."""
    f = {
        "units": "● nginx.service loaded failed failed A web server\n"
        "cron.service loaded active running Cron\n"
        "x.timer loaded active waiting T\nshort line\n  sshd.socket loaded active listening S\n",
        "shadow": "root:$6$abc:19000:0:99999:7:::\nalice::19000:0:99999:7:::\nbob:!:1:2:3:4:5:6:\nshort\n",
        "lines": "# comment\n\n  ok line\n\t# indented comment\n#include /x\n@includedir /y\n#10 x\nlast no newline",
        "stat": "/proc/stat\ncpu  1 2 3\nbtime 1700000000\nbtime x\n",
        "sysctl": "/proc/sys/net/ipv4/ip_forward:1\n/proc/sys/kernel/x:a\n/proc/sys/kernel/x:b\n"
        "/proc/sys/net/ipv4/conf/eth0.10/rp_filter:2\n/proc/sys/net/ipv6/neigh/lo/retrans_time:1\n"
        "/other:3\nno colon here\n:lead\n/proc/sys/:empty\n",
        "long": ("y" * 5000) + "\n" + "short\n" * 3,
        "err": "".join(f"err {i}\n" for i in range(30)) + ("e" * 700) + "\n",
        "nul": "a\0b\nc\n",
    }
    paths = {}
    for name, text in f.items():
        p = tmp_path / name
        p.write_bytes(text.encode("utf-8", "surrogateescape"))
        paths[name] = p
    root = tmp_path / "root"
    (root / "etc" / "systemd" / "system" / "multi-user.target.wants").mkdir(parents=True)
    walk = [
        f"{root}/etc\t0\td\t755\t0\t0\t4096\t1700000000.5000000000\t1700000000.5000000000\t\t{root}/etc",
        f"{root}/etc\t1\tf\t644\t0\t0\t12\t1700000001.0000000000\t1.0\t\t{root}/etc/passwd",
        f"{root}/etc\t1\tf\t600\t4242\t4243\t0\t1700000002.0\t1.0\t\t{root}/etc/empty",
        f"{root}/etc\t1\tl\t777\t0\t0\t9\t1700000003.0\t1.0\t/dev/null\t{root}/etc/systemd/system/x.service",
        f"{root}/etc\t2\tl\t777\t0\t0\t9\t1.0\t1.0\t/lib/a\t{root}/etc/systemd/system/multi-user.target.wants/a.service",
        f"{root}/etc\t1\tl\t777\t0\t0\t9\t1.0\t1.0\t/lib/b\t{root}/etc/systemd/system/b.service",
        f'{root}/etc\t1\tf\t644\t0\t0\t5\t1.0\t1.0\t\t{root}/etc/q "x\\y"\x01\u00e9',
        f"{root}/srv\t0\td\t755\t0\t0\t4096\t1.0\t1.0\t\t{root}/srv",
        f"{root}/srv\t1\td\t755\t0\t0\t4096\t1.0\t1.0\t\t{root}/srv/.hidden",
        f"{root}/srv\t2\tf\t644\t0\t0\t5\t1.0\t1.0\t\t{root}/srv/.hidden/in",
        f"{root}/srv\t1\tf\t644\t0\t0\t5\t1.0\t1.0\t\t{root}/srv/app.py",
        f"{root}/srv\t2\tf\t644\t0\t0\t5\t1.0\t1.0\t\t{root}/srv/node_modules/x",
        f"{root}/srv\t1\tp\t644\t0\t0\t0\t1.0\t1.0\t\t{root}/srv/fifo",
        f"{root}/home\t0\td\t755\t0\t0\t4096\t1.0\t1.0\t\t{root}/home",
        f"{root}/home\t2\tf\t600\t0\t0\t300\t1.0\t1.0\t\t{root}/home/u/id_rsa",
        f"{root}/home\t2\tf\t600\t0\t0\t300\t1.0\t1.0\t\t{root}/home/u/notes.txt",
        f"{root}/home\t3\tf\t600\t0\t0\t300\t1.0\t1.0\t\t{root}/home/u/.cache/id_rsa",
        "bad line without enough fields",
    ]
    (tmp_path / "walk").write_text("\n".join(walk) + "\n", "utf-8", "surrogateescape")
    sha = "a" * 64
    hashes = [
        f"{sha}  {root}/etc/passwd",
        f"\\{sha}  {root}/etc/q \"x\\\\y\"\x01\u00e9",
        f"{sha}  {root}/home/u/id_rsa",
        f"{root}/home/u/id_rsa:-----BEGIN RSA PRIVATE KEY-----",
        f"{root}/home/u/notes.txt:x-----BEGIN ENCRYPTED PRIVATE KEY-----",
        f"{root}/home/u/notes.txt:-----BEGIN CERTIFICATE-----",
        f"{root}/unknown:-----BEGIN CERTIFICATE-----",
        "garbage",
    ]
    (tmp_path / "hash").write_text("\n".join(hashes) + "\n", "utf-8", "surrogateescape")
    (tmp_path / "walkerr").write_text(f"find: '{root}/srv/x': Permission denied\nsha256sum: /elsewhere: gone\n")
    paths["root"] = root
    return paths


def _crafted(tmp_path: Path) -> bytes:
    f = _files(tmp_path)
    root = f["root"]
    w = tmp_path
    s = f"@@testbed-snapshot v=1 nonce={NONCE} pid=1 up=1.00 native=0@@\n"
    s += _ctl("R", "E", f"{root}/etc") + _ctl("R", "A", f"{root}/srv") + _ctl("R", "S", f"{root}/home")
    s += _ctl("R", "A", f"{root}/home") + _ctl("R", "T", f"{root}/missing") + _ctl("R", "skip", f"{root}/srv/skip")
    s += _ctl("N", "names", "*.pem", "id_rsa", "id_?sa", "credentials*")
    s += _ctl("N", "prune", ".cache", "node_modules") + _ctl("N", "deps", "node_modules")
    s += _ctl("w", str(w / "walk"), str(w / "hash"), str(w / "walkerr"), "0")
    s += f"@@testbed-probe {NONCE} one up=1.00@@\n"
    for name, max_, mode, body in [
        ("plain", "3", "-", "a\nb\nc\nd\n"),
        ("uniq", "10", "u", "a\na\nb\na\n"),
        ("stat", "10", "S", STAT_X + "few\tfields\nregular file\t644\t1\t2\t3\t3\t1\t1\t\"/y\"\n"),
        ("mixed", "10", "X", STAT_X + "b" * 64 + "  /x\ncontinued\n"),
        ("units_f", "10", "Ufailed", None),
        ("units_s", "10", "Uservice", None),
        ("units_t", "10", "Utimer", None),
        ("shadow", "10", "s", None),
        ("lines", "10", "Llines", None),
        ("lall", "10", "Lall", None),
        ("sudo", "10", "Lsudo", None),
        ("long", "10", "-", None),
        ("nul", "10", "-", None),
    ]:
        s += _ctl("p", name, max_, mode)
        if body is not None:
            s += body
        else:
            src = {"units_f": "units", "units_s": "units", "units_t": "units", "lall": "lines", "sudo": "lines"}
            s += _ctl("c", str(f[src.get(name, name)]))
        if name == "mixed":
            s += _ctl("r")
        s += _ctl("e", name, "0")
    s += _ctl("p", "missing", "10", "-") + _ctl("c", str(tmp_path / "nope")) + _ctl("e", "missing", "0")
    s += _ctl("p", "errs", "10", "-") + "out\n" + _ctl("e", "errs", "3", str(f["err"]))
    s += "unterminated" + _ctl("p", "after", "5", "-") + "x" + _ctl("e", "after", "0")
    s += f"@@testbed-end {NONCE} one rc=0 up=2.00@@\n"
    s += f"@@testbed-probe {NONCE} two up=2.00@@\n"
    s += _ctl("p", "sysctl", "100", "g") + _ctl("c", str(f["sysctl"])) + _ctl("e", "sysctl", "0")
    for verb in ("W", "H", "G"):
        for letter in ("E", "A", "S", "T"):
            s += _ctl("p", f"{verb}{letter}", "100", "-") + _ctl(verb, letter) + _ctl("e", f"{verb}{letter}", "0")
    s += _ctl("p", "F", "10", "-") + _ctl("F", f"{root}/etc/passwd") + _ctl("F", f"{root}/nowhere")
    s += _ctl("e", "F", "0")
    s += _ctl("p", "h", "10", "-") + _ctl("h", f"{root}/etc/passwd") + _ctl("h", f"{root}/none") + _ctl("e", "h", "0")
    s += _ctl("p", "Z", "10", "-") + _ctl("Z", f"{root}/etc/systemd/system") + _ctl("e", "Z", "0")
    s += _ctl("p", "P", "100", "-") + _ctl("P", "/proc/1", "/proc/999999999") + _ctl("e", "P", "0")
    s += _ctl("p", "P0", "100", "-") + _ctl("P", "/proc/999999998") + _ctl("e", "P0", "0")
    s += _ctl("p", "b", "10", "b") + "literal\n" + _ctl("c", str(f["stat"])) + _ctl("e", "b", "0")
    s += f"@@testbed-end {NONCE} two rc=0 up=3.00@@\n"
    s += f"@@testbed-done {NONCE} probes=2 up=3.00@@\n"
    return s.encode("utf-8", "surrogateescape")


def _drop_clock(out: bytes) -> bytes:
    """clock= comes from /proc/uptime, read a moment apart by the two filters."""
    return re.sub(rb"^clock=\d+$", b"clock=N", out, flags=re.M)


def test_the_native_filter_gives_the_awk_filters_output_for_every_verb_and_mode(native: Path, tmp_path: Path) -> None:
    a, n = _both(native, _awk_filter(tmp_path), _crafted(tmp_path))
    assert b"@@testbed-truncated" in a and b"@@testbed-stderr" in a and b"UNKNOWN" in a  # the cases bite
    assert b"secrets" not in a  # (sanity: nothing here names a probe the script has)
    assert _drop_clock(n) == _drop_clock(a)


def test_the_native_filter_matches_awk_on_seeded_random_streams(native: Path, tmp_path: Path) -> None:
    awk = _awk_filter(tmp_path)
    f = _files(tmp_path)
    pieces = [
        "plain line\n",
        "x" * 4100 + "\n",
        "tab\there\n",
        f"@@testbed-probe {NONCE} p up=1@@\n",
        f"@@testbed-end {NONCE} p rc=0 up=2@@\n",
        "@@testbed-end other rc=0 up=2@@\n",
        "no newline",
        "caf\u00e9 \x01\x7f\n",
        "\n",
    ]
    modes = ["-", "u", "S", "X", "g", "b", "Ufailed", "Uservice", "s", "Llines", "Lall", "Lsudo", ""]
    for seed in range(40):
        rng = random.Random(seed)
        s = f"@@testbed-snapshot v=1 nonce={NONCE} pid=1 up=1@@\n"
        for _ in range(rng.randint(5, 60)):
            r = rng.random()
            if r < 0.15:
                s += _ctl("p", f"part{rng.randint(0, 9)}", str(rng.randint(0, 6)), rng.choice(modes))
            elif r < 0.25:
                s += _ctl("e", f"part{rng.randint(0, 9)}", rng.choice(["0", "1", "2"]))
            elif r < 0.35:
                s += _ctl("c", str(rng.choice([f["units"], f["lines"], f["sysctl"], f["shadow"], f["long"]])))
            elif r < 0.38:
                s += _ctl("r")
            else:
                s += rng.choice(pieces)
        a, n = _both(native, awk, s.encode("utf-8", "surrogateescape"))
        assert n == a, f"seed {seed}"


def test_native_sysctl_reads_a_tree_as_grep_does(native: Path, tmp_path: Path) -> None:
    tree = tmp_path / "sys"
    (tree / "net" / "ipv4" / "conf" / "eth0.10").mkdir(parents=True)
    (tree / "kernel").mkdir()
    (tree / "net" / "ipv4" / "ip_forward").write_text("1\n")
    (tree / "net" / "ipv4" / "conf" / "eth0.10" / "rp_filter").write_text("2\n")
    (tree / "kernel" / "multi").write_text("a b\nc\n\nlast")
    (tree / "kernel" / "empty").write_text("")
    (tree / "kernel" / "link").symlink_to(tree / "kernel" / "multi")
    env = {**os.environ, "LC_ALL": "C"}
    grep = subprocess.run(["grep", "-rs", "", str(tree)], capture_output=True, env=env)
    mine = subprocess.run([str(native), "sysctl", str(tree)], capture_output=True, env=env)
    assert mine.returncode == grep.returncode
    assert sorted(mine.stdout.splitlines()) == sorted(grep.stdout.splitlines())
    assert b"kernel/multi:last" in mine.stdout and b"link" not in mine.stdout
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert subprocess.run([str(native), "sysctl", str(empty)], capture_output=True).returncode == 1
    missing = subprocess.run([str(native), "sysctl", str(tmp_path / "gone")], capture_output=True)
    assert missing.returncode == 2 and missing.stdout == b""


def _normalize(out: str) -> str:
    """What differs between two runs a moment apart: nonce, times, pids."""
    out = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "NONCE", out)
    out = re.sub(r"up=[0-9.]+", "up=X", out)
    out = re.sub(r"pid=\d+", "pid=X", out)
    return re.sub(r"native=[01]", "native=X", out)


def _script(env: dict[str, str], *probes: str) -> str:
    out, _ = test_script._run_script(["sh"], *probes, env=env)
    return out


def test_the_script_gives_the_same_output_with_and_without_the_helper(
    native: Path, tricky: dict[str, Path], tmp_path: Path  # noqa: F811
) -> None:
    """Planted trees (quotes, control bytes, links, big and deep files, pruned directories,
    PEM markers) and this host's /etc: every tree probe, byte for byte."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hidden = tricky["tmp"] / ".harness"
    hidden.mkdir()
    (hidden / "tool").write_text("never listed")
    env = {**_tree_env(tricky, bindir), "TESTBED_PROBE_HIDE": str(hidden)}
    probes = (*TREE_PROBES, "users", "os")
    plain = _script(env, *probes)
    fast = _script({**env, "TESTBED_PROBE_NATIVE": str(native)}, *probes)
    assert " native=0@@" in plain and " native=1@@" in fast
    assert _normalize(fast) == _normalize(plain)
    assert str(hidden) not in plain
    parsed = parse_snapshot(fast)
    assert parsed["_meta"]["native"] is True and parsed["_meta"]["complete"] is True
    assert str(tricky["home"] / "u" / ".ssh" / "id_rsa") in parsed["secrets"]["files"]


def test_the_helper_is_not_used_where_it_cannot_run_or_the_portable_path_is_asked(native: Path, tmp_path: Path) -> None:
    not_exec = tmp_path / "tbprobe"
    not_exec.write_bytes(native.read_bytes())
    not_exec.chmod(0o600)
    assert " native=0@@" in _script({"TESTBED_PROBE_NATIVE": str(not_exec)}, "os")
    assert " native=0@@" in _script({"TESTBED_PROBE_NATIVE": str(tmp_path / "absent")}, "os")
    assert " native=0@@" in _script({"TESTBED_PROBE_NATIVE": str(native), "TESTBED_PROBE_PORTABLE": "1"}, "os")


# The script's own tests, run again with the helper in the environment: each of them must
# pass as it is (their assertions hold for either filter and walk).
_AGAIN: dict[str, Callable[[Path, Any], None]] = {
    "caps": lambda t, _: test_script.test_filter_caps_lines_keeps_stderr_and_frames_unterminated_output(["sh"], t),
    "units": lambda t, _: test_script.test_services_and_timers_come_from_one_list_units_run(["sh"], t),
    "sysctl": lambda t, _: test_script.test_sysctl_values_come_from_proc_sys(),
    "ps": lambda t, _: test_script.test_the_filter_reads_the_process_table_as_ps_prints_it(),
    "owners": lambda t, _: test_script.test_owner_names_come_from_the_filter_and_etc_is_walked_once(["sh"], t),
    "host": lambda t, _: test_script.test_real_run_on_this_host(),
    "dpkg": lambda t, _: test_script.test_dpkg_answers_are_kept_while_its_database_is_unchanged(t),
    "bounded": lambda t, _: test_script.test_the_walk_is_bounded_and_says_which_sets_it_cut(t),
}


@pytest.mark.parametrize("name", sorted(_AGAIN))
def test_the_script_tests_pass_with_the_helper(
    name: str, native: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTBED_PROBE_NATIVE", str(native))
    _AGAIN[name](tmp_path, None)


def test_helper_binary_builds_once_and_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("needs a C compiler to build the native helper")
    monkeypatch.setenv("TESTBED_NATIVE_PROBE", "0")
    assert helper_binary(tmp_path / "off") is None
    monkeypatch.delenv("TESTBED_NATIVE_PROBE")
    built = helper_binary(tmp_path / "tools")
    assert built is not None and built.name == binary_name() and os.access(built, os.X_OK)
    assert subprocess.run([str(built), "version"], capture_output=True, check=True).stdout == b"tbprobe 1\n"
    assert helper_binary(tmp_path / "tools") == built
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert helper_binary(tmp_path / "nocc") is None, "no compiler: no helper, and no exception"


def test_native_authkeys_lists_what_the_scripts_awk_and_loop_list(native: Path, tmp_path: Path) -> None:
    """Patterns with %h %u %U %%, relative and absolute, `none`, a keyword in any case and
    repeated slashes, over this host's /etc/passwd; only existing regular files count."""
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("root.keys", "0.uid", "daemon.keys"):
        (keys / name).write_text("k\n")
    (keys / "nobody.keys").mkdir()  # a directory is not a keys file
    main = tmp_path / "sshd_config"
    main.write_text("# comment\nPort 22\n")
    extra = tmp_path / "extra.conf"
    extra.write_text(
        f"  authorizedKEYSfile {keys}//%u.keys none {keys}/%U.uid\t.ssh/authorized_keys\n"
        f"AuthorizedKeysFile %h/../..{keys}/%%u-literal\n"
    )
    (keys / "%u-literal").write_text("k\n")
    text = SCRIPT_PATH.read_text()
    program = re.search(r"awk -F: -v pw=/etc/passwd '(.*?)' \"\$@\" /etc/passwd", text, re.S)
    assert program is not None
    env = {**os.environ, "LC_ALL": "C"}
    paths = subprocess.run(
        ["awk", "-F:", "-v", "pw=/etc/passwd", program.group(1), str(main), str(extra), "/etc/passwd"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.splitlines()
    expected: list[str] = []
    for p in [*paths, "/root/.ssh/authorized_keys", "/root/.ssh/authorized_keys2"]:
        if os.path.isfile(p) and p not in expected:
            expected.append(p)
    got = subprocess.run(
        [str(native), "authkeys", str(main), str(extra)], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert got == expected
    assert f"{keys}/root.keys" in got and f"{keys}/0.uid" in got and not any("nobody" in g for g in got)


def test_native_timeout_behaves_as_coreutils_timeout(native: Path) -> None:
    def both(*argv: str) -> tuple[int, int]:
        env = {**os.environ, "LC_ALL": "C"}
        a = subprocess.run(["timeout", *argv], capture_output=True, env=env).returncode
        n = subprocess.run([str(native), "timeout", *argv], capture_output=True, env=env).returncode
        return a, n

    for argv in (["5", "true"], ["5", "sh", "-c", "exit 3"], ["1", "sleep", "5"], ["5", "/nonexistent/x"],
                 ["5", "/etc/passwd"], ["5", "sh", "-c", "kill -9 $$"]):
        a, n = both(*argv)
        assert a == n, (argv, a, n)
