"""The parsers' output on every recorded snapshot is byte-identical to the golden file
recorded before `testbed.probes.parsers` became a package (see golden.py beside this file)."""

from __future__ import annotations

import json

import pytest

from tests.unit.probes.parsers.golden import GOLDEN, dump, golden_inputs, golden_output, golden_outputs


@pytest.fixture(scope="module")
def recorded() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(GOLDEN.read_text("utf-8"))
    return loaded


def test_golden_file_is_byte_identical_to_current_output() -> None:
    assert dump(golden_outputs()) == GOLDEN.read_text("utf-8")


def test_golden_covers_every_fixture_part(recorded: dict[str, object]) -> None:
    cases = golden_inputs()
    assert set(recorded) == set(cases)
    for distro in ("debian", "rhel", "alpine"):
        assert f"{distro}/full" in cases
    assert sum(1 for c in cases if c.count("/") == 1 and "." in c.split("/")[1]) >= 100


@pytest.mark.parametrize("case", sorted(golden_inputs()))
def test_each_case_matches(case: str, recorded: dict[str, object]) -> None:
    current = json.loads(json.dumps(golden_output(case), ensure_ascii=False))
    assert current == recorded[case]
