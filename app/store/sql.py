"""Durable state of the App: deliveries, the job queue, verdicts and the audit trail.

`Store` is the interface the server and workers use. `SqlStore` holds its
logic in the SQL that SQLite and PostgreSQL both speak; `SqliteStore` is the
default, embedded engine, safe for several processes sharing one database file
(WAL mode, writers serialised with BEGIN IMMEDIATE); `app.store.postgres.PostgresStore`
shares one PostgreSQL database between machines. `app.store.choose.open_store`
picks one from SIGNOFF_BOT_DB. Every method blocks: callers on the event loop run them in a
thread (`asyncio.to_thread`).

Guarantees the rest of the app relies on:
- a delivery is recorded together with the jobs it causes, in one transaction,
  before the webhook is answered; the same delivery twice is a no-op;
- jobs are coalesced: at most one queued job per (repo, PR, kind, key), so a
  burst of events for one PR yields one more verification, of the newest head;
- a PR has at most one running job at a time across all processes;
- a job's lease expires if its worker dies (kill -9), and the job runs again;
- a verification's decision (its verdict and audit record) is recorded together
  with the end of its job, so a job that runs again after a crash records it once;
- the audit table is append-only (triggers refuse UPDATE and DELETE);
- the schema is versioned: each engine applies the migrations a database lacks
  at start-up, once, however many processes start at the same time;
- `ping` proves the database takes a write (readiness means able to record a
  delivery): it rewrites the one row of `health` (schema version 2) on a
  connection opened for the probe, so that what it proves holds for the next
  connection too (a directory or file system made read-only, a restarted server);
- a database fault (`Transient`: a lost connection, a pool timeout, a server
  shutting down, a serialisation failure; SQLite busy, locked, read-only or
  failing I/O) is of the moment, never a verdict: the job that meets it runs
  again later (app/jobs/worker.py);
- a job's outcome is recorded only by the worker holding its lease (`complete`,
  `retry`, `fail`, `record_decision` check it in the transaction that records
  the outcome, and say whether they did); a verification that could not
  complete leaves its head's verdict INCOMPLETE, which reconcile verifies again;
- a head's verdict is a `checks.result.Outcome`, written as its value and read
  back as the Outcome; "verified before" (`last_verdict`) counts only the
  outcomes that judged a sign-off (`Outcome.verified`), not a skipped draft.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from checks.result import VERIFIED, Outcome

CHECKPOINT_EVERY = 200  # writes between two WAL checkpoints
ROWS_PER_STATEMENT = 64  # of a multi-row INSERT (SQLite binds at most 32,766 values in one)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:///"  # sqlite:///relative/path, sqlite:////absolute/path
MIN_FREE_BYTES = 64 * 1024 * 1024  # below this much free disk an SQLite database is about to refuse writes
BUSY_SECONDS = 30.0  # how long an SQLite statement waits for another connection's lock
# How an SQLite statement waits for a lock another connection holds (mostly the write lock, which the jobs'
# process takes): it tries again after BUSY_FIRST_SLEEP, then twice as long each time, up to BUSY_MAX_SLEEP.
# SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20 ms... between tries: with the jobs' process writing,
# the group commit's BEGIN then waited up to 21 ms for locks held for a fraction of that (p999 16 ms in the
# bench, 20 verifications running), and every delivery that came meanwhile waited behind it.
BUSY_FIRST_SLEEP = 0.0001
BUSY_MAX_SLEEP = 0.001
PROBE_SECONDS = 2.0  # how long the readiness probe's connection waits for a lock before it says "not ready"
T = TypeVar("T")

# Version n is SQLITE_MIGRATIONS[n - 1]; a database's PRAGMA user_version counts those it has.
# A new table or column is a new version here and in app/store/postgres.py's PG_MIGRATIONS.
SQLITE_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the schema of the releases before versioning (IF NOT EXISTS: such a database adopts it as it is)
    ("""CREATE TABLE IF NOT EXISTS deliveries (
    key TEXT PRIMARY KEY,           -- hook target + X-GitHub-Delivery
    event TEXT NOT NULL,
    action TEXT NOT NULL,
    repo TEXT NOT NULL,
    pr INTEGER,
    received_at REAL NOT NULL
)""",
     """CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    repo TEXT NOT NULL,
    pr INTEGER NOT NULL,
    key TEXT NOT NULL DEFAULT '',
    installation_id INTEGER,
    payload TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL,             -- queued | running | done | failed
    attempts INTEGER NOT NULL DEFAULT 0,  -- failed tries; waits for a rate limit's reset do not count
    waited REAL NOT NULL DEFAULT 0,       -- seconds spent waiting for rate limits: not charged to the budget
    not_before REAL NOT NULL,
    lease_owner TEXT,
    lease_until REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    last_error TEXT
)""",
     "CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_queued ON jobs (repo, pr, kind, key) WHERE state = 'queued'",
     "CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (state, not_before)",
     """CREATE TABLE IF NOT EXISTS verdicts (
    repo TEXT NOT NULL,
    pr INTEGER NOT NULL,
    head_sha TEXT NOT NULL,
    label TEXT NOT NULL,            -- PASS | REJECTED | NO_SIGNOFF
    fingerprint TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL,
    PRIMARY KEY (repo, pr, head_sha)
)""",
     """CREATE TABLE IF NOT EXISTS signoffs (   -- the content (diff fingerprint) each sign-off was first verified on
    repo TEXT NOT NULL,
    pr INTEGER NOT NULL,
    signoff TEXT NOT NULL,          -- comment kind:id:updated_at (an edit is a new sign-off)
    fingerprint TEXT NOT NULL,
    head_sha TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (repo, pr, signoff)
)""",
     """CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    delivery TEXT,
    repo TEXT NOT NULL,
    pr INTEGER NOT NULL,
    head_sha TEXT NOT NULL,
    inputs_digest TEXT NOT NULL,
    verdict TEXT NOT NULL,
    published TEXT NOT NULL
)""",
     """CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END""",
     """CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END"""),
    # 2: the row every readiness probe rewrites
    ("""CREATE TABLE IF NOT EXISTS health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at REAL NOT NULL
)""",),
)

# The jobs a worker may lease at time ? (three times): queued and due, or running under an expired
# lease (its worker died), and of a PR with no other job under a live lease.
RUNNABLE = """((j.state = 'queued' AND j.not_before <= ?) OR (j.state = 'running' AND j.lease_until <= ?))
              AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.repo = j.repo AND r.pr = j.pr AND r.id != j.id
                              AND r.state = 'running' AND r.lease_until > ?)"""


_VERIFIED_LABELS = tuple(sorted(o.value for o in VERIFIED))  # what `last_verdict` counts as verified before
_VERIFIED_MARKS = ",".join("?" * len(_VERIFIED_LABELS))


def _verdict_row(row) -> dict:
    """A verdicts row as a dict, its stored label read back as the Outcome it was written from."""
    return {**dict(row), "label": Outcome(row["label"])}


class _Rejected(Exception):
    """A statement of a batch of deliveries failed with `error` (the transaction is rolled back)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def _chunks(rows: list[T]) -> list[list[T]]:
    """`rows` in slices of at most ROWS_PER_STATEMENT, for multi-row statements."""
    return [rows[i:i + ROWS_PER_STATEMENT] for i in range(0, len(rows), ROWS_PER_STATEMENT)]


class LeaseLost(Exception):
    """The worker no longer holds the job's lease: another worker runs it, and this one's result is dropped."""


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer release; this one would misread it."""


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue; `key` distinguishes jobs of one kind that must not coalesce (e.g. comment ids)."""

    kind: str
    repo: str
    pr: int
    installation_id: int | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    delay: float = 0.0


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    repo: str
    pr: int
    key: str
    installation_id: int | None
    payload: dict[str, Any]
    attempts: int
    created_at: float
    owner: str = ""  # the worker holding the lease
    waited: float = 0.0  # seconds this job spent waiting for GitHub's rate limit to reset


@dataclass(frozen=True)
class Delivery:
    """A webhook delivery to record: `key` is hook target + X-GitHub-Delivery; `jobs` what it causes."""

    key: str
    event: str
    action: str
    repo: str
    pr: int | None
    jobs: list[JobSpec]


class Store(Protocol):
    def record_delivery(self, key: str, event: str, action: str, repo: str, pr: int | None,
                        jobs: list[JobSpec]) -> bool: ...
    def record_deliveries(self, deliveries: list[Delivery]) -> list[bool | Exception]: ...
    def enqueue(self, jobs: list[JobSpec]) -> None: ...
    def lease(self, owner: str, lease_seconds: float) -> Job | None: ...
    def heartbeat(self, job: Job, owner: str, lease_seconds: float) -> bool: ...
    def complete(self, job: Job, owner: str) -> bool: ...
    def retry(self, job: Job, owner: str, delay: float, error: str, rate_limited: bool = False,
              excused: float = 0.0) -> bool: ...
    def fail(self, job: Job, owner: str, error: str, head_sha: str | None = None,
             outcome: Outcome = Outcome.INCOMPLETE) -> bool: ...
    def queue_depth(self) -> int: ...
    def record_verdict(self, repo: str, pr: int, head_sha: str, label: Outcome, fingerprint: str = "") -> None: ...
    def verdict_for(self, repo: str, pr: int, head_sha: str) -> dict | None: ...
    def pin_signoff(self, repo: str, pr: int, signoff: str, fingerprint: str, head_sha: str) -> dict: ...
    def signoff_pin(self, repo: str, pr: int, signoff: str) -> dict | None: ...
    def pins(self, repo: str, pr: int) -> list[dict]: ...
    def last_verdict(self, repo: str, pr: int) -> dict | None: ...
    def append_audit(self, record: dict[str, Any]) -> None: ...
    def record_decision(self, job: Job, head_sha: str, label: Outcome, fingerprint: str,
                        audit: dict[str, Any]) -> bool: ...
    def audit(self, repo: str | None = None, pr: int | None = None) -> list[dict]: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


class SqlStore(abc.ABC):
    """The store's logic, in SQL that SQLite and PostgreSQL both run (`?` placeholders, ON CONFLICT).

    An engine provides `_tx(fn)`, which runs `fn(db)` in one write transaction (`db.execute(sql, args)`
    returns a cursor whose rows are read by column name), `_read(sql, args)`, `_next_runnable(db, now)`
    (the row of the job `lease` claims), and `Conflict`, the error a unique index raises.
    """

    clock: Callable[[], float]
    Conflict: type[Exception]
    Retry: tuple[type[Exception], ...] = ()  # errors after which `_tx` runs the whole transaction again
    Transient: tuple[type[Exception], ...] = ()  # database faults: the same call may succeed later

    @abc.abstractmethod
    def _tx(self, fn): ...

    def _ingest_tx(self, fn):
        """`_tx` for recording deliveries, which a webhook's answer waits for: an engine may give it a
        connection of its own that fails at once when the database is unreachable."""
        return self._tx(fn)

    @abc.abstractmethod
    def _read(self, sql: str, args: tuple = ()) -> list: ...

    @abc.abstractmethod
    def _next_runnable(self, db, now: float): ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # --- deliveries and jobs ---------------------------------------------------------

    def record_delivery(self, key: str, event: str, action: str, repo: str, pr: int | None,
                        jobs: list[JobSpec]) -> bool:
        """Record a delivery and enqueue its jobs atomically; False if the delivery was seen before."""
        result = self.record_deliveries([Delivery(key, event, action, repo, pr, jobs)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def record_deliveries(self, deliveries: list[Delivery]) -> list[bool | Exception]:
        """Record deliveries with their jobs in one transaction, one commit for all (a group commit: the
        commit, not the rows, is what a delivery costs), in two statements whatever their number (one
        INSERT of the deliveries, one of the jobs of those seen for the first time). Each outcome is True,
        False when the delivery was seen before, or the error that kept that delivery out: when the
        database refuses a value, each delivery is recorded alone, so that only the one at fault is left
        out. Raises when a transaction fails as a whole (it could not begin or commit)."""
        now = self.clock()
        try:
            return self._ingest_tx(lambda db: self._record(db, deliveries, now))
        except _Rejected as rejected:
            if len(deliveries) == 1:
                return [rejected.error]
        return [self.record_deliveries([d])[0] for d in deliveries]

    def _record(self, db, deliveries: list[Delivery], now: float) -> list[bool]:
        try:
            fresh: set[str] = set()
            for chunk in _chunks(deliveries):
                rows = db.execute("INSERT INTO deliveries (key, event, action, repo, pr, received_at) VALUES "
                                  + ",".join(["(?,?,?,?,?,?)"] * len(chunk)) + " ON CONFLICT DO NOTHING RETURNING key",
                                  tuple(v for d in chunk for v in (d.key, d.event, d.action, d.repo, d.pr, now)))
                fresh.update(row["key"] for row in rows.fetchall())
            outcomes = []
            for d in deliveries:  # the same delivery twice in a batch: the first is new, the second a duplicate
                outcomes.append(d.key in fresh)
                fresh.discard(d.key)
            self._enqueue(db, [job for d, new in zip(deliveries, outcomes) if new for job in d.jobs], now)
        except (*self.Retry, *self.Transient):  # the database, not a value: the whole batch failed
            raise
        except Exception as exc:  # a value the database refuses: the transaction is rolled back
            raise _Rejected(exc) from exc
        return outcomes

    def enqueue(self, jobs: list[JobSpec]) -> None:
        now = self.clock()
        self._tx(lambda db: self._enqueue(db, jobs, now))

    @staticmethod
    def _enqueue(db, jobs: list[JobSpec], now: float) -> None:
        """Queue `jobs`, each coalesced with the queued job of its (repo, PR, kind, key): that one takes the
        new payload and installation and keeps the earlier `not_before`. Jobs of one call that coalesce are
        merged the same way first, in order: PostgreSQL refuses a statement that updates a row twice."""
        merged: dict[tuple[str, int, str, str], tuple[JobSpec, float]] = {}
        for spec in jobs:
            ident, not_before = (spec.repo, spec.pr, spec.kind, spec.key), now + spec.delay
            if ident in merged:
                not_before = min(not_before, merged[ident][1])
            merged[ident] = (spec, not_before)
        for chunk in _chunks(list(merged.values())):
            db.execute(
                f"""INSERT INTO jobs (kind, repo, pr, key, installation_id, payload, state, not_before,
                                      created_at, updated_at)
                    VALUES {",".join(["(?,?,?,?,?,?, 'queued', ?, ?, ?)"] * len(chunk))}
                    ON CONFLICT (repo, pr, kind, key) WHERE state = 'queued'
                    DO UPDATE SET payload = excluded.payload, installation_id = excluded.installation_id,
                                  not_before = CASE WHEN excluded.not_before < jobs.not_before
                                                    THEN excluded.not_before ELSE jobs.not_before END,
                                  updated_at = excluded.updated_at""",
                tuple(v for spec, not_before in chunk
                      for v in (spec.kind, spec.repo, spec.pr, spec.key, spec.installation_id,
                                json.dumps(spec.payload, sort_keys=True), not_before, now, now)))

    def lease(self, owner: str, lease_seconds: float) -> Job | None:
        """Claim the next runnable job whose PR has no other live running job."""
        now = self.clock()

        def run(db) -> Job | None:
            row = self._next_runnable(db, now)
            if row is None:
                return None
            if row["state"] == "running":
                # A dead worker's job. If a newer queued job for the same PR and kind exists, that one supersedes it.
                if db.execute("SELECT 1 FROM jobs WHERE repo=? AND pr=? AND kind=? AND key=? AND state='queued'",
                              (row["repo"], row["pr"], row["kind"], row["key"])).fetchone():
                    db.execute("UPDATE jobs SET state='done', updated_at=?, last_error='superseded after lease expiry' "
                               "WHERE id=?", (now, row["id"]))
                    return None
            db.execute("UPDATE jobs SET state='running', lease_owner=?, lease_until=?, attempts=attempts+1, "
                       "updated_at=? WHERE id=?", (owner, now + lease_seconds, now, row["id"]))
            return Job(row["id"], row["kind"], row["repo"], row["pr"], row["key"], row["installation_id"],
                       json.loads(row["payload"]), row["attempts"] + 1, row["created_at"], owner, row["waited"])

        return self._tx(run)

    def heartbeat(self, job: Job, owner: str, lease_seconds: float) -> bool:
        """Extend the lease; False if this worker lost it (it must stop publishing)."""
        now = self.clock()
        return bool(self._tx(lambda db: db.execute(
            "UPDATE jobs SET lease_until=?, updated_at=? WHERE id=? AND lease_owner=? AND state='running'",
            (now + lease_seconds, now, job.id, owner)).rowcount))

    def _finish(self, job: Job, owner: str, state: str, error: str | None, not_before: float | None = None,
                waited: float = 0.0, head_sha: str | None = None, outcome: Outcome = Outcome.INCOMPLETE) -> bool:
        """End a run of `job` if `owner` still holds its lease (False, and nothing written, if it does not);
        `waited` > 0: it waits that long without it being a failed try; `head_sha`: the head whose
        verification could not complete, its verdict `outcome` in the same transaction."""
        now = self.clock()
        end = ("UPDATE jobs SET state=?, last_error=?, not_before=coalesce(?, not_before), lease_owner=NULL, "
               "lease_until=NULL, updated_at=?, waited=waited+?, attempts=attempts-? "
               "WHERE id=? AND lease_owner=? AND state='running'")
        args = (state, error, not_before, now, waited, int(waited > 0), job.id, owner)

        def run(db) -> bool:
            if state != "queued":
                ended = db.execute(end, args).rowcount > 0
                if not ended and state == "done":  # a verification's decision ended it `done` already
                    ended = db.execute("SELECT 1 FROM jobs WHERE id=? AND state='done'", (job.id,)).fetchone() \
                        is not None
                if ended and head_sha:
                    self._verdict(db, job.repo, job.pr, head_sha, outcome, "", now)
                return ended
            db.execute("SAVEPOINT requeue")
            try:
                ended = db.execute(end, args).rowcount > 0
            except self.Conflict:
                # A newer job of the same kind is already queued (jobs_one_queued says so): it will do the work.
                db.execute("ROLLBACK TO requeue")
                ended = db.execute("UPDATE jobs SET state='done', last_error=?, updated_at=? "
                                   "WHERE id=? AND lease_owner=? AND state='running'",
                                   (f"superseded; last error: {error}", now, job.id, owner)).rowcount > 0
            db.execute("RELEASE requeue")
            return ended

        return bool(self._tx(run))

    def complete(self, job: Job, owner: str) -> bool:
        return self._finish(job, owner, "done", None)

    def retry(self, job: Job, owner: str, delay: float, error: str, rate_limited: bool = False,
              excused: float = 0.0) -> bool:
        """Run the job again after `delay`. A wait for a rate limit (the delay) or for the database (`excused`
        seconds: the outage the job met) counts neither as a try nor against its budget."""
        waited = (delay if rate_limited else 0.0) + excused
        return self._finish(job, owner, "queued", error, self.clock() + delay, waited)

    def fail(self, job: Job, owner: str, error: str, head_sha: str | None = None,
             outcome: Outcome = Outcome.INCOMPLETE) -> bool:
        """End the job failed, if `owner` holds its lease. `head_sha`: the PR head whose check run is to say
        the verification could not complete: its verdict becomes `outcome`, INCOMPLETE (reconcile verifies
        it again) or INTERNAL_ERROR (our bug: not run again)."""
        return self._finish(job, owner, "failed", error, head_sha=head_sha, outcome=outcome)

    def queue_depth(self) -> int:
        return self._read("SELECT count(*) AS n FROM jobs WHERE state IN ('queued', 'running')")[0]["n"]

    def jobs(self, state: str | None = None) -> list[dict]:
        sql = "SELECT * FROM jobs" + (" WHERE state = ?" if state else "") + " ORDER BY id"
        return [dict(r) for r in self._read(sql, (state,) if state else ())]

    # --- verdicts and audit ---------------------------------------------------------------

    def record_verdict(self, repo: str, pr: int, head_sha: str, label: Outcome, fingerprint: str = "") -> None:
        now = self.clock()
        self._tx(lambda db: self._verdict(db, repo, pr, head_sha, label, fingerprint, now))

    @staticmethod
    def _verdict(db, repo: str, pr: int, head_sha: str, label: Outcome, fingerprint: str, now: float) -> None:
        db.execute("INSERT INTO verdicts (repo, pr, head_sha, label, fingerprint, at) VALUES (?,?,?,?,?,?) "
                   "ON CONFLICT (repo, pr, head_sha) DO UPDATE SET label=excluded.label, "
                   "fingerprint=excluded.fingerprint, at=excluded.at",
                   (repo, pr, head_sha, Outcome(label).value, fingerprint, now))

    def pin_signoff(self, repo: str, pr: int, signoff: str, fingerprint: str, head_sha: str) -> dict:
        """The content `signoff` was first verified on: recorded now if this is its first verification."""
        now = self.clock()

        def run(db) -> dict:
            db.execute("INSERT INTO signoffs (repo, pr, signoff, fingerprint, head_sha, at) "
                       "VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING", (repo, pr, signoff, fingerprint, head_sha, now))
            return dict(db.execute("SELECT * FROM signoffs WHERE repo=? AND pr=? AND signoff=?",
                                   (repo, pr, signoff)).fetchone())

        return self._tx(run)

    def signoff_pin(self, repo: str, pr: int, signoff: str) -> dict | None:
        """The content `signoff` was first verified on, if this database knows it."""
        rows = self._read("SELECT * FROM signoffs WHERE repo=? AND pr=? AND signoff=?", (repo, pr, signoff))
        return dict(rows[0]) if rows else None

    def pins(self, repo: str, pr: int) -> list[dict]:
        """Every sign-off of the PR this database has pinned, oldest first."""
        return [dict(r) for r in self._read("SELECT * FROM signoffs WHERE repo=? AND pr=? ORDER BY at, signoff",
                                            (repo, pr))]

    def verdict_for(self, repo: str, pr: int, head_sha: str) -> dict | None:
        """The head's verdict row, its `label` an Outcome."""
        rows = self._read("SELECT * FROM verdicts WHERE repo=? AND pr=? AND head_sha=?", (repo, pr, head_sha))
        return _verdict_row(rows[0]) if rows else None

    def last_verdict(self, repo: str, pr: int) -> dict | None:
        """The PR's latest verdict that judged a sign-off (`Outcome.verified`): None when none did, however
        many heads were skipped (a draft), waited for a sign-off or could not complete."""
        rows = self._read(f"SELECT * FROM verdicts WHERE repo=? AND pr=? AND label IN ({_VERIFIED_MARKS}) "
                          "ORDER BY at DESC LIMIT 1", (repo, pr, *_VERIFIED_LABELS))
        return _verdict_row(rows[0]) if rows else None

    def append_audit(self, record: dict[str, Any]) -> None:
        now = self.clock()
        self._tx(lambda db: self._audit(db, record, now))

    @staticmethod
    def _audit(db, record: dict[str, Any], now: float) -> None:
        db.execute("INSERT INTO audit (at, delivery, repo, pr, head_sha, inputs_digest, verdict, published) "
                   "VALUES (?,?,?,?,?,?,?,?)",
                   (now, record.get("delivery"), record["repo"], record["pr"], record["head_sha"],
                    record["inputs_digest"], record["verdict"], json.dumps(record.get("published", {}), sort_keys=True)))

    def record_decision(self, job: Job, head_sha: str, label: Outcome, fingerprint: str,
                        audit: dict[str, Any]) -> bool:
        """Record a verification's verdict and audit record and end its job `done`, in one transaction,
        if the job's worker still holds its lease. False when it lost the lease: the job runs again
        elsewhere and records its own decision. A worker killed before this has its job run again; one
        killed after it has nothing left to redo, so no job's decision is recorded twice."""
        now = self.clock()

        def run(db) -> bool:
            ended = db.execute("UPDATE jobs SET state='done', last_error=NULL, lease_owner=NULL, lease_until=NULL, "
                               "updated_at=? WHERE id=? AND lease_owner=? AND state='running'",
                               (now, job.id, job.owner)).rowcount
            if not ended:
                return False
            self._verdict(db, job.repo, job.pr, head_sha, label, fingerprint, now)
            self._audit(db, audit, now)
            return True

        return bool(self._tx(run))

    def audit(self, repo: str | None = None, pr: int | None = None) -> list[dict]:
        sql, args = "SELECT * FROM audit WHERE 1=1", []
        if repo:
            sql += " AND repo = ?"
            args.append(repo)
        if pr is not None:
            sql += " AND pr = ?"
            args.append(pr)
        return [dict(r) for r in self._read(sql + " ORDER BY id", tuple(args))]

    HEALTH_WRITE = "INSERT INTO health (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at"

    @abc.abstractmethod
    def ping(self) -> None:
        """Raise unless the database takes a write now, on a connection opened for the probe (a transaction
        that rewrites the health row commits): the App's open connections may write where a new one cannot."""


class SqliteStore(SqlStore):
    """The embedded default: one SQLite file, shared safely by threads and processes."""

    Conflict = sqlite3.IntegrityError
    # busy, locked, read-only, disk full, I/O error, cannot open: the file and its disk, not the job
    Transient = (sqlite3.OperationalError,)

    def __init__(self, path: str, clock=time.time):
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._wal_mode()
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes (kill -9)
        # Every statement outside a transaction, and BEGIN and COMMIT, wait for locks in `_patiently`; once
        # a transaction holds the write lock, the statements in it wait for none in WAL mode.
        self._db.execute("PRAGMA busy_timeout=0")
        # A checkpoint copies the WAL into the database and syncs it to disk. SQLite's automatic ones run
        # inside a commit, which then held a webhook's answer up for up to 25 ms; these run beside it.
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._writes = 0
        self._checkpointer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-checkpoint")
        self._tx(self._migrate)

    def _wal_mode(self, patience: float = 30.0) -> None:
        """Switch to WAL, waiting for other openers: the switch takes an exclusive lock, and SQLite answers
        "database is locked" at once, without its busy handler, while another connection opens the file."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        """Apply the migrations the database lacks (BEGIN IMMEDIATE: one process at a time)."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(SQLITE_MIGRATIONS):
            raise SchemaTooNew(f"the database is at schema version {version}; this release knows "
                               f"{len(SQLITE_MIGRATIONS)}")
        if version == 0:
            columns = {row["name"] for row in db.execute("PRAGMA table_info(jobs)")}
            if columns and "waited" not in columns:  # made before jobs had `waited`
                db.execute("ALTER TABLE jobs ADD COLUMN waited REAL NOT NULL DEFAULT 0")
        for statements in SQLITE_MIGRATIONS[version:]:
            for sql in statements:
                db.execute(sql)
        db.execute(f"PRAGMA user_version = {len(SQLITE_MIGRATIONS)}")

    def ping(self) -> None:
        """The directory takes a new file, the file a write on a new connection, its file system is not mounted
        read-only (its flag: a connection opened before goes on writing through its open file), and the disk
        beside it has room (a full disk refuses the next write). A lock held longer than PROBE_SECONDS is a
        database that does not take writes now."""
        where = os.path.dirname(os.path.abspath(self.path))
        if os.statvfs(where).f_flag & os.ST_RDONLY:
            raise OSError(f"the file system of {where} is mounted read-only")
        free = shutil.disk_usage(where).free
        if free < MIN_FREE_BYTES:
            raise OSError(f"only {free:,} bytes free beside the database")
        with tempfile.TemporaryFile(dir=where, prefix=".signoff-bot-ready-"):  # the directory takes a new file
            pass
        with contextlib.closing(sqlite3.connect(self.path, timeout=PROBE_SECONDS, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(self.HEALTH_WRITE, (self.clock(),))
            db.execute("COMMIT")

    def close(self) -> None:
        self._checkpointer.shutdown(wait=True)
        with self._lock:
            self._db.close()

    def _tx(self, fn):
        """Run `fn(db)` in one write transaction (BEGIN IMMEDIATE serialises writers across processes)."""
        with self._lock:
            self._patiently(lambda: self._db.execute("BEGIN IMMEDIATE"))
            try:
                result = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._patiently(lambda: self._db.execute("COMMIT"))  # a COMMIT refused as busy stays open
            self._writes += 1
            if self._writes % CHECKPOINT_EVERY == 0:
                self._checkpointer.submit(self._checkpoint)
            return result

    def _patiently(self, statement: Callable[[], T]) -> T:
        """`statement()`, tried again while another connection holds the lock it needs, as BUSY_FIRST_SLEEP
        says, for up to BUSY_SECONDS. The connection's own busy timeout is 0: SQLite's handler would sleep
        instead, and setting the timeout around each BEGIN cost two more statements, each of which gives the
        GIL up and waits to get it back while the event loop runs."""
        sleep, deadline = BUSY_FIRST_SLEEP, None
        while True:
            try:
                return statement()
            except sqlite3.OperationalError as exc:
                now = time.monotonic()
                deadline = deadline or now + BUSY_SECONDS
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or now > deadline:
                    raise
            time.sleep(sleep)
            sleep = min(2 * sleep, BUSY_MAX_SLEEP)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database, on a connection of its own so that writers go on meanwhile."""
        with contextlib.closing(sqlite3.connect(self.path, timeout=30.0, isolation_level=None)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._patiently(lambda: self._db.execute(sql, args).fetchall())

    @staticmethod
    def _next_runnable(db: sqlite3.Connection, now: float) -> sqlite3.Row | None:
        """The first runnable job; no other process can claim it meanwhile (the write lock is ours)."""
        return db.execute(f"SELECT * FROM jobs j WHERE {RUNNABLE} ORDER BY j.not_before, j.id LIMIT 1",
                          (now, now, now)).fetchone()


def sqlite_path(db: str) -> str:
    """The file a SQLite setting names: a path, or sqlite:///PATH."""
    return db[len(SQLITE_SCHEME):] if db.startswith(SQLITE_SCHEME) else db


def database_fault(exc: BaseException) -> bool:
    """Whether `exc` is a database fault of either engine (their `Transient` errors): the database failed,
    not the work that called it, and the same call may succeed later. PostgreSQL's errors can arise only
    once app.store.postgres is imported."""
    if isinstance(exc, SqliteStore.Transient):
        return True
    pg = sys.modules.get("app.store.postgres")
    return pg is not None and isinstance(exc, pg.PostgresStore.Transient)
