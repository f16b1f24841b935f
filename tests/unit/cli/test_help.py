"""Help texts reach the terminal whole: Rich would take a bracketed word in an option's help
(`[parameters]`) for markup and drop it unless it is escaped."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from testbed.cli import app


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, cmd in group.commands.items():
        path = (*prefix, name)
        found.extend(_commands(cmd, path) if hasattr(cmd, "commands") else [path])
    return found


def test_bracketed_words_in_option_help_survive_rich_rendering() -> None:
    root: Any = typer.main.get_command(app)
    runner = CliRunner()
    checked = 0
    for path in _commands(root):
        cmd = root
        for name in path:
            cmd = cmd.commands[name]
        words = {w for p in cmd.params for w in re.findall(r"\[[a-z_]+\]", getattr(p, "help", None) or "")}
        if not words:
            continue
        out = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "300"}).output
        for word in words:
            assert word in out, f"{' '.join(path)} --help lost {word}"
            checked += 1
    assert checked >= 1  # `run --seed` names the task's [parameters]
