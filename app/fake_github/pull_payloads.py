"""GitHub-shaped JSON for pull requests and their conversation: the PR, its issue,
comments, reviews, review comments and reactions."""

from __future__ import annotations

import re
from typing import Any

from app.offline.snapshot import comment_url

from .ids import node_id, stable_id
from .payloads import HTML, Site, integration, label, reaction_rollup, repository, timestamp, user
from .state import RepoState

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)")


def pull_id(repo: RepoState, number: int) -> int:
    return stable_id("pull", f"{repo.full_name.lower()}#{number}")


def pull_times(site: Site, repo: RepoState, pr: dict[str, Any]) -> tuple[str, str]:
    """(created_at, updated_at) of a PR: the world's, else spanning its conversation."""
    n = pr["number"]
    seen = [timestamp(c.get("created_at"), "") for c in repo.comments_on(n) + repo.review_comments_on(n)]
    seen += [timestamp(r.get("submitted_at"), "") for r in repo.reviews_on(n)]
    seen = [t for t in seen if t]
    created = timestamp(pr.get("created_at"), min(seen + [site.epoch]))
    updates = seen + [timestamp(pr.get(k), "") for k in ("updated_at", "closed_at", "merged_at")]
    return created, max([t for t in updates if t] + [created])


def repo_of_name(site: Site, full_name: str) -> dict[str, Any]:
    """A repository payload, also for a head repository (a fork) the worlds do not hold."""
    known = site.state.repos.get(full_name.lower())
    if known is not None:
        return repository(site, known)
    return {**repository(site, RepoState(full_name, "main", None, {})), "fork": True}


def pull(site: Site, repo: RepoState, pr: dict[str, Any], *, full: bool = True) -> dict[str, Any]:
    """A PullRequest (`full`), or the PullRequestSimple of list responses."""
    api = site.repo_api(repo)
    n = pr["number"]
    pid = pull_id(repo, n)
    html = f"{HTML}/{repo.full_name}/pull/{n}"
    head_repo = pr["head"].get("repo", repo.full_name)
    head_owner = head_repo.split("/")[0]
    created, updated = pull_times(site, repo, pr)
    state = pr.get("state", "open")
    merged_at = timestamp(pr.get("merged_at"), "") or None
    closed_at = timestamp(pr.get("closed_at"), "") or (merged_at if state == "closed" else None)
    link = {
        "self": f"{api}/pulls/{n}", "html": html, "issue": f"{api}/issues/{n}",
        "comments": f"{api}/issues/{n}/comments",
        "review_comments": f"{api}/pulls/{n}/comments", "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{n}/commits", "statuses": f"{api}/statuses/{pr['head']['sha']}",
    }
    data: dict[str, Any] = {
        "url": link["self"], "id": pid, "node_id": node_id("PullRequest", pid), "html_url": html,
        "diff_url": f"{html}.diff", "patch_url": f"{html}.patch", "issue_url": link["issue"],
        "commits_url": link["commits"], "review_comments_url": link["review_comments"],
        "review_comment_url": link["review_comment"], "comments_url": link["comments"],
        "statuses_url": link["statuses"], "number": n, "state": state, "locked": False, "title": pr.get("title", ""),
        "user": user(site, pr.get("user", "ghost")),
        "body": pr.get("body") or None, "labels": [label(site, repo, name) for name in pr.get("labels") or []],
        "milestone": None, "active_lock_reason": None, "created_at": created, "updated_at": updated,
        "closed_at": closed_at, "merged_at": merged_at, "merge_commit_sha": pr.get("merge_commit_sha"),
        "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
        "head": {"label": f"{head_owner}:{pr['head']['ref']}", "ref": pr["head"]["ref"], "sha": pr["head"]["sha"],
                 "user": user(site, head_owner), "repo": repo_of_name(site, head_repo)},
        "base": {"label": f"{repo.owner}:{pr['base']['ref']}", "ref": pr["base"]["ref"], "sha": pr["base"]["sha"],
                 "user": user(site, repo.owner), "repo": repository(site, repo)},
        "_links": {k: {"href": v} for k, v in link.items()},
        "author_association": pr.get("author_association", "NONE"), "auto_merge": None,
        "draft": bool(pr.get("draft", False)),
    }
    if full:
        diffs = repo.diff(pr["base"]["sha"], pr["head"]["sha"])
        is_open = state == "open"
        data.update({
            "merged": bool(pr.get("merged", False)), "mergeable": True if is_open else None,
            "rebaseable": True if is_open else None, "mergeable_state": "clean" if is_open else "unknown",
            "merged_by": None, "comments": len(repo.comments_on(n)), "review_comments": len(repo.review_comments_on(n)),
            "maintainer_can_modify": False, "commits": len(pr.get("commits") or [pr["head"]["sha"]]),
            "additions": sum(d.additions for d in diffs), "deletions": sum(d.deletions for d in diffs),
            "changed_files": len(diffs),
        })
    return data


def minimal_pull(site: Site, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
    """The PullRequestMinimal that check runs and workflow runs link to."""
    api = site.repo_api(repo)
    ref = {"id": repo.id, "url": api, "name": repo.name}
    return {"id": pull_id(repo, pr["number"]), "number": pr["number"], "url": f"{api}/pulls/{pr['number']}",
            "head": {"ref": pr["head"]["ref"], "sha": pr["head"]["sha"], "repo": ref},
            "base": {"ref": pr["base"]["ref"], "sha": pr["base"]["sha"], "repo": ref}}


def issue(site: Site, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
    """The issue side of a pull request (GET /issues/{n}, and webhooks' `issue`)."""
    api = site.repo_api(repo)
    n = pr["number"]
    p = pull(site, repo, pr, full=False)
    iid = stable_id("issue", f"{repo.full_name.lower()}#{n}")
    return {
        "id": iid, "node_id": node_id("Issue", iid), "url": f"{api}/issues/{n}", "repository_url": api,
        "labels_url": f"{api}/issues/{n}/labels{{/name}}", "comments_url": f"{api}/issues/{n}/comments",
        "events_url": f"{api}/issues/{n}/events", "html_url": p["html_url"], "number": n, "state": p["state"],
        "state_reason": None, "title": p["title"], "body": p["body"], "user": p["user"], "labels": p["labels"],
        "assignee": None, "assignees": [], "milestone": None, "locked": False, "active_lock_reason": None,
        "comments": len(repo.comments_on(n)),
        "pull_request": {"url": p["url"], "html_url": p["html_url"], "diff_url": p["diff_url"],
                         "patch_url": p["patch_url"], "merged_at": p["merged_at"]},
        "closed_at": p["closed_at"], "created_at": p["created_at"], "updated_at": p["updated_at"], "draft": p["draft"],
        "closed_by": None, "author_association": p["author_association"],
        "reactions": reaction_rollup(f"{api}/issues/{n}/reactions", []), "timeline_url": f"{api}/issues/{n}/timeline",
        "performed_via_github_app": None,
    }


def issue_comment(site: Site, repo: RepoState, c: dict[str, Any]) -> dict[str, Any]:
    api = site.repo_api(repo)
    cid = int(c["id"])
    created = timestamp(c.get("created_at"), site.epoch)
    return {
        "id": cid, "node_id": node_id("IssueComment", cid), "url": f"{api}/issues/comments/{cid}",
        "html_url": comment_url(repo.full_name, c["number"], "issue_comment", cid), "body": c.get("body") or "",
        "user": user(site, c["user"]), "created_at": created, "updated_at": timestamp(c.get("updated_at"), created),
        "issue_url": f"{api}/issues/{c['number']}", "author_association": c.get("author_association", "NONE"),
        "performed_via_github_app": integration(site, c["app_id"]) if c.get("app_id") else None,
        "reactions": reaction_rollup(f"{api}/issues/comments/{cid}/reactions",
                                     repo.reactions.get(("issue_comment", cid), [])),
    }


def review(site: Site, repo: RepoState, r: dict[str, Any]) -> dict[str, Any]:
    api = site.repo_api(repo)
    rid = int(r["id"])
    html = comment_url(repo.full_name, r["number"], "review", rid)
    data: dict[str, Any] = {
        "id": rid, "node_id": node_id("PullRequestReview", rid), "user": user(site, r["user"]),
        "body": r.get("body") or "", "state": r.get("state", "COMMENTED"), "html_url": html,
        "pull_request_url": f"{api}/pulls/{r['number']}", "author_association": r.get("author_association", "NONE"),
        "_links": {"html": {"href": html}, "pull_request": {"href": f"{api}/pulls/{r['number']}"}},
        "commit_id": r.get("commit_id"),
    }
    if data["state"] != "PENDING":
        data["submitted_at"] = timestamp(r.get("submitted_at"), site.epoch)
    return data


def hunk_at(patch: str | None, line: int | None) -> tuple[str, int | None]:
    """GitHub's `diff_hunk` for a comment on new-side `line`: the hunk up to that line,
    and the comment's `position` (lines below the patch's first @@)."""
    lines = (patch or "").split("\n")
    start, new = 0, None
    for i, text in enumerate(lines):
        m = _HUNK.match(text)
        if m:
            start, new = i, int(m.group(1))
            continue
        if new is None or text.startswith("-"):
            continue
        if new == line:
            return "\n".join(lines[start:i + 1]), i
        new += 1
    return f"@@ -{line or 1},1 +{line or 1},1 @@", None


def review_comment(site: Site, repo: RepoState, c: dict[str, Any]) -> dict[str, Any]:
    api = site.repo_api(repo)
    cid = int(c["id"])
    pr = repo.pulls[c["number"]]
    commit_id = c.get("commit_id") or pr["head"]["sha"]
    at = commit_id if commit_id in repo.commits else pr["head"]["sha"]
    patch = next((d.patch for d in repo.diff(pr["base"]["sha"], at) if d.path == c.get("path")), None)
    hunk, position = hunk_at(patch, c.get("line"))
    created = timestamp(c.get("created_at"), site.epoch)
    html = comment_url(repo.full_name, c["number"], "review_comment", cid)
    pr_url = f"{api}/pulls/{c['number']}"
    data: dict[str, Any] = {
        "url": f"{api}/pulls/comments/{cid}", "pull_request_review_id": c.get("review_id"), "id": cid,
        "node_id": node_id("PullRequestReviewComment", cid), "diff_hunk": hunk, "path": c.get("path", ""),
        "position": position, "original_position": position, "commit_id": commit_id, "original_commit_id": commit_id,
        "user": user(site, c["user"]), "body": c.get("body") or "", "created_at": created,
        "updated_at": timestamp(c.get("updated_at"), created), "html_url": html, "pull_request_url": pr_url,
        "author_association": c.get("author_association", "NONE"),
        "_links": {"self": {"href": f"{api}/pulls/comments/{cid}"}, "html": {"href": html},
                   "pull_request": {"href": pr_url}},
        "start_line": None, "original_start_line": None, "start_side": None, "line": c.get("line"),
        "original_line": c.get("line"), "side": "RIGHT", "subject_type": "line",
        "reactions": reaction_rollup(f"{api}/pulls/comments/{cid}/reactions",
                                     repo.reactions.get(("review_comment", cid), [])),
    }
    if c.get("in_reply_to_id"):
        data["in_reply_to_id"] = c["in_reply_to_id"]
    return data


def reaction(site: Site, r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "node_id": node_id("Reaction", r["id"]), "user": user(site, r["user"]),
            "content": r["content"], "created_at": r["created_at"]}
