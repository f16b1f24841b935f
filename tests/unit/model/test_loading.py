"""testbed.model.loading: reading user files never raises anything but `InputError`, and
field paths are the user's, not pydantic's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed.errors import InputError
from testbed.model.images import ImageDef
from testbed.model.job import JobSpec
from testbed.model.loading import (
    MAX_DEPTH,
    check_shape,
    field_path,
    parse_json,
    read_text,
    read_toml,
    read_yaml,
    validate,
)
from testbed.model.task import TaskDef


def test_read_text_names_undecodable_bytes_by_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "x.sh"
    path.write_bytes(b"echo ok\necho \xe9t\xe9\n")
    with pytest.raises(InputError) as info:
        read_text(path)
    assert info.value.file == str(path)
    assert info.value.problem == "not UTF-8 text: byte 0xe9 at line 2, column 6"


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"x" * 33), "larger than"),
    ],
)
def test_read_text_refuses_what_is_not_a_small_regular_file(tmp_path: Path, make: Any, needle: str) -> None:
    path = tmp_path / "f"
    make(path)
    with pytest.raises(InputError, match=needle):
        read_text(path, limit=32)


def test_read_text_refuses_devices_without_reading_them() -> None:
    with pytest.raises(InputError, match="not a regular file"):
        read_text(Path("/dev/zero"))


def test_deep_documents_are_refused_in_every_format(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    (tmp_path / "a.yaml").write_text(f"a: {deep[:2400]}{deep[-2400:]}\n")
    (tmp_path / "a.toml").write_text(f"a = {deep}\n")
    for reader, name in ((read_yaml, "a.yaml"), (read_toml, "a.toml")):
        with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH}"):
            reader(tmp_path / name)
    with pytest.raises(InputError, match="nested deeper") as info:
        parse_json(deep, "log.jsonl", "line 3")
    assert info.value.field == "line 3"


def test_the_depth_limit_is_exact() -> None:
    check_shape({"a": _nest(MAX_DEPTH - 1)}, "f")  # MAX_DEPTH containers in all
    with pytest.raises(InputError):
        check_shape({"a": _nest(MAX_DEPTH)}, "f")


def _nest(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def test_yaml_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10**9 values
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="more than 200000 values"):
        read_yaml(tmp_path / "bomb.yaml")


def test_parse_json_names_the_column() -> None:
    with pytest.raises(InputError, match=r"not valid JSON \(Expecting property name .* at column 10\)"):
        parse_json('{"a": 1, ', "f", "line 1")


@pytest.mark.parametrize(
    ("model", "data", "field", "needle"),
    [
        # tagged union: the tag `url` is pydantic's, not a field
        (ImageDef, {"name": "x", "os": {"family": "debian", "release": "1"}, "dialect": "debian",
                    "source": {"type": "url", "url": "u", "sha256": "x"}}, "source.sha256", "pattern"),
        # union of a literal and a list: neither member's label appears
        (JobSpec, {"name": "j", "images": 5}, "images", "'default' or 'all' or Input should be a valid list (got 5)"),
        (JobSpec, {"name": "j", "images": ["a", 3]}, "images[1]", "valid string"),
        (JobSpec, {"name": "j", "hosts": [{"name": "a", "vm_slots": "x"}]}, "hosts[a].vm_slots", "(got 'x')"),
        (JobSpec, {"name": "j", "colour": 1}, "colour", "unknown field"),
        (TaskDef, {"id": "aa", "category": "c", "topology": 5, "images": ["d"],
                   "checks": [{"id": "R1", "description": "d", "node": "n", "command": "c"}]},
         "topology", "valid string or Input should be a valid dictionary (got 5)"),
        (TaskDef, {"id": "aa", "category": "c", "topology": "t", "images": ["d"],
                   "checks": [{"description": "d", "node": "n", "command": "c"}]}, "checks[0].id", "missing"),
    ],
)  # fmt: skip
def test_field_paths_are_the_users(model: Any, data: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        validate(model, data, Path("f.yaml"))
    assert info.value.field == field
    assert needle in info.value.problem


def test_field_path_keeps_a_real_field_named_like_the_tag() -> None:
    data = {"source": {"type": "url", "url": 5}}
    assert field_path(("source", "url", "url"), data) == "source.url"
    assert field_path(("source", "url", "sha256"), data) == "source.sha256"


def test_validate_prefixes_a_table_validated_alone() -> None:
    with pytest.raises(InputError) as info:
        validate(JobSpec, {"name": "j", "attempts": 0}, None, prefix="config.spec")
    assert info.value.file is None and info.value.field == "config.spec.attempts"
