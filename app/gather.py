"""Gather a pull request's snapshot from GitHub through githubkit.

The head SHA is resolved once and pinned for the whole snapshot. Policy
files are read from the tip of the PR's base branch (pinned by SHA), never
from the PR. Independent requests run concurrently; pagination is followed
everywhere; blobs are fetched by SHA and de-duplicated. The base text of a
modified file is rebuilt from its head text and GitHub's patch when the patch
is complete, which saves a request per file. Lists GitHub truncates (over
3,000 files, 250 commits) make the snapshot fail closed.

Gathering runs in rounds: a first snapshot, then the evidence the checks
name (`checks.evidence.wanted`), until nothing more is wanted. Nothing of
the PR head is executed or checked out.
"""

from __future__ import annotations

import asyncio
import base64
import re
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable

from githubkit import GitHub
from githubkit.exception import RequestFailed

from checks.evidence import UpstreamTarget, Wanted, wanted
from checks.policy import CONFIG_PATH, Policy
from checks.snapshot import (
    Artifact,
    ArtifactFiles,
    ChangedFile,
    CheckRun,
    Comment,
    PullRequest,
    Snapshot,
    UpstreamDoc,
    WorkflowRun,
    frozen_map,
)

from . import artifacts as artifact_zip
from .files import MAX_TEXT_BYTES, NOT_FOLLOWED, SYMLINK_MODE, decode_text
from .github import GitHubError, as_github_error
from .patches import base_from_patch

MAX_FILES = 3000
MAX_COMMITS = 250
MAX_ROUNDS = 3
PER_PAGE = 100
_RUN_ID = re.compile(r"/actions/runs/(\d+)")


def iso(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Gatherer:
    """Reads one repository through one githubkit client; caches blobs by SHA across calls."""

    def __init__(self, gh: GitHub, repo: str, bot_login: str = "signoff-bot[bot]"):
        self.gh = gh
        self.repo = repo
        self.owner, self.name = repo.split("/", 1)
        self.bot_login = bot_login
        self._texts: dict[tuple[str, str], tuple[str | None, str | None]] = {}

    # --- plumbing ------------------------------------------------------------

    async def _call(self, what: str, fn: Callable[..., Awaitable[Any]], *args, **kw):
        try:
            return await fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one GitHubError
            raise as_github_error(exc, what) from None

    async def _parsed(self, what: str, fn, *args, **kw):
        resp = await self._call(what, fn, *args, **kw)
        try:
            return resp.parsed_data
        except Exception as exc:  # noqa: BLE001 - a missing required field raises only here
            raise as_github_error(exc, what) from None

    async def _pages(self, what: str, fn, *args, limit: int | None = None, key: str | None = None, **kw) -> list:
        items: list = []
        page = 1
        while True:
            resp = await self._call(what, fn, *args, per_page=PER_PAGE, page=page, **kw)
            try:
                data = resp.parsed_data
                chunk = list(getattr(data, key)) if key else list(data)
            except Exception as exc:  # noqa: BLE001
                raise as_github_error(exc, what) from None
            items.extend(chunk)
            if limit is not None and len(items) >= limit:
                return items
            if 'rel="next"' not in resp.headers.get("link", "") or not chunk:
                return items
            page += 1

    async def _tree(self, sha: str, repo: str | None = None) -> dict[str, tuple[str, int, str]]:
        """path -> (blob SHA, size, mode) of every file and symlink in the commit (recursive); fails closed
        if truncated."""
        owner, name = (repo or self.repo).split("/", 1)
        tree = await self._parsed(f"tree {sha[:12]}", self.gh.rest.git.async_get_tree, owner, name, sha,
                                  recursive="1")
        if tree.truncated:
            raise GitHubError(f"the tree of {sha[:12]} is too large for GitHub to list; cannot gather", 422)
        return {e.path: (e.sha, int(e.size or 0), str(e.mode)) for e in tree.tree
                if e.type == "blob" and e.path and e.sha}

    async def _text(self, entry: tuple[str, int, str] | None,
                    repo: str | None = None) -> tuple[str | None, str | None]:
        """(text, None) or (None, why not) of a blob; content-addressed, so cached for the client's life.
        A symlink's blob is its target path: never read as the file's text."""
        if entry is None:
            return None, None
        sha, size, mode = entry
        if mode == SYMLINK_MODE:
            return None, NOT_FOLLOWED
        if size > MAX_TEXT_BYTES:  # never download what decode_text would refuse
            return None, f"file is {size:,} bytes, over the {MAX_TEXT_BYTES:,}-byte limit; not read"
        key = (repo or self.repo, sha)
        if key not in self._texts:
            owner, name = key[0].split("/", 1)
            blob = await self._parsed(f"blob {sha[:12]}", self.gh.rest.git.async_get_blob, owner, name, sha)
            raw = base64.b64decode(blob.content) if blob.encoding == "base64" else blob.content.encode()
            self._texts[key] = decode_text(raw)
        return self._texts[key]

    async def _contents(self, path: str, ref: str, repo: str | None = None) -> str | None:
        """Text of `path` at `ref`; None when absent (404) or not text."""
        owner, name = (repo or self.repo).split("/", 1)
        try:
            resp = await self.gh.rest.repos.async_get_content(owner, name, path, ref=ref)
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return None
            raise as_github_error(exc, f"contents {path}") from None
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, f"contents {path}") from None
        try:
            data = resp.parsed_data
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, f"contents {path}") from None
        if isinstance(data, list) or getattr(data, "type", "file") != "file" or data.content is None:
            return None
        raw = base64.b64decode(data.content) if data.encoding == "base64" else str(data.content).encode()
        return decode_text(raw)[0]

    # --- the snapshot ----------------------------------------------------------

    async def snapshot(self, number: int, now: str, modules=None) -> Snapshot:
        """The PR's snapshot; `modules` limits which checks may ask for evidence (default: all)."""
        snap = await self._first_round(number, now)
        seen = Wanted()
        for _ in range(MAX_ROUNDS):
            more = wanted(snap, modules)
            if not more or (seen | more) == seen:
                break
            seen = seen | more
            snap = await self._with_evidence(snap, seen)
        return snap

    async def _first_round(self, number: int, now: str) -> Snapshot:
        rest = self.gh.rest
        o, r = self.owner, self.name
        pull = await self._parsed(f"pull #{number}", rest.pulls.async_get, o, r, number)
        base_sha, head_sha = pull.base.sha, pull.head.sha

        branch, files, commits, issue_comments, reviews, review_comments, base_tree, head_tree = await asyncio.gather(
            self._parsed(f"branch {pull.base.ref}", rest.repos.async_get_branch, o, r, pull.base.ref),
            self._pages("PR files", rest.pulls.async_list_files, o, r, number, limit=MAX_FILES),
            self._pages("PR commits", rest.pulls.async_list_commits, o, r, number, limit=MAX_COMMITS),
            self._pages("issue comments", rest.issues.async_list_comments, o, r, number),
            self._pages("reviews", rest.pulls.async_list_reviews, o, r, number),
            self._pages("review comments", rest.pulls.async_list_review_comments, o, r, number),
            self._tree(base_sha),
            self._tree(head_sha),
        )
        truncated = None
        if len(files) >= MAX_FILES:
            truncated = f"GitHub lists at most {MAX_FILES} files of a pull request; this one has more"
        elif len(commits) >= MAX_COMMITS:
            truncated = f"GitHub lists at most {MAX_COMMITS} commits of a pull request; this one has more"
        tip_sha = branch.commit.sha
        tip_tree = base_tree if tip_sha == base_sha else await self._tree(tip_sha)

        policy, _err = Policy.from_yaml((await self._text(tip_tree.get(CONFIG_PATH)))[0])
        policy_paths = sorted(p for p in tip_tree if policy.is_policy_file(p))
        commit_shas = [c.sha for c in commits] or [head_sha]

        changed, policy_texts, master_base, master_head, run_lists = await asyncio.gather(
            asyncio.gather(*(self._changed_file(f, base_tree, head_tree) for f in files)),
            asyncio.gather(*(self._text(tip_tree[p]) for p in policy_paths)),
            self._master_configs(policy, base_tree),
            self._master_configs(policy, head_tree),
            asyncio.gather(*(self._pages(f"check runs of {sha[:12]}", rest.checks.async_list_for_ref, o, r, sha,
                                         key="check_runs", filter_="all") for sha in commit_shas)),
        )
        check_runs = sorted((_check_run(c) for runs in run_lists for c in runs),
                            key=lambda c: (c.head_sha, c.name, c.id))
        run_ids = sorted({c.run_id for c in check_runs if c.run_id is not None})
        workflow_runs = await asyncio.gather(*(self._workflow_run(i) for i in run_ids))

        comments = [_comment(c, "issue_comment", c.created_at) for c in issue_comments]
        comments += [_comment(c, "review", c.submitted_at) for c in reviews]
        comments += [_comment(c, "review_comment", c.created_at) for c in review_comments]
        comments.sort(key=lambda c: (c.created_at, c.kind, c.id))

        head_repo = pull.head.repo.full_name if pull.head.repo else ""
        return Snapshot(
            repo=self.repo,
            pr=PullRequest(
                number=pull.number, title=pull.title, body=pull.body or "", author=pull.user.login,
                author_association=str(pull.author_association), state=str(pull.state), draft=bool(pull.draft),
                merged=bool(pull.merged), base_ref=pull.base.ref, base_sha=base_sha, head_ref=pull.head.ref,
                head_sha=head_sha, labels=tuple(label.name for label in pull.labels), head_repo=head_repo,
                url=pull.html_url,
            ),
            now=now,
            files=tuple(sorted(changed, key=lambda f: f.path)),
            commits=tuple(commit_shas),
            comments=tuple(comments),
            check_runs=tuple(check_runs),
            workflow_runs=tuple(w for w in workflow_runs if w is not None),
            policy_sha=tip_sha,
            policy=frozen_map({p: t for p, (t, _e) in zip(policy_paths, policy_texts) if t is not None}),
            master_base=frozen_map(master_base),
            master_head=frozen_map(master_head),
            bot_login=self.bot_login,
            truncated=truncated,
        )

    async def _changed_file(self, f, base_tree: dict, head_tree: dict) -> ChangedFile:
        status = str(f.status)
        status = {"changed": "modified", "copied": "added"}.get(status, status)
        previous = f.previous_filename or None
        patch = f.patch or None
        head_text, head_err = (None, None) if status == "removed" else await self._text(head_tree.get(f.filename))
        base_text, base_err = None, None
        if status != "added":
            rebuilt = base_from_patch(head_text, patch) if status == "modified" and head_text is not None else None
            if rebuilt is not None:
                base_text = rebuilt
            else:
                base_text, base_err = await self._text(base_tree.get(previous or f.filename))
        return ChangedFile(f.filename, status, previous, patch, base_text, head_text, head_err or base_err)

    async def _master_configs(self, policy: Policy, tree: dict) -> dict[str, str]:
        paths = sorted(p for p in tree if policy.is_master_config(p))
        texts = await asyncio.gather(*(self._text(tree[p]) for p in paths))
        return {p: t for p, (t, _e) in zip(paths, texts) if t is not None}

    async def _workflow_run(self, run_id: int, with_artifacts: bool = False) -> WorkflowRun | None:
        rest = self.gh.rest
        try:
            run = await self._parsed(f"workflow run {run_id}", rest.actions.async_get_workflow_run,
                                     self.owner, self.name, run_id)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        found: list = []
        if with_artifacts:
            found = await self._pages(f"artifacts of run {run_id}", rest.actions.async_list_workflow_run_artifacts,
                                      self.owner, self.name, run_id, key="artifacts")
        return WorkflowRun(
            id=run.id, name=run.name or "", path=run.path, event=run.event, head_sha=run.head_sha,
            status=str(run.status or ""), conclusion=run.conclusion, run_attempt=int(run.run_attempt or 1),
            pull_requests=tuple(p.number for p in run.pull_requests or ()),
            artifacts=tuple(Artifact(a.id, a.name, bool(a.expired), int(a.size_in_bytes or 0)) for a in found),
            url=run.html_url,
        )

    # --- second round: what the checks asked for ------------------------------

    async def _with_evidence(self, snap: Snapshot, want: Wanted) -> Snapshot:
        policy, _err = Policy.from_yaml(snap.policy.get(CONFIG_PATH))
        files = await asyncio.gather(*(self._contents(path, sha) for sha, path in want.files))
        extra: dict[str, dict[str, str | None]] = {}
        for (sha, path), text in zip(want.files, files):
            extra.setdefault(sha, {})[path] = text

        runs = await asyncio.gather(*(self._workflow_run(i, with_artifacts=True) for i in want.runs))
        by_id = {r.id: r for r in snap.workflow_runs}
        for run in runs:
            if run is not None:
                by_id[run.id] = run  # the fuller record, with artifacts
        prefixes = policy.eval_artifact_prefixes + policy.bmk_artifact_prefixes
        wanted_artifacts = [(run.id, a) for run in runs if run is not None for a in run.artifacts
                            if a.name.startswith(prefixes)]
        unpacked = await asyncio.gather(*(self._artifact(run_id, a) for run_id, a in wanted_artifacts))

        upstream, teams, permissions = await asyncio.gather(
            asyncio.gather(*(self._upstream(t) for t in want.upstream)),
            asyncio.gather(*(self._membership(team, login) for team, login in want.teams)),
            asyncio.gather(*(self._permission(login) for login in want.permissions)),
        )
        team_map: dict[str, tuple[str, ...]] = {}
        for (team, login), member in zip(want.teams, teams):
            if member is None:
                continue  # unknown: GitHub would not tell us
            known = team_map.setdefault(team, ())
            if member:
                team_map[team] = tuple(sorted(set(known) | {login}))
        return replace(
            snap,
            extra_files=frozen_map({sha: frozen_map(f) for sha, f in extra.items()}),
            workflow_runs=tuple(sorted(by_id.values(), key=lambda r: r.id)),
            artifacts=tuple(sorted(unpacked, key=lambda a: (a.run_id, a.artifact_id))),
            upstream=tuple(upstream),
            teams=frozen_map(team_map),
            collaborators=frozen_map({login: p for login, p in zip(want.permissions, permissions)}),
        )

    async def _artifact(self, run_id: int, artifact: Artifact) -> ArtifactFiles:
        if artifact.expired:
            return ArtifactFiles(artifact.id, artifact.name, run_id, error="artifact expired")
        if artifact.size_in_bytes > artifact_zip.MAX_ZIP_BYTES:
            return ArtifactFiles(artifact.id, artifact.name, run_id,
                                 error=f"artifact is {artifact.size_in_bytes:,} bytes, over the "
                                       f"{artifact_zip.MAX_ZIP_BYTES:,}-byte cap")
        resp = await self._call(f"artifact {artifact.id}", self.gh.rest.actions.async_download_artifact,
                                self.owner, self.name, artifact.id, "zip")
        files, error = artifact_zip.unpack(resp.content)
        return ArtifactFiles(artifact.id, artifact.name, run_id, frozen_map(files), error)

    async def _upstream(self, target: UpstreamTarget) -> UpstreamDoc:
        try:
            if target.kind == "pull":
                return await self._upstream_pull(target)
            return await self._upstream_page(target)
        except GitHubError as exc:
            return UpstreamDoc(target.url, target.kind, target.repo, target.number,
                               error=f"{target.repo} could not be read ({exc})")

    async def _upstream_pull(self, target: UpstreamTarget) -> UpstreamDoc:
        owner, name = target.repo.split("/", 1)
        what = f"{target.repo}#{target.number}"
        try:
            resp = await self._call(what, self.gh.rest.pulls.async_get, owner, name, target.number)
        except GitHubError as exc:
            if exc.status == 404:
                return UpstreamDoc(target.url, "pull", target.repo, target.number, error=target.not_found())
            raise
        try:
            pull = resp.parsed_data
            # Newer API schemas dropped merge_commit_sha from the model; GitHub still sends it.
            merge_sha = resp.json().get("merge_commit_sha")
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, what) from None
        merged = bool(pull.merged)
        ref = merge_sha if merged and merge_sha else pull.head.sha
        listed = await self._pages(f"files of {target.repo}#{target.number}", self.gh.rest.pulls.async_list_files,
                                   owner, name, target.number)
        paths = sorted(f.filename for f in listed if str(f.status) != "removed")
        texts = await asyncio.gather(*(self._contents(p, ref, target.repo) for p in paths))
        return UpstreamDoc(
            target.url, "pull", target.repo, target.number, state=str(pull.state), draft=bool(pull.draft),
            merged=merged, merged_at=iso(pull.merged_at) or None, title=pull.title,
            files=frozen_map({p: t for p, t in zip(paths, texts) if t is not None}),
        )

    async def _upstream_page(self, target: UpstreamTarget) -> UpstreamDoc:
        owner, name = target.repo.split("/", 1)
        try:
            repo = await self._parsed(target.repo, self.gh.rest.repos.async_get, owner, name)
        except GitHubError as exc:
            if exc.status == 404:
                return UpstreamDoc(target.url, "page", target.repo, error=target.not_found())
            raise
        for path in target.paths:
            text = await self._contents(path, repo.default_branch, target.repo)
            if text is not None:
                return UpstreamDoc(target.url, "page", target.repo, files=frozen_map({path: text}))
        return UpstreamDoc(target.url, "page", target.repo,
                           error=f"no {' or '.join(target.paths) or 'source file'} on "
                                 f"{target.repo}@{repo.default_branch}")

    async def _membership(self, team: str, login: str) -> bool | None:
        """True/False when GitHub says whether `login` is in `team`; None when it will not say."""
        org, _, slug = team.partition("/")
        try:
            m = await self._parsed(f"membership of {login} in {team}", self.gh.rest.teams.async_get_membership_for_user_in_org,
                                   org, slug, login)
        except GitHubError as exc:
            if exc.status == 404:
                return False
            if exc.status == 403:
                return None
            raise
        return str(m.state) == "active"

    async def _permission(self, login: str) -> str:
        try:
            p = await self._parsed(f"permission of {login}", self.gh.rest.repos.async_get_collaborator_permission_level,
                                   self.owner, self.name, login)
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        return str(p.permission)


def _check_run(c) -> CheckRun:
    m = _RUN_ID.search(c.details_url or "")
    return CheckRun(
        id=c.id, name=c.name, head_sha=c.head_sha, status=str(c.status), conclusion=c.conclusion,
        run_id=int(m.group(1)) if m else None, started_at=iso(c.started_at), completed_at=iso(c.completed_at),
        url=c.details_url or c.html_url or "",
    )


def _comment(c, kind: str, created: datetime | None) -> Comment:
    user = c.user
    login = user.login if user else "ghost"
    return Comment(
        id=c.id, kind=kind, author=login, author_association=str(c.author_association), body=c.body or "",
        created_at=iso(created), url=c.html_url, author_is_bot=bool(user and str(user.type) == "Bot"),
        updated_at=iso(getattr(c, "updated_at", None) or created),
        path=getattr(c, "path", None), line=getattr(c, "line", None), commit_id=getattr(c, "commit_id", None),
        review_state=str(c.state) if kind == "review" else None,
    )
