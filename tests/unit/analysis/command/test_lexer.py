"""The lexer: words with quotes removed, operators, redirections, here-documents."""

from __future__ import annotations

import pytest

from testbed.analysis.command.lexer import Lexer, find_substitutions


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.value) for t in Lexer(text).run()]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a 'b c' \"d $e\" f\\ g", [("word", "a"), ("word", "b c"), ("word", "d $e"), ("word", "f g")]),
        (
            "a&&b||c|&d",
            [("word", "a"), ("op", "&&"), ("word", "b"), ("op", "||"), ("word", "c"), ("op", "|&"), ("word", "d")],
        ),
        ("x >>f 2>&1", [("word", "x"), ("redir", ">>"), ("word", "f"), ("redir", ">&"), ("word", "1")]),
        ("echo $'\\x41\\n'", [("word", "echo"), ("word", "A\n")]),
        ("a # comment", [("word", "a")]),
        ("((i++))", [("arith", "((i++))")]),
        ("arr=(1 2) x", [("word", "arr=(1 2)"), ("word", "x")]),
        ("a\\\nb", [("word", "ab")]),
    ],
)
def test_tokens(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


def test_quoted_words_are_marked_and_substitutions_kept() -> None:
    toks = Lexer('"$(id)" `date` <(ls)').run()
    assert [t.quoted for t in toks] == [True, False, False]
    assert [t.subs for t in toks] == [["id"], ["date"], ["ls"]]


def test_heredoc_bodies_are_read_at_the_newline() -> None:
    toks = Lexer("cat <<-'EOF' >x\n\tline $(no)\n\tEOF\nnext").run()
    doc = toks[1].heredoc
    assert doc is not None and (doc.delimiter, doc.quoted, doc.strip_tabs, doc.body) == (
        "EOF",
        True,
        True,
        "line $(no)",
    )
    assert toks[-1].value == "next"


def test_nested_parentheses_are_subshells_not_arithmetic() -> None:
    assert ("arith", "((cd x && rm -rf y))") not in kinds("((cd x && rm -rf y))")


def test_find_substitutions_in_expanded_text() -> None:
    assert find_substitutions("a $(b $(c)) `d` $((1+2)) \\$(e)") == ["b $(c)", "d"]


def test_unterminated_input_never_loops() -> None:
    for text in ("'", '"', "$(", "`", "${", "<<EOF", "$'\\", "\\"):
        assert isinstance(Lexer(text).run(), list)
