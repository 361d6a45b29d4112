"""Webhook ingest: signature verification and turning events into jobs.

Only cheap, local decisions happen here, so a delivery is acknowledged in
milliseconds; anything that needs GitHub (the repository's policy file, the
PR's comments) happens in the job. The signature must be `sha256=` + 64 hex
digits: githubkit's `verify` silently falls back to SHA-1 when the prefix is
missing, which would let a downgraded signature through, so it is not used.
Nor is its `parse_obj`, which builds a pydantic TypeAdapter on every call
(~1.6 ms, most of a delivery's cost); the adapter of each event is built once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from githubkit_schemas.latest import webhooks as events
from pydantic import TypeAdapter

from .store import JobSpec

_SIGNATURE = re.compile(r"^sha256=[0-9a-f]{64}$")
_FULL_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_ID = 2**63 - 1  # GitHub's ids and numbers are 64-bit; the store keeps them as SQLite integers

HANDLED = {"issue_comment", "pull_request_review", "pull_request_review_comment", "pull_request",
           "check_run", "workflow_run"}
_EVENT_TYPES = {"issue_comment": events.IssueCommentEvent, "pull_request_review": events.PullRequestReviewEvent,
                "pull_request_review_comment": events.PullRequestReviewCommentEvent,
                "pull_request": events.PullRequestEvent, "check_run": events.CheckRunEvent,
                "workflow_run": events.WorkflowRunEvent}


class BadPayload(Exception):
    """A payload that is JSON but not the event GitHub documents (missing or mistyped fields)."""


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    if not header or not _SIGNATURE.match(header):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


@cache
def _adapter(event: str) -> TypeAdapter:
    """githubkit's model of a handled event, as `githubkit.webhooks.parse_obj` validates it."""
    return TypeAdapter(_EVENT_TYPES[event])


@dataclass(frozen=True)
class Routed:
    repo: str
    pr: int | None
    action: str
    jobs: list[JobSpec]
    ignored: str | None = None  # why nothing was queued


def _text(value: Any, what: str) -> str:
    """`value` as text the store can keep: JSON may carry lone surrogates, which UTF-8 cannot encode."""
    text = str(value or "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadPayload(f"{what} is not valid Unicode") from None
    return text


def _id(value: int | None, what: str) -> int | None:
    """A positive 64-bit id or number (pydantic accepts any size of int; SQLite does not)."""
    if value is not None and not 0 < value <= MAX_ID:
        raise BadPayload(f"{what} is out of range")
    return value


def route(event: str, payload: dict[str, Any], bot_login: str, check_name: str) -> Routed:
    """The jobs a delivery causes. Raises BadPayload when githubkit's model rejects the payload,
    or when a value the jobs and the store key on is not one GitHub sends."""
    action = _text(payload.get("action"), "action")
    repo_info = payload.get("repository") if isinstance(payload.get("repository"), dict) else {}
    repo = _text(repo_info.get("full_name"), "repository.full_name")
    if event not in HANDLED:
        return Routed(repo, None, action, [], f"event {event!r} is not handled")
    try:
        parsed = _adapter(event).validate_python(payload)
    except Exception as exc:  # noqa: BLE001 - pydantic ValidationError and friends
        raise BadPayload(f"{event} payload does not match GitHub's schema ({type(exc).__name__})") from None
    installation = _id(getattr(getattr(parsed, "installation", None), "id", None), "installation.id")
    repo = parsed.repository.full_name if getattr(parsed, "repository", None) else repo
    if not _FULL_NAME.match(repo):
        raise BadPayload(f"{event} payload names no repository (owner/name)")

    def job(kind: str, pr: int, key: str = "", **payload_fields) -> JobSpec:
        return JobSpec(kind, repo, pr, installation, dict(payload_fields, action=action, event=event), key)

    if event in ("issue_comment", "pull_request_review", "pull_request_review_comment"):
        if event == "issue_comment":
            issue = parsed.issue
            if getattr(issue, "pull_request", None) is None:
                return Routed(repo, None, action, [], "comment on an issue, not a pull request")
            pr, item = _id(issue.number, "issue.number"), parsed.comment
        elif event == "pull_request_review":
            pr, item = _id(parsed.pull_request.number, "pull_request.number"), parsed.review
        else:
            pr, item = _id(parsed.pull_request.number, "pull_request.number"), parsed.comment
        if action not in ("created", "edited", "submitted"):
            return Routed(repo, pr, action, [], f"{event} {action} is not a trigger")
        user = item.user
        login = user.login if user else ""
        if user is None or str(user.type) == "Bot" or login.lower() == bot_login.lower():
            return Routed(repo, pr, action, [], "written by a bot")
        kind = {"issue_comment": "issue_comment", "pull_request_review": "review",
                "pull_request_review_comment": "review_comment"}[event]
        # Which comment is a sign-off or a command depends on the repository's policy: the job decides.
        return Routed(repo, pr, action, [job("comment", pr, key=f"{kind}:{item.id}", comment_kind=kind,
                                             comment_id=item.id)])

    if event == "pull_request":
        pr = _id(parsed.pull_request.number, "pull_request.number")
        if action in ("opened", "reopened", "ready_for_review"):
            return Routed(repo, pr, action, [job("lint", pr), job("opened", pr)])
        if action == "synchronize":
            return Routed(repo, pr, action, [job("lint", pr), job("synchronize", pr, head_sha=parsed.pull_request.head.sha)])
        return Routed(repo, pr, action, [], f"pull_request {action} is not a trigger")

    if event == "check_run":
        run = parsed.check_run
        if action != "rerequested" or run.name != check_name:
            return Routed(repo, None, action, [], "not a re-run of the sign-off check")
        prs = [_id(p.number, "pull request number") for p in run.pull_requests or ()]
        if not prs:
            return Routed(repo, None, action, [], "re-run of a check without a pull request")
        return Routed(repo, prs[0], action, [job("verify", p, reason="check run re-run") for p in prs])

    # workflow_run
    run = parsed.workflow_run
    if action != "completed":
        return Routed(repo, None, action, [], f"workflow_run {action} is not a trigger")
    prs = [_id(p.number, "pull request number") for p in run.pull_requests or ()]
    if not prs:
        return Routed(repo, None, action, [], "workflow run without a pull request")
    return Routed(repo, prs[0], action, [job("sweep", p, run_id=run.id, workflow_path=run.path) for p in prs])
