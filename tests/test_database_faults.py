"""A database fault is never a verdict (app/jobs/worker.py, app/store/sql.py): a job that meets one runs again, its
time excused; a worker outlasts any outage and is started again if it stops; a failure is published only
by the worker holding the job's lease; reconcile verifies again a head that could not complete.

These run a `Worker` on a real SQLite store whose calls fail on demand as a database down would
(`Flaky`); tests/test_outage.py does the same through real processes and a real PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.jobs.worker import Reconciler, Worker, Workers
from app.observability import Metrics
from app.offline.replay import throwaway_key
from app.settings import Settings
from app.store.sql import JobSpec, SqliteStore, database_fault
from checks.result import Outcome

SETTINGS = Settings(app_id=1, private_key=throwaway_key(), webhook_secret="s", lease_seconds=3.0,
                    max_attempts=2)
REPO = "o/r"


class Flaky:
    """A store whose calls raise a database fault while `down` (as SQLite does on a locked or read-only
    file; PostgreSQL's psycopg.OperationalError is the same kind of error)."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.down = False
        self.refused: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def call(*args, **kw):
            if self.down:
                self.refused.append(name)
                raise sqlite3.OperationalError("database is locked")
            return method(*args, **kw)

        return call


@dataclass
class Runner:
    """Stands for JobRunner: each run awaits `step` (the test's), then does what `action` says."""

    store: Flaky
    action: Any = None
    runs: int = 0
    clients: Any = None

    async def run(self, job) -> None:
        self.runs += 1
        if self.action is not None:
            await self.action(job)


@dataclass
class NoGitHub:
    """Clients whose every GitHub call fails: `_give_up` then publishes nothing, which the tests count."""

    asked: list[int] = field(default_factory=list)

    def installation(self, installation_id):
        self.asked.append(installation_id)
        raise RuntimeError("no GitHub in this test")


@pytest.fixture
def store(tmp_path) -> Flaky:
    inner = SqliteStore(str(tmp_path / "bot.db"))
    yield Flaky(inner)
    inner.close()


def run(coro):
    return asyncio.run(coro)


def test_database_faults_of_both_engines_are_told_from_other_errors():
    import psycopg
    from psycopg_pool import PoolTimeout

    import app.store.postgres  # noqa: F401 - what makes PostgreSQL's errors known

    assert database_fault(sqlite3.OperationalError("database is locked"))
    assert database_fault(psycopg.errors.AdminShutdown("terminating connection due to administrator command"))
    assert database_fault(PoolTimeout("couldn't get a connection after 10.00 sec"))
    assert database_fault(psycopg.errors.SerializationFailure("could not serialize access"))
    assert not database_fault(sqlite3.IntegrityError("UNIQUE constraint failed"))
    assert not database_fault(KeyError("a rule's bug"))


def test_a_job_that_meets_a_database_fault_runs_again_and_is_not_failed(store: Flaky):
    """The database goes down during the job: nothing is published, the worker waits until the database
    answers, then re-queues the job without charging it a try or the outage; the next run completes."""
    store.inner.enqueue([JobSpec("verify", REPO, 1, 7)])
    clients = NoGitHub()

    async def outage(_job) -> None:
        store.down = True
        asyncio.get_running_loop().call_later(0.5, setattr, store, "down", False)
        raise sqlite3.OperationalError("database is locked")

    runner = Runner(store, outage, clients=clients)
    worker = Worker(SETTINGS, store, runner, Metrics(), "w1")

    async def once() -> None:
        deadline = time.monotonic() + 30
        while (job := await asyncio.to_thread(store.lease, "w1", SETTINGS.lease_seconds)) is None:
            assert time.monotonic() < deadline, "the job never became due"
            await asyncio.sleep(0.05)
        await worker.process(job)

    run(once())
    (job,) = store.inner.jobs()
    assert (job["state"], job["attempts"], job["last_error"]) == ("queued", 0,
                                                                  "database: OperationalError: database is locked")
    assert job["waited"] >= 0.5  # the outage is not charged to the job's budget
    assert "retry" in store.refused and clients.asked == []  # nothing published, not even tried
    runner.action = None
    run(once())  # due again after DATABASE_RETRY_SECONDS
    assert [j["state"] for j in store.inner.jobs()] == ["done"]


def test_a_rules_own_exception_is_an_internal_error(store: Flaky):
    store.inner.enqueue([JobSpec("verify", REPO, 1, 7)])

    async def bug(_job) -> None:
        raise KeyError("a rule's bug")

    worker = Worker(SETTINGS, store, Runner(store, bug, clients=NoGitHub()), Metrics(), "w1")

    async def once() -> None:
        await worker.process(await asyncio.to_thread(store.lease, "w1", SETTINGS.lease_seconds))

    run(once())
    (job,) = store.inner.jobs()
    assert (job["state"], job["last_error"]) == ("failed", "internal error (KeyError)")


def test_a_worker_that_lost_the_lease_records_and_publishes_no_failure(store: Flaky):
    """Another worker took the job over (this one's lease expired): this one's failure is dropped."""
    store.inner.enqueue([JobSpec("verify", REPO, 1, 7)])
    clients = NoGitHub()

    async def taken_over(job) -> None:
        with store.inner._lock:  # the lease expired and w2 took the job over
            store.inner._db.execute("UPDATE jobs SET lease_owner='w2' WHERE id=?", (job.id,))
        raise KeyError("fails after losing the lease")

    worker = Worker(SETTINGS, store, Runner(store, taken_over, clients=clients), Metrics(), "w1")

    async def once() -> None:
        await worker.process(await asyncio.to_thread(store.lease, "w1", SETTINGS.lease_seconds))

    run(once())
    (job,) = store.inner.jobs()
    assert (job["state"], job["lease_owner"], job["last_error"]) == ("running", "w2", None)
    assert store.inner.verdict_for(REPO, 1, "a" * 40) is None


def test_a_failure_leaves_the_head_incomplete_and_reconcile_verifies_it_again(store: Flaky):
    store.inner.enqueue([JobSpec("verify", REPO, 1, 7)])
    job = store.inner.lease("w1", 30)
    head = "a" * 40
    store.inner.record_verdict(REPO, 1, head, "NO_SIGNOFF")  # the start-up pass saw no sign-off
    assert store.inner.fail(job, "w1", "GitHub answered 404", head)
    assert store.inner.verdict_for(REPO, 1, head)["label"] is Outcome.INCOMPLETE
    reconciler = Reconciler(SETTINGS, store.inner, clients=None)
    assert run(reconciler._unsettled(REPO, 1, head))
    store.inner.record_verdict(REPO, 1, head, "PASS")
    assert not run(reconciler._unsettled(REPO, 1, head))
    store.inner.record_verdict(REPO, 1, head, "SKIPPED")  # a draft then; reconcile lists only ready PRs
    assert run(reconciler._unsettled(REPO, 1, head))
    store.inner.record_verdict(REPO, 1, head, "INTERNAL_ERROR")  # our bug: not run again and again
    assert not run(reconciler._unsettled(REPO, 1, head))
    assert not store.inner.fail(job, "w1", "again")  # no lease held: nothing recorded


def test_a_worker_outlasts_a_database_that_refuses_its_leases(store: Flaky):
    """Leasing fails for a while: the worker waits and tries again, never stops; once the database
    answers it takes the queued job."""
    metrics = Metrics()
    ran = asyncio.Event()

    async def done(_job) -> None:
        ran.set()

    store.down = True
    workers = Workers(SETTINGS, store, Runner(store, done, clients=NoGitHub()), metrics, ["w1", "w2"])

    async def scenario() -> None:
        stop = asyncio.Event()
        tasks = workers.start(stop)
        while store.refused.count("lease") < 4:
            await asyncio.sleep(0.05)
        assert workers.running == 2
        store.down = False
        await asyncio.to_thread(store.inner.enqueue, [JobSpec("verify", REPO, 1, 7)])
        await asyncio.wait_for(ran.wait(), 30)
        stop.set()
        await asyncio.gather(*tasks)

    run(scenario())
    assert _sample(metrics, "signoff_bot_worker_restarts_total") == 0


def test_a_worker_that_stops_is_started_again_and_counted(store: Flaky, caplog):
    metrics = Metrics()
    workers = Workers(SETTINGS, store, Runner(store), metrics, ["w1", "w2"])
    crashes = {"w1": 2}
    real = Worker.run_forever

    async def crashing(self, stop) -> None:
        if crashes.get(self.owner):
            crashes[self.owner] -= 1
            raise RuntimeError("a bug the worker did not catch")
        await real(self, stop)

    async def scenario() -> None:
        stop = asyncio.Event()
        tasks = workers.start(stop)
        while _sample(metrics, "signoff_bot_worker_restarts_total") < 2 or workers.running < 2:
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(*tasks)

    with pytest.MonkeyPatch.context() as mp, caplog.at_level(logging.ERROR, "signoff_bot.worker"):
        mp.setattr(Worker, "run_forever", crashing)
        run(scenario())
    assert _sample(metrics, "signoff_bot_worker_restarts_total") == 2
    assert _sample(metrics, "signoff_bot_workers_running") == 0  # all stopped with the App
    assert [r.getMessage() for r in caplog.records].count("a worker stopped; starting it again") == 2


def _sample(metrics: Metrics, name: str) -> float:
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise KeyError(name)


def test_readyz_is_503_while_fewer_workers_run_than_configured(tmp_path, monkeypatch):
    """A worker that keeps stopping is between restarts most of the time: /readyz says so, and says 200
    again once the workers run."""
    from fastapi.testclient import TestClient

    from app.jobs import background as background_module
    from app.jobs import worker as worker_module
    from app.web.server import create_app

    monkeypatch.setattr(worker_module, "RESTART_SECONDS", 0.5)
    broken = {"on": True}
    real = Worker.run_forever

    async def flaky(self, stop) -> None:
        if broken["on"] and self.owner.endswith("-0"):
            raise RuntimeError("a bug the worker did not catch")
        await real(self, stop)

    monkeypatch.setattr(Worker, "run_forever", flaky)
    monkeypatch.setattr(background_module, "start_workers", _named(worker_module.start_workers))
    store = SqliteStore(str(tmp_path / "bot.db"))
    settings = Settings(app_id=1, private_key=throwaway_key(), webhook_secret="s", github_url="http://127.0.0.1:9",
                        db_path=store.path, workers=2, reconcile_seconds=3600)
    with TestClient(create_app(settings, store)) as client:
        answer = _wait_for(lambda: client.get("/readyz"), lambda r: r.status_code == 503)
        assert answer.json()["error"] == "1 of 2 workers running"
        broken["on"] = False
        _wait_for(lambda: client.get("/readyz"), lambda r: r.status_code == 200)
        restarts = [line for line in client.get("/metrics").text.splitlines()
                    if line.startswith("signoff_bot_worker_restarts_total ")]
        assert float(restarts[0].split()[1]) >= 1
    store.close()


def _named(start_workers):
    """start_workers with the workers named w-0, w-1... (the test breaks w-0 alone)."""
    def start(settings, store, runner, metrics, stop, names=None):
        return start_workers(settings, store, runner, metrics, stop, [f"w-{n}" for n in range(settings.workers)])
    return start


def _wait_for(get, ok, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not ok(value := get()):
        assert time.monotonic() < deadline, f"timed out; last: {value}"
        time.sleep(0.02)
    return value
