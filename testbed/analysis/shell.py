"""A conservative, total parser of POSIX/bash command lines for command analysis.

Contract: `parse(source)` never raises. It returns every *simple command* the shell would
start for `source`, each as a `SimpleCommand` with its argv after quote removal
(expansions such as `$X` or `$(…)` are kept as their literal text). It descends into:

- lists and pipelines (`;`, `&&`, `||`, `|`, `|&`, `&`, newlines), groups `{ …; }`,
  subshells `( … )`, `if`/`while`/`until`/`for`/`select`/`case` bodies, function bodies;
- command and process substitutions `$( … )`, backticks, `<( … )`, `>( … )`, also inside
  double quotes and inside unquoted here-document bodies;
- launchers (see `_LAUNCHERS`): `sudo`, `doas`, `su -c`, `runuser`, `env`, `nohup`,
  `timeout`, `nice`, `ionice`, `chrt`, `taskset`, `stdbuf`, `setsid`, `time`, `command`,
  `builtin`, `exec`, `xargs`, `watch`, `flock`, `strace`, `systemd-run`, `nsenter`,
  `unshare`, `chroot`, `ip netns exec`, `busybox`, `sshpass`, `docker|podman exec`,
  `kubectl exec`, `lxc exec`, `lxc-attach`, `find -exec`, `eval`, `at`/`batch`, `ansible -a`;
- shell strings: `bash|sh|dash|zsh|ksh|ash -c '…'` and `ssh host '…'` are parsed
  recursively; a shell that reads its script from stdin (`bash`, `bash -s`, `sudo -i`,
  `su -`, `ssh host` without a command, `at now`) gets the body of its here-document or
  here-string, or the output of an `echo`/`printf`/`cat <<EOF` piped into it.

Each launcher yields two layers: the launcher itself with only its own arguments (so its
options can be judged, e.g. `ssh -o StrictHostKeyChecking=no`) and the launched command.
Here-document bodies of other commands (`cat <<EOF`, `mysql <<EOF`) are data, not
commands. Quoted text is data: `echo "rm -rf /"` yields only `echo`.

bashlex is deliberately not used as the primary parser: it raises on `[[ … ]]`, `case`,
`$(( … ))`, `time`, arrays and quoted here-document delimiters (`<<'EOF'`), all of which
agents write routinely. If this parser hits an internal error it falls back to a plain
split on separators and `shlex` words (`parse_fallback`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

MAX_DEPTH = 8
"""How deep shell strings inside shell strings (`bash -c "ssh h 'sh -c …'"`) are followed."""
MAX_CHAIN = 32
"""How many launchers in a row (`sudo env timeout nice …`) are looked through."""
_ARITHMETIC = re.compile(r"^[\s\w+\-*/%<>=!&|^~?:,.()\[\]$#'\"]*$")

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "hush", "rbash"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "(", ")")
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
_WORD_END = frozenset(" \t\n;&|()<>")
_RESERVED_SKIP = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "time"})
_RESERVED_END = frozenset({"fi", "done"})


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


# --------------------------------------------------------------------------- lexer


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    body: str = ""


@dataclass
class _Tok:
    kind: str  # "word" | "op" | "redir" | "arith"
    value: str
    quoted: bool = False
    subs: list[str] = field(default_factory=list)
    fd: int | None = None
    heredoc: _Heredoc | None = None


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


class _Lexer:
    """Turns a command line into tokens; here-document bodies are read at newlines."""

    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.toks: list[_Tok] = []
        self.pending: list[_Heredoc] = []

    def run(self) -> list[_Tok]:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "\n":
                self.toks.append(_Tok("op", "\n"))
                self.i += 1
                self._read_heredocs()
            elif c == "#":
                j = s.find("\n", self.i)
                self.i = len(s) if j < 0 else j
            elif s.startswith("((", self.i) and self._arithmetic():
                end = _skip_balanced(s, self.i + 1)
                self.toks.append(_Tok("arith", s[self.i : end]))
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
                self.toks.append(_Tok("op", op))
                return
        self.i += 1  # unreachable in practice; never loop forever

    def _redirect(self, op: str, fd: int | None) -> None:
        if op in ("<<", "<<-"):
            while self.i < len(self.s) and self.s[self.i] in " \t":
                self.i += 1
            start = self.i
            value, quoted, _ = self._read_word_value()
            raw = self.s[start : self.i]
            doc = _Heredoc(value, op == "<<-", quoted or "\\" in raw)
            self.pending.append(doc)
            self.toks.append(_Tok("redir", op, fd=fd, heredoc=doc))
            return
        self.toks.append(_Tok("redir", op, fd=fd))

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
        self.toks.append(_Tok("word", value, quoted=quoted, subs=subs))

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
                if c == "(" and so_far.endswith("=") and _ASSIGNMENT.match(so_far):
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


# --------------------------------------------------------------------------- parser


@dataclass
class _Builder:
    argv: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    function: str | None = None

    def empty(self) -> bool:
        return not (self.argv or self.assignments or self.redirects)


@dataclass
class _Group:
    kind: str  # "{", "(", "case"
    function: str | None = None


class _Parser:
    """Walks tokens and groups them into pipelines of simple commands."""

    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.pos = 0
        self.pipelines: list[list[SimpleCommand]] = []
        self.subs: list[str] = []
        self.functions: set[str] = set()
        self.pipe: list[_Builder] = []
        self.cur = _Builder()
        self.groups: list[_Group] = []
        self.mode = "normal"  # normal | case_head | case_pattern | for_head | dbracket | fname
        self.pending_function: str | None = None

    def _function(self) -> str | None:
        for g in reversed(self.groups):
            if g.function:
                return g.function
        return None

    def run(self) -> None:
        while self.pos < len(self.toks):
            tok = self.toks[self.pos]
            self.pos += 1
            self.subs.extend(tok.subs)
            if self.mode != "normal" and self._special_mode(tok):
                continue
            if tok.kind == "word":
                self._on_word(tok)
            elif tok.kind == "redir":
                self._on_redirect(tok)
            elif tok.kind == "op":
                self._on_op(tok.value)
        self._end_pipeline(background=False)

    def _special_mode(self, tok: _Tok) -> bool:
        """Handle tokens in a non-normal mode; True if the token was consumed."""
        plain = tok.kind == "word" and not tok.quoted
        if self.mode == "dbracket":
            if plain and tok.value == "]]":
                self.mode = "normal"
            return True
        if self.mode == "for_head":
            if (plain and tok.value == "do") or (tok.kind == "op" and tok.value in (";", "\n")):
                self.mode = "normal"
            return True
        if self.mode == "case_head":
            if plain and tok.value == "in":
                self.mode = "case_pattern"
            return True
        if self.mode == "case_pattern":
            if plain and tok.value == "esac":
                self._pop_group("case")
                self.mode = "normal"
            elif tok.kind == "op" and tok.value == ")":
                self.mode = "normal"
            return True
        if self.mode == "fname":
            self.mode = "normal"
            if tok.kind == "word":
                self.pending_function = tok.value
                self.functions.add(tok.value)
                self._skip_empty_parens()
                return True
        return False

    def _skip_empty_parens(self) -> None:
        t = self.toks
        if (
            self.pos + 1 < len(t)
            and t[self.pos].kind == "op"
            and t[self.pos].value == "("
            and t[self.pos + 1].kind == "op"
            and t[self.pos + 1].value == ")"
        ):
            self.pos += 2

    def _on_word(self, tok: _Tok) -> None:
        cur = self.cur
        if not cur.argv and not tok.quoted and self._keyword(tok.value):
            return
        if not cur.argv and _ASSIGNMENT.match(tok.value):
            cur.assignments.append(tok.value)
            return
        cur.argv.append(tok.value)
        if len(cur.argv) == 1 and not cur.assignments and not tok.quoted:
            t = self.toks
            if (
                self.pos + 1 < len(t)
                and t[self.pos].kind == "op"
                and t[self.pos].value == "("
                and t[self.pos + 1].kind == "op"
                and t[self.pos + 1].value == ")"
            ):
                self.pos += 2
                self.pending_function = tok.value
                self.functions.add(tok.value)
                cur.argv.clear()

    def _keyword(self, word: str) -> bool:
        """Handle a reserved word at command position; True if consumed."""
        if word in _RESERVED_SKIP or word in _RESERVED_END:
            if word == "time":
                self._skip_time_options()
            return True
        if word == "{":
            self.groups.append(_Group("{", self.pending_function))
            self.pending_function = None
            return True
        if word == "}":
            self._end_pipeline(background=False)
            self._pop_group("{")
            return True
        if word == "case":
            self.groups.append(_Group("case"))
            self.mode = "case_head"
            return True
        if word == "esac":
            self._end_pipeline(background=False)
            self._pop_group("case")
            return True
        if word in ("for", "select"):
            self.mode = "for_head"
            return True
        if word == "[[":
            self.mode = "dbracket"
            return True
        if word == "function":
            self.mode = "fname"
            return True
        return False

    def _skip_time_options(self) -> None:
        t = self.toks
        while self.pos < len(t) and t[self.pos].kind == "word" and t[self.pos].value == "-p":
            self.pos += 1

    def _pop_group(self, kind: str) -> None:
        for k in range(len(self.groups) - 1, -1, -1):
            if self.groups[k].kind == kind:
                del self.groups[k:]
                return

    def _on_redirect(self, tok: _Tok) -> None:
        if tok.heredoc is not None:  # bodies are complete: the lexer ran to the end first
            doc = tok.heredoc
            self.cur.redirects.append(Redirect(tok.value, doc.delimiter, tok.fd, doc.body))
            return
        target = ""
        if self.pos < len(self.toks) and self.toks[self.pos].kind == "word":
            target = self.toks[self.pos].value
            self.subs.extend(self.toks[self.pos].subs)
            self.pos += 1
        body = target if tok.value == "<<<" else None
        self.cur.redirects.append(Redirect(tok.value, target, tok.fd, body))

    def _on_op(self, op: str) -> None:
        if op in ("|", "|&"):
            self._end_command()
            return
        if op == "(":
            if self.cur.empty():
                self.groups.append(_Group("(", self.pending_function))
                self.pending_function = None
            return
        if op == ")":
            self._end_pipeline(background=False)
            self._pop_group("(")
            return
        self._end_pipeline(background=op == "&")
        if op in (";;", ";&", ";;&"):
            self.mode = "case_pattern"

    def _end_command(self) -> None:
        if not self.cur.empty():
            self.cur.function = self._function()
            self.pipe.append(self.cur)
        self.cur = _Builder()

    def _end_pipeline(self, background: bool) -> None:
        self._end_command()
        if self.pipe:
            n = len(self.pipe)
            self.pipelines.append(
                [
                    SimpleCommand(
                        argv=tuple(b.argv),
                        assignments=tuple(b.assignments),
                        redirects=tuple(b.redirects),
                        pipe_index=k,
                        pipe_len=n,
                        background=background,
                        function=b.function,
                    )
                    for k, b in enumerate(self.pipe)
                ]
            )
        self.pipe = []


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


def _heredoc_subs(toks: list[_Tok]) -> list[str]:
    """Command substitutions inside unquoted here-document bodies (the shell runs them)."""
    out: list[str] = []
    for tok in toks:
        doc = tok.heredoc
        if doc is not None and not doc.quoted and doc.body:
            out.extend(find_substitutions(doc.body))
    return out


# --------------------------------------------------------------------------- public parse


def parse(source: str, depth: int = 0) -> Parsed:
    """Parse `source` into the simple commands it would run, launchers unwrapped.

    Never raises; on an internal parser error falls back to `parse_fallback`.
    """
    try:
        return _parse(source, depth, ())
    except (RecursionError, IndexError, ValueError, TypeError, AttributeError):
        return parse_fallback(source)


def _parse(source: str, depth: int, via: tuple[str, ...]) -> Parsed:
    toks = _Lexer(source).run()
    parser = _Parser(toks)
    parser.run()
    out: list[SimpleCommand] = []
    functions = set(parser.functions)
    for pipeline in parser.pipelines:
        _expand_pipeline(pipeline, depth, via, out, functions)
    if depth < MAX_DEPTH:
        for sub in parser.subs + _heredoc_subs(toks):
            inner = _parse(sub, depth + 1, (*via, "$()"))
            out.extend(inner.commands)
            functions |= inner.functions
    return Parsed(tuple(out), frozenset(functions))


def parse_fallback(source: str) -> Parsed:
    """Conservative tokenizer: split on unquoted-looking separators, then `shlex` words."""
    out: list[SimpleCommand] = []
    for piece in re.split(r"&&|\|\||[;&|\n()`]|\$\(", source):
        try:
            words = shlex.split(piece, comments=True)
        except ValueError:
            words = piece.split()
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
        if words:
            out.append(SimpleCommand(argv=tuple(words)))
    expanded: list[SimpleCommand] = []
    for cmd in out:
        try:
            _expand_pipeline([cmd], MAX_DEPTH, (), expanded, set())
        except (RecursionError, IndexError, ValueError, TypeError, AttributeError):
            expanded.append(cmd)
    return Parsed(tuple(expanded), frozenset(), fallback=True)


# --------------------------------------------------------------------------- launchers


@dataclass(frozen=True)
class _Launch:
    """How a launcher starts something: `own` = its own argv part."""

    own: tuple[str, ...]
    exec_argv: tuple[tuple[str, ...], ...] = ()  # commands it execs directly
    scripts: tuple[str, ...] = ()  # shell source it runs
    stdin_script: bool = False  # it runs its stdin as a shell script
    label: str = ""


@dataclass
class _Opts:
    """Result of scanning options: index of first operand, flags seen, option values."""

    index: int
    flags: set[str]
    values: dict[str, str]


def scan_options(
    args: Sequence[str], short_arg: str = "", long_arg: Sequence[str] = (), stop_at_operand: bool = True
) -> _Opts:
    """Scan getopt-style options from `args`.

    `short_arg` lists short letters that take a value (`-u root`, `-uroot`), `long_arg`
    long names that take a value (`--user root`, `--user=root`). Stops at `--` (skipped)
    or at the first operand when `stop_at_operand`. Flags are recorded as `-x`/`--name`.
    """
    flags: set[str] = set()
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return _Opts(i + 1, flags, values)
        if a.startswith("--") and len(a) > 2:
            name, eq, val = a[2:].partition("=")
            flags.add("--" + name)
            if eq:
                values["--" + name] = val
            elif name in long_arg and i + 1 < len(args):
                values["--" + name] = args[i + 1]
                i += 1
        elif a.startswith("-") and len(a) > 1:
            k = 1
            while k < len(a):
                letter = a[k]
                flags.add("-" + letter)
                if letter in short_arg:
                    rest = a[k + 1 :]
                    if rest:
                        values["-" + letter] = rest
                    elif i + 1 < len(args):
                        values["-" + letter] = args[i + 1]
                        i += 1
                    break
                k += 1
        elif stop_at_operand:
            return _Opts(i, flags, values)
        i += 1
    return _Opts(len(args), flags, values)


def _skip_assignments(args: Sequence[str], i: int) -> int:
    while i < len(args) and _ASSIGNMENT.match(args[i]):
        i += 1
    return i


def _simple_exec(
    argv: tuple[str, ...], short_arg: str = "", long_arg: Sequence[str] = (), operands_before: int = 0
) -> _Launch:
    """Launcher of the form `NAME [opts] [operand…] COMMAND…`."""
    opts = scan_options(argv[1:], short_arg, long_arg)
    start = 1 + opts.index + operands_before
    return _Launch(argv[:start], (argv[start:],) if len(argv) > start else (), label=argv[0])


def _shell(argv: tuple[str, ...]) -> _Launch | None:
    opts = scan_options(argv[1:], "oO", ("rcfile", "init-file"))
    operands = argv[1 + opts.index :]
    if "-c" in opts.flags:
        script = operands[0] if operands else ""
        return _Launch(argv, scripts=(script,), label=f"{command_name(argv[0])} -c")
    if "-s" in opts.flags or not operands or operands[0] == "-":
        return _Launch(argv, stdin_script=True, label=command_name(argv[0]))
    return None  # runs a script file we cannot see


def _sudo(argv: tuple[str, ...]) -> _Launch | None:
    opts = scan_options(
        argv[1:],
        "ugpCDrtTUR",
        (
            "user",
            "group",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "chroot",
            "host",
        ),
    )
    no_exec = {
        "-l",
        "-v",
        "-K",
        "-V",
        "-e",
        "--list",
        "--validate",
        "--edit",
        "--version",
        "--help",
        "--remove-timestamp",
    }
    if opts.flags & no_exec:
        return _Launch(argv, label="sudo")
    start = _skip_assignments(argv, 1 + opts.index)
    if start < len(argv):
        return _Launch(argv[:start], (argv[start:],), label="sudo")
    shell = bool(opts.flags & {"-i", "-s", "--login", "--shell"})
    return _Launch(argv, stdin_script=shell, label="sudo")


def _su(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(
        argv[1:],
        "csgGwu",
        ("command", "shell", "group", "supp-group", "whitelist-environment", "user"),
        stop_at_operand=False,
    )
    command = opts.values.get("-c") or opts.values.get("--command")
    if command is not None:
        return _Launch(argv, scripts=(command,), label=command_name(argv[0]) + " -c")
    if command_name(argv[0]) == "runuser" and ("-u" in opts.values or "--user" in opts.values):
        rest = scan_options(argv[1:], "csgGwu", ("user", "group"))
        start = 1 + rest.index
        return _Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="runuser")
    return _Launch(argv, stdin_script=True, label=command_name(argv[0]))


def _env(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(argv[1:], "uCS", ("unset", "chdir", "split-string"))
    split = opts.values.get("-S") or opts.values.get("--split-string")
    if split is not None:
        return _Launch(argv, scripts=(split,), label="env")
    start = _skip_assignments(argv, 1 + opts.index)
    if start < len(argv) and argv[start] == "-":
        start = _skip_assignments(argv, start + 1)
    return _Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="env")


def _timeout(argv: tuple[str, ...]) -> _Launch:
    return _simple_exec(argv, "sk", ("signal", "kill-after"), operands_before=1)


def _nice(argv: tuple[str, ...]) -> _Launch:
    args = list(argv[1:])
    if args and re.fullmatch(r"-\d+", args[0]):
        return _Launch(argv[:2], (argv[2:],) if len(argv) > 2 else (), label="nice")
    return _simple_exec(argv, "n", ("adjustment",))


def _pid_mode(short_arg: str, pid_flags: set[str], operands_before: int = 0) -> Callable[[tuple[str, ...]], _Launch]:
    def launch(argv: tuple[str, ...]) -> _Launch:
        opts = scan_options(argv[1:], short_arg)
        if opts.flags & pid_flags:
            return _Launch(argv, label=argv[0])
        return _simple_exec(argv, short_arg, operands_before=operands_before)

    return launch


def _command(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(argv[1:])
    if opts.flags & {"-v", "-V"}:
        return _Launch(argv, label="command")
    return _simple_exec(argv)


def _xargs(argv: tuple[str, ...]) -> _Launch:
    launch = _simple_exec(
        argv,
        "IdLnPsaE",
        ("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "max-lines", "process-slot-var"),
    )
    return launch if launch.exec_argv else _Launch(argv, (("echo",),), label="xargs")


def _watch(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(argv[1:], "nq", ("interval", "equexit"))
    rest = argv[1 + opts.index :]
    if not rest:
        return _Launch(argv, label="watch")
    if opts.flags & {"-x", "--exec"}:
        return _Launch(argv[: 1 + opts.index], (rest,), label="watch")
    return _Launch(argv[: 1 + opts.index], scripts=(" ".join(rest),), label="watch")


def _flock(argv: tuple[str, ...]) -> _Launch:
    args = argv[1:]
    i = 0
    lockfile_seen = False
    while i < len(args):
        a = args[i]
        if a in ("-c", "--command") and i + 1 < len(args):
            return _Launch(argv[: i + 1], scripts=(args[i + 1],), label="flock")
        if a in ("-w", "--wait", "--timeout", "-E", "--conflict-exit-code"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        if lockfile_seen:
            return _Launch(argv[: i + 1], (argv[i + 1 :],), label="flock")
        lockfile_seen = True
        i += 1
    return _Launch(argv, label="flock")


def _ip(argv: tuple[str, ...]) -> _Launch | None:
    opts = scan_options(argv[1:], "fbn", ())
    rest = argv[1 + opts.index :]
    if len(rest) >= 3 and rest[0] in ("netns", "netn", "net") and rest[1] in ("exec", "e"):
        start = 1 + opts.index + 3
        return _Launch(argv[:start], (argv[start:],) if start < len(argv) else (), label="ip netns exec")
    return None


def _chroot_like(short_arg: str, long_arg: Sequence[str], operands_before: int) -> Callable[[tuple[str, ...]], _Launch]:
    def launch(argv: tuple[str, ...]) -> _Launch:
        got = _simple_exec(argv, short_arg, long_arg, operands_before)
        if got.exec_argv:
            return got
        return _Launch(argv, stdin_script=True, label=argv[0])

    return launch


def _busybox(argv: tuple[str, ...]) -> _Launch:
    if len(argv) > 1 and not argv[1].startswith("-"):
        return _Launch(argv[:1], (argv[1:],), label="busybox")
    return _Launch(argv, label="busybox")


def _container_exec(argv: tuple[str, ...]) -> _Launch | None:
    """`docker|podman|nerdctl exec [opts] CONTAINER CMD…`."""
    if len(argv) < 2 or argv[1] != "exec":
        return None
    opts = scan_options(argv[2:], "eudw", ("env", "env-file", "user", "workdir", "detach-keys"))
    start = 2 + opts.index + 1
    interactive = bool(opts.flags & {"-i", "--interactive"})
    if start < len(argv):
        return _Launch(argv[:start], (argv[start:],), label=f"{argv[0]} exec")
    return _Launch(argv, stdin_script=interactive, label=f"{argv[0]} exec")


def _after_dashdash(sub: str) -> Callable[[tuple[str, ...]], _Launch | None]:
    """`kubectl exec … -- CMD`, `lxc exec NAME -- CMD`, `lxc-attach … -- CMD`."""

    def launch(argv: tuple[str, ...]) -> _Launch | None:
        if sub and (len(argv) < 2 or argv[1] != sub):
            return None
        if "--" not in argv:
            return _Launch(argv, label=argv[0])
        k = argv.index("--")
        return _Launch(argv[:k], (argv[k + 1 :],) if k + 1 < len(argv) else (), label=argv[0])

    return launch


def _find(argv: tuple[str, ...]) -> _Launch | None:
    own: list[str] = []
    inner: list[tuple[str, ...]] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                inner.append(argv[i + 1 : j])
            own.append(a)
            i = j + 1
            continue
        own.append(a)
        i += 1
    if not inner:
        return None
    return _Launch(tuple(own), tuple(inner), label="find -exec")


def _eval(argv: tuple[str, ...]) -> _Launch:
    return _Launch(argv[:1], scripts=(" ".join(argv[1:]),), label="eval")


def _at(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(argv[1:], "qf", (), stop_at_operand=False)
    if opts.flags & {"-l", "-r", "-d", "-c", "-f", "-V"}:
        return _Launch(argv, label=argv[0])
    return _Launch(argv, stdin_script=True, label=argv[0])


def _ansible(argv: tuple[str, ...]) -> _Launch | None:
    opts = scan_options(
        argv[1:],
        "maiuefMlTtkKbBPcCDv",
        ("module-name", "args", "inventory", "user", "extra-vars", "limit"),
        stop_at_operand=False,
    )
    module = opts.values.get("-m") or opts.values.get("--module-name") or "command"
    script = opts.values.get("-a") or opts.values.get("--args")
    if script is None or module.split(".")[-1] not in ("shell", "command", "raw"):
        return None
    return _Launch(argv, scripts=(script,), label="ansible")


_SSH_ARG = "BbcDEeFIiJLlmOopQRSWw"
_SSH_FAMILY = frozenset({"ssh", "autossh"})


def _ssh(argv: tuple[str, ...]) -> _Launch:
    opts = scan_options(argv[1:], _SSH_ARG + ("M" if command_name(argv[0]) == "autossh" else ""))
    host_at = 1 + opts.index
    if host_at >= len(argv):
        return _Launch(argv, label="ssh")
    remote = argv[host_at + 1 :]
    own = argv[: host_at + 1]
    if remote:
        return _Launch(own, scripts=(" ".join(remote),), label="ssh")
    if opts.flags & {"-N", "-V", "-G", "-O", "-W", "-Q"}:
        return _Launch(own, label="ssh")
    return _Launch(own, stdin_script=True, label="ssh")


def _sshpass(argv: tuple[str, ...]) -> _Launch:
    return _simple_exec(argv, "pfdP")


_LAUNCHERS: dict[str, Callable[[tuple[str, ...]], _Launch | None]] = {
    "sudo": _sudo,
    "doas": lambda a: _simple_exec(a, "uC"),
    "pkexec": lambda a: _simple_exec(a, "", ("user",)),
    "gosu": lambda a: _simple_exec(a, operands_before=1),
    "su-exec": lambda a: _simple_exec(a, operands_before=1),
    "su": _su,
    "runuser": _su,
    "env": _env,
    "nohup": lambda a: _simple_exec(a),
    "timeout": _timeout,
    "nice": _nice,
    "ionice": _pid_mode("cnpPu", {"-p", "-P", "-u"}),
    "chrt": _pid_mode("TPD", {"-p", "--pid"}, operands_before=1),
    "taskset": _pid_mode("", {"-p", "--pid"}, operands_before=1),
    "stdbuf": lambda a: _simple_exec(a, "ioe", ("input", "output", "error")),
    "setsid": lambda a: _simple_exec(a),
    "time": lambda a: _simple_exec(a, "fo", ("format", "output")),
    "command": _command,
    "builtin": lambda a: _simple_exec(a),
    "exec": lambda a: _simple_exec(a, "a"),
    "xargs": _xargs,
    "watch": _watch,
    "flock": _flock,
    "strace": _pid_mode("oepsEIabuSPX", {"-p"}),
    "ltrace": _pid_mode("oepsaunA", {"-p"}),
    "unbuffer": lambda a: _simple_exec(a),
    "systemd-run": lambda a: _simple_exec(
        a,
        "pEuMH",
        (
            "unit",
            "property",
            "description",
            "slice",
            "uid",
            "gid",
            "working-directory",
            "setenv",
            "on-calendar",
            "on-active",
            "machine",
            "host",
            "nice",
        ),
    ),
    "nsenter": _chroot_like("tSGw", ("target", "setuid", "setgid", "wd"), 0),
    "unshare": _chroot_like("SGRw", ("setuid", "setgid", "root", "wd"), 0),
    "chroot": _chroot_like("", ("userspec", "groups"), 1),
    "ip": _ip,
    "busybox": _busybox,
    "sshpass": _sshpass,
    "docker": _container_exec,
    "podman": _container_exec,
    "nerdctl": _container_exec,
    "kubectl": _after_dashdash("exec"),
    "oc": _after_dashdash("exec"),
    "lxc": _after_dashdash("exec"),
    "incus": _after_dashdash("exec"),
    "lxc-attach": _after_dashdash(""),
    "find": _find,
    "eval": _eval,
    "at": _at,
    "batch": _at,
    "ansible": _ansible,
    "ssh": _ssh,
    "autossh": _ssh,
}


def launch_of(argv: tuple[str, ...]) -> _Launch | None:
    """How `argv` launches another command or script, or None for a plain command."""
    if not argv:
        return None
    name = command_name(argv[0])
    if name in SHELLS:
        return _shell(argv)
    handler = _LAUNCHERS.get(name)
    return handler(argv) if handler else None


# --------------------------------------------------------------------------- expansion


_DOWNLOADERS = frozenset({"curl", "wget", "fetch"})


def _stdin_text(cmd: SimpleCommand, prev: SimpleCommand | None) -> tuple[str | None, str | None]:
    """(script text fed to cmd's stdin if statically known, name of the producer)."""
    for r in reversed(cmd.redirects):
        if r.op in ("<<", "<<-", "<<<"):
            return r.body or "", None
    if prev is None:
        return None, None
    name = prev.name
    if name == "echo":
        words = [a for a in prev.args if not re.fullmatch(r"-[neE]+", a)]
        return " ".join(words), name
    if name == "printf" and prev.args:
        return prev.args[0].replace("\\n", "\n"), name
    if name == "cat":
        for r in reversed(prev.redirects):
            if r.op in ("<<", "<<-", "<<<"):
                return r.body or "", name
    return None, name


def _expand_pipeline(
    pipeline: Sequence[SimpleCommand], depth: int, via: tuple[str, ...], out: list[SimpleCommand], functions: set[str]
) -> None:
    prev: SimpleCommand | None = None
    for cmd in pipeline:
        cmd = replace(cmd, via=via + cmd.via)
        prev = _expand(cmd, depth, prev, out, functions)


def _expand(
    cmd: SimpleCommand,
    depth: int,
    prev: SimpleCommand | None,
    out: list[SimpleCommand],
    functions: set[str],
    chain: int = 0,
) -> SimpleCommand:
    """Append cmd's layers to `out`; return the innermost layer (what produces its output)."""
    launch = launch_of(cmd.argv) if chain <= MAX_CHAIN else None
    if launch is None:
        out.append(cmd)
        return cmd
    runs_more = bool(launch.exec_argv)
    layer = replace(
        cmd, argv=launch.own, redirects=() if runs_more else cmd.redirects, stdin_script=launch.stdin_script
    )
    if launch.stdin_script:
        text, producer = _stdin_text(cmd, prev)
        layer = replace(layer, stdin_from=producer)
        out.append(layer)
        if text is not None and depth < MAX_DEPTH:
            _recurse(text, depth, (*cmd.via, launch.label), out, functions)
        return layer
    out.append(layer)
    for script in launch.scripts:
        if depth < MAX_DEPTH:
            _recurse(script, depth, (*cmd.via, launch.label), out, functions)
    innermost = layer
    for argv in launch.exec_argv:
        inner = replace(cmd, argv=argv, assignments=(), via=(*cmd.via, launch.label))
        innermost = _expand(inner, depth, prev, out, functions, chain + 1)
    return innermost


def _recurse(source: str, depth: int, via: tuple[str, ...], out: list[SimpleCommand], functions: set[str]) -> None:
    inner = _parse(source, depth + 1, via)
    out.extend(inner.commands)
    functions |= inner.functions
