"""Account routes: the app and its installations and tokens, users, team membership,
collaborator permission, and the rate limit."""

from __future__ import annotations

from fastapi import APIRouter

from ..payloads import (
    collaborator_permission,
    installation,
    installation_token,
    integration,
    public_user,
    rate_limit,
    repository,
    team_membership,
)
from .common import C, Ctx, GitHubError, listing, not_found, repo_of, respond

router = APIRouter()


def _installation(ctx: Ctx, installation_id: int):
    repos = ctx.state.installations().get(installation_id)
    if repos is None:
        raise not_found()
    return repos


@router.get("/app")
async def get_app(ctx: C):
    return respond(integration(ctx.site, ctx.actor.app_id))


@router.get("/app/installations")
async def list_installations(ctx: C):
    items = sorted(ctx.state.installations().items())
    return listing(ctx, items, lambda i: installation(ctx.site, i[0], i[1]))


@router.get("/app/installations/{installation_id:int}")
async def get_installation(ctx: C, installation_id: int):
    return respond(installation(ctx.site, installation_id, _installation(ctx, installation_id)))


@router.post("/app/installations/{installation_id:int}/access_tokens")
async def create_token(ctx: C, installation_id: int):
    _installation(ctx, installation_id)
    token = ctx.state.issue_token(installation_id, ctx.actor.app_id or ctx.state.app_id)
    return respond(installation_token(ctx.site, token.token, token.expires_at), 201)


@router.get("/installation/repositories")
async def list_installation_repos(ctx: C):
    """The repositories the calling installation token can access."""
    if ctx.actor.kind != "installation":
        raise GitHubError(403, "You must authenticate with an installation access token to access this endpoint.")
    repos = sorted(ctx.state.installations().get(ctx.actor.installation_id or 0, []), key=lambda r: r.full_name)
    return listing(ctx, repos, lambda r: repository(ctx.site, r), key="repositories")


@router.get("/repos/{owner}/{repo}/installation")
async def get_repo_installation(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    if r.installation_id is None:
        raise not_found()
    return respond(installation(ctx.site, r.installation_id, ctx.state.installations()[r.installation_id]))


@router.get("/users/{username}")
async def get_user(ctx: C, username: str):
    return respond(public_user(ctx.site, username))


@router.get("/orgs/{org}/teams/{team_slug}/memberships/{username}")
async def get_membership(ctx: C, org: str, team_slug: str, username: str):
    members = ctx.state.team(org, team_slug)
    if members is None or username.lower() not in {m.lower() for m in members}:
        raise not_found()
    return respond(team_membership(ctx.site, org, team_slug, username))


@router.get("/repos/{owner}/{repo}/collaborators/{username}/permission")
async def get_permission(ctx: C, owner: str, repo: str, username: str):
    if ctx.actor.kind == "anonymous":
        raise GitHubError(401, "Requires authentication")
    return respond(collaborator_permission(ctx.site, repo_of(ctx, owner, repo), username))


@router.get("/rate_limit")
async def get_rate_limit(ctx: C):
    return respond(rate_limit(ctx.state.ledger.used(), ctx.state.rate_limit, ctx.state.rate_reset))
