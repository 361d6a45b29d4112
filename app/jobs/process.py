"""The workers in a process of their own, at a lower CPU priority than the server that acknowledges deliveries.

A verification spends CPU between its awaits: parsing GitHub's answers
(githubkit, pydantic), rendering, publishing, beside the checks (app/judge.py).
In the server's process that CPU held the GIL the webhook's event loop needs,
and on a machine whose cores were busy a 202 waited for it. Here the workers
run on an event loop of their own, with their own store connection and GitHub
clients, `settings.work_nice` below the server's priority (the checks processes
are this process's children and inherit it): when a delivery arrives, the
kernel gives the server a core first.

The server keeps ingest, the reconcile pass (it records the deliveries the
database refused, held in the server's memory), /readyz and /metrics. The
metric calls the jobs make (`Forwarded`) come to the server over the pipe in
batches and are applied to its `Metrics`, so /metrics shows them as before and
a restart of this process loses none of the server's totals.

The workers are named for the server (worker-<server pid>-…), as they were in
its process. The process dies with the server: when the pipe closes without
the server having asked it to stop, it exits at once, as its jobs did in the
server's process, and the jobs it held run again when their leases expire, as
after any crash. When it dies by itself, `JobsProcess` starts another; /readyz
is 503 meanwhile.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import logging
import multiprocessing
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection

from app.judge import Budget, Judge
from app.observability import Metrics, setup_logging
from app.settings import Settings

from .scheduling import lower_priority

log = logging.getLogger("signoff_bot.jobs_process")

FLUSH_SECONDS = 0.25  # how often the jobs' metric calls go to the server
RESTART_SECONDS = 1.0  # between a death of the process and the next start: a crash loop costs little
STOP_SECONDS = 30.0  # for the workers to stop when asked, before the process is killed
STOP = "stop"
OPS = ("inc", "observe", "set")

Call = tuple[str, tuple[str, ...], str, float]  # metric, label values, operation, argument


@dataclass(frozen=True)
class _Metric:
    calls: collections.deque
    name: str
    values: tuple[str, ...] = ()

    def labels(self, *values: str) -> "_Metric":
        return _Metric(self.calls, self.name, values)

    def inc(self, amount: float = 1.0) -> None:
        self.calls.append((self.name, self.values, "inc", amount))

    def observe(self, value: float) -> None:
        self.calls.append((self.name, self.values, "observe", value))

    def set(self, value: float) -> None:
        self.calls.append((self.name, self.values, "set", value))


class Forwarded:
    """Stands for `Metrics` in the jobs' process: every call on one of its metrics is kept for the server."""

    def __init__(self) -> None:
        self.calls: collections.deque[Call] = collections.deque()  # appended to from any thread

    def __getattr__(self, name: str) -> _Metric:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Metric(self.calls, name)

    def taken(self) -> list[Call]:
        return [self.calls.popleft() for _ in range(len(self.calls))]


def apply(metrics: Metrics, calls: list[Call]) -> None:
    """The jobs' metric calls, made on the server's metrics."""
    for name, values, op, arg in calls:
        metric = getattr(metrics, name)
        if op in OPS:
            getattr(metric.labels(*values) if values else metric, op)(arg)


# --- the process ---------------------------------------------------------------------------------------


def _main(settings: Settings, conn: Connection, owners: list[str]) -> None:
    # The server says when to stop: Ctrl-C reaches the whole process group, a service manager may signal
    # every process of the service, and the server, stopping, asks this one to stop after its own requests.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    lower_priority(settings.work_nice)  # before any thread starts: they all inherit it
    setup_logging(settings.log_level)
    metrics = Forwarded()
    sending = threading.Lock()

    def flush() -> None:
        with sending:
            if calls := metrics.taken():
                conn.send(calls)

    def flush_forever() -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            try:
                flush()
            except OSError:
                return

    threading.Thread(target=flush_forever, name="metrics-forwarder", daemon=True).start()
    try:
        asyncio.run(_work(settings, conn, metrics, owners))
        flush()
    finally:
        logging.shutdown()


async def _work(settings: Settings, conn: Connection, metrics: Forwarded, owners: list[str]) -> None:
    from app.store.choose import open_store

    from .runner import Clients, JobRunner
    from .worker import start_workers

    loop, stop = asyncio.get_running_loop(), asyncio.Event()

    def watch_the_server() -> None:
        try:
            asked = conn.recv() == STOP
        except (EOFError, OSError):
            asked = False
        if not asked:  # the server is gone: so are its jobs, as when they ran in its process
            os._exit(1)
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch_the_server, name="server-watch", daemon=True).start()
    store = await asyncio.to_thread(open_store, settings.db_path)
    judge = Judge(settings.check_processes, budget=Budget.of(settings.check_cpu_seconds, settings.check_memory_mb))
    try:
        runner = JobRunner(settings, store, Clients(settings, metrics), metrics, judge)
        tasks = start_workers(settings, store, runner, metrics, stop, owners).tasks
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await asyncio.to_thread(judge.close)
        await asyncio.to_thread(store.close)


# --- the server's side --------------------------------------------------------------------------------


class JobsProcess:
    """The jobs' process as the server sees it: started, watched, started again after it dies, stopped."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a start after a death, or the stop: one at a time
        self._watcher: threading.Thread | None = None
        self._workers = 0  # running in the process, as it last reported

    def start(self) -> None:
        atexit.register(self.stop)  # before multiprocessing's exit handler, which would wait for the process
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="jobs-process watch", daemon=True)
        self._watcher.start()

    def _spawn(self) -> None:
        context = multiprocessing.get_context("spawn")  # the server has threads: forking copies their locks
        ours, theirs = context.Pipe()
        owners = [f"worker-{os.getpid()}-{uuid.uuid4().hex[:8]}" for _ in range(self.settings.workers)]
        # Not a daemon: a daemon may not start processes, and the checks run in its own (app/judge.py).
        self._process = context.Process(target=_main, args=(self.settings, theirs, owners),
                                        name="signoff-bot jobs")
        self._process.start()
        theirs.close()  # its end only in the process: when the server goes, the process reads EOF
        self._conn = ours

    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def workers_running(self) -> int:
        """The workers running in the process, as it last said (`workers_running` forwarded); 0 while it
        is down or has not said yet."""
        return self._workers if self.alive() else 0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _watch(self) -> None:
        """Apply the metric calls the process sends; when it dies, start another (unless stopping)."""
        while True:
            try:
                calls = self._conn.recv()
                apply(self.metrics, calls)
                self._workers = next((int(arg) for name, _values, op, arg in reversed(calls)
                                      if name == "workers_running" and op == "set"), self._workers)
                continue
            except (EOFError, OSError):
                pass
            self._workers = 0
            self.metrics.workers_running.set(0)
            if self._stopping.is_set():
                return
            self._process.join()
            log.error("the jobs' process stopped; starting another",
                      extra={"error": f"exit code {self._process.exitcode}"})
            self._conn.close()
            if self._stopping.wait(RESTART_SECONDS):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                self._spawn()

    def stop(self) -> None:
        """Ask the workers to stop (a job in flight is abandoned: its lease expires, it runs again), wait."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
        try:
            self._conn.send(STOP)
        except (OSError, ValueError):  # it has died, or its pipe is closed
            pass
        self._process.join(STOP_SECONDS)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        if self._watcher is not None:
            self._watcher.join(STOP_SECONDS)
        self._conn.close()
