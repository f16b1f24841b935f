"""Lexer of POSIX/bash command lines: words (quotes removed), operators, redirections.

Contract: `Lexer(source).run()` never raises and always advances; it returns `Tok`s. A
word keeps the bodies of the command and process substitutions it contains (`subs`) so
the caller can parse them too; a here-document's body is read at the next newline and
attached to its `<<` token. Expansions (`$X`, `${X}`, `$((…))`) stay as literal text.
`find_substitutions(text)` finds `$( … )` and backtick bodies in text the shell expands as
a whole (an unquoted here-document body).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from testbed.analysis.command.parsed import ASSIGNMENT

_ARITHMETIC = re.compile(r"^[\s\w+\-*/%<>=!&|^~?:,.()\[\]$#'\"]*$")
_OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "(", ")")
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
_WORD_END = frozenset(" \t\n;&|()<>")


@dataclass
class Heredoc:
    """A here-document: its delimiter, `<<-` tab stripping, quoted delimiter (no expansion), body."""

    delimiter: str
    strip_tabs: bool
    quoted: bool
    body: str = ""


@dataclass
class Tok:
    """One token: a word (quote-removed `value`, substitution bodies `subs`), an operator, a
    redirection (`fd`, `heredoc`) or an arithmetic command `((…))`."""

    kind: str  # "word" | "op" | "redir" | "arith"
    value: str
    quoted: bool = False
    subs: list[str] = field(default_factory=list)
    fd: int | None = None
    heredoc: Heredoc | None = None


def _skip_single(s: str, i: int) -> int:
    """Index just after the `'` closing a single-quoted string whose body starts at i."""
    j = s.find("'", i)
    return len(s) if j < 0 else j + 1


def _skip_double(s: str, i: int) -> int:
    """Index just after the `"` closing a double-quoted string whose body starts at i."""
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "`":
            i = _skip_backtick(s, i + 1)
        elif s.startswith("$(", i):
            i = _skip_balanced(s, i + 2)
        else:
            i += 1
    return len(s)


def _skip_backtick(s: str, i: int) -> int:
    """Index just after the backtick closing a backtick substitution starting at i."""
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == "`":
            return i + 1
        else:
            i += 1
    return len(s)


def _skip_balanced(s: str, i: int, open_c: str = "(", close_c: str = ")") -> int:
    """Index just after the `close_c` matching an already-consumed `open_c`."""
    depth = 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = _skip_single(s, i + 1)
            continue
        if c == '"':
            i = _skip_double(s, i + 1)
            continue
        if c == "`":
            i = _skip_backtick(s, i + 1)
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(s)


_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _ansi_c(s: str, i: int) -> tuple[str, int]:
    """Decode a `$'…'` body starting at i; return (text, index after closing quote)."""
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if c == "'":
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n in _ANSI_ESCAPES:
                out.append(_ANSI_ESCAPES[n])
                i += 2
                continue
            m = re.match(r"x([0-9A-Fa-f]{1,2})|([0-7]{1,3})", s[i + 1 :])
            if m:
                out.append(chr(int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)))
                i += 1 + len(m.group(0))
                continue
            out.append(n)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out), len(s)


def _unescape_backtick(body: str) -> str:
    return re.sub(r"\\([\\`$])", r"\1", body)


class Lexer:
    """Turns a command line into tokens; here-document bodies are read at newlines."""

    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.toks: list[Tok] = []
        self.pending: list[Heredoc] = []

    def run(self) -> list[Tok]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "\n":
                self.toks.append(Tok("op", "\n"))
                self.i += 1
                self._read_heredocs()
            elif c == "#":
                j = s.find("\n", self.i)
                self.i = len(s) if j < 0 else j
            elif s.startswith("((", self.i) and self._arithmetic():
                end = _skip_balanced(s, self.i + 1)
                self.toks.append(Tok("arith", s[self.i : end]))
                self.i = end
            elif c in "<>" and s.startswith("(", self.i + 1):
                self._word()
            elif c in ";&|()<>":
                self._operator()
            else:
                self._word()
        return self.toks

    def _arithmetic(self) -> bool:
        """Whether `((` at self.i opens arithmetic; bash treats `((cd x && rm -rf y))`,
        which is no valid expression, as nested subshells — so do we."""
        end = _skip_balanced(self.s, self.i + 1)
        body = self.s[self.i + 2 : end - 2]
        return bool(_ARITHMETIC.match(body)) and not re.search(r"(^|\s)-[A-Za-z]", body)

    def _operator(self) -> None:
        s, i = self.s, self.i
        for op in _REDIRECTS:
            if s.startswith(op, i) and (op[0] != "&" or op.startswith("&>")):
                self.i += len(op)
                self._redirect(op, None)
                return
        for op in _OPERATORS:
            if s.startswith(op, i):
                self.i += len(op)
                self.toks.append(Tok("op", op))
                return
        self.i += 1  # unreachable in practice; never loop forever

    def _redirect(self, op: str, fd: int | None) -> None:
        if op in ("<<", "<<-"):
            while self.i < len(self.s) and self.s[self.i] in " \t":
                self.i += 1
            start = self.i
            value, quoted, _ = self._read_word_value()
            raw = self.s[start : self.i]
            doc = Heredoc(value, op == "<<-", quoted or "\\" in raw)
            self.pending.append(doc)
            self.toks.append(Tok("redir", op, fd=fd, heredoc=doc))
            return
        self.toks.append(Tok("redir", op, fd=fd))

    def _read_heredocs(self) -> None:
        for doc in self.pending:
            lines: list[str] = []
            while self.i < len(self.s):
                j = self.s.find("\n", self.i)
                line = self.s[self.i :] if j < 0 else self.s[self.i : j]
                self.i = len(self.s) if j < 0 else j + 1
                check = line.lstrip("\t") if doc.strip_tabs else line
                if check == doc.delimiter:
                    break
                lines.append(check)
            doc.body = "\n".join(lines)
        self.pending = []

    def _word(self) -> None:
        s, start = self.s, self.i
        m = re.match(r"\d+(?=[<>])", s[start:])
        if m:
            self.i += len(m.group(0))
            for op in _REDIRECTS:
                if s.startswith(op, self.i) and op[0] != "&":
                    self.i += len(op)
                    self._redirect(op, int(m.group(0)))
                    return
        value, quoted, subs = self._read_word_value()
        if self.i == start:  # defensive: consume one char so the lexer always advances
            value = s[start]
            self.i += 1
        self.toks.append(Tok("word", value, quoted=quoted, subs=subs))

    def _read_word_value(self) -> tuple[str, bool, list[str]]:
        """Read one word from self.i; return (quote-removed value, quoted?, substitutions)."""
        s = self.s
        out: list[str] = []
        subs: list[str] = []
        quoted = False
        while self.i < len(s):
            c = s[self.i]
            if c in "<>" and s.startswith("(", self.i + 1):
                end = _skip_balanced(s, self.i + 2)
                subs.append(s[self.i + 2 : end - 1])
                out.append(s[self.i : end])
                self.i = end
                continue
            if c in _WORD_END:
                so_far = "".join(out)
                if c == "(" and so_far.endswith("=") and ASSIGNMENT.match(so_far):
                    end = _skip_balanced(s, self.i + 1)
                    out.append(s[self.i : end])
                    self.i = end
                    continue
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                quoted = True
                out.append(s[self.i + 1 : self.i + 2])
                self.i += 2
            elif c == "'":
                quoted = True
                j = s.find("'", self.i + 1)
                out.append(s[self.i + 1 :] if j < 0 else s[self.i + 1 : j])
                self.i = len(s) if j < 0 else j + 1
            elif s.startswith("$'", self.i):
                quoted = True
                text, self.i = _ansi_c(s, self.i + 2)
                out.append(text)
            elif c == '"' or s.startswith('$"', self.i):
                quoted = True
                self.i += 1 if c == '"' else 2
                out.append(self._double_quoted(subs))
            else:
                self._unquoted(out, subs)
        return "".join(out), quoted, subs

    def _double_quoted(self, subs: list[str]) -> str:
        s = self.s
        out: list[str] = []
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                break
            if c == "\\" and self.i + 1 < len(s):
                n = s[self.i + 1]
                out.append(n if n in '$`"\\' else ("" if n == "\n" else c + n))
                self.i += 2
            elif c == "$" or c == "`":
                self._unquoted(out, subs)
            else:
                out.append(c)
                self.i += 1
        return "".join(out)

    def _unquoted(self, out: list[str], subs: list[str]) -> None:
        """Consume one unquoted element at self.i: `$(…)`, `$((…))`, `${…}`, backtick, char."""
        s, i = self.s, self.i
        if s.startswith("$((", i):
            end = _skip_balanced(s, i + 2)
        elif s.startswith("$(", i):
            end = _skip_balanced(s, i + 2)
            subs.append(s[i + 2 : end - 1])
        elif s.startswith("${", i):
            end = _skip_balanced(s, i + 2, "{", "}")
        elif s[i] == "`":
            end = _skip_backtick(s, i + 1)
            subs.append(_unescape_backtick(s[i + 1 : end - 1]))
        else:
            end = i + 1
        out.append(s[i:end])
        self.i = end


def find_substitutions(text: str) -> list[str]:
    """Bodies of `$( … )` and backtick substitutions in text the shell expands as a whole
    (an unquoted here-document body, where quotes are literal)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith("$((", i):
            i = _skip_balanced(text, i + 2)
        elif text.startswith("$(", i):
            end = _skip_balanced(text, i + 2)
            out.append(text[i + 2 : end - 1])
            i = end
        elif text[i] == "`":
            end = _skip_backtick(text, i + 1)
            out.append(_unescape_backtick(text[i + 1 : end - 1]))
            i = end
        else:
            i += 1
    return out


def heredoc_substitutions(toks: list[Tok]) -> list[str]:
    """Command substitutions inside unquoted here-document bodies (the shell runs them)."""
    out: list[str] = []
    for tok in toks:
        doc = tok.heredoc
        if doc is not None and not doc.quoted and doc.body:
            out.extend(find_substitutions(doc.body))
    return out
