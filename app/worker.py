"""Workers that drain the durable queue, and the reconcile pass that heals lost deliveries.

A worker leases one job at a time and keeps its lease alive while it runs; if
the process dies the lease expires and any worker runs the job again
(publishing is idempotent). A transient GitHub failure re-queues the job with
a delay (GitHub's retry-after or rate-limit reset, else exponential backoff)
instead of sleeping in the worker. Waiting for a rate limit's reset is not
failing: it counts neither as an attempt nor against the job's budget. A job
that keeps failing, or outlives its budget (an attempt still running when the
budget is spent is stopped), ends as a failed check run that says why.

The reconcile pass also records the deliveries the database refused (kept by
the server in `Refused`, since GitHub does not retry a 503), and re-verifies
their PRs even when the head already has a verdict.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from githubkit import GitHub

from .github import GitHubError, app_client, http_timeout, pages
from .jobs import Clients, JobRunner, current_job
from .observability import Metrics
from .publish import CHECK_NAME, LINT_CHECK_NAME, Publisher
from .settings import Settings
from .store import Job, JobSpec, Store

log = logging.getLogger("signoff_bot.worker")

IDLE_POLL_SECONDS = 0.2


class Worker:
    def __init__(self, settings: Settings, store: Store, runner: JobRunner, metrics: Metrics, name: str = ""):
        self.settings = settings
        self.store = store
        self.runner = runner
        self.metrics = metrics
        self.owner = name or f"worker-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    async def run_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                job = await asyncio.to_thread(self.store.lease, self.owner, self.settings.lease_seconds)
            except Exception:  # noqa: BLE001 - a locked or unavailable database: wait and try again
                log.exception("lease failed")
                job = None
            if job is None:
                try:
                    await asyncio.wait_for(stop.wait(), IDLE_POLL_SECONDS)
                except asyncio.TimeoutError:
                    pass
                continue
            await self.process(job)

    async def process(self, job: Job) -> None:
        tag = current_job.set(f"{job.id}@{self.owner}")
        try:
            await self._process(job)
        finally:
            current_job.reset(tag)

    async def _process(self, job: Job) -> None:
        extra = {"job": job.id, "kind": job.kind, "repo": job.repo, "pr": job.pr,
                 "delivery": job.payload.get("delivery")}
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
        except asyncio.CancelledError:
            log.warning("lease lost; job abandoned to another worker", extra=extra)
            self.metrics.jobs.labels(job.kind, "abandoned").inc()
            return
        except GitHubError as exc:
            if exc.transient and (exc.rate_limited or job.attempts < self.settings.max_attempts):
                delay = exc.retry_after if exc.retry_after is not None else min(300.0, 2.0 ** job.attempts)
                await asyncio.to_thread(self.store.retry, job, self.owner, delay, str(exc), exc.rate_limited)
                self.metrics.jobs.labels(job.kind, "retried").inc()
                log.info("retrying", extra={**extra, "error": str(exc)})
                return
            await self._give_up(job, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug must not kill the worker; the job fails visibly
            log.exception("job crashed", extra=extra)
            await self._give_up(job, f"internal error ({type(exc).__name__})")
            return
        finally:
            keeper.cancel()
        await asyncio.to_thread(self.store.complete, job, self.owner)
        self.metrics.jobs.labels(job.kind, "done").inc()

    async def _keep_lease(self, job: Job, task: asyncio.Task) -> None:
        interval = max(0.05, self.settings.lease_seconds / 3)
        while not task.done():
            await asyncio.sleep(interval)
            held = await asyncio.to_thread(self.store.heartbeat, job, self.owner, self.settings.lease_seconds)
            if not held:
                task.cancel()
                return

    async def _give_up(self, job: Job, reason: str) -> None:
        """Fail the job and say so on the PR's check run (best effort: GitHub may be the problem)."""
        await asyncio.to_thread(self.store.fail, job, self.owner, reason)
        self.metrics.jobs.labels(job.kind, "failed").inc()
        log.error("job failed", extra={"job": job.id, "kind": job.kind, "repo": job.repo, "pr": job.pr,
                                       "error": reason})
        if not job.pr:
            return  # a job that looks for a commit's PRs has no PR to say it on
        try:
            gh = self.runner.clients.installation(job.installation_id)
            pull = (await gh.rest.pulls.async_get(*job.repo.split("/", 1), job.pr)).parsed_data
            name = LINT_CHECK_NAME if job.kind == "lint" else CHECK_NAME
            await Publisher(gh, job.repo, self.settings.bot_login).check_run(
                pull.head.sha, name, "failure", "Verification could not complete",
                f"signoff-bot could not finish this {job.kind} job: {reason}. "
                "Re-run the check or comment the re-check command to try again.")
        except Exception:  # noqa: BLE001
            log.warning("could not publish the failure", extra={"job": job.id, "repo": job.repo, "pr": job.pr})


def start_workers(settings: Settings, store: Store, runner: JobRunner, metrics: Metrics, stop: asyncio.Event,
                  names: list[str] | None = None) -> list[asyncio.Task]:
    """`settings.workers` workers on the running loop until `stop` (named `names`, else by their defaults)."""
    return [asyncio.create_task(Worker(settings, store, runner, metrics, name).run_forever(stop))
            for name in names or [""] * settings.workers]


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
    and queue every open PR whose head has no verdict or whose delivery was refused."""

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
            except GitHubError as exc:  # GitHub or the database is away: try again next round
                log.warning("reconcile failed", extra={"error": str(exc)})
            except Exception:  # noqa: BLE001 - a bug: logged with its traceback, the pass runs again next round
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
                         or await asyncio.to_thread(self.store.verdict_for, repo.full_name, p.number, p.head.sha)
                         is None)]
                if specs:
                    await asyncio.to_thread(self.store.enqueue, specs)
                    queued += len(specs)
        self.refused.prs -= recheck
        return queued
