"""`wrappers.launch_of`: how a wrapper starts another command."""

from __future__ import annotations

import pytest

from testbed.analysis.command.wrappers import launch_of


@pytest.mark.parametrize(
    ("argv", "own", "execs"),
    [
        (("sudo", "-u", "www", "-E", "make"), ("sudo", "-u", "www", "-E"), (("make",),)),
        (("sudo", "VAR=1", "env"), ("sudo", "VAR=1"), (("env",),)),
        (("env", "-u", "X", "A=1", "cmd", "-x"), ("env", "-u", "X", "A=1"), (("cmd", "-x"),)),
        (("timeout", "-s", "KILL", "5", "curl", "x"), ("timeout", "-s", "KILL", "5"), (("curl", "x"),)),
        (("nice", "-10", "tar", "c"), ("nice", "-10"), (("tar", "c"),)),
        (("xargs", "-n1", "rm"), ("xargs", "-n1"), (("rm",),)),
        (("xargs",), ("xargs",), (("echo",),)),
        (("ip", "netns", "exec", "ns1", "ip", "a"), ("ip", "netns", "exec", "ns1"), (("ip", "a"),)),
        (("docker", "exec", "-it", "web", "sh"), ("docker", "exec", "-it", "web"), (("sh",),)),
        (("kubectl", "exec", "pod", "--", "ls"), ("kubectl", "exec", "pod"), (("ls",),)),
        (("chroot", "/mnt", "passwd"), ("chroot", "/mnt"), (("passwd",),)),
    ],
)
def test_exec_wrappers(argv: tuple[str, ...], own: tuple[str, ...], execs: tuple[tuple[str, ...], ...]) -> None:
    launch = launch_of(argv)
    assert launch is not None
    assert (launch.own, launch.exec_argv) == (own, execs)


@pytest.mark.parametrize(
    ("argv", "script", "label"),
    [
        (("bash", "-c", "rm -rf /x"), "rm -rf /x", "bash -c"),
        (("su", "-", "root", "-c", "id"), "id", "su -c"),
        (("ssh", "-i", "k", "host", "ls", "-la"), "ls -la", "ssh"),
        (("watch", "-n", "1", "df", "-h"), "df -h", "watch"),
        (("eval", "rm", "-rf", "x"), "rm -rf x", "eval"),
        (("env", "-S", "ls -l"), "ls -l", "env"),
        (("ansible", "all", "-m", "shell", "-a", "reboot"), "reboot", "ansible"),
    ],
)
def test_script_wrappers(argv: tuple[str, ...], script: str, label: str) -> None:
    launch = launch_of(argv)
    assert launch is not None
    assert (launch.scripts, launch.label) == ((script,), label)


@pytest.mark.parametrize(
    "argv", [("bash",), ("bash", "-s"), ("sudo", "-i"), ("su", "-"), ("ssh", "host"), ("at", "now")]
)
def test_stdin_shells(argv: tuple[str, ...]) -> None:
    launch = launch_of(argv)
    assert launch is not None and launch.stdin_script and not launch.exec_argv


@pytest.mark.parametrize(
    "argv", [("ls", "-l"), ("bash", "script.sh"), ("sudo", "-l"), ("command", "-v", "ls"), ("ssh", "-N", "h")]
)
def test_non_launching(argv: tuple[str, ...]) -> None:
    launch = launch_of(argv)
    assert launch is None or not (launch.exec_argv or launch.scripts or launch.stdin_script)
