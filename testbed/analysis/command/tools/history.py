"""Shell history tampering: `history -c/-d`, `unset HISTFILE`, `set +o history`,
`export/declare HISTFILE=/dev/null` (assignments and redirections onto history files are
found by `environment` and `redirects` with `history_assignment`/`is_history_file`), and
`rm/shred/truncate/unlink/srm/wipe` of, or `ln`/`cp` over, a shell history file."""

from __future__ import annotations

from testbed.analysis.command.effects import Effects, Fact
from testbed.analysis.command.parsed import command_name

HISTORY_FILES = frozenset({".bash_history", ".zsh_history", ".sh_history", ".ash_history", ".history", ".histfile"})

SPECS = {"history": ("d", ())}


def history_assignment(pair: str) -> bool:
    """`HISTFILE=/dev/null`, `HISTFILE=`, `HISTSIZE=0` …: history switched off."""
    key, _, value = pair.partition("=")
    value = value.strip("'\"")
    if key == "HISTFILE":
        return value in ("", "/dev/null")
    return key in ("HISTSIZE", "HISTFILESIZE", "SAVEHIST") and value == "0"


def is_history_file(path: str) -> bool:
    """A shell history file (`~/.bash_history`, `$HISTFILE` …)."""
    return command_name(path.rstrip("/")) in HISTORY_FILES or path == "$HISTFILE"


def builtins(eff: Effects, cwd: str | None) -> None:
    """history, unset, set, export, declare, typeset, readonly."""
    name, args = eff.name, eff.args
    if name == "history" and eff.options.has("-c", "-d"):
        eff.history.append(Fact("history-clear", args))
    elif name == "unset" and any(a in ("HISTFILE", "HISTSIZE") for a in args):
        eff.history.append(Fact("unset-histfile", args))
    elif name == "set" and args[:2] == ("+o", "history"):
        eff.history.append(Fact("set-no-history"))
    elif name in ("export", "declare", "typeset", "readonly"):
        eff.history += [Fact("histfile-disabled", (a,)) for a in args if history_assignment(a)]


def file_tools(eff: Effects, cwd: str | None) -> None:
    """rm, shred, truncate, unlink, srm, wipe of a history file; ln, cp onto one."""
    name = eff.name
    files = eff.options.operands
    if name in ("ln", "cp"):
        files = files[-1:] if len(files) >= 2 else ()
    hit = tuple(f for f in files if is_history_file(f))
    if hit:
        eff.history.append(Fact(f"history-file-{name}", hit))


GRAMMARS = {
    **{name: builtins for name in ("history", "unset", "set", "export", "declare", "typeset", "readonly")},
    **{name: file_tools for name in ("rm", "shred", "truncate", "unlink", "ln", "cp", "srm", "wipe")},
}
