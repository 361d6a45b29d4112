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
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request


class TooLarge(Exception):
    """The body is over the size limit (413)."""


class Busy(Exception):
    """Other unauthenticated bodies hold the budget (503)."""


class Slow(Exception):
    """The body did not arrive in time (408)."""


@dataclass
class BodyBudget:
    """Bytes of unauthenticated bodies held at once. The server's one event loop is its only user."""

    limit: int
    used: int = 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    @contextlib.asynccontextmanager
    async def body(self, request: Request, max_bytes: int, timeout: float) -> AsyncIterator[bytearray]:
        """The request's body, held against the budget until the block ends."""
        held = 0
        try:
            length = request.headers.get("content-length", "")
            declared = int(length) if length.isdigit() else None
            if declared is not None:
                if declared > max_bytes:
                    raise TooLarge
                if not self.take(declared):
                    raise Busy
                held = declared
            # A declared length is read into a buffer of that size: no growth, no copies.
            body = bytearray(declared) if declared is not None else bytearray()
            got = 0
            try:
                async with asyncio.timeout(timeout):
                    async for chunk in request.stream():
                        end = got + len(chunk)
                        if end > max_bytes or (declared is not None and end > declared):
                            raise TooLarge
                        if declared is None:
                            if not self.take(len(chunk)):
                                raise Busy
                            held += len(chunk)
                            body += chunk
                        else:
                            body[got:end] = chunk
                        got = end
            except TimeoutError:
                raise Slow from None
            del body[got:]
            yield body
        finally:
            self.used -= held
