"""Grammar of command lines: tokens grouped into pipelines of simple commands.

Contract: `Parser(tokens).run()` never raises; afterwards `pipelines` holds every pipeline
in source order (each a list of `SimpleCommand`s with its position and background flag),
`subs` the command-substitution bodies seen in words and redirections (to be parsed in
turn) and `functions` the names of functions defined. It descends into lists, groups
`{ …; }`, subshells `( … )`, `if`/`while`/`until`/`for`/`select`/`case` bodies and function
bodies; `[[ … ]]` tests and `for` heads are skipped (they start nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testbed.analysis.command.lexer import Tok
from testbed.analysis.command.parsed import ASSIGNMENT, Redirect, SimpleCommand

_RESERVED_SKIP = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "time"})
_RESERVED_END = frozenset({"fi", "done"})


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


class Parser:
    """Walks tokens and groups them into pipelines of simple commands."""

    def __init__(self, toks: list[Tok]) -> None:
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

    def _special_mode(self, tok: Tok) -> bool:
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

    def _skip_empty_parens(self) -> bool:
        """Consume a following `()` (a function definition's); True if there was one."""
        t = self.toks
        if (
            self.pos + 1 < len(t)
            and t[self.pos].kind == "op"
            and t[self.pos].value == "("
            and t[self.pos + 1].kind == "op"
            and t[self.pos + 1].value == ")"
        ):
            self.pos += 2
            return True
        return False

    def _on_word(self, tok: Tok) -> None:
        cur = self.cur
        if not cur.argv and not tok.quoted and self._keyword(tok.value):
            return
        if not cur.argv and ASSIGNMENT.match(tok.value):
            cur.assignments.append(tok.value)
            return
        cur.argv.append(tok.value)
        if len(cur.argv) == 1 and not cur.assignments and not tok.quoted and self._skip_empty_parens():
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

    def _on_redirect(self, tok: Tok) -> None:
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
