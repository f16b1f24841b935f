"""`testbed analyze …`: offline analysis of recorded commands.

Contract of `testbed analyze commands FILE.jsonl [--classes testbed|study|both]` (FILE may
be `-` for stdin): every non-blank line must be a JSON object; each is written to stdout,
keys in their order, with `impact` set to the sorted testbed classes of its `command`
(`--classes testbed`, the default), `study` set to the sorted study classes
(`--classes study`), or both keys (`--classes both`, `impact` first); `[]` when the object
has no `command` or it is null. A line that is not JSON, not an object, or whose
`command` is not a string is an `InputError` naming the file and line number (exit
status 2, nothing written), and so is a file that cannot be read, is not UTF-8 (line and
column named) or holds JSON nested too deeply (`testbed.model.loading`). Blank lines are
skipped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path

import typer

from testbed.analysis.impact import classify
from testbed.analysis.study import study_classify
from testbed.errors import InputError
from testbed.model.loading import MAX_LOG_BYTES, decode_text, parse_json, read_text

app = typer.Typer(help="Analyse recorded commands (high-impact classes).", no_args_is_help=True)


class ClassSet(StrEnum):
    """Which high-impact classes `analyze commands` adds."""

    TESTBED = "testbed"
    STUDY = "study"
    BOTH = "both"


@app.callback()
def _root() -> None:
    """Analyse recorded commands offline."""


def annotate_lines(lines: Iterable[str], source: str, classes: ClassSet = ClassSet.TESTBED) -> Iterator[str]:
    """Yield each JSONL object of `lines` re-serialised with its `impact` and/or `study` list.

    Raises `InputError(source, "line N", problem)` on a malformed line.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        obj = parse_json(line, source, where)
        if not isinstance(obj, dict):
            raise InputError(source, where, "expected a JSON object")
        command = obj.get("command")
        if command is not None and not isinstance(command, str):
            raise InputError(source, f"{where}: command", "expected a string")
        if classes in (ClassSet.TESTBED, ClassSet.BOTH):
            obj["impact"] = classify(command) if command else []
        if classes in (ClassSet.STUDY, ClassSet.BOTH):
            obj["study"] = study_classify(command) if command else []
        yield json.dumps(obj, ensure_ascii=False)


def _read_lines(file: str) -> list[str]:
    if file == "-":
        return decode_text(sys.stdin.buffer.read(), "-").splitlines()
    return read_text(Path(file), limit=MAX_LOG_BYTES).splitlines()


@app.command("commands")
def commands(
    file: str = typer.Argument(..., help="JSONL file of objects with a `command` field, or - for stdin."),
    classes: ClassSet = typer.Option(
        ClassSet.TESTBED,
        "--classes",
        help="testbed: add `impact` (testbed's classes); study: add `study` (the study's five); both.",
        case_sensitive=False,
    ),
) -> None:
    """Add high-impact command classes to each JSONL object."""
    try:
        out = list(annotate_lines(_read_lines(file), file, classes))
    except InputError as exc:
        typer.echo(f"error: {exc.render()}", err=True)
        raise typer.Exit(2) from exc
    for line in out:
        typer.echo(line)
