"""testbed.model.outputs: a path to write is checked before anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.model.outputs import check_output, make_directory


def test_creatable_paths_pass_and_nothing_is_made(tmp_path: Path) -> None:
    assert check_output(tmp_path / "a" / "b" / "report.md", "--out") == tmp_path / "a" / "b" / "report.md"
    assert check_output(tmp_path / "out", directory=True) == tmp_path / "out"
    assert list(tmp_path.iterdir()) == []
    assert make_directory(tmp_path / "x" / "y").is_dir()


@pytest.mark.parametrize(
    ("relative", "directory", "needle"),
    [
        ("afile/r.md", False, "afile is not a directory"),
        ("afile/deeper/r.md", False, "afile is not a directory"),
        ("afile", True, "exists and is not a directory"),
        ("adir", False, "exists and is not a regular file"),
    ],
)
def test_impossible_paths_are_input_errors(tmp_path: Path, relative: str, directory: bool, needle: str) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(InputError) as info:
        check_output(tmp_path / relative, "--out", directory=directory)
    assert info.value.field == "--out" and needle in info.value.problem
    assert sorted(tmp_path.rglob("*")) == before


def test_make_directory_turns_os_refusal_into_input_error() -> None:
    with pytest.raises(InputError, match="cannot be created"):
        make_directory(Path("/proc/testbed-cannot-be-here"))
