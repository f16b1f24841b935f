"""Helpers for tests that drive the `testbed` command line in a subprocess."""

from __future__ import annotations

from typing import IO

from testbed.cli.validate_tasks import JOB_LINE


def read_job_id(stream: IO[str]) -> str:
    """Read `testbed launch`'s output until its `job ID` line (`JOB_LINE`, as
    `scripts/validate-tasks` reads it) and return the id.

    Lines before it (a library's warning on stderr merged into stdout) are kept for the error
    raised when the stream ends without one.
    """
    seen: list[str] = []
    for line in iter(stream.readline, ""):
        if found := JOB_LINE.match(line):
            return found.group(1)
        seen.append(line)
    raise AssertionError("no 'job ID' line in:\n" + "".join(seen))
