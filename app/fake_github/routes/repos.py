"""Repository and git data routes: repository, branches, refs, commits, contents, trees, blobs, statuses."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from app.files import SYMLINK_MODE

from ..git_payloads import (
    blob,
    branch,
    combined_status,
    commit,
    content_item,
    git_commit,
    git_ref,
    git_tree,
    short_branch,
    status,
    symlink_item,
)
from ..payloads import repository
from ..state import RepoState
from .common import C, GitHubError, invalid, json_body, listing, not_found, repo_of, require_write, respond, text_field

router = APIRouter()
RAW_TYPES = ("application/vnd.github.raw", "application/vnd.github.v3.raw")
STATES = ("error", "failure", "pending", "success")


def _commit_at(repo: RepoState, ref: str):
    c = repo.commit(ref)
    if c is None:
        raise GitHubError(404, f"No commit found for SHA: {ref}")
    return c


def _index_all(repo: RepoState) -> None:
    """Hash every commit, so any tree or blob SHA of the world can be looked up."""
    for c in repo.commits.values():
        repo.git.root(c)


@router.get("/repos/{owner}/{repo}")
async def get_repo(ctx: C, owner: str, repo: str):
    return respond(repository(ctx.site, repo_of(ctx, owner, repo)))


@router.get("/repos/{owner}/{repo}/branches")
async def list_branches(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    return listing(ctx, sorted(r.branches.items()), lambda b: short_branch(ctx.site, r, b[0], b[1]))


@router.get("/repos/{owner}/{repo}/branches/{name:path}")
async def get_branch(ctx: C, owner: str, repo: str, name: str):
    r = repo_of(ctx, owner, repo)
    if name not in r.branches:
        raise GitHubError(404, "Branch not found")
    return respond(branch(ctx.site, r, name, _commit_at(r, r.branches[name])))


@router.get("/repos/{owner}/{repo}/git/ref/{ref:path}")
@router.get("/repos/{owner}/{repo}/git/refs/{ref:path}")
async def get_ref(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    name = ref.removeprefix("heads/") if ref.startswith("heads/") else None
    if name is None or name not in r.branches:
        raise not_found()
    return respond(git_ref(ctx.site, r, name, r.branches[name]))


@router.get("/repos/{owner}/{repo}/git/matching-refs/{ref:path}")
async def matching_refs(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    refs = sorted((b, sha) for b, sha in r.branches.items() if f"heads/{b}".startswith(ref))
    return listing(ctx, refs, lambda b: git_ref(ctx.site, r, b[0], b[1]))


@router.get("/repos/{owner}/{repo}/git/commits/{sha}")
async def get_git_commit(ctx: C, owner: str, repo: str, sha: str):
    r = repo_of(ctx, owner, repo)
    if sha not in r.commits:
        raise not_found()
    return respond(git_commit(ctx.site, r, r.commits[sha]))


@router.get("/repos/{owner}/{repo}/commits/{ref:path}/statuses")
async def list_statuses(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    sha = _commit_at(r, ref).sha
    newest_first = [s for s in reversed(r.statuses) if s["sha"] == sha]
    return listing(ctx, newest_first, lambda s: status(ctx.site, r, s))


@router.get("/repos/{owner}/{repo}/commits/{ref:path}/status")
async def combined(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    sha = _commit_at(r, ref).sha
    return respond(combined_status(ctx.site, r, sha, [s for s in r.statuses if s["sha"] == sha]))


@router.post("/repos/{owner}/{repo}/statuses/{sha}")
async def create_status(ctx: C, owner: str, repo: str, sha: str):
    r = repo_of(ctx, owner, repo)
    require_write(ctx, r, push=True)
    data = await json_body(ctx.request)
    if sha not in r.commits:
        raise invalid("sha", f"No commit found for SHA: {sha}", "Status")
    if data.get("state") not in STATES:
        raise invalid("state", f"state must be one of {', '.join(STATES)}", "Status")
    now = ctx.state.clock.tick()
    s = {"id": ctx.state.next_id(), "sha": sha, "state": data["state"], "creator": ctx.actor.login,
         "description": text_field(data, "description", required=False),
         "target_url": text_field(data, "target_url", required=False),
         "context": text_field(data, "context", required=False) or "default", "created_at": now, "updated_at": now}
    r.statuses.append(s)
    return respond(status(ctx.site, r, s), 201)


@router.get("/repos/{owner}/{repo}/commits/{ref:path}")
async def get_commit(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    return respond(commit(ctx.site, r, _commit_at(r, ref), with_files=True))


@router.get("/repos/{owner}/{repo}/contents")
@router.get("/repos/{owner}/{repo}/contents/{path:path}")
async def get_contents(ctx: C, owner: str, repo: str, path: str = ""):
    r = repo_of(ctx, owner, repo)
    ref = ctx.request.query_params.get("ref") or r.default_branch
    c = _commit_at(r, ref)
    path = path.strip("/")
    entry = r.git.lookup(c, path)
    if entry is None:
        raise not_found()
    if entry.type == "tree":
        prefix = f"{path}/" if path else ""
        return respond([content_item(ctx.site, r, ref, prefix + e.name, e) for e in r.git.trees[entry.sha]])
    data = r.git.blobs[entry.sha]
    if any(t in ctx.request.headers.get("accept", "") for t in RAW_TYPES):
        return Response(data, media_type="application/vnd.github.raw")
    if entry.mode == SYMLINK_MODE:
        return respond(symlink_item(ctx.site, r, ref, path, entry, data))
    return respond(content_item(ctx.site, r, ref, path, entry, data))


@router.get("/repos/{owner}/{repo}/git/trees/{sha:path}")
async def get_tree(ctx: C, owner: str, repo: str, sha: str):
    r = repo_of(ctx, owner, repo)
    c = r.commit(sha)
    tree = r.git.root(c) if c is not None else sha
    if tree not in r.git.trees:
        _index_all(r)
    if tree not in r.git.trees:
        raise not_found()
    if "recursive" in ctx.request.query_params:
        entries = r.git.walk(tree)
    else:
        entries = [(e.name, e) for e in r.git.trees[tree]]
    return respond(git_tree(ctx.site, r, tree, entries))


@router.get("/repos/{owner}/{repo}/git/blobs/{sha}")
async def get_blob(ctx: C, owner: str, repo: str, sha: str):
    r = repo_of(ctx, owner, repo)
    if sha not in r.git.blobs:
        _index_all(r)
    if sha not in r.git.blobs:
        raise not_found()
    return respond(blob(ctx.site, r, sha, r.git.blobs[sha]))
