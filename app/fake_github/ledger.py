"""What clients did to the fake: request counts for benchmarks, and the writes and the
timed log of every API call that tests assert on."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Write:
    """One successful write (POST/PATCH/PUT/DELETE) through the REST API."""

    seq: int
    method: str
    path: str
    route: str  # the route template, e.g. "POST /repos/{owner}/{repo}/check-runs"
    actor: str  # login; the app's bot login for installation tokens
    as_app: bool
    status: int
    request: Any  # the JSON body sent, or None
    response: Any  # the JSON body answered, or None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Call:
    """One API request: who sent it, when it arrived and when it was answered (epoch seconds)."""

    seq: int
    method: str
    path: str
    route: str
    status: int  # 0: the connection was dropped
    actor: str  # login, "app" for a JWT, "anonymous", or "invalid" for rejected credentials
    started: float
    finished: float
    job: str | None  # the X-Signoff-Bot-Job header: which of the app's jobs made the call

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Ledger:
    """Request counters and the write log, safe to read from a test thread while the server runs."""

    requests: int = 0
    rate_limited: int = 0
    not_modified: int = 0
    by_route: Counter = field(default_factory=Counter)
    writes: list[Write] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, route: str, status: int, *, billable: bool) -> int:
        """Count one request; returns how many requests have counted against the rate limit."""
        with self._lock:
            self.requests += 1
            self.by_route[route] += 1
            if status == 304:
                self.not_modified += 1
            elif billable:
                self.rate_limited += 1
            return self.rate_limited

    def used(self) -> int:
        return self.rate_limited

    def record(self, **kw: Any) -> Write:
        with self._lock:
            write = Write(seq=len(self.writes) + 1, **kw)
            self.writes.append(write)
            return write

    def call(self, **kw: Any) -> Call:
        with self._lock:
            call = Call(seq=len(self.calls) + 1, **kw)
            self.calls.append(call)
            return call

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests, "rate_limited": self.rate_limited,
                    "not_modified": self.not_modified, "by_route": dict(sorted(self.by_route.items()))}

    def reset_stats(self) -> None:
        with self._lock:
            self.requests = self.rate_limited = self.not_modified = 0
            self.by_route.clear()
            self.calls.clear()
