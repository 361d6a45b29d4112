"""GitHub Actions routes: workflow runs, their artifacts, and artifact downloads.

`GET .../actions/artifacts/{id}/zip` answers 302 to a short-lived signed URL
on the storage host (another host, as GitHub redirects to blob storage; see
server.StorageHost): the URL itself is the credential, and the storage host
refuses a request that also sends an Authorization header, as blob storage
does, so a client that forwards the API token across hosts fails visibly.
The download serves the world's `artifacts/<id>.zip` as it is, else a zip
built in memory from its `artifacts/<id>/` files. Expired artifacts answer 410.
"""

from __future__ import annotations

import io
import secrets
import zipfile
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from ..actions_payloads import artifact, workflow_run
from ..state import ArtifactRef, GitHubState, RepoState
from .common import C, GitHubError, listing, not_found, repo_of, respond

router = APIRouter()
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
DOWNLOAD_PATH = "/_fake/download/"


def artifact_zip(files: dict[str, bytes]) -> bytes:
    """A deterministic zip of the files (fixed timestamps, sorted names)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            archive.writestr(zipfile.ZipInfo(name, ZIP_TIME), data, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _run(r: RepoState, run_id: int) -> dict[str, Any]:
    run = r.workflow_runs.get(run_id)
    if run is None:
        raise not_found()
    return run


def _artifact(r: RepoState, artifact_id: int) -> ArtifactRef:
    ref = r.artifacts.get(artifact_id)
    if ref is None:
        raise not_found()
    return ref


@router.get("/repos/{owner}/{repo}/actions/runs")
async def list_runs(ctx: C, owner: str, repo: str):
    r = repo_of(ctx, owner, repo)
    q = ctx.request.query_params
    runs = list(r.workflow_runs.values())
    for key, field in (("head_sha", "head_sha"), ("event", "event"), ("branch", "head_branch")):
        if key in q:
            runs = [x for x in runs if str(x.get(field)) == q[key]]
    if "status" in q:
        runs = [x for x in runs if q["status"] in (x.get("status", "completed"), x.get("conclusion"))]
    runs.sort(key=lambda x: x["id"], reverse=True)
    return listing(ctx, runs, lambda x: workflow_run(ctx.site, r, x), key="workflow_runs")


@router.get("/repos/{owner}/{repo}/actions/runs/{run_id:int}")
async def get_run(ctx: C, owner: str, repo: str, run_id: int):
    r = repo_of(ctx, owner, repo)
    return respond(workflow_run(ctx.site, r, _run(r, run_id)))


@router.get("/repos/{owner}/{repo}/actions/runs/{run_id:int}/artifacts")
async def list_run_artifacts(ctx: C, owner: str, repo: str, run_id: int):
    r = repo_of(ctx, owner, repo)
    run = _run(r, run_id)
    refs = [r.artifacts[int(a["id"])] for a in run.get("artifacts") or []]
    if "name" in ctx.request.query_params:
        refs = [a for a in refs if a.data["name"] == ctx.request.query_params["name"]]
    return listing(ctx, refs, lambda a: artifact(ctx.site, r, a), key="artifacts")


@router.get("/repos/{owner}/{repo}/actions/artifacts/{artifact_id:int}")
async def get_artifact(ctx: C, owner: str, repo: str, artifact_id: int):
    r = repo_of(ctx, owner, repo)
    return respond(artifact(ctx.site, r, _artifact(r, artifact_id)))


@router.get("/repos/{owner}/{repo}/actions/artifacts/{artifact_id:int}/{archive_format}")
async def download_artifact(ctx: C, owner: str, repo: str, artifact_id: int, archive_format: str):
    r = repo_of(ctx, owner, repo)
    ref = _artifact(r, artifact_id)
    if archive_format != "zip":
        raise not_found()
    if ctx.actor.kind == "anonymous":
        raise GitHubError(401, "Requires authentication")
    if ref.data.get("expired"):
        raise GitHubError(410, "Artifact has expired")
    token = secrets.token_urlsafe(16)
    with ctx.state.lock:
        ctx.state.downloads[token] = (r.full_name, artifact_id)
    return RedirectResponse(f"{ctx.state.storage_url or ctx.site.api}{DOWNLOAD_PATH}{token}", status_code=302)


@router.get(DOWNLOAD_PATH + "{token}")
async def download(request: Request, token: str):
    """The storage host: the signed URL is the only credential it accepts."""
    if "authorization" in request.headers:
        raise GitHubError(400, "Only one auth mechanism allowed: this URL is signed; do not send an "
                               "Authorization header")
    state: GitHubState = request.app.state.github
    target = state.downloads.get(token)
    if target is None:
        raise not_found()
    ref = _artifact(state.repos[target[0].lower()], target[1])
    archive = ref.world.archive_path(target[1])
    data = archive.read_bytes() if archive else artifact_zip(ref.world.artifact_files(target[1]))
    return Response(data, media_type="application/zip",
                    headers={"Content-Disposition": f"attachment; filename={ref.data['name']}.zip"})
