"""A whole command line analysed once: its parse and the effects of every simple command.

Contract: `effects_of(source)` never raises and is memoised (an LRU cache keyed by the
command string), so the impact classes, the safety policy, the recorder and residue
attribution share one parse per command. Steps are in parse order, one per simple
command (including `cd`); a `cd DIR` / `pushd DIR` sets the directory later relative
paths of the same line are resolved against (absolute DIR, or relative to a known one).
When a grammar fails on odd input the line is `failed` and has no steps.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import lru_cache

from testbed.analysis.command.effects import Effects
from testbed.analysis.command.options import scan
from testbed.analysis.command.parsed import Parsed, SimpleCommand
from testbed.analysis.command.paths import clean_path
from testbed.analysis.command.shell import parse
from testbed.analysis.command.tools import apply, is_init_script, spec_of

CACHE_SIZE = 4096
"""How many command lines `effects_of` keeps."""


@dataclass(frozen=True)
class CommandLine:
    """The parse of one command line and the effects of each of its simple commands."""

    source: str
    parsed: Parsed
    steps: tuple[Effects, ...]
    failed: bool = False


def effects_of_command(cmd: SimpleCommand, cwd: str | None) -> Effects:
    """The effects of one simple command, relative paths resolved against `cwd`."""
    init = bool(cmd.argv) and is_init_script(cmd.argv[0])
    short, long = ("", ()) if init else spec_of(cmd.name)
    effects = Effects(cmd, scan(cmd.args, short, long))
    apply(effects, cwd)
    return effects


def next_cwd(cwd: str | None, target: str) -> str | None:
    """The working directory after `cd target` from `cwd` (None: unknown)."""
    if target.startswith("/"):
        return clean_path(target)
    if cwd and not target.startswith(("~", "$", "-")):
        return clean_path(posixpath.join(cwd, target))
    return None


@lru_cache(maxsize=CACHE_SIZE)
def effects_of(source: str) -> CommandLine:
    """Parse `source` and compute the effects of every simple command (cached)."""
    parsed = parse(source)
    steps: list[Effects] = []
    cwd: str | None = None
    try:
        for cmd in parsed.commands:
            steps.append(effects_of_command(cmd, cwd))
            if cmd.name in ("cd", "pushd") and cmd.args:
                cwd = next_cwd(cwd, cmd.args[-1])
    except (RecursionError, IndexError, ValueError, TypeError, AttributeError, KeyError):
        return CommandLine(source, parsed, (), failed=True)
    return CommandLine(source, parsed, tuple(steps))
