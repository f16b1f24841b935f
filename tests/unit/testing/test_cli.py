"""testbed.testing.cli: reading `testbed launch`'s job id from its output."""

from __future__ import annotations

import io

import pytest

from testbed.testing.cli import read_job_id


def test_read_job_id_skips_lines_before_the_job_line() -> None:
    job = "4f2a" * 8
    stream = io.StringIO(f"some warning\n  context\njob {job}\nrun 1\n")
    assert read_job_id(stream) == job
    assert stream.readline() == "run 1\n"


def test_read_job_id_without_a_job_line_shows_what_it_read() -> None:
    with pytest.raises(AssertionError, match="no 'job ID' line in:\nboom"):
        read_job_id(io.StringIO("boom\n"))
