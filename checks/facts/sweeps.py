"""The sweep evidence on the PR's commits: lanes, their latest attempts, the passing commit and its run.

Check 1 (`checks.rules.check01_sweep`) judges by it, and Check 2 (`checks.rules.check02_evals`) audits the
run behind the passing commit's green eval lanes; the rule is documented on
Check 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.context import Context
from checks.policy import Policy
from checks.snapshot import CheckRun

BENCHMARK = "benchmark"
EVAL = "eval"

_SEQ_LEN = re.compile(r"\d+k\d+k|\d+_\d+")


@dataclass(frozen=True)
class Lane:
    kind: str  # BENCHMARK | EVAL
    label: str  # the text before " / ", e.g. "multi-node 8k1k"


@dataclass(frozen=True)
class CommitSweep:
    """The latest attempt of every lane check-run on one commit, by outcome."""

    sha: str
    green: tuple[tuple[CheckRun, Lane], ...]
    bad: tuple[CheckRun, ...]
    skipped: int

    def has_green(self, kind: str) -> bool:
        return any(lane.kind == kind for _run, lane in self.green)

    @property
    def passed(self) -> bool:
        return not self.bad and self.has_green(BENCHMARK) and self.has_green(EVAL)

    @property
    def eval_run_id(self) -> int | None:
        """The newest workflow run behind a green eval lane (run ids grow over time)."""
        ids = [run.run_id for run, lane in self.green if lane.kind == EVAL and run.run_id is not None]
        return max(ids) if ids else None


def lane(name: str, policy: Policy) -> Lane | None:
    """The lane a check-run name belongs to, or None for a non-lane job."""
    if " / " not in name:
        return None
    label = name.split(" / ", 1)[0].strip()
    if label in policy.eval_lanes:
        return Lane(EVAL, label)
    for prefix in policy.benchmark_lanes:
        if label == prefix:
            return Lane(BENCHMARK, label)
        rest = label[len(prefix):]
        if label.startswith(prefix) and rest[:1] == " " and _SEQ_LEN.fullmatch(rest[1:]):
            return Lane(BENCHMARK, label)
    return None


def attempt_order(run: CheckRun) -> tuple[object, ...]:
    return (run.started_at == "", run.started_at, run.id)


def assess(ctx: Context, sha: str) -> CommitSweep:
    """The sweep evidence on commit `sha`: latest attempt per lane check-run name."""
    latest: dict[str, tuple[CheckRun, Lane]] = {}
    for run in ctx.snap.check_runs:
        if run.head_sha != sha:
            continue
        found = lane(run.name, ctx.policy)
        if found is None:
            continue
        held = latest.get(run.name)
        if held is None or attempt_order(run) > attempt_order(held[0]):
            latest[run.name] = (run, found)
    green, bad, skipped = [], [], 0
    for name in sorted(latest):
        run, found = latest[name]
        if run.status == "completed" and run.conclusion == "success":
            green.append((run, found))
        elif run.status == "completed" and run.conclusion == "skipped":
            skipped += 1
        else:
            bad.append(run)
    return CommitSweep(sha, tuple(green), tuple(bad), skipped)


def passing_commit(ctx: Context) -> CommitSweep | None:
    """The newest in-PR commit (PR order) whose sweep passes, if any."""
    for sha in reversed(ctx.snap.commits):
        sweep = assess(ctx, sha)
        if sweep.passed:
            return sweep
    return None


def passing_run(ctx: Context) -> tuple[str, int | None] | None:
    """(commit, workflow run id) behind Check 1's passing eval lanes; None when Check 1 fails.

    The run id is None only when the green eval check-runs name no workflow run.
    """
    sweep = passing_commit(ctx)
    return (sweep.sha, sweep.eval_run_id) if sweep else None
