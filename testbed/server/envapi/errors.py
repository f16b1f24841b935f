"""What can go wrong with an environment-API episode (the routes map each to an HTTP status)."""

from __future__ import annotations


class EpisodeError(Exception):
    """An episode could not be created or went wrong on the harness side."""

    def __init__(self, message: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class CapacityError(EpisodeError):
    """Too many episodes at once."""


class NotFoundError(EpisodeError):
    """No such episode."""


class DoneError(EpisodeError):
    """The episode is done: no further step."""


class BusyError(EpisodeError):
    """Another step of this episode is in progress."""


class StepTimeout(EpisodeError):
    """The step's result did not come back in time."""
