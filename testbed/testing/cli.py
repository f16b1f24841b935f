"""Helpers for tests that drive the `testbed` command line in a subprocess."""

from __future__ import annotations

from typing import IO


def read_job_id(stream: IO[str]) -> str:
    """Read `testbed launch`'s output until its `job ID` line and return the id.

    Lines before it (a library's warning on stderr merged into stdout) are kept for the error
    raised when the stream ends without one. (testbed.cli.validate_tasks has its own pattern
    for that line: nothing outside the command line may import it, tests/unit/test_layering.py.)
    """
    seen: list[str] = []
    for line in iter(stream.readline, ""):
        if line.startswith("job "):
            return line.split()[1]
        seen.append(line)
    raise AssertionError("no 'job ID' line in:\n" + "".join(seen))
