"""GitHub-shaped JSON for git data: commits, branches, refs, contents, trees, blobs and statuses."""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import quote

from app.offline.world import Commit, FileDiff

from .gitdata import Entry
from .ids import blob_sha, node_id, stable_id
from .payloads import HTML, Site, repository, user
from .state import RepoState

_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_UNSIGNED = {"verified": False, "reason": "unsigned", "signature": None, "payload": None, "verified_at": None}


def wrapped_base64(data: bytes) -> str:
    """Base64 in lines of 60 characters, as the contents and blobs APIs send it."""
    text = base64.b64encode(data).decode()
    return "".join(text[i:i + 60] + "\n" for i in range(0, len(text), 60))


def _person(site: Site, name: str) -> dict[str, str]:
    email = re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-").lower() or "unknown"
    return {"name": name, "email": f"{email}@users.noreply.github.com", "date": site.epoch}


def commit(site: Site, repo: RepoState, c: Commit, *, with_files: bool = False) -> dict[str, Any]:
    """A Commit (as in GET /commits/{ref}, which adds `stats` and `files`, and in lists)."""
    api = site.repo_api(repo)
    tree = repo.git.root(c)
    author = _person(site, c.author or "unknown")
    data: dict[str, Any] = {
        "url": f"{api}/commits/{c.sha}", "sha": c.sha, "node_id": node_id("Commit", stable_id("commit", c.sha)),
        "html_url": f"{HTML}/{repo.full_name}/commit/{c.sha}", "comments_url": f"{api}/commits/{c.sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{c.sha}", "author": author, "committer": author, "message": c.message,
            "comment_count": 0, "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"}, "verification": _UNSIGNED,
        },
        "author": user(site, c.author) if _LOGIN.match(c.author or "") else None,
        "committer": user(site, c.author) if _LOGIN.match(c.author or "") else None,
        "parents": [{"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{HTML}/{repo.full_name}/commit/{p}"}
                    for p in c.parents],
    }
    if with_files:
        parent = c.parents[0] if c.parents and c.parents[0] in repo.commits else None
        diffs = repo.diff(parent, c.sha)
        adds, dels = sum(d.additions for d in diffs), sum(d.deletions for d in diffs)
        data["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        data["files"] = [diff_entry(site, repo, c.sha, d) for d in diffs]
    return data


def git_commit(site: Site, repo: RepoState, c: Commit) -> dict[str, Any]:
    """GET /git/commits/{sha}: a GitCommit."""
    api = site.repo_api(repo)
    tree = repo.git.root(c)
    person = _person(site, c.author or "unknown")
    return {
        "sha": c.sha, "node_id": node_id("Commit", stable_id("commit", c.sha)), "url": f"{api}/git/commits/{c.sha}",
        "html_url": f"{HTML}/{repo.full_name}/commit/{c.sha}", "author": person, "committer": person,
        "message": c.message, "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
        "parents": [{"sha": p, "url": f"{api}/git/commits/{p}", "html_url": f"{HTML}/{repo.full_name}/commit/{p}"}
                    for p in c.parents],
        "verification": _UNSIGNED,
    }


def diff_entry(site: Site, repo: RepoState, head: str, d: FileDiff) -> dict[str, Any]:
    """One file of a comparison (pulls/{n}/files, commits/{ref})."""
    api = site.repo_api(repo)
    path = quote(d.path)
    data: dict[str, Any] = {
        "sha": blob_sha(d.head if d.head is not None else d.base or b""), "filename": d.path, "status": d.status,
        "additions": d.additions, "deletions": d.deletions, "changes": d.additions + d.deletions,
        "blob_url": f"{HTML}/{repo.full_name}/blob/{head}/{path}",
        "raw_url": f"{HTML}/{repo.full_name}/raw/{head}/{path}",
        "contents_url": f"{api}/contents/{path}?ref={head}",
    }
    if d.patch is not None:
        data["patch"] = d.patch
    if d.previous_path is not None:
        data["previous_filename"] = d.previous_path
    return data


def branch(site: Site, repo: RepoState, name: str, c: Commit) -> dict[str, Any]:
    """GET /branches/{branch}: a BranchWithProtection."""
    api = site.repo_api(repo)
    return {
        "name": name, "commit": commit(site, repo, c),
        "_links": {"self": f"{api}/branches/{quote(name)}", "html": f"{HTML}/{repo.full_name}/tree/{name}"},
        "protected": False,
        "protection": {"enabled": False, "required_status_checks": {"enforcement_level": "off", "contexts": [],
                                                                    "checks": []}},
        "protection_url": f"{api}/branches/{quote(name)}/protection",
    }


def short_branch(site: Site, repo: RepoState, name: str, sha: str) -> dict[str, Any]:
    """An entry of GET /branches."""
    return {"name": name, "commit": {"sha": sha, "url": f"{site.repo_api(repo)}/commits/{sha}"}, "protected": False}


def git_ref(site: Site, repo: RepoState, name: str, sha: str) -> dict[str, Any]:
    api = site.repo_api(repo)
    ref = f"refs/heads/{name}"
    return {"ref": ref, "node_id": node_id("Ref", stable_id("ref", f"{repo.full_name}:{ref}")),
            "url": f"{api}/git/{ref}", "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"}}


def content_item(site: Site, repo: RepoState, ref: str, path: str, entry: Entry,
                 data: bytes | None = None) -> dict[str, Any]:
    """A file (with base64 `content` when `data` is given) or a directory entry of the contents API."""
    api = site.repo_api(repo)
    is_dir = entry.type == "tree"
    url = f"{api}/contents/{quote(path)}?ref={quote(ref)}"
    git_url = f"{api}/git/{'trees' if is_dir else 'blobs'}/{entry.sha}"
    html_url = f"{HTML}/{repo.full_name}/{'tree' if is_dir else 'blob'}/{ref}/{path}"
    item: dict[str, Any] = {
        "type": "dir" if is_dir else "file", "size": entry.size or 0, "name": path.rsplit("/", 1)[-1], "path": path,
        "sha": entry.sha, "url": url, "git_url": git_url, "html_url": html_url,
        "download_url": None if is_dir else f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{path}",
        "_links": {"self": url, "git": git_url, "html": html_url},
    }
    if data is not None:
        item.update({"content": wrapped_base64(data), "encoding": "base64"})
    return item


def symlink_item(site: Site, repo: RepoState, ref: str, path: str, entry: Entry, target: bytes) -> dict[str, Any]:
    """A symlink in the contents API: its target, no content (GitHub follows a link only to a regular
    file of the repository; the fake never follows one)."""
    item = content_item(site, repo, ref, path, entry)
    item.update(type="symlink", target=target.decode("utf-8", "replace"))
    return item


def git_tree(site: Site, repo: RepoState, sha: str, entries: list[tuple[str, Entry]]) -> dict[str, Any]:
    api = site.repo_api(repo)
    items = []
    for path, e in entries:
        item: dict[str, Any] = {"path": path, "mode": e.mode, "type": e.type, "sha": e.sha}
        if e.size is not None:
            item["size"] = e.size
        item["url"] = f"{api}/git/{'trees' if e.type == 'tree' else 'blobs'}/{e.sha}"
        items.append(item)
    return {"sha": sha, "url": f"{api}/git/trees/{sha}", "tree": items, "truncated": False}


def blob(site: Site, repo: RepoState, sha: str, data: bytes) -> dict[str, Any]:
    return {"sha": sha, "node_id": node_id("Blob", stable_id("blob", sha)), "size": len(data),
            "url": f"{site.repo_api(repo)}/git/blobs/{sha}", "content": wrapped_base64(data), "encoding": "base64"}


def status(site: Site, repo: RepoState, s: dict[str, Any]) -> dict[str, Any]:
    """A commit Status (a superset of SimpleCommitStatus)."""
    creator = user(site, s["creator"])
    return {
        "url": f"{site.repo_api(repo)}/statuses/{s['sha']}", "avatar_url": creator["avatar_url"], "id": s["id"],
        "node_id": node_id("StatusContext", s["id"]), "state": s["state"], "description": s.get("description"),
        "target_url": s.get("target_url"), "context": s["context"], "created_at": s["created_at"],
        "updated_at": s["updated_at"], "creator": creator,
    }


def combined_status(site: Site, repo: RepoState, sha: str, statuses: list[dict[str, Any]]) -> dict[str, Any]:
    """GET /commits/{ref}/status: the latest status of each context, and their overall state."""
    latest: dict[str, dict[str, Any]] = {}
    for s in reversed(statuses):
        latest.setdefault(s["context"], s)
    states = {s["state"] for s in latest.values()}
    state = ("failure" if states & {"error", "failure"} else "pending" if not states or "pending" in states
             else "success")
    api = site.repo_api(repo)
    items = [{k: v for k, v in status(site, repo, s).items() if k != "creator"} for s in latest.values()]
    return {"state": state, "statuses": items, "sha": sha, "total_count": len(items),
            "repository": repository(site, repo), "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status"}
