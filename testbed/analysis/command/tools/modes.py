"""chmod, chown, chgrp: the paths whose mode or owner changes (`ModeChange`, and writes).

The first operand is the mode or owner unless `--reference` gives it; a symbolic mode that
looks like an option (`-w`, `-x`) is still the mode. `mode_bits` reads a chmod mode.
"""

from __future__ import annotations

import re

from testbed.analysis.command.effects import Effects, ModeChange
from testbed.analysis.command.options import Options
from testbed.analysis.command.paths import path_writes

_OCTAL = re.compile(r"^[0-7]{1,4}$")
_MODE = re.compile(r"[ugoa]*[-+=][rwxXstugo]*([,][ugoa]*[-+=][rwxXstugo]*)*|[0-7]{1,4}")

SPECS = {name: ("", ("reference", "from")) for name in ("chmod", "chown", "chgrp")}


def mode_bits(mode: str) -> tuple[bool, bool, bool]:
    """(grants world-write, sets setuid/setgid, sets sticky) for a chmod mode string."""
    if _OCTAL.match(mode):
        value = int(mode, 8)
        return bool(value & 0o002), bool(value & 0o6000), bool(value & 0o1000)
    world = setid = sticky = False
    for clause in mode.split(","):
        m = re.match(r"^([ugoa]*)(.*)$", clause)
        if not m:
            continue
        who, ops = m.group(1), m.group(2)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", ops):
            if op == "-":
                continue
            if ("o" in who or "a" in who) and "w" in perms:
                world = True
            if "s" in perms and (not who or "u" in who or "g" in who or "a" in who):
                setid = True
            if "t" in perms:
                sticky = True
    return world, setid, sticky


def _chmod_mode(args: tuple[str, ...], opts: Options) -> str:
    """The mode operand; symbolic modes like `-w`/`o-w` look like options to getopt."""
    for a in args:
        if _MODE.fullmatch(a):
            return a
    return opts.operands[0] if opts.operands else ""


def mode_change(eff: Effects, cwd: str | None) -> None:
    name, opts = eff.name, eff.options
    reference = opts.has("--reference")
    paths = opts.operands if reference else opts.operands[1:]
    recursive = opts.has("-R", "--recursive")
    change = ModeChange(name, paths, recursive)
    if name == "chmod" and not reference and opts.operands:
        mode = _chmod_mode(eff.args, opts)
        world, setid, sticky = mode_bits(mode)
        change = ModeChange(name, paths, recursive, mode, world, setid, sticky)
    eff.modes.append(change)
    eff.writes += path_writes(paths, name, cwd, tree=recursive)
    if recursive:
        eff.writes += path_writes(paths, name, cwd)


GRAMMARS = {name: mode_change for name in ("chmod", "chown", "chgrp")}
