"""Check run routes: list for a ref, get, create, update, annotations.

Only a GitHub App may create check runs, and only the app that created one may
update it (another app's, or a workflow job's, answers 403); output and
annotations are validated against GitHub's limits (summary and text at most
65535 characters, at most 50 annotations a request).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..actions_payloads import check_run
from ..payloads import ACTIONS_APP_ID
from ..state import RepoState
from .common import C, Ctx, GitHubError, invalid, json_body, listing, not_found, repo_of, require_write, respond

router = APIRouter()
STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
# "stale" is left out: only GitHub sets it
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out")
LEVELS = ("notice", "warning", "failure")
MAX_OUTPUT = 65535
MAX_ANNOTATIONS = 50


@router.get("/repos/{owner}/{repo}/commits/{ref:path}/check-runs")
async def list_for_ref(ctx: C, owner: str, repo: str, ref: str):
    r = repo_of(ctx, owner, repo)
    c = r.commit(ref)
    if c is None:
        raise GitHubError(422, f"No commit found for SHA: {ref}")
    q = ctx.request.query_params
    runs = [cr for cr in r.check_runs.values() if cr["head_sha"] == c.sha]
    if "check_name" in q:
        runs = [cr for cr in runs if cr["name"] == q["check_name"]]
    if "status" in q:
        runs = [cr for cr in runs if cr.get("status", "completed") == q["status"]]
    if "app_id" in q:
        runs = [cr for cr in runs if str(cr.get("app_id") or ACTIONS_APP_ID) == q["app_id"]]
    if q.get("filter", "latest") == "latest":  # each app's newest run of each name
        newest: dict[tuple[int, str], dict[str, Any]] = {}
        for cr in sorted(runs, key=lambda x: (str(x.get("started_at") or ""), x["id"])):
            newest[(cr.get("app_id") or ACTIONS_APP_ID, cr["name"])] = cr
        runs = list(newest.values())
    runs.sort(key=lambda x: x["id"], reverse=True)
    return listing(ctx, runs, lambda x: check_run(ctx.site, r, x), key="check_runs")


def _check_run(r: RepoState, check_run_id: int) -> dict[str, Any]:
    cr = r.check_runs.get(check_run_id)
    if cr is None:
        raise not_found()
    return cr


@router.get("/repos/{owner}/{repo}/check-runs/{check_run_id:int}")
async def get_check_run(ctx: C, owner: str, repo: str, check_run_id: int):
    r = repo_of(ctx, owner, repo)
    return respond(check_run(ctx.site, r, _check_run(r, check_run_id)))


@router.get("/repos/{owner}/{repo}/check-runs/{check_run_id:int}/annotations")
async def list_annotations(ctx: C, owner: str, repo: str, check_run_id: int):
    r = repo_of(ctx, owner, repo)
    _check_run(r, check_run_id)
    return listing(ctx, r.annotations.get(check_run_id, []), lambda a: a)


def _apply(ctx: Ctx, r: RepoState, cr: dict[str, Any], data: dict[str, Any]) -> None:
    """Validate a create/update request and apply it to the stored check run."""
    for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
        if key in data:
            if not isinstance(data[key], str):
                raise invalid(key, f"{key} must be a string", "CheckRun")
            cr[key] = data[key]
    if "status" in data:
        if data["status"] not in STATUSES:
            raise invalid("status", f"status must be one of {', '.join(STATUSES)}", "CheckRun")
        cr["status"] = data["status"]
    if data.get("conclusion") is not None:
        if data["conclusion"] not in CONCLUSIONS:
            raise invalid("conclusion", f"conclusion must be one of {', '.join(CONCLUSIONS)}", "CheckRun")
        cr["conclusion"] = data["conclusion"]
        cr["status"] = "completed"
    if cr.get("status") == "completed":
        if not cr.get("conclusion"):
            raise invalid("conclusion", "conclusion is required when status is completed", "CheckRun")
        cr.setdefault("completed_at", ctx.state.clock.tick())
    if "output" in data:
        _output(r, cr, data["output"])


def _output(r: RepoState, cr: dict[str, Any], output: Any) -> None:
    if not isinstance(output, dict) or not isinstance(output.get("title"), str) or not isinstance(
            output.get("summary"), str):
        raise invalid("output", "output needs a title and a summary", "CheckRun")
    for key in ("summary", "text"):
        if len(output.get(key) or "") > MAX_OUTPUT:
            raise invalid(f"output.{key}", f"{key} is too long (maximum is {MAX_OUTPUT} characters)", "CheckRun")
    annotations = output.get("annotations") or []
    if not isinstance(annotations, list) or len(annotations) > MAX_ANNOTATIONS:
        raise invalid("output.annotations", f"at most {MAX_ANNOTATIONS} annotations per request", "CheckRun")
    stored = []
    for a in annotations:
        if not (isinstance(a, dict) and isinstance(a.get("path"), str) and isinstance(a.get("start_line"), int)
                and isinstance(a.get("end_line"), int) and a.get("annotation_level") in LEVELS
                and isinstance(a.get("message"), str)):
            raise invalid("output.annotations", "an annotation needs path, start_line, end_line, "
                                                "annotation_level (notice|warning|failure) and message", "CheckRun")
        stored.append({"path": a["path"], "start_line": a["start_line"], "end_line": a["end_line"],
                       "start_column": a.get("start_column"), "end_column": a.get("end_column"),
                       "annotation_level": a["annotation_level"], "title": a.get("title"), "message": a["message"],
                       "raw_details": a.get("raw_details"), "blob_href": ""})
    cr["output"] = {"title": output["title"], "summary": output["summary"], "text": output.get("text")}
    r.annotations.setdefault(cr["id"], []).extend(stored)


@router.post("/repos/{owner}/{repo}/check-runs")
async def create_check_run(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    require_write(ctx, r, app_only=True)
    data = await json_body(ctx.request)
    if not isinstance(data.get("name"), str) or not data["name"]:
        raise invalid("name", "name is required", "CheckRun")
    if data.get("head_sha") not in r.commits:
        raise invalid("head_sha", f"No commit found for SHA: {data.get('head_sha')}", "CheckRun")
    cr: dict[str, Any] = {"id": ctx.state.next_id(), "head_sha": data["head_sha"], "status": "queued",
                          "conclusion": None, "app_id": ctx.actor.app_id, "started_at": ctx.state.clock.tick()}
    _apply(ctx, r, cr, data)
    r.check_runs[cr["id"]] = cr
    payload = check_run(ctx.site, r, cr)
    return respond(payload, 201, {"Location": payload["url"]})


@router.patch("/repos/{owner}/{repo}/check-runs/{check_run_id:int}")
async def update_check_run(ctx: C, owner: str, repo: str, check_run_id: int):
    r = repo_of(ctx, owner, repo)
    cr = _check_run(r, check_run_id)
    require_write(ctx, r, app_only=True)
    if cr.get("app_id") != ctx.actor.app_id:
        raise GitHubError(403, "Invalid app_id `%s` - check run can only be modified by its creator"
                          % ctx.actor.app_id)
    data = await json_body(ctx.request)
    updated = dict(cr)
    _apply(ctx, r, updated, data)
    cr.update(updated)
    return respond(check_run(ctx.site, r, cr))
