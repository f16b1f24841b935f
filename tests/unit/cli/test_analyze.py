"""`testbed analyze commands FILE.jsonl` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testbed.cli.analyze import annotate_lines, app
from testbed.errors import InputError

runner = CliRunner()


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "commands.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_output_objects_equal_input_plus_impact(tmp_path: Path) -> None:
    objects: list[dict[str, object]] = [
        {"seq": 1, "node": "n1", "command": "sudo systemctl stop nginx && rm -fr /var/x"},
        {"seq": 2, "command": "ls -la", "impact": ["stale"]},
        {"seq": 3, "note": "no command here"},
        {"seq": 4, "command": None},
        {"seq": 5, "command": "echo 'ünïcode' && reboot"},
    ]
    path = _write(tmp_path, [json.dumps(o) for o in objects] + [""])
    result = runner.invoke(app, ["commands", str(path)])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    expected = [["recursive_force_remove", "service_stop"], [], [], [], ["power_state"]]
    assert len(out) == len(objects)
    for got, obj, impact in zip(out, objects, expected, strict=True):
        assert got == {**obj, "impact": impact}
        assert list(got) == list({**obj, "impact": impact})  # key order is kept


@pytest.mark.parametrize(
    ("bad_line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"command": 42}', "expected a string"),
    ],
)
def test_malformed_line_exits_2_naming_file_and_line(tmp_path: Path, bad_line: str, problem: str) -> None:
    path = _write(tmp_path, ['{"command": "ls"}', "", bad_line])
    result = runner.invoke(app, ["commands", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.stderr
    assert "line 3" in result.stderr
    assert problem in result.stderr
    assert result.stdout == ""  # nothing written on bad input


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["commands", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert "nope.jsonl" in result.stderr


def test_stdin(tmp_path: Path) -> None:
    result = runner.invoke(app, ["commands", "-"], input='{"command": "kill -9 1"}\n')
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"command": "kill -9 1", "impact": ["force_kill"]}


def test_annotate_lines_raises_input_error() -> None:
    with pytest.raises(InputError) as info:
        list(annotate_lines(['{"command": "ls"}', "oops"], "f.jsonl"))
    assert info.value.file == "f.jsonl"
    assert info.value.field == "line 2"


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ("testbed", {"impact": ["service_stop"]}),
        ("study", {"study": ["forced_termination", "service_stop"]}),
        ("both", {"impact": ["service_stop"], "study": ["forced_termination", "service_stop"]}),
        ("STUDY", {"study": ["forced_termination", "service_stop"]}),
    ],
)
def test_classes_option_prints_study_classes_next_to_testbeds(
    tmp_path: Path, classes: str, expected: dict[str, list[str]]
) -> None:
    obj = {"seq": 1, "command": "pkill -HUP nginx; sudo systemctl stop nginx"}
    path = _write(tmp_path, [json.dumps(obj), json.dumps({"seq": 2})])
    result = runner.invoke(app, ["commands", str(path), "--classes", classes])
    assert result.exit_code == 0, result.output
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first == {**obj, **expected}
    assert list(first) == [*obj, *expected]  # impact before study, after the input keys
    assert second == {"seq": 2, **{key: [] for key in expected}}


def test_unknown_class_set_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"command": "ls"}'])
    result = runner.invoke(app, ["commands", str(path), "--classes", "all"])
    assert result.exit_code == 2
    assert "--classes" in result.output
    assert result.stdout.count("{") == 0
