"""POST /webhook: a delivery checked, parsed, routed, durably recorded with its jobs, and answered.

It answers in milliseconds: it checks the size and the signature, parses the
event, records the delivery and its jobs durably (app/web/group_commit.py: the
commit is shared with the deliveries arriving meanwhile), and answers 202.
Bad input gets a 4xx with a reason, never a 500; a validly signed JSON object
is never a 4xx: one that lacks what the bot needs is answered 202, logged
with its delivery id and the field, and counted as `unusable`. A delivery
seen before (same GUID for the same hook) is acknowledged and not processed
again. Bodies not yet authenticated are bounded in bytes held at once and in
time (app/web/bodies.py). A delivery the database refuses is answered 503
(GitHub does not retry it) and kept in memory (`Refused`) until the
reconcile pass records it.

`Ingest` is a bare ASGI app: the server sends it POST /webhook ahead of
FastAPI's middleware and routing, which would cost a delivery more than all
it needs (app/web/server.py).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import msgspec
from starlette.types import Receive, Scope, Send

from app.jobs.worker import Refused
from app.observability import Metrics
from app.settings import CHECK_NAME, Settings
from app.store.sql import Delivery

from .bodies import BodyBudget, Busy, Slow, TooLarge
from .group_commit import GroupCommit
from .webhooks import HANDLED, Unusable, route, routed_fields, signature_ok

log = logging.getLogger("signoff_bot.server")
_JSON = msgspec.json.Decoder()


_ENCODE = msgspec.json.Encoder()


@dataclass(slots=True)
class Reply:
    """A JSON answer with a body (ingest sends no 1xx, 204 or 304), sent through ASGI as Starlette's
    JSONResponse sends it: the same messages and bytes (msgspec writes compact JSON as `json.dumps(
    ensure_ascii=False, separators=(",", ":"))` does; tests/test_webhook_endpoint.py) in 0.8 us, where
    building and rendering a JSONResponse took 4.8."""

    status: int
    body: dict[str, object]
    headers: tuple[tuple[bytes, bytes], ...] = ()

    async def __call__(self, send: Send) -> None:
        content = _ENCODE.encode(self.body)
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [*self.headers, (b"content-length", b"%d" % len(content)),
                                (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": content})


def _reply(status: int, **body: object) -> Reply:
    return Reply(status, body)


def parse(raw: bytearray) -> object:
    """The body's JSON, as `json.loads` reads it. msgspec reads what GitHub sends (strict UTF-8 JSON) in
    half the time or less, and gives the same values, integers of any size included
    (tests/test_webhook_parse.py). What it refuses and `json.loads` may take (UTF-16 or 32, a BOM, lone
    surrogates, NaN, numbers out of a float's range) goes to `json.loads`, as before."""
    try:
        return _JSON.decode(raw)
    except ValueError:  # msgspec.DecodeError is one
        return json.loads(raw)


HEADERS = frozenset((b"content-length", b"x-github-event", b"x-github-delivery", b"x-hub-signature-256",
                     b"x-github-hook-id", b"x-github-hook-installation-target-id"))


def _headers(scope: Scope) -> dict[bytes, str]:
    """The request headers ingest reads (ASGI names them in lower case), each its first value, as Starlette's
    `Headers.get` gives it; building Starlette's Request and Headers for them cost a delivery ~9 us."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in HEADERS and name not in found:
            found[name] = value.decode("latin-1")
    return found


def read(raw: bytes | bytearray) -> object:
    """What route needs of the body: the fields it reads (app/web/webhooks.py `routed_fields`); where msgspec
    refuses the body, all of it as `parse` reads it. A delivery is recorded by its headers and what route
    makes of it, so nothing else in it is decoded."""
    try:
        return routed_fields(raw)
    except ValueError:
        return parse(raw)


class Ingest:
    def __init__(self, settings: Settings, metrics: Metrics, commits: GroupCommit, refused: Refused) -> None:
        self.settings, self.metrics, self.commits, self.refused = settings, metrics, commits, refused
        self.budget = BodyBudget(settings.max_unverified_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reply = await self.webhook(_headers(scope), receive)
        await reply(send)

    async def webhook(self, headers: dict[bytes, str], receive: Receive) -> Reply:
        settings, metrics = self.settings, self.metrics
        event = headers.get(b"x-github-event", "")
        # Until the signature is verified the event name is anyone's: one label per handled event, so
        # unauthenticated requests cannot grow the metrics without bound.
        unverified = event if event in HANDLED else "other"
        try:
            async with self.budget.body(headers.get(b"content-length"), receive, settings.max_body_bytes,
                                        settings.body_seconds) as body:
                return await self.delivery(headers, event, unverified, body)
        except TooLarge:
            metrics.delivered(unverified, "too_large")
            return _reply(413, error=f"body over {settings.max_body_bytes} bytes")
        except Busy:
            metrics.delivered(unverified, "busy")
            return Reply(503, {"error": "too many unauthenticated bytes in flight; retry"}, ((b"retry-after", b"1"),))
        except Slow:
            metrics.delivered(unverified, "slow")
            return _reply(408, error=f"body not received within {settings.body_seconds:g} s")

    async def delivery(self, headers: dict[bytes, str], event: str, unverified: str,
                       raw: bytes | bytearray) -> Reply:
        settings, metrics = self.settings, self.metrics
        if not signature_ok(settings.webhook_secret, raw, headers.get(b"x-hub-signature-256")):
            metrics.delivered(unverified, "bad_signature")
            return _reply(401, error="missing or invalid X-Hub-Signature-256")
        guid = headers.get(b"x-github-delivery", "")
        if not event or not guid:
            metrics.delivered(event or "unknown", "bad_headers")
            return _reply(400, error="X-GitHub-Event and X-GitHub-Delivery are required")
        try:
            payload = read(raw)
        except (ValueError, RecursionError):  # RecursionError: arrays or objects nested too deeply
            metrics.delivered(event, "bad_json")
            return _reply(400, error="body is not JSON")
        if not isinstance(payload, dict):
            metrics.delivered(event, "bad_json")
            return _reply(400, error="body is not a JSON object")
        try:
            routed = route(event, payload, settings.bot_login, CHECK_NAME)
        except Unusable as exc:  # signed by GitHub, so never a 4xx: GitHub would not send it again anyway
            metrics.delivered(event, "unusable")
            log.warning("delivery lacks what the bot needs", extra={"delivery": guid, "event": event,
                                                                    "field": exc.field, "error": str(exc)})
            return _reply(202, delivery=guid, outcome="unusable", jobs=0, reason=str(exc))
        hook = headers.get(b"x-github-hook-id", "")
        target = headers.get(b"x-github-hook-installation-target-id", "")
        key = f"{hook}:{target}:{guid}"
        jobs = routed.jobs
        for job in jobs:  # made by route for this delivery alone: each names it
            job.payload["delivery"] = guid
        try:
            fresh = await self.commits.record(Delivery(key, event, routed.action, routed.repo, routed.pr, jobs))
        except Exception:  # noqa: BLE001 - the database is down: kept until the reconcile pass records it
            log.exception("could not record delivery", extra={"delivery": guid, "event": event})
            self.refused.add(key, event, routed.action, routed.repo, routed.pr, jobs)
            metrics.delivered(event, "refused")
            return _reply(503, error="storage unavailable; retry")
        outcome = "duplicate" if not fresh else ("ignored" if routed.ignored else "queued")
        metrics.delivered(event, outcome)
        log.info("delivery", extra={"delivery": guid, "event": event, "repo": routed.repo, "pr": routed.pr,
                                    "outcome": outcome})
        return _reply(202, delivery=guid, outcome=outcome, jobs=len(jobs) if fresh else 0,
                      **({"reason": routed.ignored} if routed.ignored else {}))
