"""Check 1 — a green sweep with evals ran on a commit that is still in this PR.

## What it enforces

Some commit currently in the pull request carries green, executed benchmark
AND eval check-runs of the sweep.

## Why

Merging goes through `merge_with_reuse.sh`, whose `validate_reusable_run`
rejects a sweep whose `head_sha` is not in `GET /pulls/<n>/commits`. A sweep
that ran on a commit later rebased or force-pushed out does not count, and
neither does a skip/reuse run that executed nothing on the commit.

## How it decides

- Evidence is only the check-runs attached to the PR's current commits
  (`snap.commits`). A run id or SHA quoted in the sign-off is never trusted.
- A check-run is a *lane* by the text before its first " / ":
  an eval lane when that text is exactly one of `Policy.eval_lanes`
  (`eval`, `multi-node eval`, `agentic eval`, `multi-node agentic eval`);
  otherwise a benchmark lane when it is one of `Policy.benchmark_lanes`,
  alone or followed by one sequence-length token (`single-node 8k1k`,
  `multi-node 1k1k`, `single-node 8192_1024`, `agentic`, `multi-node agentic`).
  Anything else is ignored: `setup`, `canary / benchmark`, and the aggregator
  `collect-evals / collect-evals`, which is green even over an empty set.
- Per commit and check-run name only the latest attempt counts: highest
  `started_at`, then highest id; an attempt that has not started yet is the
  latest. Its outcome: `success` is a green executed lane; `skipped` executed
  nothing and counts for nothing (e.g. the `single-node 1k1k / benchmark`
  placeholder of a matrix with no such entries); anything else (`failure`,
  `cancelled`, `timed_out`, `neutral`, `action_required`, or not completed)
  disqualifies the commit.
- A commit passes with >= 1 green benchmark lane, >= 1 green eval lane and no
  disqualifying lane. PASS names the newest passing commit in PR order, the
  green lanes per lane label, and the workflow run(s) behind them.
- `sweeps.passing_run` hands Check 2 that commit and the newest workflow run (highest
  run id) behind its green eval lanes.
- A PR that changes a workflow or a composite action (`.github/workflows/**`,
  `.github/actions/**`) gets a note on this row: on `pull_request` GitHub runs
  the workflows of the PR's own commit, so its check-runs and artifacts are
  evidence the PR wrote about itself (a workflow edited to report every lane
  green). The spec has no rule against such a PR, so the note does not change
  the outcome; a repository that wants one sets `workflow_changes: blocking`
  in `.github/signoff-bot.yml`, and then the row fails: the workflow change
  merges on its own first, then the sweep vouches for the rest.

## Passing example

    head 8c15a0af: `multi-node 8k1k / p1 | ... c1` success,
    `multi-node eval / p1 | ... c128 | eval-only` success,
    `eval / benchmark` skipped, `collect-evals / collect-evals` success
    (with "Note: this PR changes .github/workflows/run-sweep.yml ..."
    when it also edits a workflow)

## Failing example

    the sole commit's `single-node 8k1k / ...` and `eval / ...` are all
    skipped, or its latest `eval / ... c64` attempt failed, or the only
    green sweep ran on a commit that was force-pushed out, or (under
    `workflow_changes: blocking`) the PR edits a workflow
"""

from __future__ import annotations

from collections import Counter

from checks.context import Context
from checks.facts.sweeps import BENCHMARK, EVAL, CommitSweep, assess, attempt_order, lane, passing_commit
from checks.policy import Policy
from checks.result import CheckResult, Status

NUMBER = 1
NAME = "sweep on in-PR commit"

ROOT_ISSUE = "No passing sweep/eval was found on any commit in this PR."
FIX = "Run (or re-anchor via `/reuse-sweep-run`) a passing full sweep on a commit currently in this PR."

SELF_ATTESTING = (".github/workflows/", ".github/actions/")


def _own_workflows(ctx: Context) -> str:
    """"<first changed workflow> (+N more)", or "" when the PR changes no workflow or composite action."""
    own = sorted(f.path for f in ctx.snap.files if f.path.startswith(SELF_ATTESTING)
                 or (f.previous_path or "").startswith(SELF_ATTESTING))
    return f"{own[0]}{f' (+{len(own) - 1} more)' if len(own) > 1 else ''}" if own else ""


def check(ctx: Context) -> CheckResult:
    own = _own_workflows(ctx)
    if own and ctx.policy.workflow_changes == "blocking":
        return CheckResult(NUMBER, NAME, Status.FAIL,
                           f"this PR changes {own}: its sweep ran the PR's own workflows, so their check-runs and "
                           f"artifacts cannot vouch for it (`workflow_changes: blocking`). Merge the workflow change "
                           f"in a PR of its own first, then re-run the sweep")
    note = (f" Note: this PR changes {own}, so its sweep ran the PR's own workflows; review that change "
            f"(`workflow_changes: blocking` in .github/signoff-bot.yml makes this a FAIL)." if own else "")
    sweep = passing_commit(ctx)
    if sweep is None:
        return CheckResult(NUMBER, NAME, Status.FAIL, f"{ROOT_ISSUE} {_why_not(ctx)}. {FIX}{note}")
    where = "PR head" if sweep.sha == ctx.snap.pr.head_sha else "in-PR commit"
    return CheckResult(NUMBER, NAME, Status.PASS,
                       f"{where} {sweep.sha[:8]} carries {_counts(sweep)} check-runs {_runs(sweep)}.{note}")


def _counts(sweep: CommitSweep) -> str:
    counts = Counter((lane.kind != BENCHMARK, lane.label) for _run, lane in sweep.green)
    parts = [f"{n} green executed {label} /" for (_kind, label), n in sorted(counts.items())]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _runs(sweep: CommitSweep) -> str:
    ids = sorted({run.run_id for run, _lane in sweep.green if run.run_id is not None})
    if not ids:
        return "(no workflow run linked)"
    return f"from run{'s' if len(ids) > 1 else ''} {', '.join(str(i) for i in ids)}"


def _why_not(ctx: Context) -> str:
    """A short supporting detail about the newest in-PR commit that carries any lane check-run."""
    snap = ctx.snap
    for sha in reversed(snap.commits):
        sweep = assess(ctx, sha)
        if sweep.bad:
            first = sweep.bad[0]
            if first.status == "completed":
                outcome = f"concluded {first.conclusion or 'without a conclusion'}"
            else:
                outcome = f"is {first.status}"
            run = f" (run {first.run_id})" if first.run_id is not None else ""
            more = f" (+{len(sweep.bad) - 1} more)" if len(sweep.bad) > 1 else ""
            return f"Commit {sha[:8]}'s latest `{first.name}` {outcome}{run}{more}"
        if sweep.green:
            present, missing = (BENCHMARK, EVAL) if sweep.has_green(BENCHMARK) else (EVAL, BENCHMARK)
            return (f"Commit {sha[:8]} has green {present} check-runs but no green executed {missing} lane"
                    f" ({_lane_names(ctx.policy, missing)})")
        if sweep.skipped:
            return f"Every benchmark/eval check-run on {sha[:8]} was skipped (a skip/reuse run executed nothing)"
    in_pr = set(snap.commits)
    outside = [run for run in snap.check_runs
               if run.head_sha not in in_pr and run.conclusion == "success" and lane(run.name, ctx.policy)]
    if outside:
        newest = max(outside, key=attempt_order)
        what = f"run {newest.run_id}" if newest.run_id is not None else "the only green sweep"
        return (f"No in-PR commit carries benchmark or eval check-runs; {what} ran on {newest.head_sha[:8]},"
                f" which is no longer part of this PR")
    return "No in-PR commit carries benchmark or eval check-runs"


def _lane_names(policy: Policy, kind: str) -> str:
    return ", ".join(f"`{prefix} /`" for prefix in (policy.eval_lanes if kind == EVAL else policy.benchmark_lanes))
