"""Signals: kill, pkill, killall, killall5, skill.

Each becomes a `SignalOp` (scope ``process``) with the signals named in any spelling —
`-9`, `-KILL`, `-SIGKILL`, `-kill`, `-s KILL`, `-sKILL`, `-n 9`, `--signal KILL`,
`--signal=9` — up to `--`, and the words that are not options as targets. Nothing is
signalled (`sends` False) for listings (`-l`, `-L`, `--list`, `--table`), help and
version output, or when the only signal is 0 (an existence probe).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from testbed.analysis.command.effects import Effects, SignalOp

_NAMES = frozenset(
    [
        "HUP",
        "INT",
        "QUIT",
        "ILL",
        "TRAP",
        "ABRT",
        "IOT",
        "BUS",
        "FPE",
        "KILL",
        "USR1",
        "SEGV",
        "USR2",
        "PIPE",
        "ALRM",
        "TERM",
        "STKFLT",
        "CHLD",
        "CLD",
        "CONT",
        "STOP",
        "TSTP",
        "TTIN",
        "TTOU",
        "URG",
        "XCPU",
        "XFSZ",
        "VTALRM",
        "PROF",
        "WINCH",
        "IO",
        "POLL",
        "PWR",
        "SYS",
        "UNUSED",
        "RTMIN",
        "RTMAX",
    ]
)
_NO_SIGNAL = frozenset({"-l", "-L", "--list", "--table", "--help", "-V", "--version"})


def is_kill_signal(sig: str) -> bool:
    """`9`, `KILL`, `SIGKILL`, `kill` …: SIGKILL."""
    return re.sub(r"^SIG", "", sig.upper()) in ("KILL", "9")


def is_signal(word: str) -> bool:
    """A signal number (0 to 64) or name (`TERM`, `SIGHUP`, `rtmin+3`)."""
    if word.isdigit():
        return int(word) <= 64
    name = re.sub(r"^SIG", "", word.upper())
    return name in _NAMES or bool(re.fullmatch(r"RTMIN\+\d+|RTMAX-\d+", name))


def named_signals(args: Sequence[str]) -> list[str]:
    """The signals `args` select, as written."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        if a in ("-s", "--signal", "-n") and i + 1 < len(args):
            out.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--signal="):
            out.append(a.split("=", 1)[1])
        elif a.startswith("-") and not a.startswith("--"):
            letters = a[1:]
            if is_kill_signal(letters) or is_signal(letters):
                out.append(letters)
            elif a.startswith("-s") and (is_kill_signal(a[2:]) or is_signal(a[2:])):
                out.append(a[2:])
        i += 1
    return out


def kill(eff: Effects, cwd: str | None) -> None:
    args = eff.args
    signals = named_signals(args)
    probe = bool(signals) and all(s.isdigit() and int(s) == 0 for s in signals)
    sends = not probe and not (_NO_SIGNAL & set(args))
    targets = tuple(a for a in args if not a.startswith("-"))
    sigkill = any(is_kill_signal(s) for s in signals)
    eff.signals.append(SignalOp(eff.name, "process", tuple(signals), sigkill, targets, sends))


GRAMMARS = {name: kill for name in ("kill", "pkill", "killall", "killall5", "skill")}
