"""Build a snapshot straight from a world's files, without HTTP.

The engine's tests and the engine benchmark use this; `app.github.gather` builds the
same snapshot through the GitHub API (served by the fake from the same
world), and a test holds the two to equality. Evidence is chosen and fetched
as in production: a first snapshot, then what the checks found missing
(`checks.engine.Completion`), until nothing more is wanted, by the same
rounds (`app.fetcher.complete`) with the world as their `Fetcher`. `signoff-bot
backtest` reads a git repository as a world (`app.history.gitrepo`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from app.fetcher import complete_here
from app.files import NOT_FOLLOWED, decode_text
from app.github import artifacts as artifact_zip
from checks.engine import Completion
from checks.evidence import MISSING, Missing, UpstreamTarget
from checks.policy import CONFIG_PATH, Policy
from checks.registry import RULES
from checks.rule import Rule
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

from .world import Commit, Repo, World, diff_trees

_RUN_ID = re.compile(r"/actions/runs/(\d+)")


def judge_world(world: World, number: int | None = None, rules: tuple[Rule, ...] = RULES) -> Completion:
    """The evidence rounds of PR `number` (default: the world's only PR): its full snapshot and verdict.

    `rules` limits which rules run and may ask for evidence (default: all); unit tests of one check pass
    just its rules (`checks.registry.rules_of`).
    """
    repo, pr = world.pull_repo(number)
    return complete_here(Completion(_base_snapshot(world, repo, pr), rules), WorldFetcher(world, repo))


def snapshot_from_world(world: World, number: int | None = None, rules: tuple[Rule, ...] = RULES) -> Snapshot:
    """The snapshot of PR `number` with the evidence `rules` asked for (see `judge_world`)."""
    return judge_world(world, number, rules).snapshot


def comment_url(repo: str, number: int, kind: str, cid: int) -> str:
    anchor = {"issue_comment": "issuecomment", "review": "pullrequestreview", "review_comment": "discussion_r"}[kind]
    sep = "" if kind == "review_comment" else "-"
    return f"https://github.com/{repo}/pull/{number}#{anchor}{sep}{cid}"


def run_url(repo: str, run_id: int) -> str:
    return f"https://github.com/{repo}/actions/runs/{run_id}"


def _read(commit: Commit | None, path: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, why not) of `path` at `commit`, as gather reads it: symlinks are not followed."""
    if commit is None or path not in commit.files:
        return None, None
    if path in commit.symlinks:
        return None, NOT_FOLLOWED
    return decode_text(commit.files[path])


def _text_of(commit: Commit | None, path: str) -> str | None:
    return _read(commit, path)[0]


def _base_snapshot(world: World, repo: Repo, pr: dict[str, Any]) -> Snapshot:
    base_sha, head_sha = pr["base"]["sha"], pr["head"]["sha"]
    base, head = repo.commits[base_sha], repo.commits[head_sha]
    tip = repo.commit(pr["base"]["ref"])
    policy, _err = Policy.from_yaml(_text_of(tip, CONFIG_PATH))

    changed = []
    for d in diff_trees(base.files, head.files):
        base_text, base_err = _read(base, d.previous_path or d.path)
        head_text, head_err = _read(head, d.path)
        changed.append(ChangedFile(d.path, d.status, d.previous_path, d.patch, base_text, head_text,
                                   head_err or base_err))

    policy_files: dict[str, str] = {}
    for path in tip.files if tip else ():
        if policy.is_policy_file(path):
            text = _text_of(tip, path)
            if text is not None:
                policy_files[path] = text

    number = pr["number"]
    name = repo.full_name
    comments: list[Comment] = []
    for c in pr.get("issue_comments") or []:
        comments.append(_comment(name, number, "issue_comment", c, c.get("created_at", "")))
    for c in pr.get("reviews") or []:
        comments.append(_comment(name, number, "review", c, c.get("submitted_at", "")))
    for c in pr.get("review_comments") or []:
        comments.append(_comment(name, number, "review_comment", c, c.get("created_at", "")))
    comments.sort(key=lambda c: (c.created_at, c.kind, c.id))

    commits = tuple(pr.get("commits") or [head_sha])
    in_pr = set(commits)
    check_runs = tuple(sorted(
        (_check_run(name, cr) for cr in repo.check_runs if cr.get("head_sha") in in_pr),
        key=lambda c: (c.head_sha, c.name, c.id)))
    run_ids = {c.run_id for c in check_runs if c.run_id is not None}
    workflow_runs = tuple(_workflow_run(world, name, r) for r in repo.workflow_runs if r.get("id") in run_ids)

    return Snapshot(
        repo=name,
        pr=PullRequest(
            number=number,
            title=pr.get("title", ""),
            body=pr.get("body") or "",
            author=pr.get("user", ""),
            author_association=pr.get("author_association", "NONE"),
            state=pr.get("state", "open"),
            draft=bool(pr.get("draft", False)),
            merged=bool(pr.get("merged", False)),
            base_ref=pr["base"]["ref"],
            base_sha=base_sha,
            head_ref=pr["head"]["ref"],
            head_sha=head_sha,
            labels=tuple(pr.get("labels") or ()),
            head_repo=pr["head"].get("repo", name),
            url=f"https://github.com/{name}/pull/{number}",
        ),
        now=world.now,
        files=tuple(changed),
        commits=commits,
        comments=tuple(comments),
        check_runs=check_runs,
        workflow_runs=workflow_runs,
        policy_sha=tip.sha if tip else "",
        policy=frozen_map(policy_files),
        master_base=frozen_map(_master_configs(policy, base)),
        master_head=frozen_map(_master_configs(policy, head)),
    )


def _master_configs(policy: Policy, commit: Commit) -> dict[str, str]:
    out = {}
    for path in commit.files:
        if policy.is_master_config(path):
            text = _text_of(commit, path)
            if text is not None:
                out[path] = text
    return out


def _comment(repo: str, number: int, kind: str, c: dict, created: str) -> Comment:
    login = c.get("user", "")
    return Comment(
        id=int(c["id"]),
        kind=kind,
        author=login,
        author_association=c.get("author_association", "NONE"),
        body=c.get("body") or "",
        created_at=str(created),
        url=comment_url(repo, number, kind, int(c["id"])),
        author_is_bot=login.endswith("[bot]"),
        updated_at=str(c.get("updated_at") or created),
        path=c.get("path"),
        line=c.get("line"),
        commit_id=c.get("commit_id"),
        review_state=c.get("state") if kind == "review" else None,
        # A world may say a comment was edited (`edited_at`) and by whom (`last_editor`; null: GitHub
        # no longer names the account), as the fake's GraphQL edit history then does.
        last_editor=c.get("last_editor") if c.get("edited_at") else "",
        edited_at=str(c.get("edited_at") or ""),
    )


def _check_run(repo: str, cr: dict) -> CheckRun:
    return CheckRun(
        id=int(cr["id"]),
        name=cr["name"],
        head_sha=cr["head_sha"],
        status=cr.get("status", "completed"),
        conclusion=cr.get("conclusion"),
        run_id=cr.get("run_id"),
        started_at=str(cr.get("started_at") or ""),
        completed_at=str(cr.get("completed_at") or ""),
        url=f"{run_url(repo, cr['run_id'])}/job/{cr['id']}" if cr.get("run_id") else "",
    )


def _workflow_run(world: World, repo: str, r: dict, with_artifacts: bool = False) -> WorkflowRun:
    """A workflow run; its artifacts are listed only for runs the checks asked for (as gather does)."""
    return WorkflowRun(
        id=int(r["id"]),
        name=r.get("name", ""),
        path=r.get("path", ""),
        event=r.get("event", ""),
        head_sha=r.get("head_sha", ""),
        status=r.get("status", "completed"),
        conclusion=r.get("conclusion"),
        run_attempt=int(r.get("run_attempt") or 1),
        pull_requests=tuple(r.get("pull_requests") or ()),
        artifacts=tuple(Artifact(int(a["id"]), a["name"], bool(a.get("expired", False)),
                                 world.artifact_size(int(a["id"])))
                        for a in (r.get("artifacts") or [] if with_artifacts else [])),
        url=run_url(repo, int(r["id"])),
    )


class WorldFetcher:
    """The `app.fetcher.Fetcher` of a world's PR (and of a git history, read as a world): what GitHub would
    answer, read from the world's files."""

    def __init__(self, world: World, repo: Repo) -> None:
        self.world = world
        self.repo = repo

    async def file(self, sha: str, path: str) -> str | None | Missing:
        commit = self.repo.commits.get(sha)
        return MISSING if commit is None else _text_of(commit, path)

    async def paths(self, sha: str) -> Collection[str]:
        commit = self.repo.commits.get(sha)
        return commit.files.keys() if commit is not None else ()

    async def run(self, run_id: int, prefixes: tuple[str, ...]) -> tuple[WorkflowRun | None, list[ArtifactFiles]]:
        raw = self.repo.workflow_run(run_id)
        if raw is None:
            return None, []
        run = _workflow_run(self.world, self.repo.full_name, raw, with_artifacts=True)
        artifacts = []
        for a in run.artifacts:
            if not a.name.startswith(prefixes):
                continue
            archive = _archive_files(self.world, run_id, a)
            if archive is not None:
                artifacts.append(archive)
                continue
            files = {}
            for name, data in self.world.artifact_files(a.id).items():
                text, _err = decode_text(data)
                if name.endswith(".json") and text is not None:
                    files[name] = text
            artifacts.append(ArtifactFiles(a.id, a.name, run_id, frozen_map(files),
                                           "artifact expired" if a.expired else None))
        return run, artifacts

    async def upstream(self, target: UpstreamTarget) -> UpstreamDoc:
        return _upstream(self.world, target)

    async def membership(self, team: str, login: str) -> bool:
        members = self.world.teams.get(team, [])  # GitHub answers 404 for a non-member and for an unknown team
        return login.lower() in {m.lower() for m in members}

    async def permission(self, login: str) -> str:
        return self.repo.collaborators.get(login, "none")


def _archive_files(world: World, run_id: int, a: Artifact) -> ArtifactFiles | None:
    """A prebuilt archive read as gather reads a download (expiry, size cap, `app.github.artifacts.unpack`);
    None for an artifact built from its files."""
    path = world.archive_path(a.id)
    if path is None:
        return None
    if a.expired:
        return ArtifactFiles(a.id, a.name, run_id, error="artifact expired")
    too_big = artifact_zip.oversize(a.size_in_bytes)
    if too_big:
        return ArtifactFiles(a.id, a.name, run_id, error=too_big)
    files, error = artifact_zip.unpack(path.read_bytes())
    return ArtifactFiles(a.id, a.name, run_id, frozen_map(files), error)


def _upstream(world: World, target: UpstreamTarget) -> UpstreamDoc:
    repo = world.repos.get(target.repo)
    if repo is None:
        return UpstreamDoc(target.url, target.kind, target.repo, target.number, error=target.not_found(),
                           missing=True)
    if target.kind == "pull":
        pr = repo.pulls.get(target.number)
        if pr is None:
            return UpstreamDoc(target.url, "pull", target.repo, target.number, error=target.not_found(),
                               missing=True)
        merged = bool(pr.get("merged"))
        ref = pr.get("merge_commit_sha") if merged else pr["head"]["sha"]
        base = repo.commits.get(pr["base"]["sha"])
        at = repo.commits.get(ref)
        files = {}
        if at is not None:
            for d in diff_trees(base.files if base else {}, at.files):
                if d.head is not None:
                    text = _text_of(at, d.path)
                    if text is not None:
                        files[d.path] = text
        return UpstreamDoc(target.url, "pull", target.repo, target.number, state=pr.get("state", ""),
                           draft=bool(pr.get("draft")), merged=merged, merged_at=pr.get("merged_at"),
                           title=pr.get("title", ""), files=frozen_map(files))
    tip = repo.commit(repo.default_branch)
    for path in target.paths:
        text = _text_of(tip, path)
        if text is not None:
            return UpstreamDoc(target.url, "page", target.repo, files=frozen_map({path: text}))
    return UpstreamDoc(target.url, "page", target.repo,
                       error=f"no {' or '.join(target.paths) or 'source file'} on {target.repo}@{repo.default_branch}",
                       missing=True)
