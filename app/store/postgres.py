"""The store on a shared PostgreSQL database, for replicas of the App on several machines.

Same tables, same SQL and the same guarantees as SQLite (app/store/sql.py); what
differs is how writers are kept apart. SQLite lets one writer in at a time;
here transactions run side by side (READ COMMITTED), so:
- `lease` claims a job row with SELECT … FOR UPDATE SKIP LOCKED (workers pass
  over the rows others are claiming) and the job's PR with a transaction-level
  advisory lock, then checks again, in a statement that sees every commit made
  before it held that lock, that no other job of the PR is under a live lease;
- a deadlock or serialisation failure between two transactions re-runs the
  losing one (every transaction is a function of the database and its
  arguments, so it can run again);
- migrations run under an advisory lock: replicas starting together apply
  each version once.
The jobs' connections come from a pool (psycopg_pool) that checks each one
before use, so a restarted server costs the App nothing but the calls made
while it is down; a caller waits at most ACQUIRE_SECONDS for one, and the pool
tries to reconnect at least every RECONNECT_SECONDS, so that the workers resume
within seconds of the server's return. Recording deliveries, which a webhook's
answer waits for, has a connection of its own (`_Lane`): while the server is
unreachable it fails at once (a refused connection) or within LANE_CONNECT_SECONDS,
and the webhook is answered 503, instead of waiting for the pool. The readiness
probe writes on a connection opened for it, so it answers from the server as it
is now, not from the pool's memory of it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, TypeVar

import psycopg
from psycopg import errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from .sql import RUNNABLE, SchemaTooNew, SqlStore

T = TypeVar("T")

TX_TRIES = 5  # runs of a transaction that keeps losing to deadlocks or serialisation failures
ACQUIRE_SECONDS = 10.0  # how long a job's store call waits for a pooled connection before it is a fault
RECONNECT_SECONDS = 5.0  # the pool's reconnection backoff gives up (and starts again, from 1 s) after this
LANE_CONNECT_SECONDS = 2  # libpq's connect_timeout (whole seconds, at least 2) of the deliveries' connection
PROBE_CONNECT_SECONDS = 2  # of the readiness probe's connection
LEASE_CANDIDATES = 8  # jobs one lease call locks and tries, in queue order
PR_LOCK = 0x5B07  # advisory locks (PR_LOCK, hashtext(repo#pr)) keep a PR's leases apart
# Advisory locks keyed by one bigint and by two ints never collide: the migrations take this one.
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('signoff-bot schema', 0))"

# Version n is PG_MIGRATIONS[n - 1] (app/store/sql.py's SQLITE_MIGRATIONS has the same versions);
# schema_migrations records the versions a database has.
PG_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: deliveries, jobs, verdicts, sign-off pins and the append-only audit trail
    ("""CREATE TABLE deliveries (
    key TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    action TEXT NOT NULL,
    repo TEXT NOT NULL,
    pr BIGINT,
    received_at DOUBLE PRECISION NOT NULL
)""",
     """CREATE TABLE jobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind TEXT NOT NULL,
    repo TEXT NOT NULL,
    pr BIGINT NOT NULL,
    key TEXT NOT NULL DEFAULT '',
    installation_id BIGINT,
    payload TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    waited DOUBLE PRECISION NOT NULL DEFAULT 0,
    not_before DOUBLE PRECISION NOT NULL,
    lease_owner TEXT,
    lease_until DOUBLE PRECISION,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    last_error TEXT
)""",
     "CREATE UNIQUE INDEX jobs_one_queued ON jobs (repo, pr, kind, key) WHERE state = 'queued'",
     "CREATE INDEX jobs_ready ON jobs (state, not_before)",
     "CREATE INDEX jobs_running ON jobs (repo, pr) WHERE state = 'running'",
     """CREATE TABLE verdicts (
    repo TEXT NOT NULL,
    pr BIGINT NOT NULL,
    head_sha TEXT NOT NULL,
    label TEXT NOT NULL,
    fingerprint TEXT NOT NULL DEFAULT '',
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (repo, pr, head_sha)
)""",
     """CREATE TABLE signoffs (
    repo TEXT NOT NULL,
    pr BIGINT NOT NULL,
    signoff TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    head_sha TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (repo, pr, signoff)
)""",
     """CREATE TABLE audit (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at DOUBLE PRECISION NOT NULL,
    delivery TEXT,
    repo TEXT NOT NULL,
    pr BIGINT NOT NULL,
    head_sha TEXT NOT NULL,
    inputs_digest TEXT NOT NULL,
    verdict TEXT NOT NULL,
    published TEXT NOT NULL
)""",
     """CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END $$""",
     "CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit FOR EACH ROW EXECUTE FUNCTION audit_append_only()",
     "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()"),
    # 2: the row every readiness probe rewrites
    ("CREATE TABLE health (id INTEGER PRIMARY KEY CHECK (id = 1), at DOUBLE PRECISION NOT NULL)",),
)


def _pg_sql(sql: str) -> str:
    """SqlStore's `?` placeholders as psycopg's `%s` (a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Db:
    """A connection in a transaction, taking SQL as SqlStore writes it."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, args: tuple = ()) -> psycopg.Cursor:
        return self.conn.execute(_pg_sql(sql), args)


class _Lane:
    """One connection, used by one caller at a time, opened when needed and dropped after a fault: a call
    while the server is unreachable fails as soon as connecting does, never waits for a pool."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[[_Db], T]) -> T:
        """`fn(db)` in one transaction, committed when it returns."""
        with self._lock:
            if self._conn is None:
                self._conn = psycopg.connect(self.url, connect_timeout=LANE_CONNECT_SECONDS, row_factory=dict_row,
                                             autocommit=False)
            conn = self._conn
            try:
                result = fn(_Db(conn))
                conn.commit()
                return result
            except BaseException as exc:
                if isinstance(exc, psycopg.OperationalError) or conn.closed or conn.broken:
                    self._drop()
                else:
                    conn.rollback()
                raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._drop()


class PostgresStore(SqlStore):
    """One PostgreSQL database shared by every process and machine running the App."""

    Conflict = errors.UniqueViolation
    Retry = (errors.DeadlockDetected, errors.SerializationFailure)
    # a lost or refused connection, a pool timeout (PoolTimeout is one), an administrator's shutdown, a
    # serialisation failure or deadlock that kept losing: the server, not the job
    Transient = (psycopg.OperationalError,)

    def __init__(self, url: str, clock=time.time, pool_size: int = 10, connect_timeout: float = 30.0):
        self.clock = clock
        self._url = url
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, open=False, name="signoff-bot",
                                    kwargs={"row_factory": dict_row, "autocommit": False},
                                    check=ConnectionPool.check_connection, timeout=ACQUIRE_SECONDS,
                                    reconnect_timeout=RECONNECT_SECONDS)
        self._lane = _Lane(url)
        # Waits for the server (a replica may start before it): a database that never answers is an error.
        self._pool.open(wait=True, timeout=connect_timeout)
        try:
            self._tx(self._migrate)
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self, db: _Db) -> None:
        db.conn.execute(MIGRATION_LOCK)
        db.conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                        "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
        version = db.conn.execute("SELECT coalesce(max(version), 0) AS v FROM schema_migrations").fetchone()["v"]
        if version > len(PG_MIGRATIONS):
            raise SchemaTooNew(f"the database is at schema version {version}; this release knows {len(PG_MIGRATIONS)}")
        for number, statements in enumerate(PG_MIGRATIONS[version:], version + 1):
            for sql in statements:
                db.conn.execute(sql)
            db.conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
                            (number, self.clock()))

    def close(self) -> None:
        self._lane.close()
        self._pool.close()

    def _tx(self, fn: Callable[[_Db], T]) -> T:
        """Run `fn(db)` in one transaction, committed when it returns; again if it lost to a concurrent one."""
        for _ in range(TX_TRIES - 1):
            with contextlib.suppress(*self.Retry):
                return self._run(fn)
        return self._run(fn)

    def _ingest_tx(self, fn: Callable[[_Db], T]) -> T:
        """As `_tx`, on the deliveries' own connection (`_Lane`)."""
        for _ in range(TX_TRIES - 1):
            with contextlib.suppress(*self.Retry):
                return self._lane.run(fn)
        return self._lane.run(fn)

    def ping(self) -> None:
        """The server takes a write now, on a connection opened for the probe."""
        with psycopg.connect(self._url, connect_timeout=PROBE_CONNECT_SECONDS, autocommit=False) as conn:
            conn.execute(_pg_sql(self.HEALTH_WRITE), (self.clock(),))

    def _run(self, fn: Callable[[_Db], T]) -> T:
        with self._pool.connection() as conn:  # commits on leaving, rolls back on an exception
            return fn(_Db(conn))

    def _read(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(_pg_sql(sql), args).fetchall()

    @staticmethod
    def _next_runnable(db: _Db, now: float) -> dict[str, Any] | None:
        """The first runnable job whose row and PR this transaction could lock, both kept until it ends."""
        candidates = db.execute(f"SELECT j.id, j.repo, j.pr FROM jobs j WHERE {RUNNABLE} "
                                f"ORDER BY j.not_before, j.id LIMIT {LEASE_CANDIDATES} FOR UPDATE OF j SKIP LOCKED",
                                (now, now, now)).fetchall()
        for job in candidates:
            locked = db.execute(f"SELECT pg_try_advisory_xact_lock({PR_LOCK}, hashtext(?)) AS ok",
                                (f"{job['repo']}#{job['pr']}",)).fetchone()["ok"]
            if not locked:
                continue  # another worker is claiming a job of this PR right now
            # A new statement sees what the PR's last lock holder committed: is the PR still free?
            row = db.execute(f"SELECT * FROM jobs j WHERE j.id = ? AND {RUNNABLE}",
                             (job["id"], now, now, now)).fetchone()
            if row is not None:
                return row
        return None
