"""The HTTP layer GitHub puts around every API response, as an ASGI middleware:
injected latency and faults, ETag / If-None-Match (304), rate-limit headers,
request counting, the timed log of every call, and the log of successful writes.

A dropped connection is made by starting a response and never finishing it:
the server then closes the socket mid-body, which the client sees as the peer
disconnecting.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import AuthError, resolve
from .faults import Fault
from .state import GitHubState

WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")
QUERY_ROUTES = ("POST /graphql",)  # a POST that reads: the fake serves no GraphQL mutations
# Not counted against the REST API's rate limit: GraphQL has a limit of its own (points), not modelled here.
UNBILLED_ROUTES = ("GET /rate_limit", "GET /_fake/download/{token}", "POST /graphql")
DEFAULT_API_VERSION = "2022-11-28"


def is_admin(path: str) -> bool:
    return path.startswith("/_fake/") and not path.startswith("/_fake/download/")


def etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    wanted = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in wanted or etag.removeprefix("W/") in wanted


class Instrument:
    def __init__(self, app: ASGIApp, state: GitHubState, routes: list[BaseRoute]) -> None:
        self.app = app
        self.state = state
        self.routes = routes

    def _template(self, scope: Scope) -> str | None:
        """The route template a request matches (before routing: faults may match on it): the first route
        whose path pattern and methods match, as the router will pick it (its own matching costs several
        times more, on every request)."""
        method, path = scope["method"], scope["path"]
        for route in self.routes:
            if isinstance(route, Route) and route.methods and method in route.methods \
                    and route.path_regex.match(path):
                return route.path_format
        return None

    def _rate_headers(self, used: int, version: str | None) -> dict[str, str]:
        limit = self.state.rate_limit
        return {"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": str(max(limit - used, 0)),
                "x-ratelimit-reset": str(self.state.rate_reset), "x-ratelimit-used": str(used),
                "x-ratelimit-resource": "core", "x-github-request-id": uuid.uuid4().hex[:20].upper(),
                "x-github-api-version-selected": version or DEFAULT_API_VERSION}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_admin(scope["path"]):
            await self.app(scope, receive, send)
            return
        started = time.time()
        method, path = scope["method"], scope["path"]
        headers = Headers(scope=scope)
        actor = self._actor(headers)
        template = self._template(scope)
        route = f"{method} {template or path}"
        billable = route not in UNBILLED_ROUTES
        fault = self.state.faults.take(method, path, template, actor)
        delay = self.state.latency_ms + (fault.delay_ms if fault else 0)
        if delay:
            await asyncio.sleep(delay / 1000)
        logged = False

        def log(status: int) -> None:
            """Into the call log before the answer goes out: a client holding its answer finds the call there."""
            nonlocal logged
            logged = True
            self.state.ledger.call(method=method, path=path, route=route, status=status, actor=actor,
                                   started=started, finished=time.time(), job=headers.get("x-signoff-bot-job"))

        if fault and fault.drop:
            self.state.ledger.count(route, 0, billable=billable)
            log(0)
            await _drop(send)
        elif fault and fault.status:
            await self._fault(fault, route, billable, headers.get("x-github-api-version"), send, log)
        else:
            await self._serve(scope, receive, send, route, billable, log)
        if not logged:  # the route answered nothing
            log(0)

    def _actor(self, headers: Headers) -> str:
        """Who sends the request: a login, "app" for a JWT, "anonymous", or "invalid" credentials."""
        try:
            return resolve(self.state, headers.get("authorization")).label
        except AuthError:
            return "invalid"

    async def _fault(self, fault: Fault, route: str, billable: bool, version: str | None, send: Send,
                     log: Callable[[int], None]) -> None:
        status, headers, body = fault.response(self.state.rate_limit)
        used = self.state.ledger.count(route, status, billable=billable)
        raw = json.dumps(body).encode()
        out = {**self._rate_headers(used, version), **headers, "content-type": "application/json; charset=utf-8",
               "content-length": str(len(raw))}
        log(status)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in out.items()]})
        await send({"type": "http.response.body", "body": raw})

    async def _serve(self, scope: Scope, receive: Receive, send: Send, route: str, billable: bool,
                     log: Callable[[int], None]) -> None:
        """Serve the request; `log` gets the status just before the answer is sent."""
        method = scope["method"]
        request_headers = Headers(scope=scope)
        received = bytearray()
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def receive_logged() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                received.extend(message.get("body", b""))
            return message

        async def send_finished(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            status = start["status"]
            headers = MutableHeaders(raw=list(start.get("headers", [])))
            if method == "GET" and status == 200:
                etag = f'W/"{hashlib.sha256(body).hexdigest()[:40]}"'
                headers["etag"] = etag
                headers["cache-control"] = "private, max-age=60, s-maxage=60"
                headers["vary"] = "Accept, Authorization, Cookie, X-GitHub-OTP"
                if etag_matches(request_headers.get("if-none-match"), etag):
                    status, body = 304, b""
                    for key in ("content-type", "content-length"):
                        if key in headers:
                            del headers[key]
            used = self.state.ledger.count(route, status, billable=billable)
            for key, value in self._rate_headers(used, request_headers.get("x-github-api-version")).items():
                headers[key] = value
            # Logged before answered: a client that has its answer finds the write in the log (the App's
            # writes are sent one after another).
            if method in WRITE_METHODS and route not in QUERY_ROUTES and 200 <= status < 300:
                self._record(request_headers, method, scope["path"], route, status, bytes(received), body)
            log(status)
            await send({**start, "status": status, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive_logged, send_finished)

    def _record(self, headers: Headers, method: str, path: str, route: str, status: int, request: bytes,
                response: bytes) -> None:
        try:
            actor = resolve(self.state, headers.get("authorization"))
        except AuthError:
            return
        if actor.kind == "app":
            return  # app-level calls (tokens) change no repository state
        self.state.ledger.record(method=method, path=path, route=route, actor=actor.label, as_app=actor.is_app,
                                 status=status, request=_json(request), response=_json(response))


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode("utf-8", "replace")


async def _drop(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"4096")]})
    await send({"type": "http.response.body", "body": b'{"message": ', "more_body": True})
