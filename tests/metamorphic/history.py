"""The real speculative-decoding configs of the shared InferenceX history, read as `signoff-bot backtest` reads them.

Each merged PR of the window is judged on the snapshot backtest builds (`app.history.gitrepo.pull_world`,
`app.offline.snapshot.judge_world`), with only the rules of rows 9, 10, 11 and recipe lint; the configs are the
changed files `checks.facts.specdecode.inventory` finds on it. Nothing of the history is copied into the project:
the bundle is cloned at test time.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from app.fetcher import with_evidence
from app.history import backtest
from app.history.gitrepo import Commits, Git, pull_world
from app.offline.snapshot import WorldFetcher, judge_world
from app.offline.world import Repo, World
from checks.engine import Completion
from checks.facts.specdecode import inventory
from checks.registry import RULES
from checks.result import Verdict
from checks.snapshot import Snapshot, frozen_map

ROWS = (9, 10, 11)
# Rows 9, 10, 11 and every lint rule: what a speculative config's rewrite can move.
RULES_UNDER_TEST = tuple(r for r in RULES if (r.kind == "check" and r.row in ROWS) or r.kind == "lint")
WINDOW = date(2026, 7, 15)  # the labelled shared window (tests/test_history.py)
# Changed paths that may be a speculative config: a cheap filter before a PR's snapshot is built (a PR that
# changes only master entries has no config file of its own to rewrite).
_CANDIDATE = re.compile(r"^benchmarks/.*(?:mtp|eagle|agentic|agentx|spec|dspark).*\.(?:sh|ya?ml)$", re.I)


@dataclass(frozen=True)
class Config:
    """One real speculative-decoding config: a changed script or recipe of a merged PR, with its base rows."""

    pr: int
    path: str
    kind: str  # script | recipe
    engine: str  # vllm | sglang | trtllm | atom | ""
    agentic: bool
    env: tuple[tuple[str, str], ...]  # the variables the config runs with (inventory's reading)
    refs: tuple[str, ...]  # master entry keys of changed points running it
    snapshot: Snapshot  # the PR's completed snapshot
    rows: tuple[tuple[str, str, str], ...]  # (row, status, reason) of rows 9, 10, 11, lint on the snapshot

    @property
    def name(self) -> str:
        return f"#{self.pr}:{self.path.rsplit('/', 1)[-1]}"

    @property
    def text(self) -> str:
        f = self.snapshot.changed(self.path)
        assert f is not None and f.head_text is not None
        return f.head_text


def rows_of(verdict: Verdict) -> tuple[tuple[str, str, str], ...]:
    out = [(str(r.number), r.status.value, r.reason) for r in verdict.results if r.number in ROWS]
    if verdict.lint is not None:
        out.append(("lint", verdict.lint.status.value, verdict.lint.reason))
    return tuple(sorted(out))


class History:
    """The cloned bundle, read through one `git cat-file` (kept open for the session)."""

    def __init__(self, clone: Path):
        self.git = Git(clone)
        self.commits = Commits(self.git)
        self.name = backtest.repo_name(self.git)
        self.worlds: dict[int, World] = {}

    def close(self) -> None:
        self.git.close()

    def prs(self) -> list[backtest.MergedPR]:
        return backtest.merged_prs(self.git, backtest.default_branch(self.git), since=WINDOW)

    def candidate(self, pr: backtest.MergedPR) -> bool:
        names = self.git.text("diff", "--name-only", pr.base, pr.head).split()
        return any(_CANDIDATE.search(n) for n in names)

    def world(self, pr: backtest.MergedPR) -> World:
        pull = {"number": pr.number, "title": pr.title, "user": pr.author, "author_association": "NONE",
                "state": "closed", "merged": True, "commits": [pr.head],
                "base": {"ref": "base", "sha": pr.base},
                "head": {"ref": f"pr-{pr.number}", "sha": pr.head, "repo": self.name}}
        world = self.worlds[pr.number] = pull_world(self.git, self.commits, self.name, pull, pr.merged_at)
        return world

    def configs(self, per_pr: int) -> list[Config]:
        """The changed speculative-decoding scripts and recipes of the window: at most `per_pr` of a PR per
        engine (by path), a path kept by the first PR that changes it. A config's snapshot is its PR's without the other
        configs the PR changes (they are read at head as unchanged files, as a PR changing only this one would
        show them), so that a rewrite is judged on its config, and fast."""
        out: dict[str, Config] = {}
        for pr in self.prs():
            if not self.candidate(pr):
                continue
            done = judge_world(self.world(pr), rules=RULES_UNDER_TEST)
            units = inventory(done.ctx).units
            paths = {u.path for u in units}
            picked = [u for u in units if u.changed and u.path not in out and done.snapshot.changed(u.path)]
            per_engine: dict[str, int] = {}
            for u in sorted(picked, key=lambda u: u.path):
                per_engine[u.engine] = per_engine.get(u.engine, 0) + 1
                if per_engine[u.engine] > per_pr:
                    continue
                snap = done.snapshot
                alone = replace(snap, files=tuple(f for f in snap.files if f.path == u.path or f.path not in paths))
                own = self.complete(pr.number, alone)
                out[u.path] = Config(pr.number, u.path, u.kind, u.engine, u.agentic, tuple(sorted(u.env.items())),
                                     tuple(dict.fromkeys(r.key for r in u.refs)), own.snapshot,
                                     rows_of(own.verdict))
        return list(out.values())

    def complete(self, pr: int, snap: Snapshot) -> Completion:
        """The rows on a (rewritten) snapshot; evidence it lacks is read from the PR's world, as backtest reads
        it (what a rewrite added is in the snapshot already)."""
        world = self.worlds[pr]
        repo: Repo = next(iter(world.repos.values()))
        done = Completion(snap, RULES_UNDER_TEST)
        while (want := done.wanted()) is not None:
            fetched = asyncio.run(with_evidence(WorldFetcher(world, repo), done.snapshot, want))
            extra = {sha: frozen_map({**(done.snapshot.extra_files.get(sha) or {}), **files})
                     for sha, files in fetched.extra_files.items()}
            done.add(replace(fetched, extra_files=frozen_map({**done.snapshot.extra_files, **extra})))
        return done

    def judge(self, pr: int, snap: Snapshot) -> Verdict:
        return self.complete(pr, snap).verdict


def clone(bundle: Path, into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--branch", "main", str(bundle), str(into)], check=True)
    return into
