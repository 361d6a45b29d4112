"""Pull request routes: pulls, files, commits, reviews, review comments, issue comments, reactions.

Writes made as a user (`user:<login>` tokens) deliver their webhooks to the
app: comment created/edited, review submitted/edited, review comment
created/edited. A user with write access may edit (or delete) another user's
comment or review summary, as on GitHub; the `edited` delivery then names the
editor as `sender`, while the comment's `user` stays its author, and the
comment's GraphQL edit history records who made each edit.
"""

from __future__ import annotations

from typing import Any, Callable

from fastapi import APIRouter
from fastapi.responses import Response

from ..git_payloads import commit, diff_entry
from ..graphql_objects import edit_body
from ..payloads import REACTIONS
from ..pull_payloads import hunk_at, issue, issue_comment, pull, reaction, review, review_comment
from ..state import RepoState
from ..webhooks import Event, comment_event, review_comment_event, review_event
from .common import (
    C,
    Ctx,
    GitHubError,
    actor_association,
    created,
    invalid,
    json_body,
    listing,
    may_edit,
    not_found,
    pull_of,
    repo_of,
    require_write,
    respond,
    text_field,
)

router = APIRouter()
MAX_FILES = 3000
MAX_COMMITS = 250
REVIEW_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


def _user_events(ctx: Ctx, build: Callable[[], list[Event]]) -> list[Event]:
    """GitHub delivers every write; the fake delivers a user's (the app's own would loop back)."""
    return build() if ctx.actor.kind == "user" else []


def _head_label(r: RepoState, pr: dict[str, Any]) -> str:
    """`owner:branch`, what the `head` filter of GET /pulls names."""
    return f"{pr['head'].get('repo', r.full_name).split('/')[0]}:{pr['head']['ref']}"


@router.get("/repos/{owner}/{repo}/pulls")
async def list_pulls(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    q = ctx.request.query_params
    state = q.get("state", "open")
    pulls = [p for p in r.pulls.values() if state == "all" or p.get("state", "open") == state]
    if "base" in q:
        pulls = [p for p in pulls if p["base"]["ref"] == q["base"]]
    if "head" in q:
        pulls = [p for p in pulls if _head_label(r, p) == q["head"]]
    pulls.sort(key=lambda p: p["number"], reverse=q.get("direction", "desc") == "desc")
    return listing(ctx, pulls, lambda p: pull(ctx.site, r, p, full=False))


@router.get("/repos/{owner}/{repo}/pulls/comments")
async def list_repo_review_comments(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    return listing(ctx, r.review_comments_on(None), lambda c: review_comment(ctx.site, r, c))


def _review_comment(r: RepoState, comment_id: int) -> dict[str, Any]:
    c = r.review_comments.get(comment_id)
    if c is None:
        raise not_found()
    return c


@router.get("/repos/{owner}/{repo}/pulls/comments/{comment_id:int}")
async def get_review_comment(ctx: C, owner: str, repo: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    return respond(review_comment(ctx.site, r, _review_comment(r, comment_id)))


@router.patch("/repos/{owner}/{repo}/pulls/comments/{comment_id:int}")
async def update_review_comment(ctx: C, owner: str, repo: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    c = _review_comment(r, comment_id)
    may_edit(ctx, r, c["user"])
    text = text_field(await json_body(ctx.request), "body")
    previous = edit_body(ctx.state, "PullRequestReviewComment", c, ctx.actor.login or "", text)
    events = _user_events(ctx, lambda: [review_comment_event(ctx.site, r, c, "edited", previous,
                                                             ctx.actor.login)])
    return created(review_comment(ctx.site, r, c), ctx.state, events, 200)


@router.get("/repos/{owner}/{repo}/pulls/{number:int}")
async def get_pull(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    return respond(pull(ctx.site, r, pull_of(r, number)))


@router.get("/repos/{owner}/{repo}/pulls/{number:int}/files")
async def list_files(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pr = pull_of(r, number)
    head = pr["head"]["sha"]
    files = r.diff(pr["base"]["sha"], head)[:MAX_FILES]
    return listing(ctx, files, lambda d: diff_entry(ctx.site, r, head, d))


@router.get("/repos/{owner}/{repo}/pulls/{number:int}/commits")
async def list_commits(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pr = pull_of(r, number)
    shas = [s for s in pr.get("commits") or [pr["head"]["sha"]] if s in r.commits][:MAX_COMMITS]
    return listing(ctx, shas, lambda s: commit(ctx.site, r, r.commits[s]))


@router.get("/repos/{owner}/{repo}/pulls/{number:int}/reviews")
async def list_reviews(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pull_of(r, number)
    return listing(ctx, r.reviews_on(number), lambda x: review(ctx.site, r, x))


@router.get("/repos/{owner}/{repo}/pulls/{number:int}/reviews/{review_id:int}")
async def get_review(ctx: C, owner: str, repo: str, number: int, review_id: int):
    r = repo_of(ctx, owner, repo)
    found = r.reviews.get(review_id)
    if found is None or found["number"] != number:
        raise not_found()
    return respond(review(ctx.site, r, found))


@router.put("/repos/{owner}/{repo}/pulls/{number:int}/reviews/{review_id:int}")
async def update_review(ctx: C, owner: str, repo: str, number: int, review_id: int):
    """Update a review's summary (its author, or anyone with write access)."""
    r = repo_of(ctx, owner, repo)
    found = r.reviews.get(review_id)
    if found is None or found["number"] != number:
        raise not_found()
    may_edit(ctx, r, found["user"])
    text = text_field(await json_body(ctx.request), "body")
    previous = edit_body(ctx.state, "PullRequestReview", found, ctx.actor.login or "", text)
    events = _user_events(ctx, lambda: [review_event(ctx.site, r, found, "edited", previous, ctx.actor.login)])
    return created(review(ctx.site, r, found), ctx.state, events, 200)


def _inline(ctx: Ctx, r: RepoState, pr: dict[str, Any], spec: Any, commit_id: str, review_id: int | None,
            now: str) -> dict[str, Any]:
    """A review comment from a request's {path, line, body}; the line must be part of the diff."""
    if not isinstance(spec, dict):
        raise invalid("comments", "each comment must be an object", "PullRequestReviewComment")
    parent = r.review_comments.get(spec["in_reply_to"]) if spec.get("in_reply_to") else None
    path = parent["path"] if parent else spec.get("path")
    line = parent.get("line") if parent else spec.get("line")
    patch = next((d.patch for d in r.diff(pr["base"]["sha"], commit_id) if d.path == path), None)
    if not isinstance(line, int) or hunk_at(patch, line)[1] is None:
        raise GitHubError(422, "Unprocessable Entity", [{"resource": "PullRequestReviewComment", "code": "custom",
                          "field": "pull_request_review_thread.line",
                          "message": "Pull request review thread line must be part of the diff"}])
    c = {"id": ctx.state.next_id(), "number": pr["number"], "review_id": review_id, "user": ctx.actor.login,
         "author_association": actor_association(ctx, r), "path": path, "line": line, "commit_id": commit_id,
         "body": text_field(spec, "body"), "created_at": now, "updated_at": now}
    if parent:
        c["in_reply_to_id"] = parent["id"]
    return c


def _commit_for_review(r: RepoState, pr: dict[str, Any], data: dict[str, Any]) -> str:
    commit_id = data.get("commit_id") or pr["head"]["sha"]
    if commit_id not in r.commits:
        raise invalid("commit_id", f"No commit found for SHA: {commit_id}", "PullRequestReview")
    return commit_id


@router.post("/repos/{owner}/{repo}/pulls/{number:int}/reviews")
async def create_review(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pr = pull_of(r, number)
    require_write(ctx, r)
    data = await json_body(ctx.request)
    event = data.get("event")
    if event is not None and event not in REVIEW_STATES:
        raise invalid("event", "event must be APPROVE, REQUEST_CHANGES or COMMENT", "PullRequestReview")
    body = text_field(data, "body", required=False) or ""
    specs = data.get("comments") or []
    if not isinstance(specs, list):
        raise invalid("comments", "comments must be a list", "PullRequestReview")
    if event == "REQUEST_CHANGES" and not body or event == "COMMENT" and not body and not specs:
        raise invalid("body", f"Body is required for {event}", "PullRequestReview")
    if event == "APPROVE" and (ctx.actor.login or "").lower() == str(pr.get("user", "")).lower():
        raise GitHubError(422, "Unprocessable Entity", [{"resource": "PullRequestReview", "code": "custom",
                                                          "message": "Can not approve your own pull request"}])
    commit_id = _commit_for_review(r, pr, data)
    now = ctx.state.clock.tick()
    rv = {"id": ctx.state.next_id(), "number": number, "user": ctx.actor.login, "body": body,
          "author_association": actor_association(ctx, r), "state": REVIEW_STATES.get(event, "PENDING"),
          "commit_id": commit_id, "submitted_at": now}
    comments = [_inline(ctx, r, pr, spec, commit_id, rv["id"], now) for spec in specs]
    r.reviews[rv["id"]] = rv
    for c in comments:
        r.review_comments[c["id"]] = c
    events = _user_events(ctx, lambda: [] if rv["state"] == "PENDING" else
                          [review_event(ctx.site, r, rv)] + [review_comment_event(ctx.site, r, c) for c in comments])
    return created(review(ctx.site, r, rv), ctx.state, events, 200)


@router.get("/repos/{owner}/{repo}/pulls/{number:int}/comments")
async def list_review_comments(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pull_of(r, number)
    return listing(ctx, r.review_comments_on(number), lambda c: review_comment(ctx.site, r, c))


@router.post("/repos/{owner}/{repo}/pulls/{number:int}/comments")
async def create_review_comment(ctx: C, owner: str, repo: str, number: int):
    """One inline comment; GitHub wraps it in a COMMENTED review of its own."""
    r = repo_of(ctx, owner, repo)
    pr = pull_of(r, number)
    require_write(ctx, r)
    data = await json_body(ctx.request)
    commit_id = _commit_for_review(r, pr, data)
    now = ctx.state.clock.tick()
    rv = {"id": ctx.state.next_id(), "number": number, "user": ctx.actor.login, "body": "",
          "author_association": actor_association(ctx, r), "state": "COMMENTED", "commit_id": commit_id,
          "submitted_at": now}
    c = _inline(ctx, r, pr, data, commit_id, rv["id"], now)
    r.reviews[rv["id"]] = rv
    r.review_comments[c["id"]] = c
    events = _user_events(ctx, lambda: [review_comment_event(ctx.site, r, c), review_event(ctx.site, r, rv)])
    return created(review_comment(ctx.site, r, c), ctx.state, events)


@router.get("/repos/{owner}/{repo}/issues/{number:int}")
async def get_issue(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    return respond(issue(ctx.site, r, pull_of(r, number)))


@router.get("/repos/{owner}/{repo}/issues/comments/{comment_id:int}")
async def get_comment(ctx: C, owner: str, repo: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    return respond(issue_comment(ctx.site, r, _issue_comment(r, comment_id)))


def _issue_comment(r: RepoState, comment_id: int) -> dict[str, Any]:
    c = r.issue_comments.get(comment_id)
    if c is None:
        raise not_found()
    return c


@router.patch("/repos/{owner}/{repo}/issues/comments/{comment_id:int}")
async def update_comment(ctx: C, owner: str, repo: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    c = _issue_comment(r, comment_id)
    may_edit(ctx, r, c["user"])
    text = text_field(await json_body(ctx.request), "body")
    previous = edit_body(ctx.state, "IssueComment", c, ctx.actor.login or "", text)
    events = _user_events(ctx, lambda: [comment_event(ctx.site, r, c, "edited", previous, ctx.actor.login)])
    return created(issue_comment(ctx.site, r, c), ctx.state, events, 200)


@router.delete("/repos/{owner}/{repo}/issues/comments/{comment_id:int}")
async def delete_comment(ctx: C, owner: str, repo: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    c = _issue_comment(r, comment_id)
    may_edit(ctx, r, c["user"])
    del r.issue_comments[comment_id]
    r.reactions.pop(("issue_comment", comment_id), None)
    return Response(status_code=204)


@router.get("/repos/{owner}/{repo}/issues/{number:int}/comments")
async def list_comments(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pull_of(r, number)
    since = ctx.request.query_params.get("since")
    comments = [c for c in r.comments_on(number)
                if not since or str(c.get("updated_at") or c.get("created_at")) >= since]
    return listing(ctx, comments, lambda c: issue_comment(ctx.site, r, c))


@router.post("/repos/{owner}/{repo}/issues/{number:int}/comments")
async def create_comment(ctx: C, owner: str, repo: str, number: int):
    r = repo_of(ctx, owner, repo)
    pull_of(r, number)
    require_write(ctx, r)
    text = text_field(await json_body(ctx.request), "body")
    now = ctx.state.clock.tick()
    c = {"id": ctx.state.next_id(), "number": number, "user": ctx.actor.login, "body": text,
         "author_association": actor_association(ctx, r), "created_at": now, "updated_at": now,
         "app_id": ctx.actor.app_id if ctx.actor.is_app else None}
    r.issue_comments[c["id"]] = c
    events = _user_events(ctx, lambda: [comment_event(ctx.site, r, c)])
    return created(issue_comment(ctx.site, r, c), ctx.state, events)


def _reaction_subject(r: RepoState, kind: str, comment_id: int) -> tuple[str, int]:
    table = r.issue_comments if kind == "issues" else r.review_comments
    if comment_id not in table:
        raise not_found()
    return ("issue_comment" if kind == "issues" else "review_comment", comment_id)


@router.get("/repos/{owner}/{repo}/{kind:str}/comments/{comment_id:int}/reactions")
async def list_reactions(ctx: C, owner: str, repo: str, kind: str, comment_id: int):
    r = repo_of(ctx, owner, repo)
    if kind not in ("issues", "pulls"):
        raise not_found()
    items = r.reactions.get(_reaction_subject(r, kind, comment_id), [])
    content = ctx.request.query_params.get("content")
    return listing(ctx, [x for x in items if not content or x["content"] == content], lambda x: reaction(ctx.site, x))


@router.post("/repos/{owner}/{repo}/{kind:str}/comments/{comment_id:int}/reactions")
async def create_reaction(ctx: C, owner: str, repo: str, kind: str, comment_id: int):
    """A new reaction answers 201; the same user's same reaction again answers 200 with the first."""
    r = repo_of(ctx, owner, repo)
    if kind not in ("issues", "pulls"):
        raise not_found()
    subject = _reaction_subject(r, kind, comment_id)
    require_write(ctx, r)
    content = (await json_body(ctx.request)).get("content")
    if content not in REACTIONS:
        raise invalid("content", f"content must be one of {', '.join(REACTIONS)}", "Reaction")
    items = r.reactions.setdefault(subject, [])
    existing = next((x for x in items if x["user"] == ctx.actor.login and x["content"] == content), None)
    if existing:
        return respond(reaction(ctx.site, existing))
    item = {"id": ctx.state.next_id(), "user": ctx.actor.login, "content": content,
            "created_at": ctx.state.clock.tick()}
    items.append(item)
    return respond(reaction(ctx.site, item), 201)
