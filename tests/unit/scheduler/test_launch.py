"""The `job ID` line of `testbed launch`: printed and read back through one definition."""

from __future__ import annotations

import io

import pytest

from testbed.db.models import new_id
from testbed.scheduler.launch import job_id_in, job_line
from testbed.testing.cli import read_job_id


def test_the_printed_line_reads_back_after_other_output() -> None:
    job_id = new_id()
    text = f"warning: a library spoke first\n{job_line(job_id)}\nrun 1/2 ...\n"
    assert job_id_in(text) == job_id
    assert read_job_id(io.StringIO(text)) == job_id


@pytest.mark.parametrize("text", ["", "job abc\n", "the job 0123456789abcdef0123456789abcdef\n", "jobs listed: 3\n"])
def test_no_job_line_no_id(text: str) -> None:
    assert job_id_in(text) is None
    with pytest.raises(AssertionError, match="no 'job ID' line"):
        read_job_id(io.StringIO(text))
