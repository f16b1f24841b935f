"""Stored text on a terminal: never markup, never a control sequence.

Text that testbed stored (commands, outputs, errors, summaries, names a user or a guest
chose) reaches a terminal only through this module.

Contracts:

- `neutralise(text)` replaces every C0 control except newline and tab (so ESC, BEL, CR,
  backspace …), DEL and every C1 control (U+0080 to U+009F, which some terminals obey as
  8-bit CSI/OSC) with its visible escape `\\xNN`. ANSI CSI sequences, OSC 52 clipboard
  writes and title changes therefore print as inert text. Other characters are kept.
- `cell(value)` is a Rich `Text` of `neutralise(str(value))` (`missing` when None): Rich
  never reads it as markup, so `[/]var` prints as it is. Every table cell and every line of
  stored text a CLI prints is a `cell` (or goes through `neutralise` when printed with
  `typer.echo`).
- `json_text(value)` is `json.dumps` whose output holds no raw control character: JSON
  escapes C0 itself; DEL and C1 are written as `\\u00XX` escapes too, which any JSON reader
  decodes to the very same string.
- `console()` is the Rich console of CLI tables: no highlighting; a pipe or a file (no
  terminal and no `COLUMNS`) gets `wide` columns instead of 80.
- `error_line(label, message)` is the one-line error a CLI prints (`error: …`,
  `harness error: …`), the label styled, the message a `cell`.
- `shown_id(full, width)` is how a CLI table prints an id: cut to `width` characters on
  a terminal, whole when stdout is not one (a pipe, a file), so no id is cut in pipes.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def neutralise(text: str) -> str:
    """`text` with control characters made visible (see the module contract)."""
    return _CONTROLS.sub(_escape, text)


def cell(value: object, style: str = "", missing: str = "-") -> Text:
    """A Rich `Text` of stored `value`, safe for a terminal (see the module contract)."""
    return Text(missing if value is None else neutralise(str(value)), style=style)


def json_text(value: Any, *, indent: int | None = 2, ensure_ascii: bool = True) -> str:
    """JSON of `value` with no raw control character (see the module contract)."""
    text = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def console(*, wide: int = 160, stderr: bool = False) -> Console:
    """The console CLI tables print to (see the module contract)."""
    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, width=wide if piped else None, stderr=stderr)


def error_line(label: str, message: str) -> Text:
    """`label: message` with the label in red and the message neutralised."""
    return Text.assemble((f"{label}:", "red"), " ", neutralise(message))


def shown_id(full: str, width: int = 8) -> str:
    """`full` cut to `width` on a terminal, whole otherwise (see the module contract)."""
    return full[:width] if sys.stdout.isatty() else full
