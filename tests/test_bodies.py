"""Bodies before authentication (app/web/bodies.py) and deliveries the database refused (app/jobs/worker.Refused)."""

from __future__ import annotations

import asyncio

import pytest

from app.jobs.worker import Refused
from app.store.sql import JobSpec
from app.web.bodies import BodyBudget, Busy, Slow, TooLarge


class Request:
    """What BodyBudget reads of a request: its Content-Length and its ASGI body messages."""

    def __init__(self, chunks: list[bytes], length: int | None = None, pause: float = 0.0):
        self.length = str(length) if length is not None else None
        self._chunks, self._pause = list(chunks), pause

    async def receive(self) -> dict:
        await asyncio.sleep(self._pause)
        body = self._chunks.pop(0) if self._chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(self._chunks)}


def read(budget: BodyBudget, request: Request, max_bytes: int = 100, timeout: float = 5.0) -> bytes:
    async def go() -> bytes:
        async with budget.body(request.length, request.receive, max_bytes, timeout) as body:
            assert budget.used == max(len(body), int(request.length or 0))
            return bytes(body)
    return asyncio.run(go())


def test_a_body_is_read_and_its_bytes_released_after():
    budget = BodyBudget(100)
    assert read(budget, Request([b"ab", b"cd"], length=4)) == b"abcd"
    assert read(budget, Request([b"ab", b"cd"])) == b"abcd"  # chunked: reserved as it arrives
    assert budget.used == 0


def test_a_declared_length_the_budget_cannot_hold_is_refused_before_a_byte_is_read():
    budget = BodyBudget(100, used=60)
    never = Request([], length=50)
    never.receive = None  # reading it would fail
    with pytest.raises(Busy):
        read(budget, never)
    assert budget.used == 60


def test_a_chunked_body_that_outgrows_the_budget_is_refused_and_released():
    budget = BodyBudget(100, used=90)
    with pytest.raises(Busy):
        read(budget, Request([b"x" * 5, b"x" * 10]))
    assert budget.used == 90


@pytest.mark.parametrize("request_", [Request([], length=101), Request([b"x" * 60, b"x" * 60]),
                                      Request([b"x" * 60, b"x" * 60], length=60)],
                         ids=["declared", "chunked", "more-than-declared"])
def test_a_body_over_the_size_limit_is_too_large(request_):
    budget = BodyBudget(1000)
    with pytest.raises(TooLarge):
        read(budget, request_)
    assert budget.used == 0


def test_a_body_that_does_not_arrive_in_time_is_slow_and_releases_its_bytes():
    budget = BodyBudget(100)
    with pytest.raises(Slow):
        read(budget, Request([b"x"] * 10, length=10, pause=0.2), timeout=0.3)
    assert budget.used == 0


def test_a_whole_body_in_one_message_is_read_as_it_came():
    budget = BodyBudget(100)
    assert read(budget, Request([b"abcd"], length=4)) == b"abcd"
    assert read(budget, Request([b"abcd"])) == b"abcd"
    assert read(budget, Request([b"ab"], length=4)) == b"ab"  # shorter than declared: what came
    with pytest.raises(TooLarge):
        read(budget, Request([b"x" * 101]))
    with pytest.raises(TooLarge):
        read(budget, Request([b"x" * 5], length=4))
    assert budget.used == 0


def test_the_deadlines_are_watched_by_one_timer_and_a_read_in_time_is_not_cancelled():
    budget = BodyBudget(1000)

    async def go() -> list[bytes]:
        slow, fast = Request([b"x"] * 10, length=10, pause=0.05), Request([b"y"] * 3, length=3, pause=0.05)

        async def one(request: Request, timeout: float) -> bytes:
            async with budget.body(request.length, request.receive, 100, timeout) as body:
                return bytes(body)
        results = await asyncio.gather(one(slow, 0.25), one(fast, 5.0), return_exceptions=True)
        await asyncio.sleep(0.25)  # the watch stops once no read is in flight
        assert budget._watch is None
        return results
    slow, fast = asyncio.run(go())
    assert isinstance(slow, Slow) and fast == b"yyy" and budget.used == 0


def test_a_read_cancelled_from_outside_stays_cancelled():
    budget = BodyBudget(100)

    async def go() -> None:
        request = Request([b"x"] * 10, length=10, pause=0.1)

        async def one() -> None:
            async with budget.body(request.length, request.receive, 100, 5.0):
                pass
        task = asyncio.ensure_future(one())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(go())
    assert budget.used == 0


class FlakyStore:
    def __init__(self, fails: int):
        self.fails, self.recorded = fails, []

    def record_delivery(self, key, event, action, repo, pr, jobs) -> bool:
        if self.fails:
            self.fails -= 1
            raise OSError("database or disk is full")
        self.recorded.append(key)
        return True


def test_refused_deliveries_are_recorded_once_the_database_takes_them():
    refused = Refused(limit=2)
    for n in range(3):
        refused.add(f"k{n}", "issue_comment", "edited", "o/r", 7 + n, [JobSpec("comment", "o/r", 7 + n)])
    assert list(refused.deliveries) == ["k0", "k1"] and refused.prs == {("o/r", 7), ("o/r", 8), ("o/r", 9)}
    store = FlakyStore(fails=1)
    with pytest.raises(OSError):
        refused.record(store)
    assert list(refused.deliveries) == ["k0", "k1"]  # nothing lost while it still refuses
    assert refused.record(store) == 2 and store.recorded == ["k0", "k1"] and not refused.deliveries
