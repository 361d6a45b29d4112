"""Bodies before authentication (app/bodies.py) and deliveries the database refused (app/worker.Refused)."""

from __future__ import annotations

import asyncio

import pytest

from app.bodies import BodyBudget, Busy, Slow, TooLarge
from app.store import JobSpec
from app.worker import Refused


class Request:
    """What BodyBudget reads of a request: its headers and its body stream."""

    def __init__(self, chunks: list[bytes], length: int | None = None, pause: float = 0.0):
        self.headers = {"content-length": str(length)} if length is not None else {}
        self._chunks, self._pause = chunks, pause

    async def stream(self):
        for chunk in self._chunks:
            await asyncio.sleep(self._pause)
            yield chunk


def read(budget: BodyBudget, request: Request, max_bytes: int = 100, timeout: float = 5.0) -> bytes:
    async def go() -> bytes:
        async with budget.body(request, max_bytes, timeout) as body:
            assert budget.used == max(len(body), int(request.headers.get("content-length", 0)))
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
    never.stream = None  # reading it would fail
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
