"""The grammar: tokens grouped into pipelines; groups, functions, compound commands."""

from __future__ import annotations

from testbed.analysis.command.grammar import Parser
from testbed.analysis.command.lexer import Lexer


def pipelines(text: str) -> Parser:
    parser = Parser(Lexer(text).run())
    parser.run()
    return parser


def test_pipelines_and_background() -> None:
    parser = pipelines("a | b & c")
    assert [[c.argv for c in p] for p in parser.pipelines] == [[("a",), ("b",)], [("c",)]]
    assert [c.background for c in parser.pipelines[0]] == [True, True]
    assert [(c.pipe_index, c.pipe_len) for c in parser.pipelines[0]] == [(0, 2), (1, 2)]


def test_functions_name_their_bodies() -> None:
    parser = pipelines("function g { h; }; f() ( i ); g")
    assert parser.functions == {"f", "g"}
    assert [(c.argv, c.function) for p in parser.pipelines for c in p] == [
        (("h",), "g"),
        (("i",), "f"),
        (("g",), None),
    ]


def test_reserved_words_and_tests_start_nothing() -> None:
    parser = pipelines("if [[ -n $x ]]; then time -p run; fi; for i in 1 2; do :; done")
    assert [c.argv for p in parser.pipelines for c in p] == [("run",), (":",)]


def test_case_patterns_are_not_commands() -> None:
    parser = pipelines("case $1 in start|stop) svc $1 ;; *) usage ;; esac")
    assert [c.argv for p in parser.pipelines for c in p] == [("svc", "$1"), ("usage",)]


def test_substitutions_in_redirect_targets_are_collected() -> None:
    assert pipelines("cat > $(mktemp)").subs == ["mktemp"]


def test_redirects_and_assignments_belong_to_their_command() -> None:
    (cmd,) = pipelines("A=1 B=2 run <in >out").pipelines[0]
    assert cmd.assignments == ("A=1", "B=2")
    assert [(r.op, r.target) for r in cmd.redirects] == [("<", "in"), (">", "out")]
