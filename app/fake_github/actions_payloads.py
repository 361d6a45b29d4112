"""GitHub-shaped JSON for CI: check runs and suites, workflow runs and workflows, artifacts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from app.offline.snapshot import run_url

from .ids import node_id, stable_id
from .payloads import ACTIONS_APP_ID, HTML, Site, integration, repository, timestamp, user
from .pull_payloads import minimal_pull, repo_of_name
from .state import ArtifactRef, RepoState, iso, parse_time

ARTIFACT_RETENTION = timedelta(days=90)


def check_suite_id(repo: RepoState, cr: dict[str, Any]) -> int:
    """Check runs of one workflow run share a suite; the app's runs share one per commit."""
    key = f"run:{cr['run_id']}" if cr.get("run_id") else f"app:{cr.get('app_id')}:{cr['head_sha']}"
    return stable_id("check_suite", f"{repo.full_name.lower()}:{key}")


def check_run(site: Site, repo: RepoState, cr: dict[str, Any]) -> dict[str, Any]:
    api = site.repo_api(repo)
    cid = int(cr["id"])
    run_id = cr.get("run_id")
    job_url = f"{run_url(repo.full_name, run_id)}/job/{cid}" if run_id else None
    output = cr.get("output") or {}
    return {
        "id": cid, "head_sha": cr["head_sha"], "node_id": node_id("CheckRun", cid),
        "external_id": cr.get("external_id") or "", "url": f"{api}/check-runs/{cid}",
        "html_url": job_url or f"{HTML}/{repo.full_name}/runs/{cid}", "details_url": cr.get("details_url") or job_url,
        "status": cr.get("status", "completed"), "conclusion": cr.get("conclusion"),
        "started_at": timestamp(cr.get("started_at"), "") or None,
        "completed_at": timestamp(cr.get("completed_at"), "") or None,
        "output": {"title": output.get("title"), "summary": output.get("summary"), "text": output.get("text"),
                   "annotations_count": len(repo.annotations.get(cid, [])),
                   "annotations_url": f"{api}/check-runs/{cid}/annotations"},
        "name": cr["name"], "check_suite": {"id": check_suite_id(repo, cr)},
        "app": integration(site, cr.get("app_id") or ACTIONS_APP_ID),
        "pull_requests": [minimal_pull(site, repo, pr) for pr in repo.pulls_at(cr["head_sha"])],
    }


def check_suite(site: Site, repo: RepoState, cr: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    """The suite of a check run, as the check_run webhook embeds it, or (`full`) as the check_suite
    webhook sends it."""
    sid = check_suite_id(repo, cr)
    api = site.repo_api(repo)
    siblings = [c for c in repo.check_runs.values() if check_suite_id(repo, c) == sid]
    done = all(c.get("status", "completed") == "completed" for c in siblings)
    run = repo.workflow_runs.get(cr.get("run_id") or 0, {})
    data = {
        "id": sid, "node_id": node_id("CheckSuite", sid), "head_branch": run.get("head_branch"),
        "head_sha": cr["head_sha"], "status": "completed" if done else "in_progress",
        "conclusion": cr.get("conclusion") if done else None, "url": f"{api}/check-suites/{sid}",
        "before": None, "after": cr["head_sha"],
        "pull_requests": [minimal_pull(site, repo, pr) for pr in repo.pulls_at(cr["head_sha"])],
        "app": integration(site, cr.get("app_id") or ACTIONS_APP_ID),
        "created_at": timestamp(cr.get("started_at"), site.epoch),
        "updated_at": timestamp(cr.get("completed_at"), site.epoch),
    }
    if full:
        commit = repo.commits.get(cr["head_sha"])
        person = {"name": commit.author if commit else "unknown", "email": "noreply@github.com"}
        data.update({
            "latest_check_runs_count": len(siblings), "check_runs_url": f"{api}/check-suites/{sid}/check-runs",
            "rerequestable": True, "runs_rerequestable": True,
            "head_commit": {"id": cr["head_sha"], "tree_id": repo.git.root(commit) if commit else None,
                            "message": commit.message if commit else "", "timestamp": site.epoch,
                            "author": person, "committer": person},
        })
    return data


def run_times(site: Site, repo: RepoState, run_id: int) -> tuple[str, str]:
    started, changed = repo.run_times(run_id)
    return started or site.epoch, changed or started or site.epoch


def workflow_id(repo: RepoState, path: str) -> int:
    return stable_id("workflow", f"{repo.full_name.lower()}:{path}")


def workflow_run(site: Site, repo: RepoState, run: dict[str, Any]) -> dict[str, Any]:
    api = site.repo_api(repo)
    rid = int(run["id"])
    created, updated = run_times(site, repo, rid)
    prs = [repo.pulls[n] for n in run.get("pull_requests") or [] if n in repo.pulls]
    listed = [pr for pr in prs if not repo.from_fork(pr)]  # GitHub lists no fork's PR, as for check runs
    head_repo = repo_of_name(site, prs[0]["head"].get("repo", repo.full_name)) if prs else repository(site, repo)
    commit = repo.commits.get(run["head_sha"])
    actor = user(site, prs[0].get("user", repo.owner) if prs else repo.owner)
    suite = stable_id("check_suite", f"{repo.full_name.lower()}:run:{rid}")
    wid = workflow_id(repo, run.get("path", ""))
    attempt = int(run.get("run_attempt") or 1)
    head_commit = None
    if commit is not None:
        person = {"name": commit.author or "unknown", "email": "noreply@github.com"}
        head_commit = {"id": commit.sha, "tree_id": repo.git.root(commit), "message": commit.message,
                       "timestamp": site.epoch, "author": person, "committer": person}
    title = prs[0].get("title", "") if prs else (commit.message.split("\n")[0] if commit else run.get("name", ""))
    return {
        "id": rid, "name": run.get("name", ""), "node_id": node_id("WorkflowRun", rid), "check_suite_id": suite,
        "check_suite_node_id": node_id("CheckSuite", suite), "head_branch": run.get("head_branch"),
        "head_sha": run["head_sha"], "path": run.get("path", ""), "display_title": title,
        "run_number": int(run.get("run_number") or 1), "event": run.get("event", "push"),
        "status": run.get("status", "completed"), "conclusion": run.get("conclusion"), "workflow_id": wid,
        "url": f"{api}/actions/runs/{rid}", "html_url": run_url(repo.full_name, rid),
        "pull_requests": [minimal_pull(site, repo, pr) for pr in listed], "created_at": created,
        "updated_at": timestamp(run.get("updated_at"), updated), "actor": actor, "triggering_actor": actor,
        "run_attempt": attempt, "referenced_workflows": [], "run_started_at": created,
        "jobs_url": f"{api}/actions/runs/{rid}/jobs", "logs_url": f"{api}/actions/runs/{rid}/logs",
        "check_suite_url": f"{api}/check-suites/{suite}", "artifacts_url": f"{api}/actions/runs/{rid}/artifacts",
        "cancel_url": f"{api}/actions/runs/{rid}/cancel", "rerun_url": f"{api}/actions/runs/{rid}/rerun",
        "previous_attempt_url": f"{api}/actions/runs/{rid}/attempts/{attempt - 1}" if attempt > 1 else None,
        "workflow_url": f"{api}/actions/workflows/{wid}", "head_commit": head_commit,
        "repository": repository(site, repo), "head_repository": head_repo,
    }


def workflow(site: Site, repo: RepoState, run: dict[str, Any]) -> dict[str, Any]:
    """The workflow of a run, as the workflow_run webhook embeds it."""
    wid = workflow_id(repo, run.get("path", ""))
    path = run.get("path", "")
    return {
        "id": wid, "node_id": node_id("Workflow", wid), "name": run.get("name", ""), "path": path, "state": "active",
        "created_at": site.epoch, "updated_at": site.epoch, "url": f"{site.repo_api(repo)}/actions/workflows/{wid}",
        "html_url": f"{HTML}/{repo.full_name}/blob/{repo.default_branch}/{path}",
        "badge_url": f"{HTML}/{repo.full_name}/workflows/{run.get('name', '')}/badge.svg",
    }


def artifact(site: Site, repo: RepoState, ref: ArtifactRef) -> dict[str, Any]:
    api = site.repo_api(repo)
    aid = int(ref.data["id"])
    run = repo.workflow_runs[ref.run_id]
    created = run_times(site, repo, ref.run_id)[1]
    return {
        "id": aid, "node_id": node_id("Artifact", aid), "name": ref.data["name"],
        "size_in_bytes": ref.world.artifact_size(aid),
        "url": f"{api}/actions/artifacts/{aid}", "archive_download_url": f"{api}/actions/artifacts/{aid}/zip",
        "expired": bool(ref.data.get("expired", False)), "created_at": created, "updated_at": created,
        "expires_at": iso(parse_time(created) + ARTIFACT_RETENTION),
        "workflow_run": {"id": ref.run_id, "repository_id": repo.id, "head_repository_id": repo.id,
                         "head_branch": run.get("head_branch"), "head_sha": run["head_sha"]},
    }
