"""The durable queue: coalescing, per-PR exclusivity, lease expiry, retries, the append-only audit,
the versioned schema. Every test that takes `db` runs on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.store.choose import open_store
from app.store.postgres import PG_MIGRATIONS, PostgresStore
from app.store.sql import SQLITE_MIGRATIONS, Delivery, JobSpec, SchemaTooNew, SqliteStore
from checks.result import Outcome

from .databases import query


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def opened(db, clock):
    """Open stores on `db` as processes would, each with its own connections; closed after the test."""
    stores = []

    def open_one(clock=clock):
        stores.append(open_store(db, clock))
        return stores[-1]

    yield open_one
    for store in stores:
        store.close()


@pytest.fixture
def store(opened):
    return opened()


def verify(pr=1, **payload):
    return JobSpec("verify", "o/r", pr, 7, payload)


def test_a_delivery_is_recorded_once(store):
    assert store.record_delivery("h:t:guid", "issue_comment", "created", "o/r", 1, [verify()])
    assert not store.record_delivery("h:t:guid", "issue_comment", "created", "o/r", 1, [verify()])
    assert len(store.jobs()) == 1


def test_the_same_guid_for_another_hook_is_another_delivery(store):
    assert store.record_delivery("h1:t:guid", "issue_comment", "created", "o/r", 1, [verify()])
    assert store.record_delivery("h2:t:guid", "issue_comment", "created", "o/r", 1, [verify()])


def delivery(guid: str, pr: int = 1) -> Delivery:
    return Delivery(f"h:t:{guid}", "issue_comment", "created", "o/r", pr, [verify(pr, delivery=guid)])


def test_deliveries_committed_together_are_each_recorded_once(store):
    assert store.record_deliveries([delivery("a"), delivery("b", 2), delivery("a")]) == [True, True, False]
    assert store.record_deliveries([delivery("b", 2), delivery("c", 3)]) == [False, True]
    assert sorted(j["pr"] for j in store.jobs("queued")) == [1, 2, 3]


def test_a_delivery_the_database_cannot_take_is_left_out_alone(store):
    too_big = Delivery("h:t:bad", "issue_comment", "created", "o/r", 2**70, [])  # no 64-bit integer
    outcomes = store.record_deliveries([delivery("a"), too_big, delivery("b", 2)])
    assert outcomes[0] is True and isinstance(outcomes[1], Exception) and outcomes[2] is True
    assert sorted(j["pr"] for j in store.jobs("queued")) == [1, 2]
    with pytest.raises(Exception):
        store.record_delivery(too_big.key, too_big.event, too_big.action, too_big.repo, too_big.pr, [])


def test_a_burst_for_one_pr_coalesces_into_one_queued_job(store):
    for n in range(50):
        store.enqueue([verify(reason=f"event {n}")])
    queued = store.jobs("queued")
    assert len(queued) == 1
    assert '"event 49"' in queued[0]["payload"]


def test_jobs_that_coalesce_in_one_call_are_merged_as_one_after_another(store, clock):
    """What one transaction queues for one PR ends as separate calls would: the last payload and
    installation, the earliest time (PostgreSQL refuses one statement that updates a row twice)."""
    store.enqueue([verify(reason="early", delay=0)])
    store.enqueue([JobSpec("verify", "o/r", 1, 8, {"reason": "a"}, delay=60),
                   JobSpec("verify", "o/r", 1, 9, {"reason": "b"}, delay=30), verify(pr=2)])
    assert store.record_deliveries([delivery("x"), delivery("y"), delivery("x")]) == [True, True, False]
    queued = sorted(store.jobs("queued"), key=lambda j: j["pr"])
    assert [(j["pr"], j["installation_id"], j["not_before"]) for j in queued] == [(1, 7, clock.now), (2, 7, clock.now)]
    assert '"y"' in queued[0]["payload"]
    store.enqueue([JobSpec("verify", "o/r", 3, 8, {"reason": "a"}, delay=60),
                   JobSpec("verify", "o/r", 3, 9, {"reason": "b"}, delay=30)])
    (third,) = [j for j in store.jobs("queued") if j["pr"] == 3]
    assert (third["installation_id"], third["not_before"], third["payload"]) == (9, clock.now + 30, '{"reason": "b"}')


def test_one_running_job_per_pr(store):
    store.enqueue([verify(), JobSpec("lint", "o/r", 1, 7)])
    first = store.lease("w1", 30)
    assert first is not None
    assert store.lease("w2", 30) is None  # same PR: waits
    store.enqueue([verify(pr=2)])
    other = store.lease("w2", 30)
    assert other is not None and other.pr == 2


def test_a_new_event_during_a_run_queues_one_more_run(store):
    store.enqueue([verify()])
    running = store.lease("w1", 30)
    store.enqueue([verify(reason="later")])
    store.enqueue([verify(reason="latest")])
    assert len(store.jobs("queued")) == 1
    store.complete(running, "w1")
    follow_up = store.lease("w1", 30)
    assert follow_up.payload["reason"] == "latest"


def test_an_expired_lease_runs_again(store, clock):
    store.enqueue([verify()])
    job = store.lease("dead-worker", 30)
    assert store.lease("w2", 30) is None
    clock.now += 31
    again = store.lease("w2", 30)
    assert again is not None and again.id == job.id and again.attempts == 2
    assert not store.heartbeat(job, "dead-worker", 30)  # the dead worker lost it
    store.complete(job, "dead-worker")  # and cannot finish it
    assert store.jobs("running")[0]["lease_owner"] == "w2"


def test_retry_waits_until_not_before(store, clock):
    store.enqueue([verify()])
    job = store.lease("w1", 30)
    store.retry(job, "w1", 60, "GitHub answered 502")
    assert store.lease("w1", 30) is None
    clock.now += 61
    assert store.lease("w1", 30).attempts == 2


def test_fail_records_the_reason(store):
    store.enqueue([verify()])
    job = store.lease("w1", 30)
    store.fail(job, "w1", "GitHub answered 404")
    assert store.jobs("failed")[0]["last_error"] == "GitHub answered 404"
    assert store.queue_depth() == 0


def test_the_audit_trail_is_append_only(store, db):
    store.append_audit({"repo": "o/r", "pr": 1, "head_sha": "abc", "inputs_digest": "d", "verdict": "PASS",
                        "published": {"writes": ["x"]}})
    assert store.audit(pr=1)[0]["verdict"] == "PASS"
    changes = ["UPDATE audit SET verdict = 'FAIL'", "DELETE FROM audit"]
    if db.startswith("postgresql://"):
        changes.append("TRUNCATE audit")
    for sql in changes:
        with pytest.raises(Exception, match="append-only"):
            query(db, sql)
    assert [r["verdict"] for r in store.audit()] == ["PASS"]


def test_a_decision_ends_its_job_and_is_recorded_once(store, clock):
    store.enqueue([verify()])
    dead = store.lease("killed", 30)
    assert dead.owner == "killed"
    clock.now += 31  # killed after publishing, before recording: its lease expires, the job runs again
    again = store.lease("w2", 30)
    record = {"repo": "o/r", "pr": 1, "head_sha": "a" * 40, "inputs_digest": "d", "verdict": "PASS"}
    assert not store.record_decision(dead, "a" * 40, "PASS", "fp", record)  # the lease is w2's now
    assert store.record_decision(again, "a" * 40, "PASS", "fp", record)
    assert [j["state"] for j in store.jobs()] == ["done"] and store.lease("w3", 30) is None
    assert store.verdict_for("o/r", 1, "a" * 40)["fingerprint"] == "fp"
    assert len(store.audit()) == 1
    assert not store.record_decision(again, "a" * 40, "PASS", "fp", record)  # once only
    assert len(store.audit()) == 1


def test_a_wait_for_a_rate_limit_is_not_a_failed_try_nor_charged_to_the_budget(store, clock):
    store.enqueue([verify()])
    job = store.lease("w1", 30)
    store.retry(job, "w1", 40, "rate limited", rate_limited=True)
    assert store.lease("w1", 30) is None
    clock.now += 40
    again = store.lease("w1", 30)
    assert (again.attempts, again.waited) == (1, 40)
    store.retry(again, "w1", 2, "GitHub answered 502")
    clock.now += 2
    assert (lambda j: (j.attempts, j.waited))(store.lease("w1", 30)) == (2, 40)


def test_an_older_database_gains_the_waited_column(tmp_path, clock):
    db = sqlite3.connect(str(tmp_path / "old.db"))
    db.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, repo TEXT NOT NULL, "
               "pr INTEGER NOT NULL, key TEXT NOT NULL DEFAULT '', installation_id INTEGER, payload TEXT NOT NULL "
               "DEFAULT '{}', state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL, "
               "lease_owner TEXT, lease_until REAL, created_at REAL NOT NULL, updated_at REAL NOT NULL, last_error TEXT)")
    db.execute("INSERT INTO jobs (kind, repo, pr, state, not_before, created_at, updated_at) "
               "VALUES ('verify', 'o/r', 1, 'queued', 0, 0, 0)")
    db.commit()
    db.close()
    store = SqliteStore(str(tmp_path / "old.db"), clock=clock)
    assert store.lease("w1", 30).waited == 0
    SqliteStore(str(tmp_path / "old.db"), clock=clock)  # opening it again changes nothing
    assert query(str(tmp_path / "old.db"), "PRAGMA user_version") == [(len(SQLITE_MIGRATIONS),)]


def schema_versions(db: str) -> list[int]:
    """The migrations the database records as applied."""
    if db.startswith("postgresql://"):
        return [v for (v,) in query(db, "SELECT version FROM schema_migrations ORDER BY version")]
    return list(range(1, query(db, "PRAGMA user_version")[0][0] + 1))


def test_the_schema_is_migrated_once_however_many_processes_start_together(db, opened):
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: opened(), range(4)))
    latest = len(PG_MIGRATIONS if db.startswith("postgresql://") else SQLITE_MIGRATIONS)
    assert schema_versions(db) == list(range(1, latest + 1))
    stores[0].enqueue([verify()])
    opened()  # opening it again changes nothing
    assert schema_versions(db) == list(range(1, latest + 1))
    assert [j["state"] for j in stores[3].jobs()] == ["queued"]


def test_a_database_of_a_newer_release_is_refused(db, opened):
    opened()
    if db.startswith("postgresql://"):
        query(db, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)")
    else:
        query(db, "PRAGMA user_version = 999")
    with pytest.raises(SchemaTooNew, match="version 999"):
        opened()


def test_both_engines_migrate_to_the_same_version():
    """A new table or column is a new version on both engines (app/store/sql.py, app/store/postgres.py)."""
    assert len(PG_MIGRATIONS) == len(SQLITE_MIGRATIONS)


def test_verdicts_by_head(store):
    store.record_verdict("o/r", 1, "a" * 40, "REJECTED", "fp1")
    store.record_verdict("o/r", 1, "b" * 40, "NO_SIGNOFF")
    assert store.verdict_for("o/r", 1, "b" * 40)["label"] == "NO_SIGNOFF"
    assert store.last_verdict("o/r", 1)["fingerprint"] == "fp1"


def test_a_skipped_draft_followed_by_a_ready_pr_is_not_verified_before(store, clock):
    """Only an outcome that judged a sign-off makes a PR verified before: a skipped draft, a head waiting for
    a sign-off, one that could not complete or met our bug do not, before or after a real verification."""
    not_judged = [o for o in Outcome if not o.verified]
    assert {o.value for o in not_judged} == {"SKIPPED", "NO_SIGNOFF", "INCOMPLETE", "INTERNAL_ERROR"}
    for n, outcome in enumerate(not_judged):
        clock.now += 1
        store.record_verdict("o/r", 1, f"{n:040}", outcome)
    assert store.last_verdict("o/r", 1) is None
    clock.now += 1
    store.record_verdict("o/r", 1, "r" * 40, Outcome.NEEDS_MAINTAINER, "fp")  # ready for review, verified
    clock.now += 1
    store.record_verdict("o/r", 1, "s" * 40, Outcome.SKIPPED)  # a draft again
    last = store.last_verdict("o/r", 1)
    assert (last["head_sha"], last["label"]) == ("r" * 40, Outcome.NEEDS_MAINTAINER)


@pytest.mark.parametrize("stale", [False, True])
def test_a_stale_sign_off_was_verified_before(store, stale):
    store.record_verdict("o/r", 1, "a" * 40, Outcome.STALE if stale else Outcome.SKIPPED)
    assert (store.last_verdict("o/r", 1) is not None) is stale


def test_every_spelling_a_database_holds_reads_back_as_its_outcome(store, db):
    """Verdicts written before the Outcome type, as the strings they were: each reads back as its Outcome,
    and the verified ones count as verified before."""
    spellings = ["PASS", "REJECTED", "NEEDS A MAINTAINER", "STALE", "NO_SIGNOFF", "SKIPPED", "INCOMPLETE"]
    for n, label in enumerate(spellings):
        query(db, f"INSERT INTO verdicts (repo, pr, head_sha, label, fingerprint, at) "
                  f"VALUES ('o/r', {n}, '{n:040}', '{label}', '', 1)")
    read = [store.verdict_for("o/r", n, f"{n:040}")["label"] for n in range(len(spellings))]
    assert read == [Outcome(s) for s in spellings] and all(isinstance(o, Outcome) for o in read)
    assert [store.last_verdict("o/r", n) is not None for n in range(len(spellings))] == [
        True, True, True, True, False, False, False]


def test_a_sign_off_is_pinned_to_the_content_it_was_first_verified_on(store):
    first = store.pin_signoff("o/r", 1, "issue_comment:5:t1", "fp1", "a" * 40)
    again = store.pin_signoff("o/r", 1, "issue_comment:5:t1", "fp2", "b" * 40)
    assert (first["fingerprint"], first["head_sha"]) == (again["fingerprint"], again["head_sha"]) == ("fp1", "a" * 40)
    assert store.pin_signoff("o/r", 1, "issue_comment:5:t2", "fp2", "b" * 40)["fingerprint"] == "fp2"


def test_a_retry_while_a_newer_job_is_queued_gives_way_to_it(store):
    store.enqueue([verify(reason="first")])
    job = store.lease("w1", 30)
    store.enqueue([verify(reason="newer")])
    store.retry(job, "w1", 60, "GitHub answered 502")
    assert [(j["state"], j["last_error"]) for j in store.jobs()] == [
        ("done", "superseded; last error: GitHub answered 502"), ("queued", None)]
    assert store.lease("w1", 30).payload["reason"] == "newer"


def test_two_processes_share_one_database(opened):
    a, b = opened(), opened()
    a.enqueue([verify()])
    assert a.lease("a", 30) is not None
    assert b.lease("b", 30) is None


def test_one_delivery_sent_to_every_process_at_once_is_recorded_once(opened):
    stores = [opened() for _ in range(4)]
    start = threading.Barrier(len(stores))

    def deliver(store):
        start.wait()
        return store.record_delivery("h:t:same", "issue_comment", "created", "o/r", 1, [verify()])

    with ThreadPoolExecutor(len(stores)) as pool:
        assert sorted(pool.map(deliver, stores)) == [False, False, False, True]
    assert len(stores[0].jobs()) == 1


def test_workers_of_several_processes_never_run_two_jobs_of_one_pr_at_once(opened):
    """Eight workers over three processes drain 24 jobs of 4 PRs (6 kinds each): every job runs
    once, and no two workers ever hold jobs of the same PR at the same time."""
    stores = [opened(time.time) for _ in range(3)]
    stores[0].enqueue([JobSpec(kind, "o/r", pr, 7) for pr in range(1, 5)
                       for kind in ("verify", "lint", "opened", "comment", "sweep", "synchronize")])
    holding: Counter[int] = Counter()
    overlaps, ran = [], []
    guard = threading.Lock()

    deadline = time.monotonic() + 300  # a bound for a hang, not a speed

    def work(n: int) -> None:
        # until 24 leases were handed out (a job leased twice ends the loop early, and fails the count);
        # not "until idle for a second", which a worker descheduled while holding a job outlasts
        store, owner = stores[n % len(stores)], f"w{n}"
        while len(ran) < 24 and time.monotonic() < deadline:
            job = store.lease(owner, 30)
            if job is None:
                time.sleep(0.005)
                continue
            with guard:
                holding[job.pr] += 1
                if holding[job.pr] > 1:
                    overlaps.append(job.pr)
                ran.append(job.id)
            time.sleep(0.01)
            with guard:
                holding[job.pr] -= 1
            store.complete(job, owner)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert overlaps == []
    assert sorted(ran) == sorted(j["id"] for j in stores[0].jobs()) and len(ran) == 24
    assert {j["state"] for j in stores[0].jobs()} == {"done"}


def test_a_postgresql_store_carries_on_after_the_server_restarts(postgres, clock):
    """The pool checks a connection before handing it out: one that a restart (or a failover) broke is
    replaced, so the first call after the restart succeeds."""
    store = open_store(postgres.new_database(), clock)
    try:
        store.enqueue([verify()])
        assert store.queue_depth() == 1
        postgres.restart()
        assert store.lease("w1", 30) is not None
    finally:
        store.close()


def test_signoff_bot_db_names_the_engine(postgres, tmp_path):
    """A path or sqlite:///PATH is a SQLite file; a postgresql:// (or postgres://) URL a PostgreSQL database."""
    url = postgres.new_database()
    stores = [open_store(str(tmp_path / "a.db")), open_store(f"sqlite:///{tmp_path / 'b.db'}"), open_store(url),
              open_store(url.replace("postgresql://", "postgres://"))]
    try:
        assert [type(s) for s in stores] == [SqliteStore, SqliteStore, PostgresStore, PostgresStore]
        assert [s.path for s in stores[:2]] == [str(tmp_path / "a.db"), str(tmp_path / "b.db")]
        stores[2].enqueue([verify()])
        assert stores[3].queue_depth() == 1
    finally:
        for s in stores:
            s.close()


def test_pins_are_first_come_and_listed_per_pr(store, clock):
    assert store.signoff_pin("o/r", 1, "issue_comment:5:t") is None
    first = store.pin_signoff("o/r", 1, "issue_comment:5:t", "a" * 64, "1" * 40)
    clock.now += 1
    again = store.pin_signoff("o/r", 1, "issue_comment:5:t", "b" * 64, "2" * 40)  # a later verification
    store.pin_signoff("o/r", 1, "issue_comment:6:t", "c" * 64, "2" * 40)
    store.pin_signoff("o/r", 2, "issue_comment:7:t", "d" * 64, "3" * 40)
    assert first["fingerprint"] == again["fingerprint"] == "a" * 64
    assert store.signoff_pin("o/r", 1, "issue_comment:5:t")["head_sha"] == "1" * 40
    assert [p["signoff"] for p in store.pins("o/r", 1)] == ["issue_comment:5:t", "issue_comment:6:t"]


def test_ping_proves_a_write(store, clock):
    store.ping()
    clock.now += 5
    store.ping()
    assert [dict(r)["at"] for r in store._read("SELECT at FROM health")] == [1005.0]


def test_ping_fails_when_the_disk_beside_an_sqlite_file_is_nearly_full(tmp_path, clock, monkeypatch):
    import shutil

    store = SqliteStore(str(tmp_path / "bot.db"), clock=clock)
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: shutil._ntuple_diskusage(10**9, 10**9 - 4096, 4096))
    with pytest.raises(OSError, match="free"):
        store.ping()


def test_ping_fails_on_a_file_system_mounted_read_only(tmp_path, clock, monkeypatch):
    """The file system's read-only flag decides, whatever the App's open connection could still write."""
    store = SqliteStore(str(tmp_path / "bot.db"), clock=clock)
    real = os.statvfs

    def read_only(path):
        st = real(path)
        return os.statvfs_result((*st[:8], st.f_flag | os.ST_RDONLY, st.f_namemax))

    monkeypatch.setattr(os, "statvfs", read_only)
    with pytest.raises(OSError, match="read-only"):
        store.ping()
    assert store.queue_depth() == 0  # it still reads: only a write tells
    monkeypatch.setattr(os, "statvfs", real)
    store.ping()
    store.close()


def test_ping_writes_on_a_connection_of_its_own(tmp_path, clock, monkeypatch):
    """Another connection holding the write lock longer than the probe waits: not ready, every time;
    the store's own connection, open before, is not what the probe writes through."""
    from app.store import sql as store_module

    path = str(tmp_path / "bot.db")
    store = SqliteStore(path, clock=clock)
    monkeypatch.setattr(store_module, "PROBE_SECONDS", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    for _ in range(3):
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.ping()
    holder.execute("COMMIT")
    holder.close()
    store.ping()
    store._db.close()  # the probe does not use it
    store.ping()
