"""The files a task directory holds and its task.toml names: instruction, scripts, topology.

Contract: `TaskFiles(directory, toml_path).path(relative, field)` is the file `relative`
names inside the task directory, or an `InputError(task.toml, field, problem)`: an
absolute path, a path that leaves the directory (`..`, or a symlink anywhere along it that
resolves outside), a missing file and anything but a regular file are refused. `text(...)`
reads such a file as UTF-8 (`testbed.model.loading.read_text`: size-capped, undecodable
bytes named by line and column) and keeps it, so a script is read once, when the task is
loaded, and what was checked is what runs.
"""

from __future__ import annotations

from pathlib import Path

from testbed.errors import InputError
from testbed.model.loading import read_text


class TaskFiles:
    """Files of one task directory, read once (see the module contract)."""

    def __init__(self, directory: Path, toml_path: Path) -> None:
        self.directory = directory
        self.toml_path = toml_path
        self._texts: dict[str, str] = {}

    def _root(self) -> Path:
        try:
            return self.directory.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise InputError(self.directory, None, f"cannot resolve the task directory: {exc}") from None

    def path(self, relative: str, field: str) -> Path:
        """The resolved file `relative` names inside the task directory (see the contract)."""
        if not relative.strip() or "\x00" in relative:
            raise InputError(self.toml_path, field, "is not a file name")
        candidate = Path(relative)
        if candidate.is_absolute():
            raise InputError(
                self.toml_path, field, f"'{relative}' is an absolute path: name a file inside the task directory"
            )
        root = self._root()
        try:
            resolved = (root / candidate).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise InputError(self.toml_path, field, f"'{relative}' cannot be resolved: {exc}") from None
        if not resolved.is_relative_to(root):
            raise InputError(
                self.toml_path,
                field,
                f"'{relative}' leads outside the task directory (to {resolved}); files sent to guests "
                "must be inside it",
            )
        if not resolved.exists():
            raise InputError(self.toml_path, field, f"no such file {root / candidate}")
        if not resolved.is_file():
            raise InputError(self.toml_path, field, f"'{relative}' is not a regular file")
        return resolved

    def text(self, relative: str, field: str) -> str:
        """The UTF-8 content of `relative` (checked by `path`), read once."""
        if relative not in self._texts:
            path = self.path(relative, field)
            try:
                self._texts[relative] = read_text(path)
            except InputError as exc:
                raise InputError(self.toml_path, field, f"{path}: {exc.problem}") from None
        return self._texts[relative]
