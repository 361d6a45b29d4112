"""The GitHub App's web server: webhook ingest, health, metrics; workers run beside it.

`POST /webhook` is app/web/ingest.py, an ASGI route of the FastAPI app. `/readyz`
is 200 only while the database takes a write (on a connection opened for the
probe) and every configured worker runs. The
workers and the reconcile pass run on a thread and event loop of their own
(app/jobs/background.py), so that their CPU does not hold a webhook's answer.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from app.jobs.background import Background
from app.jobs.runner import Clients
from app.jobs.worker import Refused
from app.observability import Metrics
from app.settings import Settings
from app.store.choose import open_store
from app.store.sql import Store

from .group_commit import GroupCommit
from .ingest import Ingest

READY_SECONDS = 5.0  # how long the readiness write may take


def _reply(status: int, **body) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def create_app(settings: Settings, store: Store | None = None, run_workers: bool = True) -> FastAPI:
    """The App; its store is `store`, or the one SIGNOFF_BOT_DB names (opened now, closed at shutdown)."""
    owned = store is None
    store = store or open_store(settings.db_path)
    metrics = Metrics()
    commits = GroupCommit(store)
    refused = Refused()
    # A store handed in is an object of this process: its jobs run here too. The App's own store is opened
    # again by the jobs' process, where the workers run apart from the webhook's event loop.
    background = Background(settings, store, Clients(settings, metrics), metrics, refused,
                            apart=owned) if run_workers else None

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        if background is not None:
            background.start()
        yield
        if background is not None:
            await asyncio.to_thread(background.stop)
        await asyncio.to_thread(commits.close)
        if owned:
            await asyncio.to_thread(store.close)

    app = FastAPI(title="signoff-bot", lifespan=lifespan, docs_url=None, redoc_url=None)
    # An ASGI app, not an endpoint: ingest reads the body as it streams in (app/web/ingest.py says why).
    app.router.routes.append(Route("/webhook", Ingest(settings, metrics, commits, refused), methods=["POST"]))
    app.state.store = store
    app.state.metrics = metrics

    @app.get("/healthz")
    async def healthz() -> Response:
        return _reply(200, ok=True)

    @app.get("/readyz")
    async def readyz() -> Response:
        try:
            await asyncio.wait_for(asyncio.to_thread(store.ping), READY_SECONDS)
            depth = await asyncio.wait_for(asyncio.to_thread(store.queue_depth), READY_SECONDS)
        except Exception:  # noqa: BLE001 - read-only, full, locked or gone: deliveries would be refused
            return _reply(503, ok=False, error="the database does not take writes")
        dead = background.stopped() if background is not None else 0
        if dead:
            return _reply(503, ok=False, error=f"{dead} background task(s) stopped")
        running = background.workers_running() if background is not None else settings.workers
        if running < settings.workers:
            return _reply(503, ok=False, error=f"{running} of {settings.workers} workers running")
        return _reply(200, ok=True, queue_depth=depth)

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        try:  # while the database is down the other metrics still answer, the queue's depth as last read
            metrics.queue_depth.set(await asyncio.wait_for(asyncio.to_thread(store.queue_depth), READY_SECONDS))
        except Exception:  # noqa: BLE001
            pass
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
