"""The GitHub App's web server: webhook ingest, health, metrics; workers run beside it.

`POST /webhook` answers in milliseconds: it checks the size and the
signature, parses the event, records the delivery and its jobs durably, and
answers 202. Bad input gets a 4xx with a reason, never a 500; a validly signed
JSON object is never a 4xx: one that lacks what the bot needs is answered 202,
logged with its delivery id and the field, and counted as `unusable`. A
delivery seen before (same GUID for the same hook) is acknowledged and not
processed again. Bodies not yet authenticated are bounded in bytes held at
once and in time (app/bodies.py). A delivery the database refuses is answered
503 (GitHub does not retry it) and kept in memory (`Refused`) until the
reconcile pass records it. `/readyz` is 200 only while the database takes a
write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import replace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from .bodies import BodyBudget, Busy, Slow, TooLarge
from .jobs import Clients, JobRunner
from .observability import Metrics
from .publish import CHECK_NAME
from .settings import Settings
from .store import Store
from .stores import open_store
from .webhooks import HANDLED, Unusable, route, signature_ok
from .worker import Reconciler, Refused, Worker

log = logging.getLogger("signoff_bot.server")
READY_SECONDS = 5.0  # how long the readiness write may take


def _reply(status: int, **body) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def create_app(settings: Settings, store: Store | None = None, run_workers: bool = True) -> FastAPI:
    """The App; its store is `store`, or the one SIGNOFF_BOT_DB names (opened now, closed at shutdown)."""
    owned = store is None
    store = store or open_store(settings.db_path)
    metrics = Metrics()
    clients = Clients(settings, metrics)
    runner = JobRunner(settings, store, clients, metrics)
    budget = BodyBudget(settings.max_unverified_bytes)
    refused = Refused()
    stop = asyncio.Event()
    tasks: list[asyncio.Task] = []

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        if run_workers:
            for _ in range(settings.workers):
                tasks.append(asyncio.create_task(Worker(settings, store, runner, metrics).run_forever(stop)))
            tasks.append(asyncio.create_task(Reconciler(settings, store, clients, refused).run_forever(stop)))
        yield
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if owned:
            await asyncio.to_thread(store.close)

    app = FastAPI(title="signoff-bot", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.store = store
    app.state.metrics = metrics

    async def webhook(request: Request) -> Response:
        event = request.headers.get("x-github-event", "")
        # Until the signature is verified the event name is anyone's: one label per handled event, so
        # unauthenticated requests cannot grow the metrics without bound.
        unverified = event if event in HANDLED else "other"
        try:
            async with budget.body(request, settings.max_body_bytes, settings.body_seconds) as body:
                return await delivery(request, event, unverified, body)
        except TooLarge:
            metrics.deliveries.labels(unverified, "too_large").inc()
            return _reply(413, error=f"body over {settings.max_body_bytes} bytes")
        except Busy:
            metrics.deliveries.labels(unverified, "busy").inc()
            return JSONResponse({"error": "too many unauthenticated bytes in flight; retry"}, status_code=503,
                                headers={"Retry-After": "1"})
        except Slow:
            metrics.deliveries.labels(unverified, "slow").inc()
            return _reply(408, error=f"body not received within {settings.body_seconds:g} s")

    async def delivery(request: Request, event: str, unverified: str, raw: bytearray) -> Response:
        if not signature_ok(settings.webhook_secret, raw, request.headers.get("x-hub-signature-256")):
            metrics.deliveries.labels(unverified, "bad_signature").inc()
            return _reply(401, error="missing or invalid X-Hub-Signature-256")
        guid = request.headers.get("x-github-delivery", "")
        if not event or not guid:
            metrics.deliveries.labels(event or "unknown", "bad_headers").inc()
            return _reply(400, error="X-GitHub-Event and X-GitHub-Delivery are required")
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: arrays or objects nested too deeply
            metrics.deliveries.labels(event, "bad_json").inc()
            return _reply(400, error="body is not JSON")
        if not isinstance(payload, dict):
            metrics.deliveries.labels(event, "bad_json").inc()
            return _reply(400, error="body is not a JSON object")
        try:
            routed = route(event, payload, settings.bot_login, CHECK_NAME)
        except Unusable as exc:  # signed by GitHub, so never a 4xx: GitHub would not send it again anyway
            metrics.deliveries.labels(event, "unusable").inc()
            log.warning("delivery lacks what the bot needs", extra={"delivery": guid, "event": event,
                                                                    "field": exc.field, "error": str(exc)})
            return _reply(202, delivery=guid, outcome="unusable", jobs=0, reason=str(exc))
        hook = request.headers.get("x-github-hook-id", "")
        target = request.headers.get("x-github-hook-installation-target-id", "")
        key = f"{hook}:{target}:{guid}"
        jobs = [replace(j, payload={**j.payload, "delivery": guid}) for j in routed.jobs]
        try:
            fresh = await asyncio.to_thread(store.record_delivery, key, event, routed.action, routed.repo,
                                            routed.pr, jobs)
        except Exception:  # noqa: BLE001 - the database is down: kept until the reconcile pass records it
            log.exception("could not record delivery", extra={"delivery": guid, "event": event})
            refused.add(key, event, routed.action, routed.repo, routed.pr, jobs)
            metrics.deliveries.labels(event, "refused").inc()
            return _reply(503, error="storage unavailable; retry")
        outcome = "duplicate" if not fresh else ("ignored" if routed.ignored else "queued")
        metrics.deliveries.labels(event, outcome).inc()
        log.info("delivery", extra={"delivery": guid, "event": event, "repo": routed.repo, "pr": routed.pr,
                                    "outcome": outcome})
        return _reply(202, delivery=guid, outcome=outcome, jobs=len(jobs) if fresh else 0,
                      **({"reason": routed.ignored} if routed.ignored else {}))

    # A plain Starlette route: FastAPI's dependency and response-model machinery would cost ~35 µs a
    # delivery (a tenth of its time) and gives a handler of the raw request nothing.
    app.add_route("/webhook", webhook, methods=["POST"])

    @app.get("/healthz")
    async def healthz() -> Response:
        return _reply(200, ok=True)

    @app.get("/readyz")
    async def readyz() -> Response:
        try:
            await asyncio.wait_for(asyncio.to_thread(store.ping), READY_SECONDS)
        except Exception:  # noqa: BLE001 - read-only, full, locked or gone: deliveries would be refused
            return _reply(503, ok=False, error="the database does not take writes")
        dead = [t for t in tasks if t.done()]
        if dead:
            return _reply(503, ok=False, error=f"{len(dead)} background task(s) stopped")
        return _reply(200, ok=True, queue_depth=await asyncio.to_thread(store.queue_depth))

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        metrics.queue_depth.set(await asyncio.to_thread(store.queue_depth))
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
