"""`testbed redact [FILE|-]`: a text with its secrets replaced, to clean a log before sharing it.

Contract: reads FILE (`-` or nothing: standard input) as bytes, redacts it with the very
redactor the run recorder uses (`testbed.analysis.redact`, multi-line secrets such as PEM
blocks included) and writes the result to standard output. Bytes that are not UTF-8 are
decoded with `surrogateescape` and written back as they were: the output differs from the
input only where a secret was, so a log with stray binary bytes survives intact. A FILE that
cannot be read is an `InputError` naming it (exit status 2, nothing written).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from testbed.analysis.redact import redact
from testbed.errors import InputError


def read_input(file: str) -> bytes:
    """The bytes of `file` (`-`: standard input); `InputError` if it cannot be read."""
    if file == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(file).read_bytes()
    except OSError as exc:
        raise InputError(file, None, f"cannot read: {exc.strerror or exc}") from exc


def redact_bytes(data: bytes) -> bytes:
    """`data` redacted, every byte that is not part of a secret kept as it was."""
    text = data.decode("utf-8", "surrogateescape")
    return redact(text).text.encode("utf-8", "surrogateescape")


def redact_command(
    file: Annotated[str, typer.Argument(help="The text to redact; '-' (the default) reads standard input.")] = "-",
) -> None:
    """Print FILE with every secret replaced by [REDACTED:kind] (the recorder's redactor)."""
    out = redact_bytes(read_input(file))
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
