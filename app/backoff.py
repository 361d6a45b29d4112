"""How a client backs off from GitHub, short of re-queueing the job.

- `RetryTransient` (githubkit's `auto_retry`): an idempotent call (GET, PUT,
  PATCH, DELETE, and the POSTs whose repetition changes nothing: a commit
  status, a reaction) that failed in transit (a 5xx, a timeout, a dropped
  connection) is tried again a few times within a few seconds. A job makes
  dozens of calls, so without this one flaky call in three would fail nearly
  every attempt of every job. Any other POST is never repeated here: it may
  have created something before failing; the job runs again instead, and
  publishing finds what exists. Rate limits are never retried here either.
"""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RetryOption

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})
REPEATABLE_POST = re.compile(r"/statuses/[0-9a-fA-F]+$|/reactions$")  # the same again changes nothing


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
