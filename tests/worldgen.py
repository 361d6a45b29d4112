"""Build a world of many pull requests for the reliability tests, from the e2e world's trees.

Every PR of the built world is a copy of the e2e world's signed-off PR #42 on
its own branch: one head commit, a green sweep (a workflow run with check runs
and eval artifacts), a CODEOWNER's sign-off (or none yet, for the test to
post: `signoff_text`), a maintainer's `/reuse-sweep-run` and
`/signoff-recheck`. The head (the e2e world's `fixed` tree) passes. Two more
commits per PR can be pushed with `/_fake/push`: `same` (a new SHA, the same
content) and `changed` (the e2e `head` tree: the recipe without its CAR v2
fix, which the recipe lint rejects).

Ids are derived from the PR number, so a test can name every object:
`Pull(n).signoff` is the sign-off's comment id, `Pull(n).head` the head SHA.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .apphost import E2E_WORLD, REPO

BASE_SHA = "a1" * 20
RUN_PATH = ".github/workflows/run-sweep.yml"
SWEEP_JOBS = (  # the check runs of a green multi-node sweep, as in the e2e world's run 9001
    ("setup", "success"),
    ("multi-node 8k1k / dsv4 fp4 gb300 dyn-sgl 1P (TP8) x 1D (TP8) mtp c1", "success"),
    ("multi-node eval / dsv4 fp4 gb300 dyn-sgl 1P (TP8) x 1D (TP8) mtp c1 | eval-only", "success"),
    ("single-node 8k1k / benchmark", "skipped"),
    ("eval / benchmark", "skipped"),
    ("collect-evals / collect-evals", "success"),
)
ARTIFACTS = (("eval_results_all", 71), ("results_bmk", 72))  # name, the e2e artifact whose files it holds


def sha(label: str) -> str:
    """A stable 40-hex commit SHA for a label."""
    return hashlib.sha1(label.encode()).hexdigest()


@dataclass(frozen=True)
class Pull:
    """The ids and SHAs of PR `number` in a built world."""

    number: int

    @property
    def head(self) -> str:
        return sha(f"pr{self.number}-head")

    @property
    def same(self) -> str:
        """A commit on top of the head with the same content: the effective diff does not change."""
        return sha(f"pr{self.number}-same")

    @property
    def changed(self) -> str:
        """A commit on top of the head that changes the diff, and would be rejected."""
        return sha(f"pr{self.number}-changed")

    @property
    def branch(self) -> str:
        return f"contributor/pr-{self.number}"

    @property
    def run(self) -> int:
        return 300_000 + self.number

    @property
    def signoff(self) -> int:
        return 100_000 + 10 * self.number + 1

    @property
    def reuse(self) -> int:
        return 100_000 + 10 * self.number + 2

    @property
    def recheck(self) -> int:
        return 100_000 + 10 * self.number + 3

    def check_run(self, k: int) -> int:
        return 200_000 + 10 * self.number + k

    def artifact(self, k: int) -> int:
        return 400_000 + 10 * self.number + k


@cache
def _e2e() -> dict[str, Any]:
    return yaml.safe_load((E2E_WORLD / "world.yaml").read_text(encoding="utf-8"))


def signoff_text(pr: int) -> str:
    """The e2e world's sign-off on #42, linking PR `pr`'s sweep run instead of run 9001."""
    pr42 = next(p for p in _e2e()["repos"][0]["pulls"] if p["number"] == 42)
    body = next(c["body"] for c in pr42["issue_comments"] if c["id"] == 5001)
    return body.replace("/actions/runs/9001", f"/actions/runs/{Pull(pr).run}")


def _comment(cid: int, user: str, at: str, body: str) -> dict[str, Any]:
    return {"id": cid, "user": user, "author_association": "COLLABORATOR", "created_at": at, "body": body}


def filler_id(pr: int, k: int) -> int:
    """The id of the `k`th filler comment on PR `pr` (see build_world's `filler_comments`)."""
    return 10_000_000 + 1_000 * pr + k


def build_world(dest: Path, numbers: list[int], signed_off: bool = True, filler_comments: int = 0) -> Path:
    """Write a world with one PR per number into `dest` (signed off unless `signed_off` is False), each
    with `filler_comments` conversation comments before the others (a long discussion)."""
    e2e = _e2e()
    shutil.copytree(E2E_WORLD / "trees", dest / "trees")
    commits = [{"sha": BASE_SHA, "tree": "base", "parents": [], "message": "main before the PRs",
                "author": "core-maintainer"}]
    branches = {"main": BASE_SHA}
    pulls, check_runs, runs = [], [], []
    for n in numbers:
        p = Pull(n)
        commits += [
            {"sha": p.head, "tree": "fixed", "parents": [BASE_SHA], "message": f"PR {n}: add the config",
             "author": "contributor"},
            {"sha": p.same, "tree": "fixed", "parents": [p.head], "message": f"PR {n}: reword; same content",
             "author": "contributor"},
            {"sha": p.changed, "tree": "head", "parents": [p.head], "message": f"PR {n}: undo the CAR v2 fix",
             "author": "contributor"},
        ]
        branches[p.branch] = p.head
        comments = [_comment(filler_id(n, k), "contributor", f"2026-09-01T{k // 60:02d}:{k % 60:02d}:00Z",
                             f"Comment {k} of a long discussion.") for k in range(filler_comments)]
        comments += [
            _comment(p.reuse, "core-maintainer", "2026-09-02T09:00:00Z", "/reuse-sweep-run"),
            _comment(p.signoff, "nv-owner", "2026-09-02T10:00:00Z", signoff_text(n)),
            _comment(p.recheck, "core-maintainer", "2026-09-02T11:00:00Z", "/signoff-recheck"),
        ]
        pulls.append({
            "number": n, "title": f"PR {n}: DSV4 GB300 disaggregated MTP configuration",
            "body": "Adds a 1P1D TP8 MTP recipe for GB300 (8k/1k) and its master-config entry.",
            "user": "contributor", "author_association": "CONTRIBUTOR", "state": "open", "merged": False,
            "draft": False, "labels": ["full-sweep-fail-fast"],
            "base": {"ref": "main", "sha": BASE_SHA}, "head": {"ref": p.branch, "sha": p.head},
            "commits": [p.head],
            "issue_comments": comments if signed_off else [c for c in comments if c["id"] != p.signoff],
            "reviews": [], "review_comments": [],
        })
        check_runs += [{"id": p.check_run(k), "head_sha": p.head, "name": name, "status": "completed",
                        "conclusion": conclusion, "run_id": p.run, "started_at": "2026-09-01T08:00:00Z",
                        "completed_at": "2026-09-01T09:30:00Z"} for k, (name, conclusion) in enumerate(SWEEP_JOBS)]
        runs.append({"id": p.run, "name": "Run Sweep", "path": RUN_PATH, "event": "pull_request",
                     "head_sha": p.head, "head_branch": p.branch, "status": "completed", "conclusion": "success",
                     "run_attempt": 1, "pull_requests": [n],
                     "artifacts": [{"id": p.artifact(k), "name": name} for k, (name, _src) in enumerate(ARTIFACTS)]})
        for k, (_name, src) in enumerate(ARTIFACTS):
            shutil.copytree(E2E_WORLD / "artifacts" / str(src), dest / "artifacts" / str(p.artifact(k)))
    source = e2e["repos"][0]
    world = {
        "now": e2e["now"], "teams": e2e["teams"],
        "repos": [{"full_name": REPO, "default_branch": "main", "installation_id": 1,
                   "collaborators": source["collaborators"], "commits": commits, "branches": branches,
                   "pulls": pulls, "check_runs": check_runs, "workflow_runs": runs}],
    }
    (dest / "world.yaml").write_text(yaml.safe_dump(world, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return dest
