"""Structured JSON logs and Prometheus metrics of the App server."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import traceback
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .github import GitHubError

QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "uvicorn.access")
SAFE_MESSAGES = (GitHubError, sqlite3.Error, OSError, TimeoutError)  # messages written without secrets
_SOURCE = str(Path(__file__).resolve().parent.parent)  # app/ and checks/: where a traceback is worth pointing
LOG_FIELDS = ("delivery", "event", "repo", "pr", "head_sha", "job", "kind", "outcome", "verdict", "field", "error")


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


def setup_logging(level: str) -> None:
    # A record's caller (a walk up the stack), thread, process and process name: no line shows them, and
    # finding them was most of the cost of the one line every delivery logs.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = logging.StreamHandler()
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
        self.queue_depth = Gauge("signoff_bot_queue_depth", "Jobs queued or running", registry=self.registry)
        self.verification_seconds = Histogram("signoff_bot_verification_seconds",
                                              "Wall time of one verification (gather, check, publish)",
                                              registry=self.registry,
                                              buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
        self.jobs = Counter("signoff_bot_jobs_total", "Jobs finished by kind and outcome", ["kind", "outcome"],
                            registry=self.registry)
        self.github_calls = Counter("signoff_bot_github_api_calls_total", "GitHub API requests made",
                                    registry=self.registry)
        self.rate_limit_remaining = Gauge("signoff_bot_github_rate_limit_remaining",
                                          "x-ratelimit-remaining of the latest GitHub response",
                                          registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
