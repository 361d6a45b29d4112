"""Backing off from GitHub (app/backoff.py): which failed calls are retried in place."""

from __future__ import annotations

import httpx
import pytest
from githubkit.exception import RequestError, RequestFailed, RequestTimeout

from app.backoff import RetryTransient, repeatable

URL = "https://api.github.com/repos/o/r"


def failed(method: str, path: str, status: int, headers: dict[str, str] | None = None) -> RequestFailed:
    request = httpx.Request(method, URL + path)
    response = httpx.Response(status, headers=headers or {}, request=request)

    class Answer:  # what githubkit's RequestFailed reads of its Response
        raw_request, raw_response, status_code, _status_reason = request, response, status, str(status)

    return RequestFailed(Answer())


def dropped(method: str, path: str, kind: type[httpx.TransportError] = httpx.RemoteProtocolError) -> RequestError:
    error = kind("peer closed connection", request=httpx.Request(method, URL + path))
    return RequestTimeout(error) if isinstance(error, httpx.TimeoutException) else RequestError(error)


@pytest.mark.parametrize(("exc", "retried"), [
    (failed("GET", "/pulls/1", 502), True),
    (failed("PATCH", "/check-runs/5", 500), True),
    (failed("POST", "/statuses/" + "a" * 40, 502), True),
    (failed("POST", "/issues/comments/7/reactions", 503), True),
    (failed("POST", "/issues/1/comments", 502), False),  # it may have been created: the job runs again instead
    (failed("POST", "/check-runs", 502), False),
    (failed("GET", "/pulls/1", 404), False),
    (failed("GET", "/pulls/1", 422), False),
    (dropped("GET", "/pulls/1"), True),
    (dropped("GET", "/pulls/1", httpx.ReadTimeout), True),
    (dropped("POST", "/issues/1/comments", httpx.ReadTimeout), False),
])
def test_which_failed_calls_are_retried_in_place(exc: Exception, retried: bool) -> None:
    decide = RetryTransient(retries=3, first_delay=0.1)
    option = decide(exc, 0)
    assert option.do_retry is retried
    if retried:
        assert [decide(exc, n).retry_after.total_seconds() for n in (1, 2)] == [0.2, 0.4]
        assert not decide(exc, 3).do_retry


def test_repeatable_calls() -> None:
    assert repeatable("GET", "/x") and repeatable("DELETE", "/x") and not repeatable("POST", "/repos/o/r/pulls")
