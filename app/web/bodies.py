"""Webhook bodies before they are authenticated: bounded in bytes held at once, and in time.

Until its signature is checked a body is anyone's, and the signature covers
the whole body, so it must be read first. One body may be as large as
GitHub's own payload cap (25 MB); many at once would be hundreds of megabytes.
`BodyBudget` caps the bytes of bodies being read or checked across all
requests: a request declaring a Content-Length reserves it before a byte is
read, a chunked one reserves as its chunks arrive, and a request the budget
cannot hold is answered at once (503, Retry-After), unread. A body must also
arrive within `timeout` seconds (GitHub gives up on a delivery after 10), so
a slow sender cannot hold the budget.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive


class TooLarge(Exception):
    """The body is over the size limit (413)."""


class Busy(Exception):
    """Other unauthenticated bodies hold the budget (503)."""


class Slow(Exception):
    """The body did not arrive in time (408)."""


WATCH_SECONDS = 0.1  # how often the reads in flight are checked against their deadlines


@dataclass
class BodyBudget:
    """Bytes of unauthenticated bodies held at once. The server's one event loop is its only user.

    The reads' deadlines are checked by one timer for all of them, every WATCH_SECONDS while any is in
    flight: a timer per read (`asyncio.timeout`) cost a delivery 14 us, and its cancelled handles piled up
    in the event loop's heap, which was rebuilt again and again."""

    limit: int
    used: int = 0
    _deadlines: dict[asyncio.Task, float] = field(default_factory=dict)
    _late: set[asyncio.Task] = field(default_factory=set)
    _watch: asyncio.TimerHandle | None = None

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def body(self, content_length: str | None, receive: Receive, max_bytes: int, timeout: float) -> Held:
        """`async with budget.body(...) as body:` the body of the request whose Content-Length header is
        `content_length` (None: chunked), read from the ASGI `receive`, held against the budget until the
        block ends. One that arrives whole in one message (as GitHub's deliveries have by the time the App is
        called) is that message's bytes, uncopied; a declared length is read into a buffer of that size: no
        growth, no copies."""
        return Held(self, content_length, receive, max_bytes, timeout)

    async def _read(self, held: Held) -> bytes | bytearray:
        """Read `held`'s body, adding what it reserves to `held.bytes` as it goes."""
        task = asyncio.current_task()
        assert task is not None
        content_length, receive, max_bytes = held.content_length, held.receive, held.max_bytes
        declared = int(content_length) if content_length is not None and content_length.isdigit() else None
        if declared is not None:
            if declared > max_bytes:
                raise TooLarge
            if not self.take(declared):
                raise Busy
            held.bytes = declared
        self._watch_over(task, held.timeout)
        try:
            message = await receive()
            chunk = _chunk(message)
            if not message.get("more_body", False) and (declared is None or len(chunk) <= declared):
                if declared is None:
                    if len(chunk) > max_bytes:
                        raise TooLarge
                    if not self.take(len(chunk)):
                        raise Busy
                    held.bytes = len(chunk)
                return chunk
            body = bytearray(declared) if declared is not None else bytearray()
            got = 0
            while True:
                end = got + len(chunk)
                if end > max_bytes or (declared is not None and end > declared):
                    raise TooLarge
                if declared is None:
                    if not self.take(len(chunk)):
                        raise Busy
                    held.bytes += len(chunk)
                    body += chunk
                else:
                    body[got:end] = chunk
                got = end
                if not message.get("more_body", False):
                    break
                message = await receive()
                chunk = _chunk(message)
            del body[got:]
            return body
        except asyncio.CancelledError:
            if task not in self._late:
                raise
            task.uncancel()
            raise Slow from None
        finally:
            self._deadlines.pop(task, None)
            self._late.discard(task)

    def _watch_over(self, task: asyncio.Task, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        self._deadlines[task] = loop.time() + timeout
        if self._watch is None:
            self._watch = loop.call_later(WATCH_SECONDS, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the reads past their deadline (they raise Slow); look again while any is in flight."""
        now = loop.time()
        for task, deadline in self._deadlines.items():
            if deadline <= now and task not in self._late:
                self._late.add(task)
                task.cancel()
        self._watch = loop.call_later(WATCH_SECONDS, self._sweep, loop) if self._deadlines else None


class Held:
    """One request's body read against a `BodyBudget` (`BodyBudget.body`): the bytes it reserved are given back
    when the block ends, or when reading fails. A class: `contextlib.asynccontextmanager`'s generator took
    1.8 us of every delivery to enter and leave, this 0.5 us."""

    __slots__ = ("budget", "content_length", "receive", "max_bytes", "timeout", "bytes")

    def __init__(self, budget: BodyBudget, content_length: str | None, receive: Receive, max_bytes: int,
                 timeout: float) -> None:
        self.budget, self.content_length, self.receive = budget, content_length, receive
        self.max_bytes, self.timeout, self.bytes = max_bytes, timeout, 0

    async def __aenter__(self) -> bytes | bytearray:
        try:
            return await self.budget._read(self)
        except BaseException:
            self.__release()
            raise

    async def __aexit__(self, *_exc: object) -> None:
        self.__release()

    def __release(self) -> None:
        self.budget.used -= self.bytes
        self.bytes = 0


def _chunk(message: Message) -> bytes:
    """A body message's bytes; a client that went away is ClientDisconnect, as Starlette's `stream` has it."""
    if message["type"] == "http.disconnect":
        raise ClientDisconnect
    return message.get("body", b"")
