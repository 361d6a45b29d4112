"""How a client backs off from GitHub, short of re-queueing the job.

- `RetryTransient` (githubkit's `auto_retry`): an idempotent call (GET, PUT,
  PATCH, DELETE, and the POSTs whose repetition changes nothing: a commit
  status, a reaction, a GraphQL query) that failed in transit (a 5xx, a timeout, a dropped
  connection) is tried again a few times within a few seconds. A job makes
  dozens of calls, so without this one flaky call in three would fail nearly
  every attempt of every job. Any other POST is never repeated here: it may
  have created something before failing; the job runs again instead, and
  publishing finds what exists. Rate limits are never retried here either.
- `RateLimitGate` (githubkit's throttler, fed by a response hook): once
  GitHub answers that a rate limit is exhausted, no call of this client goes
  out until it may again; each fails at once with `GitHubError.retry_after`,
  so the jobs running on this installation stop and wait in the queue. As
  GitHub documents its limits: a primary limit (403 or 429 with
  `x-ratelimit-remaining: 0`) until its `x-ratelimit-reset`; a secondary
  limit (a 429, or a 403 whose message says "secondary rate limit") for its
  `retry-after`, or without one for at least a minute, doubling while
  GitHub keeps answering so.
- Writes (POST, PATCH, PUT, DELETE; a GraphQL query only reads) of one
  installation go out one at a time, or one verification's at a time. One client serves one installation
  (app/jobs/runner.py `Clients`) and its gate holds one write lock: a write takes
  it for itself, or a publish takes it for its whole wave (`RateLimitGate.wave`):
  the verdict comment, the commit status, the check run and the review of
  ONE verification are independent and go out together, and the lock is
  held until the last of them is answered. Why that much concurrency and no more: GitHub asks
  integrators to send requests serially and to pause between "a large
  number" of mutative ones, because concurrent requests and bursts of
  content creation are what trip its secondary limits. Its documented
  bounds are on concurrency (100 requests at once) and on content-creating
  requests per minute and per hour, which a wave does not change: a
  verification makes the same three or four writes either way. Serialising
  them cost three round trips per verification; a wave costs one, and
  keeps the installation's concurrency of writes a small constant (one
  verification's, never more) however many jobs run, since a second
  verification's wave, and any lone write, waits for the lock. Writes of two
  verifications never interleave, so a secondary limit met mid-wave stops
  one verification's publish, which is idempotent (app/github/publish.py) and runs
  again after the wait, while the others wait their turn without calling.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import re
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import Any

import httpx
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RetryOption
from githubkit.throttling import LocalThrottler

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
REPEATABLE_POST = re.compile(r"/statuses/[0-9a-fA-F]+$|/reactions$")  # the same again changes nothing
GRAPHQL = re.compile(r"/graphql$")
GRAPHQL_WRITE = re.compile(r"\b(?:mutation|subscription)\b")  # anywhere in the document: the safe side
MAX_CONCURRENCY = 100  # GitHub's cap on concurrent requests (githubkit's default throttler)
SECONDARY = "secondary rate limit"  # what GitHub's message says when it is one
SECONDARY_WAIT = 60.0  # GitHub: without retry-after, wait at least one minute
MAX_SECONDARY_WAIT = 900.0
_IN_WAVE: contextvars.ContextVar["RateLimitGate | None"] = contextvars.ContextVar("write_wave", default=None)


def unsaid_secondary(status: int, headers: Mapping[str, str], text: str = "") -> bool:
    """A secondary rate limit that says neither how long to wait (no retry-after) nor when it resets."""
    if status not in (403, 429) or "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0":
        return False
    return status == 429 or SECONDARY in text.lower()


def wait_seconds(status: int, headers: Mapping[str, str], text: str = "") -> float | None:
    """How long an error answer (`text`: its body) asks us to wait before calling again: its retry-after;
    on a 403 or 429 with the rate limit exhausted, the time to its reset; on a secondary limit that says
    neither, a minute. None if it is no rate limit."""
    if "retry-after" in headers:
        try:
            return float(headers["retry-after"])
        except ValueError:
            return SECONDARY_WAIT
    if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        return max(1.0, float(reset) - time.time()) if reset.isdigit() else SECONDARY_WAIT
    return SECONDARY_WAIT if unsaid_secondary(status, headers, text) else None


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
        if not transient or request is None or not repeatable(request):
            return RetryOption(False)
        return RetryOption(True, timedelta(seconds=self.first_delay * 2 ** retry_count))


def repeatable(request: httpx.Request) -> bool:
    """Whether sending this call twice leaves GitHub as sending it once does."""
    method, path = request.method, request.url.path
    return method in IDEMPOTENT or (method == "POST" and (REPEATABLE_POST.search(path) is not None
                                                          or graphql_query(request)))


def writes(request: httpx.Request) -> bool:
    """Whether this call may change something on GitHub (a GraphQL query is POSTed, yet only reads)."""
    return request.method in WRITES and not graphql_query(request)


def graphql_query(request: httpx.Request) -> bool:
    """A POST to GraphQL whose document holds no mutation or subscription: it reads. A document that cannot
    be read, or that names either word anywhere (a field so called included), counts as a write."""
    if request.method != "POST" or GRAPHQL.search(request.url.path) is None:
        return False
    try:
        document = json.loads(request.content).get("query")
    except (httpx.RequestNotRead, ValueError, AttributeError):
        return False
    return isinstance(document, str) and GRAPHQL_WRITE.search(document) is None


def _request(exc: httpx.TransportError) -> httpx.Request | None:
    try:
        return exc.request
    except RuntimeError:  # httpx raises when the error carries no request
        return None


class RateLimitGate(LocalThrottler):
    """githubkit throttler that holds back every call while the client's rate limit is exhausted (a
    held-back call raises `error(message, status, seconds to the reset)`) and sends writes one at a time, or
    one wave at a time (`wave`)."""

    def __init__(self, error: Callable[[str, int, float], Exception], max_concurrency: int = MAX_CONCURRENCY) -> None:
        super().__init__(max_concurrency)
        self.error = error
        self.until = 0.0  # epoch seconds
        self.status = 403
        self.strikes = 0  # secondary limits without retry-after in a row: each waits twice as long
        self._writes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = \
            weakref.WeakKeyDictionary()

    async def observe(self, response: httpx.Response) -> None:
        """Response hook: note how long GitHub asked us to wait."""
        status = response.status_code
        if status not in (403, 429):
            if status < 400:
                self.strikes = 0
            return
        await response.aread()  # the message says whether a 403 is a secondary limit
        wait = wait_seconds(status, response.headers, response.text)
        if wait is None:
            return
        if unsaid_secondary(status, response.headers, response.text):
            wait = min(MAX_SECONDARY_WAIT, wait * 2 ** self.strikes)
            self.strikes += 1
        if time.time() + wait > self.until:
            self.until, self.status = time.time() + wait, status

    def _check(self, request: httpx.Request) -> None:
        wait = self.until - time.time()
        if wait > 0:
            raise self.error(f"{request.method} {request.url.path}: rate limited, {wait:.0f} s to the reset",
                             self.status, wait)

    def _write_lock(self) -> asyncio.Lock:
        """This event loop's lock (an asyncio.Lock may serve only one loop; a client may outlive one)."""
        loop = asyncio.get_running_loop()
        if loop not in self._writes:
            self._writes[loop] = asyncio.Lock()
        return self._writes[loop]

    @asynccontextmanager
    async def wave(self) -> AsyncGenerator[None, Any]:
        """One verification's writes, sent concurrently within (in this task and the tasks it starts), while
        every other write of the client waits: the write lock is held until the block ends."""
        if _IN_WAVE.get() is self:
            yield
            return
        async with self._write_lock():
            token = _IN_WAVE.set(self)
            try:
                yield
            finally:
                _IN_WAVE.reset(token)

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        self._check(request)
        with super().acquire(request):
            yield

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        self._check(request)
        async with contextlib.AsyncExitStack() as held:
            if writes(request) and _IN_WAVE.get() is not self:
                await held.enter_async_context(self._write_lock())
                self._check(request)  # a limit may have been hit while this write waited its turn
            await held.enter_async_context(super().async_acquire(request))
            yield
