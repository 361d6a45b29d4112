"""How a client backs off from GitHub, short of re-queueing the job.

- `RetryTransient` (githubkit's `auto_retry`): an idempotent call (GET, PUT,
  PATCH, DELETE, and the POSTs whose repetition changes nothing: a commit
  status, a reaction) that failed in transit (a 5xx, a timeout, a dropped
  connection) is tried again a few times within a few seconds. A job makes
  dozens of calls, so without this one flaky call in three would fail nearly
  every attempt of every job. Any other POST is never repeated here: it may
  have created something before failing; the job runs again instead, and
  publishing finds what exists. Rate limits are never retried here either.
- `RateLimitGate` (githubkit's throttler, fed by a response hook): once
  GitHub answers that the rate limit is exhausted (403 or 429 with
  `retry-after`, or `x-ratelimit-remaining: 0`), no call of this client goes
  out until the reset; each fails at once with `GitHubError.retry_after`, so
  the jobs running on this installation stop and wait in the queue.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import Any

import httpx
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RetryOption
from githubkit.throttling import LocalThrottler

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})
REPEATABLE_POST = re.compile(r"/statuses/[0-9a-fA-F]+$|/reactions$")  # the same again changes nothing
MAX_CONCURRENCY = 100  # GitHub's cap on concurrent requests (githubkit's default throttler)


def wait_seconds(status: int, headers: Mapping[str, str]) -> float | None:
    """How long an error answer asks us to wait before calling again (its retry-after, or on a 403
    or 429 with the rate limit exhausted, the time to its reset); None if it does not say."""
    if "retry-after" in headers:
        try:
            return float(headers["retry-after"])
        except ValueError:
            return 60.0
    if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        return max(1.0, float(reset) - time.time()) if reset.isdigit() else 60.0
    return 60.0 if status == 429 else None


class RetryTransient:
    """githubkit retry decision: up to `retries` quick retries of an idempotent call that failed in transit."""

    def __init__(self, retries: int = 4, first_delay: float = 0.2) -> None:
        self.retries = retries
        self.first_delay = first_delay

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if retry_count >= self.retries or isinstance(exc, RateLimitExceeded):
            return RetryOption(False)
        if isinstance(exc, RequestFailed):
            transient, request = exc.response.status_code >= 500, exc.request
        elif isinstance(exc, RequestError) and isinstance(exc.exc, httpx.TransportError):  # timeouts included
            transient, request = True, _request(exc.exc)
        else:
            return RetryOption(False)
        if not transient or request is None or not repeatable(request.method, request.url.path):
            return RetryOption(False)
        return RetryOption(True, timedelta(seconds=self.first_delay * 2 ** retry_count))


def repeatable(method: str, path: str) -> bool:
    """Whether sending this call twice leaves GitHub as sending it once does."""
    return method in IDEMPOTENT or (method == "POST" and REPEATABLE_POST.search(path) is not None)


def _request(exc: httpx.TransportError) -> httpx.Request | None:
    try:
        return exc.request
    except RuntimeError:  # httpx raises when the error carries no request
        return None


class RateLimitGate(LocalThrottler):
    """githubkit throttler that holds back every call while the client's rate limit is exhausted;
    a held-back call raises `error(message, status, seconds to the reset)`."""

    def __init__(self, error: Callable[[str, int, float], Exception], max_concurrency: int = MAX_CONCURRENCY) -> None:
        super().__init__(max_concurrency)
        self.error = error
        self.until = 0.0  # epoch seconds
        self.status = 403

    async def observe(self, response: httpx.Response) -> None:
        """Response hook: note how long GitHub asked us to wait."""
        wait = wait_seconds(response.status_code, response.headers) if response.status_code in (403, 429) else None
        if wait is not None and time.time() + wait > self.until:
            self.until, self.status = time.time() + wait, response.status_code

    def _check(self, request: httpx.Request) -> None:
        wait = self.until - time.time()
        if wait > 0:
            raise self.error(f"{request.method} {request.url.path}: rate limited, {wait:.0f} s to the reset",
                             self.status, wait)

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        self._check(request)
        with super().acquire(request):
            yield

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        self._check(request)
        async with super().async_acquire(request):
            yield
