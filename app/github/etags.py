"""Conditional requests: every GET goes out with the ETag of the last answer to it, and a 304
(which GitHub does not count against the rate limit) is answered from the stored copy.

A re-verification with nothing changed then costs almost no rate limit. This
replaces githubkit's HTTP cache (hishel), which does not deliver that: after
a resource changes it keeps both the old and the new answer, and the next
304 carrying GitHub's weak ETag (`W/"…"`) cannot be matched to either, so
hishel drops both and the request after that is a full, counted one. hishel
also goes through SQLite in a worker thread for every request and keeps
every answer of the process forever; this store is per client and bounded.

Only JSON answers are kept: artifact downloads are one-time URLs.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from .lru import SizedLru

MAX_BYTES = 32 * 1024 * 1024
_FRAMING = ("content-length", "content-encoding", "transfer-encoding")  # of the body as sent, not as kept


@dataclass(frozen=True)
class Stored:
    """The last 200 answer to a GET: its ETag, its headers but framing, and its decoded body."""

    etag: str
    headers: list[tuple[str, str]]
    body: bytes


class EtagStore(SizedLru[tuple[str, str], Stored]):
    """Stored answers by (URL, Accept), weighing their bodies."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes)

    def keep(self, key: tuple[str, str], stored: Stored) -> None:
        self.put(key, stored, len(stored.body))


class ConditionalTransport(httpx.AsyncBaseTransport):
    """Wraps a transport: adds If-None-Match to GETs it has an answer for, turns a 304 into that answer."""

    def __init__(self, inner: httpx.AsyncBaseTransport, store: EtagStore) -> None:
        self.inner = inner
        self.store = store

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET" or "if-none-match" in request.headers:
            return await self.inner.handle_async_request(request)
        key = (str(request.url), request.headers.get("accept", ""))
        stored = self.store.get(key)
        if stored is not None:
            request.headers["If-None-Match"] = stored.etag
        response = await self.inner.handle_async_request(request)
        if response.status_code == 304 and stored is not None:
            await response.aclose()
            return _from_store(stored, response)
        etag = response.headers.get("etag")
        if response.status_code != 200 or not etag or "json" not in response.headers.get("content-type", ""):
            if response.status_code != 304:
                self.store.discard(key)
            return response
        body = await response.aread()
        await response.aclose()
        stored = Stored(etag, [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING], body)
        self.store.keep(key, stored)
        return _from_store(stored, response)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _from_store(stored: Stored, fresh: httpx.Response) -> httpx.Response:
    """The stored answer, under the headers of `fresh` (a 304's rate limit and date) but its framing."""
    headers = httpx.Headers(stored.headers)
    for name, value in fresh.headers.multi_items():
        if name.lower() not in _FRAMING and name.lower() != "content-type":
            headers[name] = value
    return httpx.Response(200, headers=headers, content=stored.body, extensions=fresh.extensions)
