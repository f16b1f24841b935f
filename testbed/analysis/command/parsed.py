"""What a command line parses into: simple commands with their redirections.

`SimpleCommand` is one command the shell would start (argv after quote removal, the
launchers and shell strings it was found inside); `Parsed` is everything one source text
runs. These are the input of every command grammar (`testbed.analysis.command.tools`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "hush", "rbash"})
"""Shell interpreters (by command name)."""
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
"""A shell variable assignment word (`X=1`, `A[2]=x`, `PATH+=:/x`)."""


@dataclass(frozen=True)
class Redirect:
    """One redirection: `op` as written (`>`, `>>`, `<<`, `<<<`, `&>` …), its target word.

    For `<<`/`<<-` the target is the delimiter and `body` the here-document text; for
    `<<<` the body is the here-string.
    """

    op: str
    target: str
    fd: int | None = None
    body: str | None = None


@dataclass(frozen=True)
class SimpleCommand:
    """A simple command as the shell would start it.

    `argv` is quote-removed; it is empty for a bare assignment (`HISTFILE=/dev/null`).
    `via` lists the launchers and shell strings it was found inside (`("sudo",)`,
    `("bash -c",)`, `("$()",)`). `pipe_index`/`pipe_len` place it in its pipeline,
    `background` is true for `… &`, `function` names the enclosing function definition.
    `stdin_script` is true for a shell layer that executes its stdin as a script and
    `stdin_from` names the command piped into it (e.g. `curl`).
    """

    argv: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    pipe_index: int = 0
    pipe_len: int = 1
    background: bool = False
    function: str | None = None
    via: tuple[str, ...] = ()
    stdin_script: bool = False
    stdin_from: str | None = None

    @property
    def name(self) -> str:
        """The command name without directory (`/usr/bin/rm` → `rm`), or `""`."""
        return command_name(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        """The arguments after the command name."""
        return self.argv[1:]


def command_name(word: str) -> str:
    """Basename of a command word (`/sbin/reboot` → `reboot`)."""
    return os.path.basename(word) or word


@dataclass(frozen=True)
class Parsed:
    """Result of `parse`: commands in source order, defined functions, fallback flag."""

    commands: tuple[SimpleCommand, ...]
    functions: frozenset[str] = frozenset()
    fallback: bool = False
