"""How an SQLite write transaction waits for the write lock another connection holds
(app/store.py `SqliteStore._patiently`)."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from app import store as store_module
from app.store import JobSpec, SqliteStore


def _hold_the_write_lock(path: str, seconds: float, held: threading.Event) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    db.execute("COMMIT")
    db.close()


def test_a_write_waits_for_the_lock_another_connection_holds(tmp_path):
    path = str(tmp_path / "x.db")
    store = SqliteStore(path)
    held = threading.Event()
    other = threading.Thread(target=_hold_the_write_lock, args=(path, 0.05, held))
    other.start()
    held.wait()
    start = time.monotonic()
    assert store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [JobSpec("comment", "o/r", 1)])
    waited = time.monotonic() - start
    other.join()
    assert 0.04 <= waited
    assert [j["pr"] for j in store.jobs()] == [1]
    store.close()


def test_a_write_gives_up_when_the_lock_stays_held(tmp_path, monkeypatch):
    path = str(tmp_path / "x.db")
    store = SqliteStore(path)
    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.1)
    held = threading.Event()
    other = threading.Thread(target=_hold_the_write_lock, args=(path, 0.5, held))
    other.start()
    held.wait()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [])
    other.join()
    assert store.record_delivery("1:1:a", "issue_comment", "created", "o/r", 1, [])  # nothing half-done
    store.close()
