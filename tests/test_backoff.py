"""Backing off from GitHub (app/github/backoff.py): which failed calls are retried in place, how long
an answer asks us to wait, and the gate that holds every call back until a rate limit resets."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from githubkit.exception import RequestError, RequestFailed, RequestTimeout

from app.fake_github import FakeGitHub
from app.github.backoff import RateLimitGate, RetryTransient, repeatable, wait_seconds, writes
from app.github.client import GitHubError, as_github_error, token_client, write_wave

from .conftest import OWN_WORLDS

URL = "https://api.github.com/repos/o/r"


SECONDARY = json.dumps({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before "
                                  "you try again.", "documentation_url": "https://docs.github.com/rest"})


QUERY = {"query": "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", "variables": {"ids": ["IC_1"]}}
MUTATION = {"query": "mutation { addReaction(input: {subjectId: \"IC_1\", content: EYES}) { clientMutationId } }"}


def failed(method: str, path: str, status: int, headers: dict[str, str] | None = None,
           body: str = "", sent: object = None) -> RequestFailed:
    request = httpx.Request(method, URL + path, json=sent)
    response = httpx.Response(status, headers=headers or {}, text=body, request=request)

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
    (failed("POST", "/graphql", 502, sent=QUERY), True),  # a query only reads
    (failed("POST", "/graphql", 502, sent=MUTATION), False),
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
    def call(method: str, path: str, sent: object = None) -> httpx.Request:
        return httpx.Request(method, "https://api.github.com" + path, json=sent)

    assert repeatable(call("GET", "/x")) and repeatable(call("DELETE", "/x"))
    assert not repeatable(call("POST", "/repos/o/r/pulls"))
    assert repeatable(call("POST", "/graphql", QUERY)) and not writes(call("POST", "/graphql", QUERY))
    for sent in (MUTATION, {"query": "subscription { x }"}, {"query": 7}, None, ["query"]):
        assert not repeatable(call("POST", "/graphql", sent)) and writes(call("POST", "/graphql", sent))
    garbled = httpx.Request("POST", "https://api.github.com/graphql", content=b"{not json")
    assert not repeatable(garbled) and writes(garbled)


def test_how_long_an_answer_asks_us_to_wait() -> None:
    reset = str(int(time.time()) + 30)
    assert 28 <= wait_seconds(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}) <= 30
    assert wait_seconds(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}) == 1.0  # already past
    assert wait_seconds(429, {"retry-after": "7"}) == 7.0
    assert wait_seconds(403, {"retry-after": "soon"}) == 60.0
    assert wait_seconds(429, {}) == 60.0
    assert wait_seconds(403, {"x-ratelimit-remaining": "12"}) is None  # forbidden, not rate limited
    assert wait_seconds(502, {}) is None
    error = as_github_error(failed("GET", "/pulls/1", 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}),
                            "pull #1")
    assert error.rate_limited and error.transient and 28 <= error.retry_after <= 30
    assert not as_github_error(failed("GET", "/pulls/1", 403), "pull #1").transient


def test_a_403_that_says_secondary_rate_limit_waits_a_minute_though_it_says_nothing_else() -> None:
    """GitHub documents it: no retry-after, the primary limit not exhausted, only the message tells."""
    assert wait_seconds(403, {"x-ratelimit-remaining": "4000"}, SECONDARY) == 60.0
    assert wait_seconds(403, {}, '{"message": "Resource not accessible by integration"}') is None
    error = as_github_error(failed("POST", "/issues/1/comments", 403, {"x-ratelimit-remaining": "4000"}, SECONDARY),
                            "reply")
    assert error.rate_limited and error.transient and error.retry_after == 60.0


def answer(status: int, headers: dict[str, str] | None = None, body: str = "") -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, text=body, request=httpx.Request("GET", URL))


def test_secondary_limits_without_retry_after_back_off_until_a_call_succeeds() -> None:
    gate = RateLimitGate(GitHubError)

    async def waits() -> list[float]:
        seen = []
        for response in (answer(403, {}, SECONDARY), answer(429), answer(403, {}, SECONDARY), answer(200),
                         answer(403, {}, SECONDARY), answer(429, {"retry-after": "5"})):
            gate.until = 0.0  # as if each wait had passed
            await gate.observe(response)
            seen.append(round(gate.until - time.time()) if gate.until else 0)
        return seen

    # 60, 120, 240 s; a success ends the streak; a retry-after is taken as given
    assert asyncio.run(waits()) == [60, 120, 240, 0, 60, 5]


def test_writes_of_one_client_go_out_one_after_another() -> None:
    """Reads in parallel, content-creating requests outside a publish's wave serialized (GitHub's secondary
    limits punish concurrent writes): in the fake's call log, no two of the client's POSTs overlap in time;
    its GETs do."""
    with FakeGitHub(OWN_WORLDS / "mini") as fake:
        gh = token_client("user:alice", fake.url)
        fake.state.latency_ms = 150

        async def burst() -> None:
            async with gh:
                await asyncio.gather(*(gh.rest.issues.async_create_comment("acme", "bench", 7, body=f"note {n}")
                                       for n in range(3)),
                                     *(gh.rest.pulls.async_get("acme", "bench", 7) for _ in range(3)))

        asyncio.run(burst())
        log = list(fake.state.ledger.calls)

    def spans(method: str) -> list[tuple[float, float]]:
        return sorted((c.started, c.finished) for c in log if c.method == method)

    posts, gets = spans("POST"), spans("GET")
    assert len(posts) == 3 and all(b[0] >= a[1] for a, b in zip(posts, posts[1:]))
    assert len(gets) == 3 and gets[1][0] < gets[0][1]  # the reads did not wait for each other


def test_one_verification_writes_in_one_wave_and_two_never_interleave() -> None:
    """A publish holds the installation's write lock for its wave (app/github/backoff.py): the writes of one wave go
    out together; a second wave, and a lone write, wait until the first wave's last write is answered."""
    with FakeGitHub(OWN_WORLDS / "mini") as fake:
        gh = token_client("user:alice", fake.url)
        fake.state.latency_ms = 150

        def comment(job: str):
            return gh.rest.issues.async_create_comment("acme", "bench", 7, body=job, headers={"X-Signoff-Bot-Job": job})

        async def wave(job: str) -> None:
            async with write_wave(gh):
                await asyncio.gather(*(comment(job) for _ in range(3)))

        async def both() -> None:
            async with gh:
                await asyncio.gather(wave("a"), wave("b"), comment("lone"))

        asyncio.run(both())
        log = [c for c in fake.state.ledger.calls if c.method == "POST"]  # logged before it was answered

    spans = {job: sorted((c.started, c.finished) for c in log if c.job == job) for job in ("a", "b", "lone")}
    assert [len(spans[j]) for j in ("a", "b", "lone")] == [3, 3, 1]
    for job in ("a", "b"):  # within a wave, at once
        assert spans[job][-1][0] < spans[job][0][1]
    blocks = sorted((s[0][0], max(e for _s, e in s)) for s in spans.values())
    assert all(later[0] >= earlier[1] for earlier, later in zip(blocks, blocks[1:]))  # never interleaved


def test_the_gate_sends_nothing_until_the_reset() -> None:
    with FakeGitHub(OWN_WORLDS / "mini") as fake:
        gh = token_client("user:alice", fake.url)
        fake.fault(route="GET /repos/acme/bench", status=429, retry_after=1)

        async def calls() -> tuple[BaseException, BaseException, int, str]:
            with pytest.raises(GitHubError) as limited:
                try:
                    await gh.rest.repos.async_get("acme", "bench")
                except Exception as exc:  # noqa: BLE001 - githubkit's own exception, described as ours
                    raise as_github_error(exc, "repo") from None
            sent = fake.state.ledger.requests  # counted before each answer goes out
            with pytest.raises(GitHubError) as held:
                await gh.rest.pulls.async_get("acme", "bench", 7)
            assert fake.state.ledger.requests == sent  # held back: never sent
            await asyncio.sleep(max(0.0, gh.config.throttler.until - time.time()))
            title = (await gh.rest.pulls.async_get("acme", "bench", 7)).parsed_data.title
            return limited.value, held.value, sent, title

        limited, held, sent, title = asyncio.run(calls())
        assert limited.rate_limited and held.rate_limited and held.status == 429 and 0 < held.retry_after <= 1
        assert "rate limited" in str(held) and title and fake.state.ledger.requests == sent + 1
