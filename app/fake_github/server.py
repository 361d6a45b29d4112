"""The fake GitHub as a FastAPI app: routes, GitHub's error shapes, and the HTTP instrumentation."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from app.offline.world import World

from .instrument import Instrument
from .routes import accounts, actions, admin, checks, graphql, pulls, repos
from .routes.actions import DOWNLOAD_PATH
from .routes.common import DOCS, GitHubError
from .state import GitHubState, PlainToken

# The test-only admin routes (/_fake/…, no API path among them) last: every API request is matched against
# each route before its own, and FastAPI's matching costs a good part of serving one.
ROUTERS = [m.router for m in (accounts, actions, checks, graphql, pulls, repos, admin)]
ROUTES = [route for router in ROUTERS for route in router.routes]


class StorageHost:
    """ASGI middleware that makes the socket on `port` another host, the artifact storage: it serves only
    downloads (`/_fake/download/…`), which the API host does not serve, as GitHub redirects a download
    to blob storage on another host, where the API's Authorization header must not be sent."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            on_storage = (scope.get("server") or ("", 0))[1] == self.port
            if on_storage != scope["path"].startswith(DOWNLOAD_PATH):
                await GitHubError(404, "Not Found").response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(worlds: Sequence[World | str | Path], webhook_url: str | None = None,
               webhook_secret: str | None = None, *, latency_ms: int = 0, app_id: int | None = None,
               storage_url: str | None = None, tokens: Sequence[str] = ()) -> FastAPI:
    """The server for `worlds` (World objects or directories); its state is `app.state.github`.
    `storage_url` (http://127.0.0.1:PORT, a second socket of the same server) is the artifact storage
    host; without it downloads are served by the API host itself. `tokens`: workflow tokens it accepts beside
    the worlds' own (`TOKEN[:perm,perm]`, `PlainToken.parse`)."""
    state = GitHubState.from_worlds([w if isinstance(w, World) else World.load(w) for w in worlds])
    state.webhook.url, state.webhook.secret = webhook_url, webhook_secret
    state.storage_url = storage_url
    state.latency_ms = latency_ms
    state.plain_tokens.update((t.token, t) for t in map(PlainToken.parse, tokens))
    if app_id is not None:
        state.app_id = app_id
    app = FastAPI(title="fake GitHub", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.github = state
    for router in ROUTERS:
        app.include_router(router)

    @app.exception_handler(GitHubError)
    async def github_error(_request: Request, exc: GitHubError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        # GitHub answers an unknown route, or a known route with another method, with 404
        status = exc.status_code if exc.status_code not in (404, 405) else 404
        return GitHubError(status, "Not Found" if status == 404 else str(exc.detail)).response()

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        if any(err.get("loc", ("",))[0] == "path" for err in exc.errors()):
            return GitHubError(404, "Not Found").response()
        return JSONResponse({"message": "Validation Failed", "documentation_url": DOCS, "status": "422"},
                            status_code=422)

    app.add_middleware(Instrument, state=state, routes=ROUTES)
    if storage_url is not None:
        app.add_middleware(StorageHost, port=int(storage_url.rsplit(":", 1)[1]))
    return app
