"""How an SQLite write transaction waits for the write lock another connection holds
(app/store/sql.py `SqliteStore._patiently`)."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from app.store import sql as store_module
from app.store.sql import JobSpec, SqliteStore


def _hold_the_write_lock(path: str, held: threading.Event, release: threading.Event, released: list[float]) -> None:
    """Hold SQLite's write lock from `held` until `release`; `released` gets the moment it lets go."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    held.set()
    release.wait()
    released.append(time.monotonic())
    db.execute("COMMIT")
    db.close()


def test_a_write_waits_for_the_lock_another_connection_holds(tmp_path):
    """The write is asked for while the lock is held and let go of only a while later (0.2 s after the
    write began): it succeeds, and not before the lock was let go."""
    path = str(tmp_path / "x.db")
    store = SqliteStore(path)
    held, release, released = threading.Event(), threading.Event(), []
    other = threading.Thread(target=_hold_the_write_lock, args=(path, held, release, released))
    other.start()
    held.wait()
    threading.Timer(0.2, release.set).start()  # not a speed: the write below must wait, however long it takes
    assert store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [JobSpec("comment", "o/r", 1)])
    done = time.monotonic()
    other.join()
    assert released and done >= released[0]
    assert [j["pr"] for j in store.jobs()] == [1]
    store.close()


def test_a_write_gives_up_when_the_lock_stays_held(tmp_path, monkeypatch):
    path = str(tmp_path / "x.db")
    store = SqliteStore(path)
    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.1)
    held, release = threading.Event(), threading.Event()
    other = threading.Thread(target=_hold_the_write_lock, args=(path, held, release, []))
    other.start()
    held.wait()
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [])
    finally:
        release.set()  # held until the write gave up, however slowly it ran
        other.join()
    assert store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [])  # nothing half-done
    store.close()
