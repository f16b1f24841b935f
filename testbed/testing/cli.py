"""Helpers for tests that drive the `testbed` command line in a subprocess."""

from __future__ import annotations

from typing import IO

from testbed.scheduler.launch import job_id_in


def read_job_id(stream: IO[str]) -> str:
    """Read `testbed launch`'s output until its `job ID` line and return the id.

    Lines before it (a library's warning on stderr merged into stdout) are kept for the error
    raised when the stream ends without one. The line's one definition is
    `testbed.scheduler.launch.job_line`.
    """
    seen: list[str] = []
    for line in iter(stream.readline, ""):
        job_id = job_id_in(line)
        if job_id is not None:
            return job_id
        seen.append(line)
    raise AssertionError("no 'job ID' line in:\n" + "".join(seen))
