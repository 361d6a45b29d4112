"""The workers and the reconcile pass, on an event loop of their own in a thread of their own.

A verification spends tens of milliseconds of CPU at a stretch (parsing
GitHub's answers, the checks, rendering) between its awaits. On the webhook
server's event loop that would hold every delivery's answer until it ends;
on a loop of its own, the interpreter hands the webhook thread the GIL
within its switch interval (5 ms) whenever it has work, so a delivery waits
for a verification's CPU at most that long at a time, and the checks, the longest stretches of it, run in
processes of their own (app/judge.py). The jobs' blocking store calls run on
this loop's own thread pool, apart from the server's.

With `apart` (the App's own store, as `signoff-bot serve` runs it), the
workers run in a process of their own at a lower CPU priority instead
(app/jobs/process.py) and the thread keeps the reconcile pass: the server's
event loop then shares the GIL with no verification at all.
"""

from __future__ import annotations

import asyncio
import threading

from app.judge import Budget, Judge
from app.observability import Metrics
from app.settings import Settings
from app.store.sql import Store

from .process import JobsProcess
from .runner import Clients, JobRunner
from .worker import Reconciler, Refused, Workers, start_workers

START_SECONDS = 10.0


class Background:
    """`settings.workers` workers and the reconcile pass on the `signoff-bot jobs` thread; with `apart`, the
    workers in the jobs' process (app/jobs/process.py), which opens the store `settings.db_path` names."""

    def __init__(self, settings: Settings, store: Store, clients: Clients, metrics: Metrics, refused: Refused,
                 apart: bool = False):
        self.settings, self.store, self.clients, self.metrics, self.refused = settings, store, clients, metrics, refused
        self.apart = apart
        self.judge: Judge | None = None
        self.jobs: JobsProcess | None = None
        self.tasks: list[asyncio.Task] = []
        self.workers: Workers | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.apart:
            self.jobs = JobsProcess(self.settings, self.metrics)
            self.jobs.start()
        else:
            self.judge = Judge(self.settings.check_processes, self.settings.work_nice,
                               Budget.of(self.settings.check_cpu_seconds, self.settings.check_memory_mb))
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), name="signoff-bot jobs",
                                        daemon=True)
        self._thread.start()
        if not self._started.wait(START_SECONDS):
            raise RuntimeError("the jobs thread did not start")

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        if self.judge is not None:
            runner = JobRunner(self.settings, self.store, self.clients, self.metrics, self.judge)
            self.workers = start_workers(self.settings, self.store, runner, self.metrics, self._stop)
            self.tasks = list(self.workers.tasks)
        self.tasks.append(asyncio.create_task(
            Reconciler(self.settings, self.store, self.clients, self.refused).run_forever(self._stop)))
        self._started.set()
        await self._stop.wait()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def stopped(self) -> int:
        """How many of its tasks have stopped, the jobs' process counted as one (none should have, between
        `start` and `stop`; a jobs' process that died is started again)."""
        if self._thread is None or not self._thread.is_alive():
            return max(1, len(self.tasks))
        return sum(task.done() for task in self.tasks) + (self.jobs is not None and not self.jobs.alive())

    def workers_running(self) -> int:
        """How many workers run now: in this loop, or as the jobs' process last reported (none while it is
        down or starting)."""
        if self.jobs is not None:
            return self.jobs.workers_running()
        return self.workers.running if self.workers is not None else 0

    def stop(self) -> None:
        """Stop the workers (a job in flight is abandoned: its lease expires and it runs again) and wait."""
        if self._thread is None:
            return
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self.judge is not None:
            self.judge.close()
        if self.jobs is not None:
            self.jobs.stop()
