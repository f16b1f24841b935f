"""testbed.model.taskfiles: every file a task names stays inside its directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.errors import InputError
from testbed.model.taskfiles import TaskFiles


@pytest.fixture
def files(tmp_path: Path) -> TaskFiles:
    task = tmp_path / "tasks" / "t"
    (task / "setup").mkdir(parents=True)
    (task / "setup" / "ok.sh").write_text("echo ok\n")
    (tmp_path / "outside.sh").write_text("echo secret\n")
    return TaskFiles(task, task / "task.toml")


def test_a_file_inside_is_read_once(files: TaskFiles) -> None:
    assert files.text("setup/ok.sh", "setup[0].script") == "echo ok\n"
    (files.directory / "setup" / "ok.sh").write_text("changed\n")
    assert files.text("setup/ok.sh", "setup[0].script") == "echo ok\n"  # what was checked is what runs
    assert files.text("setup/../setup/ok.sh", "x") == "changed\n"  # another name, read then


@pytest.mark.parametrize(
    ("relative", "make", "needle"),
    [
        ("/etc/passwd", None, "is an absolute path"),
        ("../../outside.sh", None, "leads outside the task directory"),
        ("setup/../../../outside.sh", None, "leads outside"),
        ("setup/link.sh", lambda d: (d / "setup" / "link.sh").symlink_to(d.parent.parent / "outside.sh"),
         "leads outside"),
        ("etc/passwd", lambda d: (d / "etc").symlink_to("/etc"), "leads outside"),
        ("setup/loop.sh", lambda d: (d / "setup" / "loop.sh").symlink_to(d / "setup" / "loop.sh"),
         "cannot be resolved"),
        ("setup/missing.sh", None, "no such file"),
        ("setup", None, "not a regular file"),
        ("setup/fifo", lambda d: os.mkfifo(d / "setup" / "fifo"), "not a regular file"),
        ("", None, "is not a file name"),
        ("a\x00b", None, "is not a file name"),
    ],
)  # fmt: skip
def test_files_outside_or_not_regular_are_refused(files: TaskFiles, relative: str, make, needle: str) -> None:
    if make is not None:
        make(files.directory)
    with pytest.raises(InputError) as info:
        files.text(relative, "setup[0].script")
    assert info.value.file == str(files.toml_path) and info.value.field == "setup[0].script"
    assert needle in info.value.problem


def test_symlink_inside_the_directory_is_fine(files: TaskFiles) -> None:
    (files.directory / "setup" / "alias.sh").symlink_to("ok.sh")
    assert files.text("setup/alias.sh", "s") == "echo ok\n"


def test_undecodable_script_names_file_field_and_position(files: TaskFiles) -> None:
    (files.directory / "setup" / "bad.sh").write_bytes(b"echo \xff\n")
    with pytest.raises(InputError) as info:
        files.text("setup/bad.sh", "oracle.script")
    assert info.value.field == "oracle.script"
    assert "bad.sh: not UTF-8 text: byte 0xff at line 1, column 6" in info.value.problem
