"""Workers that drain the durable queue, and the reconcile pass that heals lost deliveries.

A worker leases one job at a time and keeps its lease alive while it runs; if
the process dies the lease expires and any worker runs the job again
(publishing is idempotent). A transient GitHub failure re-queues the job with
a delay (GitHub's retry-after or rate-limit reset, else exponential backoff)
instead of sleeping in the worker. Waiting for a rate limit's reset is not
failing: it counts neither as an attempt nor against the job's budget. A job
that keeps failing, or outlives its budget (an attempt still running when the
budget is spent is stopped), ends as a failed check run that says why.

A database fault (app/store/sql.py `database_fault`: a lost connection, a pool
timeout, SQLite busy or read-only...) is never a failure of the job: the job
is re-queued, its time excused like a rate limit's, and recording that (or any
outcome) is tried again, with backoff, until the database answers. Only a
rule's own exception, or another bug, is an "internal error": logged with its
traceback, counted (`signoff_bot_internal_errors_total`), and the job ends at
once, its head's verdict INTERNAL_ERROR (never retried, nor verified again by
reconcile: a bug would only raise again). Outcomes are
fenced: a worker records one only while it holds the job's lease, checked in
the transaction that records it, and publishes a failure only after that
transaction said so; a worker that lost its lease drops its result.

The workers are supervised (`Workers`): one that stops for any reason but the
App's stop is started again and counted (`signoff_bot_worker_restarts_total`);
`running` says how many run, and /readyz is 503 while fewer run than configured.

The reconcile pass also records the deliveries the database refused (kept by
the server in `Refused`, since GitHub does not retry a 503), and re-verifies
their PRs even when the head already has a verdict, and every head whose last
verification could not complete (verdict INCOMPLETE) or was skipped while the
PR, open and ready now, was closed or a draft (SKIPPED).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from githubkit import GitHub

from app.github.client import GitHubError, app_client, http_timeout, pages
from app.github.publish import Publisher
from app.observability import Metrics
from app.settings import CHECK_NAME, LINT_CHECK_NAME, Settings
from app.store.sql import Job, JobSpec, LeaseLost, Store, database_fault
from checks.result import JobFacts, Outcome, job_outcome

from .runner import Clients, JobRunner, current_job

log = logging.getLogger("signoff_bot.worker")

T = TypeVar("T")

IDLE_POLL_SECONDS = 0.2
DATABASE_FIRST_WAIT = 0.2  # after a database fault, the first wait before trying again; then twice as long
DATABASE_MAX_WAIT = 5.0  # ...up to this: the workers resume within seconds of the database's return
DATABASE_RETRY_SECONDS = 1.0  # a job that met a database fault runs again this long after it was re-queued
RESTART_SECONDS = 1.0  # before a worker that stopped is started again


def fault_text(exc: BaseException) -> str:
    """What a database fault says, in one line (its type, and its message's first line)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleep `seconds`, or until `stop` is set."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except asyncio.TimeoutError:
        pass


class Worker:
    def __init__(self, settings: Settings, store: Store, runner: JobRunner, metrics: Metrics, name: str = ""):
        self.settings = settings
        self.store = store
        self.runner = runner
        self.metrics = metrics
        self.owner = name or f"worker-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    async def run_forever(self, stop: asyncio.Event) -> None:
        wait = IDLE_POLL_SECONDS
        while not stop.is_set():
            try:
                job = await asyncio.to_thread(self.store.lease, self.owner, self.settings.lease_seconds)
            except Exception as exc:  # noqa: BLE001 - a locked or unreachable database: wait and try again
                log.warning("could not lease a job: the database is unavailable", extra={"error": fault_text(exc)})
                await _pause(stop, wait)
                wait = min(DATABASE_MAX_WAIT, max(DATABASE_FIRST_WAIT, 2 * wait))
                continue
            wait = IDLE_POLL_SECONDS
            if job is None:
                await _pause(stop, IDLE_POLL_SECONDS)
                continue
            await self.process(job)

    async def process(self, job: Job) -> None:
        tag = current_job.set(f"{job.id}@{self.owner}")
        try:
            await self._process(job)
        finally:
            current_job.reset(tag)

    async def _process(self, job: Job) -> None:
        extra = {"job": job.id, "kind": job.kind, "repo": job.repo, "pr": job.pr, "worker": self.owner,
                 "delivery": job.payload.get("delivery")}
        started = time.monotonic()
        over_budget = f"the job did not finish within its {self.settings.job_budget_seconds:.0f} s budget"
        left = self.settings.job_budget_seconds - (time.time() - job.created_at - job.waited)
        if left <= 0:
            await self._give_up(job, over_budget)
            return
        task = asyncio.create_task(self.runner.run(job))
        keeper = asyncio.create_task(self._keep_lease(job, task))
        try:
            await asyncio.wait_for(task, left)  # an attempt that outlives the budget is stopped, not awaited
        except asyncio.TimeoutError:
            await self._give_up(job, over_budget)
            return
        except (asyncio.CancelledError, LeaseLost):
            self._abandoned(job, "lease lost; job abandoned to another worker")
            return
        except GitHubError as exc:
            if exc.transient and (exc.rate_limited or job.attempts < self.settings.max_attempts):
                delay = exc.retry_after if exc.retry_after is not None else min(300.0, 2.0 ** job.attempts)
                error, limited = str(exc), exc.rate_limited  # what the lambda reads, not the except's name
                if await self._record(job, lambda: self.store.retry(job, self.owner, delay, error, limited)):
                    self.metrics.jobs.labels(job.kind, "retried").inc()
                    log.info("retrying", extra={**extra, "error": str(exc)})
                else:
                    self._abandoned(job, "lease lost; the retry is dropped and another worker runs the job")
                return
            await self._give_up(job, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug must not kill the worker; the job fails visibly
            if database_fault(exc):  # the database, not the job: it runs again, its time excused
                log.warning("the database failed during the job; it runs again", extra={**extra,
                                                                                       "error": fault_text(exc)})
                why = f"database: {fault_text(exc)}"
                if await self._record(job, lambda: self.store.retry(
                        job, self.owner, DATABASE_RETRY_SECONDS, why, excused=time.monotonic() - started)):
                    self.metrics.jobs.labels(job.kind, "retried").inc()
                    log.info("re-queued after the database fault", extra=extra)
                else:
                    self._abandoned(job, "lease lost during the database fault; another worker runs the job")
                return
            self.metrics.internal_errors.labels("job").inc()
            log.exception("job crashed: a bug, not GitHub's or the database's; the job ends, not retried",
                          extra=extra)
            await self._give_up(job, f"internal error ({type(exc).__name__})", bug=True)
            return
        finally:
            keeper.cancel()
        if await self._record(job, lambda: self.store.complete(job, self.owner)):
            self.metrics.jobs.labels(job.kind, "done").inc()
        else:
            self._abandoned(job, "lease lost before the job was recorded done; it runs again elsewhere")

    def _abandoned(self, job: Job, why: str) -> None:
        log.warning(why, extra={"job": job.id, "kind": job.kind, "repo": job.repo, "pr": job.pr, "worker": self.owner})
        self.metrics.jobs.labels(job.kind, "abandoned").inc()

    async def _record(self, job: Job, outcome: Callable[[], T]) -> T:
        """`outcome()` (a store call recording how the job ended), tried again while the database is
        unavailable, with backoff, until it answers: the job's result is not lost to an outage. The store
        checks the lease in the same transaction: what it returns says whether this worker still held it."""
        wait = DATABASE_FIRST_WAIT
        while True:
            try:
                return await asyncio.to_thread(outcome)
            except Exception as exc:  # noqa: BLE001
                if not database_fault(exc):
                    raise
                log.warning("could not record the job's outcome: the database is unavailable; trying again",
                            extra={"job": job.id, "repo": job.repo, "pr": job.pr, "error": fault_text(exc)})
            await asyncio.sleep(wait)
            wait = min(DATABASE_MAX_WAIT, 2 * wait)

    async def _keep_lease(self, job: Job, task: asyncio.Task) -> None:
        """Extend the lease while the job runs; cancel the job once the store says another worker has it. A
        heartbeat the database cannot take is tried at the next beat: whether the lease is still ours is
        decided by the store when the outcome is recorded."""
        interval = max(0.05, self.settings.lease_seconds / 3)
        while not task.done():
            await asyncio.sleep(interval)
            try:
                held = await asyncio.to_thread(self.store.heartbeat, job, self.owner, self.settings.lease_seconds)
            except Exception as exc:  # noqa: BLE001
                log.warning("could not extend the job's lease", extra={"job": job.id, "error": fault_text(exc)})
                continue
            if not held:
                task.cancel()
                return

    async def _give_up(self, job: Job, reason: str, bug: bool = False) -> None:
        """Fail the job and say so on the PR's check run. The failure is recorded first, with the lease
        checked in the same transaction (and the head's verdict left INCOMPLETE, for reconcile, or
        INTERNAL_ERROR after our `bug`); a worker that lost the lease publishes nothing. Publishing is best
        effort: GitHub may be the problem."""
        outcome = job_outcome(JobFacts(incomplete=not bug, bug=bug))
        name = LINT_CHECK_NAME if job.kind == "lint" else CHECK_NAME
        gh, head = None, None
        if job.pr:  # a job that looks for a commit's PRs has no PR to say it on
            try:
                gh = self.runner.clients.installation(job.installation_id)
                head = (await gh.rest.pulls.async_get(*job.repo.split("/", 1), job.pr)).parsed_data.head.sha
            except Exception:  # noqa: BLE001
                log.warning("could not read the PR's head to publish the failure",
                            extra={"job": job.id, "repo": job.repo, "pr": job.pr})
        verdict_head = head if name == CHECK_NAME else None
        if not await self._record(job, lambda: self.store.fail(job, self.owner, reason, verdict_head, outcome)):
            self._abandoned(job, "lease lost; the job's failure is dropped and another worker runs it")
            return
        self.metrics.jobs.labels(job.kind, "failed").inc()
        log.error("job failed", extra={"job": job.id, "kind": job.kind, "repo": job.repo, "pr": job.pr,
                                       "error": reason})
        if gh is None or head is None:
            return
        title, why = (("Internal error", f"signoff-bot met an internal error (a bug, logged for its maintainers) in "
                                         f"this {job.kind} job: {reason}.")
                      if outcome is Outcome.INTERNAL_ERROR else
                      ("Verification could not complete", f"signoff-bot could not finish this {job.kind} job: {reason}."))
        try:
            await Publisher(gh, job.repo, self.settings.bot_login).check_run(
                head, name, "failure", title, f"{why} Re-run the check or comment the re-check command to try again.")
        except Exception:  # noqa: BLE001
            log.warning("could not publish the failure", extra={"job": job.id, "repo": job.repo, "pr": job.pr})


class Workers:
    """`settings.workers` workers (named `names`, else by their defaults), each supervised: one that stops
    for any reason but `stop` is logged, counted and started again. `running` is how many run now."""

    def __init__(self, settings: Settings, store: Store, runner: JobRunner, metrics: Metrics,
                 names: list[str] | None = None):
        self.metrics = metrics
        self.workers = [Worker(settings, store, runner, metrics, name) for name in names or [""] * settings.workers]
        self.running = 0
        self.tasks: list[asyncio.Task] = []

    def start(self, stop: asyncio.Event) -> list[asyncio.Task]:
        """The supervisors' tasks, on the running loop until `stop`."""
        self.tasks = [asyncio.create_task(self._supervise(worker, stop)) for worker in self.workers]
        return self.tasks

    async def _supervise(self, worker: Worker, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._count(+1)
            try:
                await worker.run_forever(stop)
            except Exception:  # noqa: BLE001 - whatever stopped it, the App needs its workers
                log.exception("a worker stopped; starting it again", extra={"worker": worker.owner})
            finally:
                self._count(-1)
            if stop.is_set():
                return
            self.metrics.worker_restarts.inc()
            await _pause(stop, RESTART_SECONDS)

    def _count(self, change: int) -> None:
        self.running += change
        self.metrics.workers_running.set(self.running)


def start_workers(settings: Settings, store: Store, runner: JobRunner, metrics: Metrics, stop: asyncio.Event,
                  names: list[str] | None = None) -> Workers:
    """`settings.workers` supervised workers on the running loop until `stop` (named `names`, else by their
    defaults)."""
    workers = Workers(settings, store, runner, metrics, names)
    workers.start(stop)
    return workers


@dataclass
class Refused:
    """Deliveries the database refused, kept in memory until it takes them (at most `limit`; beyond
    that only their PRs are remembered, to be verified again)."""

    limit: int = 10_000
    deliveries: OrderedDict[str, tuple[Any, ...]] = field(default_factory=OrderedDict)
    prs: set[tuple[str, int]] = field(default_factory=set)

    def add(self, key: str, event: str, action: str, repo: str, pr: int | None, jobs: list[JobSpec]) -> None:
        if pr is not None:
            self.prs.add((repo, pr))
        if key in self.deliveries or len(self.deliveries) < self.limit:
            self.deliveries[key] = (key, event, action, repo, pr, jobs)

    def record(self, store: Store) -> int:
        """Record every kept delivery in `store` (raising, and keeping the rest, if it still refuses)."""
        done = 0
        while self.deliveries:
            key, delivery = next(iter(self.deliveries.items()))
            store.record_delivery(*delivery)
            del self.deliveries[key]
            done += 1
        return done


class Reconciler:
    """GitHub does not redeliver failed webhooks: periodically record the deliveries the database refused,
    and queue every open, ready PR whose head has no verdict, or whose last verification there could not
    complete (INCOMPLETE) or was skipped (SKIPPED: a draft then), or whose delivery was refused."""

    def __init__(self, settings: Settings, store: Store, clients: Clients, refused: Refused | None = None):
        self.settings = settings
        self.store = store
        self.clients = clients
        self.refused = refused or Refused()
        self._app: GitHub | None = None

    def app(self) -> GitHub:
        if self._app is None:
            self._app = app_client(self.settings.app_id, self.settings.private_key, self.settings.github_url,
                                   timeout=http_timeout(self.settings.http_timeout))
        return self._app

    async def run_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                queued = await self.once()
                if queued:
                    log.info(f"reconcile queued {queued} verification(s)")
            except GitHubError as exc:  # GitHub is away: try again next round
                log.warning("reconcile failed", extra={"error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - the database is away, or a bug: the pass runs again next round
                if database_fault(exc):
                    log.warning("reconcile failed", extra={"error": f"database: {fault_text(exc)}"})
                else:
                    log.exception("reconcile failed")
            try:
                await asyncio.wait_for(stop.wait(), self.settings.reconcile_seconds)
            except asyncio.TimeoutError:
                pass

    async def once(self) -> int:
        """One pass over every installation, repository and open PR, each list read to its last page; first,
        the deliveries the database refused are recorded."""
        recorded = await asyncio.to_thread(self.refused.record, self.store)
        if recorded:
            log.info(f"reconcile recorded {recorded} delivery(ies) the database had refused")
        recheck, queued = set(self.refused.prs), 0
        installations = await pages("installations", self.app().rest.apps.async_list_installations)
        for installation in installations:
            gh = self.clients.installation(installation.id)
            repos = await pages("repositories", gh.rest.apps.async_list_repos_accessible_to_installation,
                                key="repositories")
            for repo in repos:
                owner, name = repo.full_name.split("/", 1)
                pulls = await pages(f"open pulls of {repo.full_name}", gh.rest.pulls.async_list, owner, name,
                                    state="open")
                specs = [JobSpec("verify", repo.full_name, p.number, installation.id, {"reason": "reconcile"})
                         for p in pulls if not p.draft and ((repo.full_name, p.number) in recheck
                         or await self._unsettled(repo.full_name, p.number, p.head.sha))]
                if specs:
                    await asyncio.to_thread(self.store.enqueue, specs)
                    queued += len(specs)
        self.refused.prs -= recheck
        return queued

    async def _unsettled(self, repo: str, pr: int, head_sha: str) -> bool:
        """Whether the open, ready PR's head has no verdict, or its last verification could not complete, or
        was skipped (the PR was closed or a draft then, and the event that it no longer is was lost)."""
        verdict = await asyncio.to_thread(self.store.verdict_for, repo, pr, head_sha)
        return verdict is None or verdict["label"] in (Outcome.INCOMPLETE, Outcome.SKIPPED)
