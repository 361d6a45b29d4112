"""Injected failures: the ways GitHub misbehaves that the bot must survive.

A fault matches a request by an fnmatch pattern over "METHOD /concrete/path"
and "METHOD /route/{template}" (the method part is optional), and applies to
the next `times` matching requests: an error status (403 and 429 carry the
rate-limit headers GitHub sends), added latency, or a connection dropped
mid-response. A `secondary` 403 or 429 is a secondary rate limit as GitHub
answers one: its message says so, the primary limit is not exhausted, and
there is no `retry-after` unless the fault gives one. With `probability`
below 1 a matching request is hit only by chance (`seed` makes the chances
reproducible), so a fault with a large `times` models a flaky GitHub. With `actor` (a login, e.g. "signoff-bot[bot]")
it hits only that actor's requests, so a test can act and read undisturbed.
"""

from __future__ import annotations

import fnmatch
import random
import threading
import time
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from typing import Any

RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
SECONDARY_MESSAGE = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."


@dataclass
class Fault:
    route: str = "*"
    status: int | None = None
    times: int = 1
    delay_ms: int = 0
    drop: bool = False
    retry_after: int | None = None  # seconds; defaults to 60 on a 429
    reset_in: int = 60  # seconds until x-ratelimit-reset on a 403
    message: str | None = None
    probability: float = 1.0  # the chance that a matching request is hit
    seed: int | None = None  # seeds the chances, for a reproducible sequence of hits
    actor: str | None = None  # only requests by this login (the app's installation: its bot login)
    secondary: bool = False  # a 403 or 429 that is a secondary rate limit
    _rng: random.Random = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Fault":
        known = {f.name for f in fields(cls) if f.init}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        fault = cls(**data)
        numbers = (fault.times, fault.delay_ms, fault.reset_in, fault.status or 0, fault.retry_after or 0)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            raise ValueError("times, delay_ms, reset_in, status and retry_after must be integers")
        if fault.status is not None and not 400 <= fault.status <= 599:
            raise ValueError("status must be an HTTP error status (4xx or 5xx)")
        if fault.times < 1:
            raise ValueError("times must be at least 1")
        if not isinstance(fault.probability, (int, float)) or isinstance(fault.probability, bool) \
                or not 0 < fault.probability <= 1:
            raise ValueError("probability must be a number in (0, 1]")
        if fault.seed is not None and (not isinstance(fault.seed, int) or isinstance(fault.seed, bool)):
            raise ValueError("seed must be an integer")
        if fault.actor is not None and not isinstance(fault.actor, str):
            raise ValueError("actor must be a login")
        if fault.status is None and not fault.drop and not fault.delay_ms:
            raise ValueError("a fault needs a status, drop or delay_ms")
        if fault.secondary is not False and (fault.secondary is not True or fault.status not in (403, 429)):
            raise ValueError("secondary (true or false) is for a 403 or 429")
        return fault

    def matches(self, method: str, path: str, template: str | None, actor: str | None = None) -> bool:
        if self.actor is not None and (actor or "").lower() != self.actor.lower():
            return False
        pattern = self.route
        if " " in pattern:
            want, pattern = pattern.split(" ", 1)
            if want.upper() != method:
                return False
        return fnmatch.fnmatchcase(path, pattern) or (template is not None and fnmatch.fnmatchcase(template, pattern))

    def hits(self) -> bool:
        """Whether a matching request is hit this time (always, unless `probability` < 1)."""
        return self.probability >= 1 or self._rng.random() < self.probability

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    def response(self, limit: int) -> tuple[int, dict[str, str], dict[str, Any]]:
        """(status, headers, JSON body) GitHub would answer with."""
        status = self.status or 500
        headers: dict[str, str] = {}
        if status == 403 and not self.secondary:
            headers.update({"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": "0",
                            "x-ratelimit-used": str(limit), "x-ratelimit-resource": "core",
                            "x-ratelimit-reset": str(int(time.time()) + self.reset_in)})
            message = "API rate limit exceeded for installation."
        elif status in (403, 429):
            message = SECONDARY_MESSAGE
        elif status == 404:
            message = "Not Found"
        elif status >= 500:
            message = "Server Error"
        else:
            message = HTTPStatus(status).phrase
        retry_after = self.retry_after if self.retry_after is not None or self.secondary else \
            60 if status == 429 else None
        if retry_after is not None:
            headers["retry-after"] = str(retry_after)
        body = {"message": self.message or message, "documentation_url": RATE_LIMIT_DOCS
                if status in (403, 429) else "https://docs.github.com/rest", "status": str(status)}
        return status, headers, body


@dataclass
class Faults:
    """Pending faults, in the order they were added; safe to change from a test thread."""

    _items: list[Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._items.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def take(self, method: str, path: str, template: str | None, actor: str | None = None) -> Fault | None:
        """The first fault matching and hitting this request (by `actor`), spending one of its `times`."""
        with self._lock:
            for fault in self._items:
                if fault.matches(method, path, template, actor) and fault.hits():
                    fault.times -= 1
                    if fault.times == 0:
                        self._items.remove(fault)
                    return fault
        return None

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.to_json() for f in self._items]
