"""Structured JSON logs and Prometheus metrics of the App server."""

from __future__ import annotations

import collections
import json
import logging
import sqlite3
import threading
import time
import traceback
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .github.client import GitHubError

QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "uvicorn.access")
SAFE_MESSAGES = (GitHubError, sqlite3.Error, OSError, TimeoutError)  # messages written without secrets
_SOURCE = str(Path(__file__).resolve().parent.parent)  # app/ and checks/: where a traceback is worth pointing
LOG_FIELDS = ("delivery", "event", "repo", "pr", "head_sha", "job", "kind", "worker", "outcome", "verdict", "field",
              "error")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request context fields passed via `extra=`."""

    _second = -1
    _stamp = ""

    def _timestamp(self, record: logging.LogRecord) -> str:
        """ISO 8601 UTC with milliseconds; the part to the second is formatted once a second."""
        second = int(record.created)
        if second != self._second:
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self._timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in LOG_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc"] = exception_summary(record.exc_info[1])
        return json.dumps(entry, ensure_ascii=False)


def exception_summary(exc: BaseException) -> str:
    """The exception's type and the line that raised it; its message only for types whose messages are ours
    or the system's. Other messages may quote what went over the wire: pydantic's errors quote the response
    they rejected (an installation token, say), httpx's and githubkit's quote URLs, which may be signed."""
    kind = type(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(_SOURCE) and "site-packages" not in f.filename]
    frame = (ours or frames or [None])[-1]
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    text = f"{kind.__module__}.{kind.__qualname__}{where}"
    if isinstance(exc, SAFE_MESSAGES):
        text += f": {str(exc).splitlines()[0] if str(exc) else ''}"
    return text


class WrittenApart(logging.StreamHandler):
    """A stream handler whose records are formatted and written by a thread of its own, together, every
    `seconds` (WARNING and above at once), instead of by the thread that logs: a webhook's answer waits
    neither for its log line's JSON nor for the write (a system call, after which the event loop waited for
    the GIL again while verifications ran). A process killed outright loses at most `seconds` of lines;
    `flush` writes what is pending (logging does at exit)."""

    def __init__(self, stream=None, seconds: float = 0.05) -> None:
        super().__init__(stream)
        self.seconds = seconds
        self._pending: collections.deque[logging.LogRecord] = collections.deque()
        self._writing = threading.Lock()  # one flush at a time, so lines keep their order
        self._wake = threading.Event()
        threading.Thread(target=self._write_forever, name="log-writer", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        self._pending.append(record)
        if record.levelno >= logging.WARNING:
            self._wake.set()

    def flush(self) -> None:
        with self._writing:
            lines = []
            while self._pending:
                record = self._pending.popleft()
                try:
                    lines.append(self.format(record) + self.terminator)
                except Exception:  # noqa: BLE001 - as logging does: report it, lose only that line
                    self.handleError(record)
            if lines:
                with self.lock:
                    self.stream.write("".join(lines))
                    super().flush()

    def _write_forever(self) -> None:
        while True:
            self._wake.wait(self.seconds)
            self._wake.clear()
            self.flush()


def setup_logging(level: str) -> None:
    # A record's caller (a walk up the stack), thread, process and process name: no line shows them, and
    # finding them was most of the cost of the one line every delivery logs.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = WrittenApart()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Never below WARNING, whatever the level: httpcore's DEBUG lines carry whole response headers, among
    # them the Location of an artifact download, a pre-signed URL that is a credential for the artifact.
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


class Metrics:
    """The server's metrics, in a registry of its own (several apps may live in one test process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter("signoff_bot_deliveries_total", "Webhook deliveries by event and outcome",
                                  ["event", "outcome"], registry=self.registry)
        self._delivered: dict[tuple[str, str], Counter] = {}  # the children of `deliveries`, by labels
        self.queue_depth = Gauge("signoff_bot_queue_depth", "Jobs queued or running", registry=self.registry)
        self.verification_seconds = Histogram("signoff_bot_verification_seconds",
                                              "Wall time of one verification (gather, check, publish)",
                                              registry=self.registry,
                                              buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
        self.jobs = Counter("signoff_bot_jobs_total", "Jobs finished by kind and outcome", ["kind", "outcome"],
                            registry=self.registry)
        self.internal_errors = Counter("signoff_bot_internal_errors_total",
                                       "Our own bugs, logged with their tracebacks: a job's exception (the job "
                                       "ends with an internal error) or a rule's (its row fails closed)",
                                       ["where"], registry=self.registry)
        for where in ("job", "rule"):  # shown at 0 from the start, so that an alert sees the first one
            self.internal_errors.labels(where)
        self.worker_restarts = Counter("signoff_bot_worker_restarts_total",
                                       "Workers started again after they stopped (a bug escaped them)",
                                       registry=self.registry)
        self.workers_running = Gauge("signoff_bot_workers_running", "Workers running now", registry=self.registry)
        self.github_calls = Counter("signoff_bot_github_api_calls_total", "GitHub API requests made",
                                    registry=self.registry)
        self.rate_limit_remaining = Gauge("signoff_bot_github_rate_limit_remaining",
                                          "x-ratelimit-remaining of the latest GitHub response",
                                          registry=self.registry)

    def delivered(self, event: str, outcome: str) -> None:
        """Count one webhook delivery. Each (event, outcome) child is looked up once: `labels` takes a lock
        and checks its values on every call, which cost each delivery more than counting it."""
        child = self._delivered.get((event, outcome))
        if child is None:
            child = self._delivered[event, outcome] = self.deliveries.labels(event, outcome)
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
