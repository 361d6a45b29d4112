"""GitHub's state in memory, built from worlds: what the routes read and write.

Worlds are read-only input: their pull requests, comments, check runs and runs
are copied into mutable per-repository tables here, and every write lands in
those tables, so later reads see it. Several worlds merge into one state when
they agree; an object two worlds define differently is a `WorldConflict`.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from app.offline.world import Commit, FileDiff, World, diff_trees

from .faults import Faults
from .gitdata import GitObjects
from .ids import stable_id
from .ledger import Ledger

APP_SLUG = "signoff-bot"
DEFAULT_APP_ID = 1
TOKEN_LIFETIME = timedelta(hours=1)
_TOKEN = re.compile(r"^ghs_(?P<installation>\d+)i(?P<app>\d+)a[0-9a-f]{24}$")


class WorldConflict(ValueError):
    """Two worlds define the same object differently."""


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


@dataclass
class Clock:
    """The time of writes: starts at the worlds' `now` and moves one second per write,
    so objects made during a test sort after the world's and timestamps are deterministic."""

    now: datetime

    def tick(self) -> str:
        self.now += timedelta(seconds=1)
        return iso(self.now)


@dataclass(frozen=True)
class ArtifactRef:
    data: dict[str, Any]  # the world's {id, name, expired?}
    run_id: int
    world: World


@dataclass(frozen=True)
class Token:
    token: str
    installation_id: int
    app_id: int
    expires_at: str


# What the example workflow grants its GITHUB_TOKEN to write (examples/signoff-verify.yml); no team reads.
WORKFLOW_PERMISSIONS = frozenset({"checks", "statuses", "issues", "pull_requests"})


@dataclass(frozen=True)
class PlainToken:
    """A workflow's token: the writes it may make (checks, statuses, issues, pull_requests) and whether it
    reads organisation teams (members)."""

    token: str
    permissions: frozenset[str] = WORKFLOW_PERMISSIONS

    @classmethod
    def parse(cls, spec: str) -> "PlainToken":
        """`TOKEN` (the example workflow's permissions) or `TOKEN:perm,perm` (exactly those; none after a
        bare colon)."""
        token, colon, perms = spec.partition(":")
        if not token:
            raise ValueError(f"a token spec needs a token: {spec!r}")
        return cls(token, frozenset(p.strip() for p in perms.split(",") if p.strip()) if colon
                   else WORKFLOW_PERMISSIONS)


@dataclass
class RepoState:
    full_name: str
    default_branch: str
    installation_id: int | None
    collaborators: dict[str, str]
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    issue_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[int, dict[str, Any]] = field(default_factory=dict)
    review_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    workflow_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[int, ArtifactRef] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    reactions: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    git: GitObjects = field(default_factory=GitObjects)
    _diffs: dict[tuple[str, str], list[FileDiff]] = field(default_factory=dict)

    @property
    def owner(self) -> str:
        return self.full_name.split("/")[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/")[1]

    @property
    def id(self) -> int:
        return stable_id("repo", self.full_name.lower())

    def commit(self, ref: str) -> Commit | None:
        """A commit by SHA, branch name or `refs/heads/<branch>`."""
        ref = ref.removeprefix("refs/heads/").removeprefix("heads/")
        return self.commits.get(self.branches.get(ref, ref))

    def diff(self, base: str | None, head: str) -> list[FileDiff]:
        """The files changed from commit `base` (None: the empty tree) to commit `head`
        (cached; commits never change)."""
        key = (base or "", head)
        if key not in self._diffs:
            self._diffs[key] = diff_trees(self.commits[base].files if base else {}, self.commits[head].files)
        return self._diffs[key]

    def warm(self) -> None:
        """Hash every commit and diff every pull request now, as GitHub has long done before anyone asks:
        done on the first read instead, it would slow that read, and every other read of its wave, by the
        time the hashing takes."""
        for c in self.commits.values():
            self.git.root(c)
        for pr in self.pulls.values():
            if pr["head"]["sha"] in self.commits and pr["base"]["sha"] in self.commits:
                self.diff(pr["base"]["sha"], pr["head"]["sha"])

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        return _ordered(c for c in self.issue_comments.values() if c["number"] == number)

    def reviews_on(self, number: int) -> list[dict[str, Any]]:
        return sorted((r for r in self.reviews.values() if r["number"] == number),
                      key=lambda r: (str(r.get("submitted_at") or ""), r["id"]))

    def review_comments_on(self, number: int | None) -> list[dict[str, Any]]:
        return _ordered(c for c in self.review_comments.values() if number is None or c["number"] == number)

    def from_fork(self, pr: dict[str, Any]) -> bool:
        """Whether a PR's head branch is in another repository (a world sets `head.repo`)."""
        return pr["head"].get("repo", self.full_name).lower() != self.full_name.lower()

    def pulls_at(self, sha: str) -> list[dict[str, Any]]:
        """Open pull requests whose head is `sha`, as check runs and check suites list them: GitHub
        leaves a fork's PR out (its pushes happen in another repository), so it is never among them."""
        return [p for p in self.pulls.values() if p["head"]["sha"] == sha and p.get("state", "open") == "open"
                and not self.from_fork(p)]

    def run_times(self, run_id: int) -> tuple[str | None, str | None]:
        """When a workflow run started and last changed, from its check runs."""
        runs = [c for c in self.check_runs.values() if c.get("run_id") == run_id]
        starts = [str(c["started_at"]) for c in runs if c.get("started_at")]
        ends = [str(c.get("completed_at") or c.get("started_at")) for c in runs
                if c.get("completed_at") or c.get("started_at")]
        return (min(starts) if starts else None, max(ends) if ends else None)


def _ordered(items) -> list[dict[str, Any]]:
    return sorted(items, key=lambda c: (str(c.get("created_at") or ""), c["id"]))


@dataclass
class WebhookTarget:
    url: str | None = None
    secret: str | None = None


@dataclass
class GitHubState:
    """Everything the fake knows: repositories, teams, tokens, faults, the ledger and deliveries."""

    worlds: list[World]
    repos: dict[str, RepoState]  # lower-cased full name -> repo
    teams: dict[str, list[str]]
    clock: Clock
    epoch: str  # the worlds' `now`: the time of objects a world gives no time
    app_id: int = DEFAULT_APP_ID
    app_slug: str = APP_SLUG
    latency_ms: int = 0
    rate_limit: int = 5000
    rate_reset: int = field(default_factory=lambda: int(time.time()) + 3600)  # epoch seconds
    webhook: WebhookTarget = field(default_factory=WebhookTarget)
    faults: Faults = field(default_factory=Faults)
    ledger: Ledger = field(default_factory=Ledger)
    deliveries: list[Any] = field(default_factory=list)  # webhooks.Delivery, newest last
    downloads: dict[str, tuple[str, int]] = field(default_factory=dict)  # token -> (repo, artifact id)
    storage_url: str | None = None  # the artifact storage host downloads redirect to (None: this one)
    plain_tokens: dict[str, PlainToken] = field(default_factory=dict)  # workflow tokens (app/fake_github/auth.py)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _next_id: int = 1

    @classmethod
    def from_worlds(cls, worlds: Sequence[World]) -> "GitHubState":
        if not worlds:
            raise ValueError("at least one world is needed")
        repos: dict[str, RepoState] = {}
        teams: dict[str, list[str]] = {}
        ids = [0]
        for world in worlds:
            where = str(world.root)
            for team, members in world.teams.items():
                _merge(teams, team, list(members), f"{where}: team {team}")
            for repo in world.repos.values():
                ids.extend(_load_repo(repos, repo, world))
        now = max(parse_time(w.now) for w in worlds)
        tokens = [PlainToken.parse(spec) for w in worlds for spec in w.tokens]
        return cls(list(worlds), repos, teams, Clock(now), iso(now), _next_id=max(ids) + 1,
                   plain_tokens={t.token: t for t in tokens})

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    def warm(self) -> None:
        """Compute now what the first reads would otherwise compute (`RepoState.warm`)."""
        for repo in self.repos.values():
            repo.warm()

    def repo(self, owner: str, name: str) -> RepoState | None:
        return self.repos.get(f"{owner}/{name}".lower())

    def next_id(self) -> int:
        with self.lock:
            self._next_id += 1
            return self._next_id - 1

    def association(self, repo: RepoState, login: str) -> str:
        """author_association of `login` on `repo`: OWNER, MEMBER (in one of the world's teams:
        a world describes one organisation), COLLABORATOR, else NONE."""
        low = login.lower()
        if low == repo.owner.lower():
            return "OWNER"
        if any(low in {m.lower() for m in members} for members in self.teams.values()):
            return "MEMBER"
        if low in {c.lower() for c in repo.collaborators}:
            return "COLLABORATOR"
        return "NONE"

    def permission(self, repo: RepoState, login: str) -> str:
        """The login's role on the repo: admin|maintain|write|triage|read, or none."""
        low = login.lower()
        return next((p for c, p in repo.collaborators.items() if c.lower() == low), "none")

    def team(self, org: str, slug: str) -> list[str] | None:
        key = f"{org}/{slug}".lower()
        return next((m for t, m in self.teams.items() if t.lower() == key), None)

    def issue_token(self, installation_id: int, app_id: int) -> Token:
        """A new installation token. Tokens name their installation and app, so a token a
        client cached from an earlier fake (githubkit caches them per process) stays valid."""
        expires = iso(datetime.now(timezone.utc) + TOKEN_LIFETIME)
        return Token(f"ghs_{installation_id}i{app_id}a{secrets.token_hex(12)}", installation_id, app_id, expires)

    def token(self, credential: str) -> Token | None:
        """The installation token `credential`, if it is one for an installation of this state."""
        m = _TOKEN.match(credential)
        if m is None or int(m["installation"]) not in self.installations():
            return None
        return Token(credential, int(m["installation"]), int(m["app"]), "")

    def installations(self) -> dict[int, list[RepoState]]:
        """installation id -> the repositories it is installed on."""
        out: dict[int, list[RepoState]] = {}
        for repo in self.repos.values():
            if repo.installation_id is not None:
                out.setdefault(repo.installation_id, []).append(repo)
        return out


def _plain(value: Any) -> Any:
    """A deep copy of world data with YAML's readings undone: timestamps back to GitHub's
    ISO text, and a SHA written without quotes (all digits, read as an int) back to text."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return iso(value if value.tzinfo else value.replace(tzinfo=timezone.utc))
    if isinstance(value, int) and not isinstance(value, bool) and len(str(value)) == 40:
        return str(value)
    return value


def _merge(table: dict, key: Any, value: Any, what: str) -> None:
    if key in table and table[key] != value:
        raise WorldConflict(f"{what} is defined differently by two worlds")
    table[key] = value


def _load_repo(repos: dict[str, RepoState], src, world: World) -> list[int]:
    """Copy one world repository into `repos` (merging with an earlier world's); returns the ids seen."""
    where = f"{world.root}: {src.full_name}"
    key = src.full_name.lower()
    repo = repos.get(key)
    if repo is None:
        repo = repos[key] = RepoState(src.full_name, src.default_branch, src.installation_id, {})
    elif (repo.default_branch, repo.installation_id) != (src.default_branch, src.installation_id):
        raise WorldConflict(f"{where}: default branch or installation is defined differently by two worlds")
    for login, role in src.collaborators.items():
        _merge(repo.collaborators, login, role, f"{where}: collaborator {login}")
    for commit in src.commits.values():
        if str(commit.sha) != commit.sha or any(str(p) != p for p in commit.parents):
            commit = dataclasses.replace(commit, sha=_plain(commit.sha), parents=_plain(commit.parents))
        sha = commit.sha
        if sha in repo.commits:
            old = repo.commits[sha]
            if (old.parents, old.message, old.author) != (commit.parents, commit.message, commit.author) or (
                    old.root != commit.root and old.files != commit.files):
                raise WorldConflict(f"{where}: commit {sha} is defined differently by two worlds")
        else:
            repo.commits[sha] = commit
    for branch, sha in src.branches.items():
        _merge(repo.branches, branch, _plain(sha), f"{where}: branch {branch}")
    ids: list[int] = []
    for number, raw in src.pulls.items():
        pr = _plain(raw)
        for kind, table in (("issue_comments", repo.issue_comments), ("reviews", repo.reviews),
                            ("review_comments", repo.review_comments)):
            for item in pr.pop(kind, None) or []:
                item["number"] = number
                if kind == "reviews":
                    item.setdefault("commit_id", pr["head"]["sha"])
                _merge(table, int(item["id"]), item, f"{where}: {kind[:-1]} {item['id']}")
                ids.append(int(item["id"]))
        _merge(repo.pulls, number, pr, f"{where}: pull request #{number}")
    for raw in src.check_runs:
        run = _plain(raw)
        _merge(repo.check_runs, int(run["id"]), run, f"{where}: check run {run['id']}")
        ids.append(int(run["id"]))
    for raw in src.workflow_runs:
        run = _plain(raw)
        _merge(repo.workflow_runs, int(run["id"]), run, f"{where}: workflow run {run['id']}")
        ids.append(int(run["id"]))
        for art in run.get("artifacts") or []:
            if int(art["id"]) in repo.artifacts and repo.artifacts[int(art["id"])].data != art:
                raise WorldConflict(f"{where}: artifact {art['id']} is defined differently by two worlds")
            repo.artifacts[int(art["id"])] = ArtifactRef(art, int(run["id"]), world)
            ids.append(int(art["id"]))
    return ids
