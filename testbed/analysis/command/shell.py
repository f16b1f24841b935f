"""A conservative, total parser of POSIX/bash command lines: the one shell parse.

Contract: `parse(source)` never raises. It returns every *simple command* the shell would
start for `source`, each as a `SimpleCommand` with its argv after quote removal
(expansions such as `$X` or `$(…)` are kept as their literal text). It descends into:

- lists and pipelines (`;`, `&&`, `||`, `|`, `|&`, `&`, newlines), groups `{ …; }`,
  subshells `( … )`, `if`/`while`/`until`/`for`/`select`/`case` bodies, function bodies
  (`grammar`);
- command and process substitutions `$( … )`, backticks, `<( … )`, `>( … )`, also inside
  double quotes and inside unquoted here-document bodies (`lexer`);
- wrappers (`wrappers`): `sudo`, `env`, `timeout`, `nice`, `xargs`, `find -exec`,
  `ssh host '…'`, … — each yields two layers: the wrapper itself with only its own
  arguments and the launched command;
- shell strings: `bash|sh|dash|zsh|ksh|ash -c '…'` and `ssh host '…'` are parsed
  recursively; a shell that reads its script from stdin (`bash`, `bash -s`, `sudo -i`,
  `su -`, `ssh host` without a command, `at now`) gets the body of its here-document or
  here-string, or the output of an `echo`/`printf`/`cat <<EOF` piped into it.

Here-document bodies of other commands (`cat <<EOF`, `mysql <<EOF`) are data, not
commands. Quoted text is data: `echo "rm -rf /"` yields only `echo`.

bashlex is deliberately not used: it raises on `[[ … ]]`, `case`, `$(( … ))`, `time`,
arrays and quoted here-document delimiters (`<<'EOF'`), all of which agents write
routinely. If this parser hits an internal error it falls back to a plain split on
separators and `shlex` words (`parse_fallback`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import replace

from testbed.analysis.command.grammar import Parser
from testbed.analysis.command.lexer import Lexer, heredoc_substitutions
from testbed.analysis.command.parsed import ASSIGNMENT, Parsed, SimpleCommand
from testbed.analysis.command.wrappers import launch_of

MAX_DEPTH = 8
"""How deep shell strings inside shell strings (`bash -c "ssh h 'sh -c …'"`) are followed."""
MAX_CHAIN = 32
"""How many wrappers in a row (`sudo env timeout nice …`) are looked through."""


def parse(source: str, depth: int = 0) -> Parsed:
    """Parse `source` into the simple commands it would run, launchers unwrapped.

    Never raises; on an internal parser error falls back to `parse_fallback`.
    """
    try:
        return _parse(source, depth, ())
    except (RecursionError, IndexError, ValueError, TypeError, AttributeError):
        return parse_fallback(source)


def _parse(source: str, depth: int, via: tuple[str, ...]) -> Parsed:
    toks = Lexer(source).run()
    parser = Parser(toks)
    parser.run()
    out: list[SimpleCommand] = []
    functions = set(parser.functions)
    for pipeline in parser.pipelines:
        _expand_pipeline(pipeline, depth, via, out, functions)
    if depth < MAX_DEPTH:
        for sub in parser.subs + heredoc_substitutions(toks):
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
        while words and ASSIGNMENT.match(words[0]):
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
