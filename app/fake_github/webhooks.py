"""Webhook deliveries to the app: full GitHub payloads, signed as GitHub signs them.

Every payload carries action, repository, sender and installation {id,
node_id} plus the event's subject (issue + comment, pull_request + review or
comment, check_run, workflow_run + workflow), and is signed with HMAC-SHA256
of the body under the webhook secret (`X-Hub-Signature-256: sha256=<hex>`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from .actions_payloads import check_run, check_suite, workflow, workflow_run
from .ids import node_id
from .payloads import Site, organization, repository, user, user_type
from .pull_payloads import issue, issue_comment, pull, review, review_comment
from .state import GitHubState, RepoState

EVENTS = ("issue_comment", "pull_request_review", "pull_request_review_comment", "pull_request", "check_run",
          "check_suite", "workflow_run")
DEFAULT_ACTIONS = {"issue_comment": "created", "pull_request_review": "submitted",
                   "pull_request_review_comment": "created", "pull_request": "opened", "check_run": "completed",
                   "check_suite": "completed", "workflow_run": "completed"}
DELIVERY_TIMEOUT = 60.0
LABEL_REST_ONLY = ("archived_at", "archived_by")


@dataclass(frozen=True)
class Event:
    """A webhook to deliver: its name and its payload."""

    name: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Delivery:
    guid: str
    event: str
    action: str | None
    repo: str | None
    status: int | None  # the app's HTTP status; None when it could not be reached
    error: str | None
    payload: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        return {"delivery": self.guid, "event": self.event, "action": self.action, "repo": self.repo,
                "status": self.status, "error": self.error}


def sign(secret: str, body: bytes, algorithm: str = "sha256") -> str:
    return f"{algorithm}=" + hmac.new(secret.encode(), body, getattr(hashlib, algorithm)).hexdigest()


def _as_delivered(value: Any) -> Any:
    """A REST object as a delivery carries it. Deliveries are not versioned as the REST API is: their
    labels lack the archiving fields of API version 2026-03-10 (octokit's records of real deliveries,
    ../shared/fixtures/webhooks/octokit/, are the reference)."""
    if isinstance(value, dict):
        out = {k: _as_delivered(v) for k, v in value.items()}
        if isinstance(out.get("labels"), list):
            out["labels"] = [{k: v for k, v in lab.items() if k not in LABEL_REST_ONLY} for lab in out["labels"]]
        return out
    if isinstance(value, list):
        return [_as_delivered(v) for v in value]
    return value


def _envelope(site: Site, repo: RepoState, action: str, sender: str, previous_body: str | None = None,
              **subject: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"action": action, **_as_delivered(subject), "repository": repository(site, repo),
                               "sender": user(site, sender)}
    if user_type(site.state, repo.owner) == "Organization":
        payload["organization"] = organization(site, repo.owner)
    if action == "edited":
        payload["changes"] = {"body": {"from": previous_body}} if previous_body is not None else {}
    if repo.installation_id is not None:
        payload["installation"] = {"id": repo.installation_id,
                                   "node_id": node_id("Integration::Installation", repo.installation_id)}
    return payload


def comment_event(site: Site, repo: RepoState, c: dict[str, Any], action: str = "created",
                  previous_body: str | None = None, sender: str | None = None) -> Event:
    """issue_comment: created, or edited (with the body it had before) by `sender`: the comment's
    author, or a user with write access editing someone else's comment (`comment.user` stays the author)."""
    return Event("issue_comment", _envelope(site, repo, action, sender or c["user"], previous_body,
                                            issue=issue(site, repo, repo.pulls[c["number"]]),
                                            comment=issue_comment(site, repo, c)))


def review_event(site: Site, repo: RepoState, r: dict[str, Any], action: str = "submitted",
                 previous_body: str | None = None, sender: str | None = None) -> Event:
    return Event("pull_request_review", _envelope(site, repo, action, sender or r["user"], previous_body,
                                                  review=review(site, repo, r),
                                                  pull_request=pull(site, repo, repo.pulls[r["number"]])))


def review_comment_event(site: Site, repo: RepoState, c: dict[str, Any], action: str = "created",
                         previous_body: str | None = None, sender: str | None = None) -> Event:
    """pull_request_review_comment: created, or edited by `sender` (as for comment_event)."""
    return Event("pull_request_review_comment",
                 _envelope(site, repo, action, sender or c["user"], previous_body,
                           comment=review_comment(site, repo, c),
                           pull_request=pull(site, repo, repo.pulls[c["number"]])))


def pull_event(site: Site, repo: RepoState, pr: dict[str, Any], action: str = "opened",
               before: str | None = None) -> Event:
    payload = _envelope(site, repo, action, pr.get("user", repo.owner), number=pr["number"],
                        pull_request=pull(site, repo, pr))
    if action == "synchronize":
        payload.update({"before": before, "after": pr["head"]["sha"]})
    return Event("pull_request", payload)


def check_run_event(site: Site, repo: RepoState, cr: dict[str, Any], action: str = "completed") -> Event:
    prs = repo.pulls_at(cr["head_sha"])
    body = {**check_run(site, repo, cr), "check_suite": check_suite(site, repo, cr)}
    return Event("check_run", _envelope(site, repo, action, prs[0].get("user", repo.owner) if prs else repo.owner,
                                        check_run=body))


def check_suite_event(site: Site, repo: RepoState, cr: dict[str, Any], action: str = "completed") -> Event:
    """The suite of check run `cr` ("Re-run all checks" on it is `rerequested`)."""
    prs = repo.pulls_at(cr["head_sha"])
    return Event("check_suite", _envelope(site, repo, action, prs[0].get("user", repo.owner) if prs else repo.owner,
                                          check_suite=check_suite(site, repo, cr, full=True)))


def workflow_run_event(site: Site, repo: RepoState, run: dict[str, Any], action: str = "completed") -> Event:
    body = workflow_run(site, repo, run)
    return Event("workflow_run", _envelope(site, repo, action, body["actor"]["login"], workflow_run=body,
                                           workflow=workflow(site, repo, run)))


def stored_event(site: Site, repo: RepoState, event: str, action: str | None, object_id: int) -> Event:
    """The event for an object of the state (POST /_fake/deliver); KeyError when there is no such object."""
    action = action or DEFAULT_ACTIONS[event]
    if event == "issue_comment":
        return comment_event(site, repo, repo.issue_comments[object_id], action)
    if event == "pull_request_review":
        return review_event(site, repo, repo.reviews[object_id], action)
    if event == "pull_request_review_comment":
        return review_comment_event(site, repo, repo.review_comments[object_id], action)
    if event == "pull_request":
        return pull_event(site, repo, repo.pulls[object_id], action)
    if event == "check_run":
        return check_run_event(site, repo, repo.check_runs[object_id], action)
    if event == "check_suite":  # the suite of a check run: its id names the suite
        return check_suite_event(site, repo, repo.check_runs[object_id], action)
    if event == "workflow_run":
        return workflow_run_event(site, repo, repo.workflow_runs[object_id], action)
    raise KeyError(event)


async def deliver(state: GitHubState, event: Event, guid: str | None = None, url: str | None = None) -> Delivery:
    """POST one event to `url` (default: the app's webhook URL) and record the delivery."""
    guid = guid or str(uuid.uuid4())
    body = json.dumps(event.payload).encode()
    headers = {
        "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/fake", "X-GitHub-Event": event.name,
        "X-GitHub-Delivery": guid, "X-GitHub-Hook-ID": "1", "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": str(state.app_id),
    }
    secret = state.webhook.secret
    if secret:
        headers["X-Hub-Signature"] = sign(secret, body, "sha1")
        headers["X-Hub-Signature-256"] = sign(secret, body)
    status, error = None, None
    try:
        async with httpx.AsyncClient(timeout=DELIVERY_TIMEOUT) as client:
            response = await client.post(str(url or state.webhook.url), content=body, headers=headers)
        status = response.status_code
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
    repo = (event.payload.get("repository") or {}).get("full_name")
    delivery = Delivery(guid, event.name, event.payload.get("action"), repo, status, error, event.payload)
    with state.lock:
        state.deliveries.append(delivery)
    return delivery


async def deliver_all(state: GitHubState, events: list[Event]) -> None:
    """Deliver events in order (after a user's write), when the app's webhook URL is known."""
    if state.webhook.url:
        for event in events:
            await deliver(state, event)
