"""The immutable input of the check engine: everything known about one pull request.

The app gathers a snapshot from GitHub (or a world fixture) and hands it to
`checks.engine.evaluate`. Nothing in `checks/` reads the network, the clock or
the environment: the review date is `Snapshot.now`, and every file a check
needs is in here, keyed by the commit it was read at.

Trust boundary: `policy` holds files read from the tip of the PR's base branch
(pinned by `policy_sha`); the PR itself can never change them. Files of the
PR (`files`, `head_files`) are evidence to judge, never rules to follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, TypeVar

K = TypeVar("K")
V = TypeVar("V")

from .policy import CONFIG_PATH


def frozen_map(data: Mapping[K, V] | None = None) -> Mapping[K, V]:
    """A read-only, key-sorted mapping (sorted so iteration is deterministic)."""
    return MappingProxyType(dict(sorted((data or {}).items())))


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    body: str
    author: str
    author_association: str
    state: str  # open | closed
    draft: bool
    merged: bool
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    labels: tuple[str, ...] = ()
    head_repo: str = ""  # owner/name of the head repository; differs from the base repo for forks
    url: str = ""


@dataclass(frozen=True)
class ChangedFile:
    """One entry of the PR's diff (base commit -> head commit).

    `base_text`/`head_text` are None when the file does not exist on that
    side, or when its content could not be read as text (`error` says why:
    binary, too large, symlink, not UTF-8).
    """

    path: str
    status: str  # added | modified | removed | renamed
    previous_path: str | None = None
    patch: str | None = None
    base_text: str | None = None
    head_text: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Comment:
    """A conversation comment, a review summary or an inline review comment."""

    id: int
    kind: str  # issue_comment | review | review_comment
    author: str
    author_association: str
    body: str
    created_at: str  # ISO 8601, UTC
    url: str = ""
    author_is_bot: bool = False
    updated_at: str = ""
    path: str | None = None  # inline review comments only
    line: int | None = None
    commit_id: str | None = None
    review_state: str | None = None  # reviews only: APPROVED | COMMENTED | CHANGES_REQUESTED
    # Who wrote the body as it stands, from GitHub's edit history: `last_editor` is the login of whoever
    # last edited it ("" when it was never edited), None when GitHub would not tell; `edited_at` is when.
    last_editor: str | None = ""
    edited_at: str = ""

    @property
    def kind_label(self) -> str:
        return {
            "issue_comment": "conversation comment",
            "review": "review summary",
            "review_comment": "inline review comment",
        }.get(self.kind, self.kind)


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str  # queued | in_progress | completed
    conclusion: str | None
    run_id: int | None = None  # the workflow run behind it (from details_url)
    started_at: str = ""
    completed_at: str = ""
    url: str = ""
    # What one of this App's own sign-off check runs recorded: when that verification read the PR, and
    # every sign-off pin of the PR (checks.facts.freshness.Record, as JSON); "" on any other check run. Only the
    # App can write its runs.
    record: str = ""


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    expired: bool = False
    size_in_bytes: int = 0


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    name: str
    path: str
    event: str
    head_sha: str
    status: str
    conclusion: str | None
    run_attempt: int = 1
    pull_requests: tuple[int, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    url: str = ""


@dataclass(frozen=True)
class ArtifactFiles:
    """The unpacked content of one workflow artifact (JSON files as text).

    `error` is set, and `files` empty, when the artifact was refused: too
    large, a zip bomb, path traversal, expired, or not downloadable.
    """

    artifact_id: int
    name: str
    run_id: int
    files: Mapping[str, str] = field(default_factory=frozen_map)
    error: str | None = None


@dataclass(frozen=True)
class UpstreamDoc:
    """An upstream recipe a sign-off links to, as read from the upstream repository.

    kind "pull": a pull request of `repo`; `files` are the files it changed,
    read at its merge commit (or head when unmerged).
    kind "page": a published page (recipes.vllm.ai, docs.sglang.io cookbook);
    `files` holds the single source file on the repository's default branch.
    `error` says why the document could not be read (the check fails closed).
    """

    url: str
    kind: str  # pull | page
    repo: str
    number: int | None = None
    state: str = ""
    draft: bool = False
    merged: bool = False
    merged_at: str | None = None
    title: str = ""
    files: Mapping[str, str] = field(default_factory=frozen_map)
    error: str | None = None
    # True when GitHub says the document does not exist (or is not public): a link to it is a bad link,
    # not evidence the checks could not read.
    missing: bool = False


@dataclass(frozen=True)
class Snapshot:
    repo: str  # owner/name
    pr: PullRequest
    now: str  # ISO 8601 UTC: the review date the checks use
    files: tuple[ChangedFile, ...]
    commits: tuple[str, ...]  # the PR's commit SHAs, oldest first
    comments: tuple[Comment, ...]
    check_runs: tuple[CheckRun, ...] = ()
    workflow_runs: tuple[WorkflowRun, ...] = ()
    artifacts: tuple[ArtifactFiles, ...] = ()
    policy_sha: str = ""
    policy: Mapping[str, str] = field(default_factory=frozen_map)  # path -> text at the base branch tip
    config_path: str = CONFIG_PATH  # which of `policy` is the repository's policy file (the Action's `config`)
    master_base: Mapping[str, str] = field(default_factory=frozen_map)  # master configs at pr.base_sha
    master_head: Mapping[str, str] = field(default_factory=frozen_map)  # master configs at pr.head_sha
    # Further files the checks asked for: sha -> path -> text (None: absent at that commit).
    extra_files: Mapping[str, Mapping[str, str | None]] = field(default_factory=frozen_map)
    upstream: tuple[UpstreamDoc, ...] = ()
    teams: Mapping[str, tuple[str, ...]] = field(default_factory=frozen_map)  # "org/slug" -> logins, where known
    collaborators: Mapping[str, str] = field(default_factory=frozen_map)  # login -> permission, where known
    bot_login: str = "signoff-bot[bot]"
    truncated: str | None = None  # set when GitHub truncated a list (files > 3000, commits > 250)

    # --- lookups -----------------------------------------------------------

    def changed(self, path: str) -> ChangedFile | None:
        for f in self.files:
            if f.path == path:
                return f
        return None

    def sha_of(self, at: str) -> str:
        return {"head": self.pr.head_sha, "base": self.pr.base_sha}.get(at, at)

    def read(self, path: str, at: str = "head") -> str | None:
        """Text of `path` at "head", "base" or a commit SHA; None if absent or unknown."""
        sha = self.sha_of(at)
        if sha == self.pr.head_sha:
            f = self.changed(path)
            if f is not None:
                return f.head_text
            if path in self.master_head:
                return self.master_head[path]
        elif sha == self.pr.base_sha:
            for f in self.files:
                if (f.previous_path or f.path) == path:
                    return f.base_text
            if path in self.master_base:
                return self.master_base[path]
        return (self.extra_files.get(sha) or {}).get(path)

    def knows(self, path: str, at: str = "head") -> bool:
        """Whether the snapshot holds `path` at `at` (present, or known to be absent)."""
        sha = self.sha_of(at)
        if sha == self.pr.head_sha and (self.changed(path) is not None or path in self.master_head):
            return True
        if sha == self.pr.base_sha and (
            any((f.previous_path or f.path) == path for f in self.files) or path in self.master_base
        ):
            return True
        return path in (self.extra_files.get(sha) or {})

    def artifacts_of(self, run_id: int) -> tuple[ArtifactFiles, ...]:
        return tuple(a for a in self.artifacts if a.run_id == run_id)

    def run(self, run_id: int) -> WorkflowRun | None:
        return next((r for r in self.workflow_runs if r.id == run_id), None)
