"""Paths a command is asked to write (a report, an export directory, a SQLite file): checked
before anything is opened or created.

Contract: `check_output(path, field, directory=...)` raises `InputError(path, field,
problem)` when `path` cannot be what is asked — an existing path of the other kind (a
directory where a file goes, a file where a directory goes), or a nearest existing ancestor
that is not a directory or that this process may not write into — and returns `path`
otherwise. It creates nothing; `make_directory` then creates a checked directory, turning
the operating system's refusal into the same `InputError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from testbed.errors import InputError


def check_output(path: Path, field: str | None = None, *, directory: bool = False) -> Path:
    """`path` if it can be written as a file (or created as a directory); see the contract."""
    if path.exists():
        if directory and not path.is_dir():
            raise InputError(path, field, "exists and is not a directory")
        if not directory and not path.is_file():
            raise InputError(path, field, "exists and is not a regular file")
        if not os.access(path if directory else path.parent, os.W_OK):
            raise InputError(path, field, "is not writable")
        return path
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(path, field, f"cannot be created: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(path, field, f"cannot be created: {ancestor} is not writable")
    return path


def make_directory(path: Path, field: str | None = None) -> Path:
    """Create `path` (and its parents) after `check_output`; an `OSError` is an `InputError`."""
    check_output(path, field, directory=True)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(path, field, f"cannot be created: {exc.strerror or exc}") from None
    return path
