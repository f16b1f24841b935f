"""Wrappers: commands that launch another command or a shell script.

Contract: `launch_of(argv)` says how `argv` starts something else, or None for a plain
command: a `Launch` with the wrapper's own words (`own`, so its options can be judged,
e.g. `ssh -o StrictHostKeyChecking=no`), the commands it execs directly (`exec_argv`),
the shell source it runs (`scripts`), whether it runs its stdin as a script
(`stdin_script`) and a label for `SimpleCommand.via`. Never raises on odd argv.

Wrappers: `sudo`, `doas`, `pkexec`, `gosu`, `su-exec`, `su -c`, `runuser`, `env` (also
`env -S`), `nohup`, `timeout`, `nice`, `ionice`, `chrt`, `taskset`, `stdbuf`, `setsid`,
`time`, `command`, `builtin`, `exec`, `xargs`, `watch`, `flock`, `strace`, `ltrace`,
`unbuffer`, `systemd-run`, `nsenter`, `unshare`, `chroot`, `ip netns exec`, `busybox`,
`sshpass`, `docker|podman|nerdctl exec`, `kubectl|oc exec … --`, `lxc|incus exec … --`,
`lxc-attach … --`, `find -exec/-execdir/-ok`, `eval`, `at`/`batch`, `ansible -m
shell|command|raw -a`, `ssh`/`autossh HOST CMD…`, and the shells (`bash -c '…'`, `bash -s`,
`bash` reading stdin).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from testbed.analysis.command.options import scan
from testbed.analysis.command.parsed import ASSIGNMENT, SHELLS, command_name


@dataclass(frozen=True)
class Launch:
    """How a launcher starts something: `own` = its own argv part."""

    own: tuple[str, ...]
    exec_argv: tuple[tuple[str, ...], ...] = ()  # commands it execs directly
    scripts: tuple[str, ...] = ()  # shell source it runs
    stdin_script: bool = False  # it runs its stdin as a shell script
    label: str = ""


def _skip_assignments(args: Sequence[str], i: int) -> int:
    while i < len(args) and ASSIGNMENT.match(args[i]):
        i += 1
    return i


def _simple_exec(
    argv: tuple[str, ...], short_arg: str = "", long_arg: Sequence[str] = (), operands_before: int = 0
) -> Launch:
    """Launcher of the form `NAME [opts] [operand…] COMMAND…`."""
    opts = scan(argv[1:], short_arg, long_arg, stop_at_operand=True)
    start = 1 + opts.index + operands_before
    return Launch(argv[:start], (argv[start:],) if len(argv) > start else (), label=argv[0])


def _shell(argv: tuple[str, ...]) -> Launch | None:
    opts = scan(argv[1:], "oO", ("rcfile", "init-file"), stop_at_operand=True)
    operands = argv[1 + opts.index :]
    if "-c" in opts.flags:
        script = operands[0] if operands else ""
        return Launch(argv, scripts=(script,), label=f"{command_name(argv[0])} -c")
    if "-s" in opts.flags or not operands or operands[0] == "-":
        return Launch(argv, stdin_script=True, label=command_name(argv[0]))
    return None  # runs a script file we cannot see


def _sudo(argv: tuple[str, ...]) -> Launch | None:
    opts = scan(
        argv[1:],
        "ugpCDrtTUR",
        (
            "user",
            "group",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "chroot",
            "host",
        ),
        stop_at_operand=True,
    )
    no_exec = {
        "-l",
        "-v",
        "-K",
        "-V",
        "-e",
        "--list",
        "--validate",
        "--edit",
        "--version",
        "--help",
        "--remove-timestamp",
    }
    if opts.flags & no_exec:
        return Launch(argv, label="sudo")
    start = _skip_assignments(argv, 1 + opts.index)
    if start < len(argv):
        return Launch(argv[:start], (argv[start:],), label="sudo")
    shell = bool(opts.flags & {"-i", "-s", "--login", "--shell"})
    return Launch(argv, stdin_script=shell, label="sudo")


def _su(argv: tuple[str, ...]) -> Launch:
    opts = scan(
        argv[1:],
        "csgGwu",
        ("command", "shell", "group", "supp-group", "whitelist-environment", "user"),
    )
    command = opts.last("-c") or opts.last("--command")
    if command is not None:
        return Launch(argv, scripts=(command,), label=command_name(argv[0]) + " -c")
    if command_name(argv[0]) == "runuser" and ("-u" in opts.values or "--user" in opts.values):
        rest = scan(argv[1:], "csgGwu", ("user", "group"), stop_at_operand=True)
        start = 1 + rest.index
        return Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="runuser")
    return Launch(argv, stdin_script=True, label=command_name(argv[0]))


def _env(argv: tuple[str, ...]) -> Launch:
    opts = scan(argv[1:], "uCS", ("unset", "chdir", "split-string"), stop_at_operand=True)
    split = opts.last("-S") or opts.last("--split-string")
    if split is not None:
        return Launch(argv, scripts=(split,), label="env")
    start = _skip_assignments(argv, 1 + opts.index)
    if start < len(argv) and argv[start] == "-":
        start = _skip_assignments(argv, start + 1)
    return Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="env")


def _timeout(argv: tuple[str, ...]) -> Launch:
    return _simple_exec(argv, "sk", ("signal", "kill-after"), operands_before=1)


def _nice(argv: tuple[str, ...]) -> Launch:
    args = list(argv[1:])
    if args and re.fullmatch(r"-\d+", args[0]):
        return Launch(argv[:2], (argv[2:],) if len(argv) > 2 else (), label="nice")
    return _simple_exec(argv, "n", ("adjustment",))


def _pid_mode(short_arg: str, pid_flags: set[str], operands_before: int = 0) -> Callable[[tuple[str, ...]], Launch]:
    def launch(argv: tuple[str, ...]) -> Launch:
        opts = scan(argv[1:], short_arg, stop_at_operand=True)
        if opts.flags & pid_flags:
            return Launch(argv, label=argv[0])
        return _simple_exec(argv, short_arg, operands_before=operands_before)

    return launch


def _command(argv: tuple[str, ...]) -> Launch:
    opts = scan(argv[1:], stop_at_operand=True)
    if opts.flags & {"-v", "-V"}:
        return Launch(argv, label="command")
    return _simple_exec(argv)


def _xargs(argv: tuple[str, ...]) -> Launch:
    launch = _simple_exec(
        argv,
        "IdLnPsaE",
        ("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "max-lines", "process-slot-var"),
    )
    return launch if launch.exec_argv else Launch(argv, (("echo",),), label="xargs")


def _watch(argv: tuple[str, ...]) -> Launch:
    opts = scan(argv[1:], "nq", ("interval", "equexit"), stop_at_operand=True)
    rest = argv[1 + opts.index :]
    if not rest:
        return Launch(argv, label="watch")
    if opts.flags & {"-x", "--exec"}:
        return Launch(argv[: 1 + opts.index], (rest,), label="watch")
    return Launch(argv[: 1 + opts.index], scripts=(" ".join(rest),), label="watch")


def _flock(argv: tuple[str, ...]) -> Launch:
    args = argv[1:]
    i = 0
    lockfile_seen = False
    while i < len(args):
        a = args[i]
        if a in ("-c", "--command") and i + 1 < len(args):
            return Launch(argv[: i + 1], scripts=(args[i + 1],), label="flock")
        if a in ("-w", "--wait", "--timeout", "-E", "--conflict-exit-code"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        if lockfile_seen:
            return Launch(argv[: i + 1], (argv[i + 1 :],), label="flock")
        lockfile_seen = True
        i += 1
    return Launch(argv, label="flock")


def _ip(argv: tuple[str, ...]) -> Launch | None:
    opts = scan(argv[1:], "fbn", (), stop_at_operand=True)
    rest = argv[1 + opts.index :]
    if len(rest) >= 3 and rest[0] in ("netns", "netn", "net") and rest[1] in ("exec", "e"):
        start = 1 + opts.index + 3
        return Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="ip netns exec")
    return None


def _chroot_like(short_arg: str, long_arg: Sequence[str], operands_before: int) -> Callable[[tuple[str, ...]], Launch]:
    def launch(argv: tuple[str, ...]) -> Launch:
        got = _simple_exec(argv, short_arg, long_arg, operands_before)
        if got.exec_argv:
            return got
        return Launch(argv, stdin_script=True, label=argv[0])

    return launch


def _busybox(argv: tuple[str, ...]) -> Launch:
    if len(argv) > 1 and not argv[1].startswith("-"):
        return Launch(argv[:1], (argv[1:],), label="busybox")
    return Launch(argv, label="busybox")


def _container_exec(argv: tuple[str, ...]) -> Launch | None:
    """`docker|podman|nerdctl exec [opts] CONTAINER CMD…`."""
    if len(argv) < 2 or argv[1] != "exec":
        return None
    opts = scan(argv[2:], "eudw", ("env", "env-file", "user", "workdir", "detach-keys"), stop_at_operand=True)
    start = 2 + opts.index + 1
    interactive = bool(opts.flags & {"-i", "--interactive"})
    if start < len(argv):
        return Launch(argv[:start], (argv[start:],), label=f"{argv[0]} exec")
    return Launch(argv, stdin_script=interactive, label=f"{argv[0]} exec")


def _after_dashdash(sub: str) -> Callable[[tuple[str, ...]], Launch | None]:
    """`kubectl exec … -- CMD`, `lxc exec NAME -- CMD`, `lxc-attach … -- CMD`."""

    def launch(argv: tuple[str, ...]) -> Launch | None:
        if sub and (len(argv) < 2 or argv[1] != sub):
            return None
        if "--" not in argv:
            return Launch(argv, label=argv[0])
        k = argv.index("--")
        return Launch(argv[:k], (argv[k + 1 :],) if k + 1 < len(argv) else (), label=argv[0])

    return launch


def _find(argv: tuple[str, ...]) -> Launch | None:
    own: list[str] = []
    inner: list[tuple[str, ...]] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                inner.append(argv[i + 1 : j])
            own.append(a)
            i = j + 1
            continue
        own.append(a)
        i += 1
    if not inner:
        return None
    return Launch(tuple(own), tuple(inner), label="find -exec")


def _eval(argv: tuple[str, ...]) -> Launch:
    return Launch(argv[:1], scripts=(" ".join(argv[1:]),), label="eval")


def _at(argv: tuple[str, ...]) -> Launch:
    opts = scan(argv[1:], "qf", ())
    if opts.flags & {"-l", "-r", "-d", "-c", "-f", "-V"}:
        return Launch(argv, label=argv[0])
    return Launch(argv, stdin_script=True, label=argv[0])


def _ansible(argv: tuple[str, ...]) -> Launch | None:
    opts = scan(
        argv[1:],
        "maiuefMlTtkKbBPcCDv",
        ("module-name", "args", "inventory", "user", "extra-vars", "limit"),
    )
    module = opts.last("-m") or opts.last("--module-name") or "command"
    script = opts.last("-a") or opts.last("--args")
    if script is None or module.split(".")[-1] not in ("shell", "command", "raw"):
        return None
    return Launch(argv, scripts=(script,), label="ansible")


_SSH_ARG = "BbcDEeFIiJLlmOopQRSWw"
_SSH_FAMILY = frozenset({"ssh", "autossh"})


def _ssh(argv: tuple[str, ...]) -> Launch:
    opts = scan(argv[1:], _SSH_ARG + ("M" if command_name(argv[0]) == "autossh" else ""), stop_at_operand=True)
    host_at = 1 + opts.index
    if host_at >= len(argv):
        return Launch(argv, label="ssh")
    remote = argv[host_at + 1 :]
    own = argv[: host_at + 1]
    if remote:
        return Launch(own, scripts=(" ".join(remote),), label="ssh")
    if opts.flags & {"-N", "-V", "-G", "-O", "-W", "-Q"}:
        return Launch(own, label="ssh")
    return Launch(own, stdin_script=True, label="ssh")


def _sshpass(argv: tuple[str, ...]) -> Launch:
    return _simple_exec(argv, "pfdP")


_LAUNCHERS: dict[str, Callable[[tuple[str, ...]], Launch | None]] = {
    "sudo": _sudo,
    "doas": lambda a: _simple_exec(a, "uC"),
    "pkexec": lambda a: _simple_exec(a, "", ("user",)),
    "gosu": lambda a: _simple_exec(a, operands_before=1),
    "su-exec": lambda a: _simple_exec(a, operands_before=1),
    "su": _su,
    "runuser": _su,
    "env": _env,
    "nohup": lambda a: _simple_exec(a),
    "timeout": _timeout,
    "nice": _nice,
    "ionice": _pid_mode("cnpPu", {"-p", "-P", "-u"}),
    "chrt": _pid_mode("TPD", {"-p", "--pid"}, operands_before=1),
    "taskset": _pid_mode("", {"-p", "--pid"}, operands_before=1),
    "stdbuf": lambda a: _simple_exec(a, "ioe", ("input", "output", "error")),
    "setsid": lambda a: _simple_exec(a),
    "time": lambda a: _simple_exec(a, "fo", ("format", "output")),
    "command": _command,
    "builtin": lambda a: _simple_exec(a),
    "exec": lambda a: _simple_exec(a, "a"),
    "xargs": _xargs,
    "watch": _watch,
    "flock": _flock,
    "strace": _pid_mode("oepsEIabuSPX", {"-p"}),
    "ltrace": _pid_mode("oepsaunA", {"-p"}),
    "unbuffer": lambda a: _simple_exec(a),
    "systemd-run": lambda a: _simple_exec(
        a,
        "pEuMH",
        (
            "unit",
            "property",
            "description",
            "slice",
            "uid",
            "gid",
            "working-directory",
            "setenv",
            "on-calendar",
            "on-active",
            "machine",
            "host",
            "nice",
        ),
    ),
    "nsenter": _chroot_like("tSGw", ("target", "setuid", "setgid", "wd"), 0),
    "unshare": _chroot_like("SGRw", ("setuid", "setgid", "root", "wd"), 0),
    "chroot": _chroot_like("", ("userspec", "groups"), 1),
    "ip": _ip,
    "busybox": _busybox,
    "sshpass": _sshpass,
    "docker": _container_exec,
    "podman": _container_exec,
    "nerdctl": _container_exec,
    "kubectl": _after_dashdash("exec"),
    "oc": _after_dashdash("exec"),
    "lxc": _after_dashdash("exec"),
    "incus": _after_dashdash("exec"),
    "lxc-attach": _after_dashdash(""),
    "find": _find,
    "eval": _eval,
    "at": _at,
    "batch": _at,
    "ansible": _ansible,
    "ssh": _ssh,
    "autossh": _ssh,
}


def launch_of(argv: tuple[str, ...]) -> Launch | None:
    """How `argv` launches another command or script, or None for a plain command."""
    if not argv:
        return None
    name = command_name(argv[0])
    if name in SHELLS:
        return _shell(argv)
    handler = _LAUNCHERS.get(name)
    return handler(argv) if handler else None
