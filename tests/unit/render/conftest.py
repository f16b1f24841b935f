"""The read-model fixtures (a migrated SQLite database and its seeder) for the CLI tests here."""

from tests.unit.db.conftest import db_url, seed, sessions

__all__ = ["db_url", "seed", "sessions"]
