"""Admin routes under /_fake/ for tests and demos: deliver stored objects as webhooks
(to the app's webhook URL or another one, e.g. a second instance), redeliver a delivery,
push a PR to another commit, complete a workflow run, read the writes, the timed call log,
deliveries and request counts, and inject faults."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..faults import Fault
from ..state import RepoState
from ..webhooks import EVENTS, Event, deliver, pull_event, stored_event, workflow_run_event
from .common import C, Ctx, GitHubError, json_body, respond

router = APIRouter(prefix="/_fake")
RUN_CONCLUSIONS = ("success", "failure", "cancelled", "skipped", "neutral", "timed_out", "action_required")


def _repo(ctx: Ctx, data: dict[str, Any]) -> RepoState:
    full = str(data.get("repo") or "")
    repo = ctx.state.repos.get(full.lower())
    if repo is None:
        raise GitHubError(404, f"no repository {full!r} in the worlds")
    return repo


async def _send(ctx: Ctx, event: Event, guid: str | None = None, url: str | None = None):
    """Deliver now (to `url`, default the webhook URL) and answer with the app's status;
    without a webhook URL, say so."""
    if not (url or ctx.state.webhook.url):
        return respond({"delivery": None, "status": None, "error": "no webhook URL configured"})
    delivery = await deliver(ctx.state, event, guid, url)
    return respond({"delivery": delivery.guid, "status": delivery.status, "error": delivery.error},
                   200 if delivery.status is not None else 502)


def _url(data: dict[str, Any]) -> str | None:
    url = data.get("url")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise GitHubError(422, "url must be an http(s) URL")
    return url


@router.post("/deliver")
async def deliver_stored(ctx: C):
    """Body: {"repo", "event", "id"[, "action", "delivery" (GUID), "url" (default: the webhook URL)]}."""
    data = await json_body(ctx.request)
    repo = _repo(ctx, data)
    if data.get("event") not in EVENTS:
        raise GitHubError(422, f"event must be one of {', '.join(EVENTS)}")
    url = _url(data)
    if not (url or ctx.state.webhook.url):
        raise GitHubError(409, "no webhook URL configured (--webhook-url)")
    try:
        event = stored_event(ctx.site, repo, data["event"], data.get("action"), int(data.get("id") or 0))
    except KeyError as exc:
        raise GitHubError(404, f"no {data['event']} object {data.get('id')} in {repo.full_name}") from exc
    return await _send(ctx, event, data.get("delivery"), url)


@router.post("/redeliver")
async def redeliver(ctx: C):
    """Send an earlier delivery again, same GUID and payload, as GitHub's "Redeliver" does.
    Body: {"delivery"[, "url"]}."""
    data = await json_body(ctx.request)
    url = _url(data)
    with ctx.state.lock:
        earlier = next((d for d in reversed(ctx.state.deliveries) if d.guid == data.get("delivery")), None)
    if earlier is None:
        raise GitHubError(404, f"no delivery {data.get('delivery')!r}")
    return await _send(ctx, Event(earlier.event, earlier.payload), earlier.guid, url)


@router.post("/push")
async def push(ctx: C):
    """Move a PR's head (and its head branch) to another commit of the world, then deliver synchronize."""
    data = await json_body(ctx.request)
    repo = _repo(ctx, data)
    pr = repo.pulls.get(int(data.get("number") or 0))
    sha = str(data.get("sha") or "")
    if pr is None or sha not in repo.commits:
        raise GitHubError(404, "unknown pull request number or commit sha")
    before = pr["head"]["sha"]
    pr["commits"] = _commits_after_push(repo, pr, sha)
    pr["head"]["sha"] = sha
    if pr["head"]["ref"] in repo.branches:
        repo.branches[pr["head"]["ref"]] = sha
    return await _send(ctx, pull_event(ctx.site, repo, pr, "synchronize", before))


def _commits_after_push(repo: RepoState, pr: dict[str, Any], sha: str) -> list[str]:
    """The PR's commits once its head is `sha`: the old ones up to where the new history
    joins them, then the new ones (a force push that rewrote history keeps only the new)."""
    old = list(pr.get("commits") or [pr["head"]["sha"]])
    new: list[str] = []
    cur: str | None = sha
    while cur and cur not in old and cur != pr["base"]["sha"] and cur in repo.commits:
        new.append(cur)
        parents = repo.commits[cur].parents
        cur = parents[0] if parents else None
    kept = old[:old.index(cur) + 1] if cur in old else []
    return kept + new[::-1]


@router.post("/complete-run")
async def complete_run(ctx: C):
    """Complete a workflow run (and its unfinished check runs) with a conclusion, then deliver it."""
    data = await json_body(ctx.request)
    repo = _repo(ctx, data)
    run = repo.workflow_runs.get(int(data.get("id") or 0))
    if run is None:
        raise GitHubError(404, f"no workflow run {data.get('id')} in {repo.full_name}")
    conclusion = data.get("conclusion", "success")
    if conclusion not in RUN_CONCLUSIONS:
        raise GitHubError(422, f"conclusion must be one of {', '.join(RUN_CONCLUSIONS)}")
    now = ctx.state.clock.tick()
    run.update(status="completed", conclusion=conclusion, updated_at=now)
    for cr in repo.check_runs.values():
        if cr.get("run_id") == run["id"] and cr.get("status", "completed") != "completed":
            cr.update(status="completed", conclusion=conclusion, completed_at=now)
    return await _send(ctx, workflow_run_event(ctx.site, repo, run, "completed"))


@router.get("/writes")
def writes(ctx: C):
    everyone = ctx.request.query_params.get("all") in ("1", "true")
    return respond([w.to_json() for w in list(ctx.state.ledger.writes) if everyone or w.as_app])


@router.get("/calls")
def calls(ctx: C):
    """Every API call, oldest first (`?since=N`: those after call N), with arrival and answer times."""
    since = ctx.request.query_params.get("since", "0")
    after = int(since) if since.isdigit() else 0
    return respond([c.to_json() for c in list(ctx.state.ledger.calls)[after:]])


@router.get("/deliveries")
def deliveries(ctx: C):
    return respond([d.summary() for d in list(ctx.state.deliveries)])


@router.get("/faults")
def list_faults(ctx: C):
    return respond({"latency_ms": ctx.state.latency_ms, "faults": ctx.state.faults.pending()})


@router.post("/faults")
async def add_faults(ctx: C):
    """Body: a fault, {"faults": [...]}, and/or {"latency_ms": N} for every request."""
    data = await json_body(ctx.request)
    specs = data.pop("faults", None)
    latency = data.pop("latency_ms", None)
    try:
        faults = [Fault.from_json(s) for s in specs] if specs is not None else [Fault.from_json(data)] if data else []
    except (TypeError, ValueError) as exc:
        raise GitHubError(422, f"invalid fault: {exc}") from exc
    if latency is not None:
        ctx.state.latency_ms = int(latency)
    for fault in faults:
        ctx.state.faults.add(fault)
    return respond({"latency_ms": ctx.state.latency_ms, "faults": ctx.state.faults.pending()})


@router.delete("/faults")
def clear_faults(ctx: C):
    ctx.state.faults.clear()
    ctx.state.latency_ms = 0
    return respond({"latency_ms": 0, "faults": []})


@router.get("/stats")
def stats(ctx: C):
    return respond(ctx.state.ledger.stats())


@router.delete("/stats")
def reset_stats(ctx: C):
    ctx.state.ledger.reset_stats()
    return respond(ctx.state.ledger.stats())
