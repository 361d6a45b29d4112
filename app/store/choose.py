"""Which store SIGNOFF_BOT_DB names (kept apart from both engines, so neither imports the other's chooser)."""

from __future__ import annotations

import time
from collections.abc import Callable

from .sql import POSTGRES_SCHEMES, SqliteStore, SqlStore, sqlite_path


def open_store(db: str, clock: Callable[[], float] = time.time) -> SqlStore:
    """The store SIGNOFF_BOT_DB names: PostgreSQL for a postgresql:// URL, else a SQLite file."""
    if db.startswith(POSTGRES_SCHEMES):
        from .postgres import PostgresStore  # psycopg is imported only by deployments that use it

        return PostgresStore(db, clock)
    return SqliteStore(sqlite_path(db), clock)
