"""The command analysis says exactly what it said when the corpus was recorded.

`outputs.py` (see its docstring) recorded the parse, impact hits, safety decisions,
attribution effects and attributions of ~6000 command strings from tests/, tasks/ and the
docs; any difference is a regression unless it is a named bug fix re-recorded with
`python -m tests.unit.analysis.outputs --record`.
"""

from __future__ import annotations

import json

import pytest

from tests.unit.analysis.outputs import line_of, read_fixture

LINES = read_fixture()
CHUNKS = 8


def test_corpus_is_large() -> None:
    assert len(LINES) >= 5000


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_outputs_are_unchanged(chunk: int) -> None:
    changed: list[str] = []
    for line in LINES[chunk::CHUNKS]:
        command = json.loads(line)["command"]
        if line_of(command) != line:
            changed.append(command)
    assert not changed, f"{len(changed)} commands changed, e.g. {changed[:5]!r}"
