"""Where a secret value ends, and whether it is one.

Contract of `value_end(scan, pos, end)`: the end of the value that starts at `pos` (never
beyond `end`, the end of its line), read as people write values in shells and in config
files:

- A value is a sequence of parts: unquoted runs, `'…'` and `"…"` strings (a backslash
  escapes a `"` inside `"…"`), and backslash escapes; parts glued together form one value
  (`ab"c&d"e` is one value, as the shell reads it).
- A quote that follows a part and is itself followed by the end of the line, a space or
  one of `,;&|)}]>` closes an enclosing string (`echo 'PASSWORD=pw' | tee f`): the value
  ends before it. A quote with no closing quote on its line is part of the value.
- A space, `,`, `)`, `}`, `]`, `<` or `>` (a redirection, as the shell reads it) ends an
  unquoted part; so does one of `&`, `;`, `|`, unless
  it joins two parts of one word (`S3cr&t99`, `Pa;ss`): it does when it is single and what
  follows is neither a space, a quote, another operator, a marker, the next field
  (`&next=1`, `;Database=db`) nor a command (`;echo`, `|grep x`). `joins` decides that,
  and the shell lexer of `argv` uses it too, so that both read the same words.

`take_value(scan, pos, end, kind, rank)` records the value at `pos` as a secret when it is
`plausible` (not empty, not a variable reference or template, not a filler like `****`, not
a boolean or keyword); a value that is one quoted string is masked inside its quotes.
Every function here is linear: each character is examined a bounded number of times.
"""

from __future__ import annotations

import re

from testbed.analysis.redact.keys import KeyInfo
from testbed.analysis.redact.scan import MARKER_PREFIX, QUOTES, SPACE, Scan

_PLAIN = re.compile(r"[^\s'\"\\,;&|)}\]<>]*+")
"""Characters of an unquoted part (see `value_end`)."""
_FIELD = re.compile(r"[\w.-]*+")
_BLANKS = re.compile(r"[ \t]*+")
_CLOSERS = frozenset(",;&|)}]>\\")
_OPERATORS = frozenset("&;|")
_ENDERS = frozenset(",)}]<>")

# fmt: off
COMMANDS_AFTER = frozenset((
    "echo", "printf", "curl", "wget", "sshpass", "mysql", "mariadb", "psql", "sudo", "grep", "egrep", "head", "tail",
    "sed", "awk", "tee", "xargs", "sort", "uniq", "less", "more", "jq", "systemctl", "service", "export", "docker",
    "kubectl", "git", "ssh", "scp", "chmod", "chown", "mkdir", "touch", "python", "python3", "bash",
))
# fmt: on
"""Commands whose name after a single `&`, `;` or `|` means that operator is one (short
names such as `cd` or `ls` are left out: they are as likely to be part of a password)."""

# fmt: off
BORING = frozenset((
    "true", "false", "yes", "no", "on", "off", "none", "null", "nil", "undefined", "required", "optional",
    "sufficient", "requisite", "include", "substack", "prompt", "empty", "changeme?", "stdin", "stdout", "ask",
    "enabled", "disabled", "x", "*", "!", "!!", "***", "******", "hidden", "redacted", "masked", "set", "unset",
    "locked",
))
# fmt: on
"""Values that are keywords, not secrets."""
_REFERENCE_STARTS = ("$", "%(", "{{", "<", "[", "!", "env:", "file:", "fd:", "@@", "#{")
_FILLER = re.compile(r"\*+|x+|X+|\.+|-+|•+|_+")


def plausible(value: str) -> bool:
    """Whether `value` (quotes removed) can be a secret (see the module contract)."""
    v = value.strip()
    if len(v) < 2 or v.lower() in BORING or v.startswith(_REFERENCE_STARTS):
        return False
    return _FILLER.fullmatch(v) is None


def secret_value(info: KeyInfo, value: str) -> bool:
    """Whether `value` (quotes removed) of a key described by `info` is a secret."""
    if len(value) < info.min_len or not plausible(value) or value.startswith(MARKER_PREFIX):
        return False
    return info.paths or not value.startswith(("/", "~/", "./"))


def unquoted(value: str) -> str:
    """`value` without the quotes of a value that is one quoted string."""
    if len(value) >= 2 and value[0] in QUOTES and value[-1] == value[0]:
        return value[1:-1]
    return value


def joins(scan: Scan, i: int, end: int) -> bool:
    """Whether the single operator at `raw[i]` joins two parts of one word."""
    raw = scan.raw
    nxt = raw[i + 1] if i + 1 < end else ""
    if not nxt or nxt in SPACE or nxt in QUOTES or nxt in _OPERATORS or nxt in _ENDERS:
        return False
    if (i > 0 and raw[i - 1] in _OPERATORS) or raw.startswith(MARKER_PREFIX, i + 1):
        return False
    if not (nxt.isalpha() or nxt == "_"):
        return True
    stop = scan.run_end(_FIELD, i + 1, end)
    word = raw[i + 1 : stop].lower()
    after = scan.run_end(_BLANKS, stop, end)
    if after < end and (raw[after] in "=:" or (after > stop and raw[after] in QUOTES)):
        return False  # the next field: `&next=1`, `;Database=db`
    return word not in COMMANDS_AFTER


def closing_quote(scan: Scan, quote: str, start: int, end: int) -> int:
    """Position of the quote closing a `quote` string whose content starts at `start`, or -1."""
    raw = scan.raw
    j = scan.find(quote, start, end)
    if quote == "'":
        return j
    while j >= 0:
        k = j
        while k > start and raw[k - 1] == "\\":
            k -= 1
        if (j - k) % 2 == 0:
            return j
        j = scan.find(quote, j + 1, end)
    return -1


def _closes(raw: str, i: int, end: int) -> bool:
    """Whether a quote ending at `i` closes an enclosing string (see the contract)."""
    return i >= end or raw[i] in SPACE or raw[i] in _CLOSERS


def value_end(scan: Scan, pos: int, end: int) -> int:
    """End of the value starting at `pos`; see the module contract."""
    raw, i = scan.raw, pos
    while i < end:
        scan.ops += 1
        c = raw[i]
        if c in QUOTES or (c == "\\" and i + 1 < end and raw[i + 1] in QUOTES):
            width = 1 if c in QUOTES else 2
            quote = raw[i + width - 1]
            if i > pos and _closes(raw, i + width, end):
                return i
            j = _escaped_close(scan, i + 2, end, quote) if width == 2 else closing_quote(scan, quote, i + 1, end)
            i = j + width if j >= 0 else i + width
            continue
        if c == "\\":
            i += 2
            continue
        if c in SPACE or c in _ENDERS:
            return i
        if c in _OPERATORS:
            if not joins(scan, i, end):
                return i
            i += 1
            continue
        i = scan.run_end(_PLAIN, i, end)
    return min(i, end)


def _escaped_close(scan: Scan, start: int, end: int, quote: str) -> int:
    """Position of the `\\"` closing a string opened by `\\"` (JSON inside JSON), or -1."""
    return scan.find("\\" + quote, start, end)


def take_value(scan: Scan, pos: int, end: int, kind: str, rank: int, *, min_len: int = 2) -> int:
    """Record the value at `pos` as a secret of `kind` when plausible; return its end."""
    stop = value_end(scan, pos, end)
    value = scan.raw[pos:stop]
    inner = unquoted(value)
    if len(inner) < min_len or not plausible(inner) or inner.startswith(MARKER_PREFIX):
        return stop
    if inner is value:
        scan.add(pos, stop, kind, rank)
    else:
        scan.add(pos + 1, stop - 1, kind, rank)
    return stop
