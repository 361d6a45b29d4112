"""What every route needs: the request's context (state, site, actor), GitHub's error
shapes, JSON bodies, permission checks and paginated list responses."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Sequence

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from ..auth import Actor, AuthError, refused, resolve
from ..paging import paginate
from ..payloads import Site
from ..state import GitHubState, RepoState
from ..webhooks import Event, deliver_all

DOCS = "https://docs.github.com/rest"
MAX_BODY = 65536
APP_ROUTE = re.compile(r"^/app(/.*)?$|^/repos/[^/]+/[^/]+/installation$")


class GitHubError(Exception):
    """An error answered the way GitHub answers it: {"message", "documentation_url"[, "errors"]}."""

    def __init__(self, status: int, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {"message": self.message, "documentation_url": DOCS, "status": str(self.status)}
        if self.errors is not None:
            body["errors"] = self.errors
        return JSONResponse(body, status_code=self.status)


def not_found() -> GitHubError:
    return GitHubError(404, "Not Found")


def invalid(field: str, message: str, resource: str = "") -> GitHubError:
    return GitHubError(422, "Validation Failed",
                       [{"resource": resource, "code": "invalid", "field": field, "message": message}])


@dataclass(frozen=True)
class Ctx:
    request: Request
    state: GitHubState
    site: Site
    actor: Actor


async def context(request: Request) -> Ctx:
    """The request's context; a JWT is accepted only on the app routes, as GitHub does. A coroutine, though
    it awaits nothing: FastAPI would run a plain function in its thread pool, a thread handoff per request."""
    state: GitHubState = request.app.state.github
    try:
        actor = resolve(state, request.headers.get("authorization"))
    except AuthError as exc:
        raise GitHubError(exc.status, exc.message) from exc
    app_route = bool(APP_ROUTE.match(request.url.path))
    if actor.kind == "app" and not app_route:
        raise GitHubError(401, "A JSON web token can only be used on app endpoints; use an installation token")
    if app_route and actor.kind != "app":
        raise GitHubError(401, "A JSON web token could not be decoded")
    refusal = refused(actor, request.method, request.url.path)
    if refusal is not None:
        raise GitHubError(refusal.status, refusal.message)
    return Ctx(request, state, Site(state, str(request.base_url).rstrip("/")), actor)


C = Annotated[Ctx, Depends(context)]


def repo_of(ctx: Ctx, owner: str, name: str) -> RepoState:
    repo = ctx.state.repo(owner, name)
    if repo is None:
        raise not_found()
    return repo


def pull_of(repo: RepoState, number: int) -> dict[str, Any]:
    pr = repo.pulls.get(number)
    if pr is None:
        raise not_found()
    return pr


def require_write(ctx: Ctx, repo: RepoState, *, app_only: bool = False, push: bool = False) -> None:
    """Refuse a write GitHub would refuse: anonymous, an installation of another repository,
    a user where only apps may write (`app_only`), a user without push access (`push`)."""
    actor = ctx.actor
    if actor.kind == "anonymous":
        raise GitHubError(401, "Requires authentication")
    if actor.kind == "workflow":  # its permissions were checked with the request (auth.refused)
        return
    if actor.kind == "installation":
        if actor.installation_id != repo.installation_id:
            raise GitHubError(403, "Resource not accessible by integration")
        return
    if app_only:
        raise GitHubError(403, "You must authenticate via a GitHub App.")
    if push and ctx.state.permission(repo, actor.login or "") not in ("write", "maintain", "admin"):
        raise GitHubError(403, "Must have push access to repository")


def may_edit(ctx: Ctx, repo: RepoState, author: str) -> None:
    """Authors edit their own comments; the app and users with write access edit any."""
    require_write(ctx, repo)
    if ctx.actor.kind == "user" and (ctx.actor.login or "").lower() != author.lower():
        if ctx.state.permission(repo, ctx.actor.login or "") not in ("write", "maintain", "admin"):
            raise GitHubError(403, "You do not have permission to edit this comment")


def actor_association(ctx: Ctx, repo: RepoState) -> str:
    return "NONE" if ctx.actor.is_app else ctx.state.association(repo, ctx.actor.login or "")


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise GitHubError(400, "Problems parsing JSON") from exc
    if not isinstance(data, dict):
        raise GitHubError(400, "Problems parsing JSON")
    return data


def text_field(data: dict[str, Any], field: str, *, required: bool = True, limit: int = MAX_BODY) -> str | None:
    value = data.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise invalid(field, f"{field} is missing or not a string")
    if len(value) > limit:
        raise invalid(field, f"{field} is too long (maximum is {limit} characters)")
    return value


def respond(data: Any, status: int = 200, headers: dict[str, str] | None = None,
            background: BackgroundTask | None = None) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=headers, background=background)


def created(data: dict[str, Any], state: GitHubState, events: list[Event] | None = None,
            status: int = 201) -> JSONResponse:
    """A write's response; a user's write also delivers its webhooks after the response, as GitHub does."""
    task = BackgroundTask(deliver_all, state, events) if events else None
    headers = {"Location": data["url"]} if status == 201 and "url" in data else None
    return respond(data, status, headers, task)


def listing(ctx: Ctx, items: Sequence[Any], render: Callable[[Any], Any], key: str | None = None) -> JSONResponse:
    """A paginated list, or `{"total_count", key: [...]}` for the APIs that wrap their lists."""
    page = paginate(ctx.request, items)
    rendered = [render(i) for i in page.items]
    data: Any = {"total_count": page.total, key: rendered} if key else rendered
    return respond(data, headers=page.headers)
