"""GitHub's objects, as githubkit parses them, as the snapshot's (checks/snapshot.py)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from app.settings import CHECK_NAME
from checks.facts import freshness
from checks.snapshot import Artifact, CheckRun, Comment, WorkflowRun

_RUN_ID = re.compile(r"/actions/runs/(\d+)")


def iso(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_check_run(c, app_id: int | None) -> CheckRun:
    m = _RUN_ID.search(c.details_url or "")
    own = app_id is not None and c.app is not None and c.app.id == app_id and c.name == CHECK_NAME
    return CheckRun(
        id=c.id, name=c.name, head_sha=c.head_sha, status=str(c.status), conclusion=c.conclusion,
        run_id=int(m.group(1)) if m else None, started_at=iso(c.started_at), completed_at=iso(c.completed_at),
        url=c.details_url or c.html_url or "", record=freshness.recorded(c.output.summary or "") if own else "",
    )


def as_workflow_run(run) -> WorkflowRun:
    """GitHub's workflow run record, without its artifacts."""
    return WorkflowRun(
        id=run.id, name=run.name or "", path=run.path, event=run.event, head_sha=run.head_sha,
        status=str(run.status or ""), conclusion=run.conclusion, run_attempt=int(run.run_attempt or 1),
        pull_requests=tuple(p.number for p in run.pull_requests or ()), url=run.html_url,
    )


def as_artifact(a) -> Artifact:
    return Artifact(a.id, a.name, bool(a.expired), int(a.size_in_bytes or 0))


def as_comment(c, kind: str, created: datetime | None) -> Comment:
    user = c.user
    login = user.login if user else "ghost"
    return Comment(
        id=c.id, kind=kind, author=login, author_association=str(c.author_association), body=c.body or "",
        created_at=iso(created), url=c.html_url, author_is_bot=bool(user and str(user.type) == "Bot"),
        updated_at=iso(getattr(c, "updated_at", None) or created),
        path=getattr(c, "path", None), line=getattr(c, "line", None), commit_id=getattr(c, "commit_id", None),
        review_state=str(c.state) if kind == "review" else None,
    )
