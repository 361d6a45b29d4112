"""Check 4 — an authorized `/reuse-sweep-run` command is on record.

## What it enforces

An authorized maintainer has posted `/reuse-sweep-run` (bare, or pinning a
run id) at the start of a line of a PR conversation comment.

## Why

The supported merge path reuses the PR's sweep (`utils/merge_with_reuse.sh`),
and it only does so when that command is on record. A green sweep alone is
not enough: without the command the merge silently re-runs the whole sweep.

## How it decides

Mirroring InferenceX's `find_reusable_sweep_run.py`:

- Commands are found by `checks.facts.commands` (`Policy.reuse_command`). A line
  whose argument is not a run id (`/reuse-sweep-run please`) is not a
  command; the reuse path ignores it too.
- Authorized: `author_association` in `Policy.authorized_associations`
  (OWNER, MEMBER, COLLABORATOR), or a write-or-above repository permission the
  app confirmed. The LAST authorized command is the one in force.
- Bare command: PASS (the reuse path picks the newest green sweep of an
  in-PR commit; checks 1-2 judge that sweep).
- Pinned run: must be known to the snapshot (else FAIL closed), and be one
  the reuse path would consume (`commands.run_problem`): a completed
  `pull_request` run of exactly `Policy.sweep_workflow_path` concluding
  success, failure or cancelled, its head commit among the PR's current
  commits. The App holds a command to the same rule when it acknowledges it.
- Only unauthorized commands, or none: FAIL with the spec's root issue.

## Passing example

"/reuse-sweep-run 31451666262" by Ankur-singh (COLLABORATOR), run
31451666262 on the PR's head commit.

## Failing example

"/reuse-sweep-run" by a CONTRIBUTOR without write permission.
"""

from __future__ import annotations

from checks.context import Context
from checks.evidence import Missing
from checks.facts.commands import Command, commands, effective, run_problem
from checks.result import CheckResult, Status
from checks.snapshot import WorkflowRun

NUMBER = 4
NAME = "reuse command"


def check(ctx: Context) -> CheckResult:
    name = ctx.policy.reuse_command
    found = commands(ctx, name, ctx.policy.authorized_associations)
    valid = [c for c in found if c.run_id is not None or not c.argument]
    command = effective(valid)
    if command is None:
        return _fail(_missing(ctx, name, valid, [c for c in found if c not in valid]))
    posted = f"{_text(name, command)} posted by {_who(ctx, command)}"
    if command.run_id is None:
        return CheckResult(NUMBER, NAME, Status.PASS, f"{posted} in {command.comment.url}")
    run = ctx.need.run(command.run_id)
    problem = _run_problem(ctx, command.run_id, run)
    if problem or isinstance(run, Missing):  # (a missing run is a problem)
        return _fail(f"{posted} ({command.comment.url}) {problem}")
    return CheckResult(NUMBER, NAME, Status.PASS,
                       f"{posted} in {command.comment.url}; the run is on in-PR commit {run.head_sha[:8]}")


def _fail(reason: str) -> CheckResult:
    return CheckResult(NUMBER, NAME, Status.FAIL, reason)


def _text(name: str, command: Command) -> str:
    return f"{name} {command.run_id}" if command.run_id is not None else name


def _who(ctx: Context, command: Command) -> str:
    association = command.comment.author_association or "NONE"
    if association.upper() in ctx.policy.authorized_associations:
        return f"{command.author} ({association})"
    return f"{command.author} ({association}, {ctx.need.permission(command.author) or None} permission)"


def _missing(ctx: Context, name: str, valid: list[Command], malformed: list[Command]) -> str:
    root = f"No authorized `{name}` command has been posted on this PR"
    fix = f"an authorized maintainer must comment `{name}` before this PR can merge via reuse"
    if valid:
        last = valid[-1]
        others = f" (+{len(valid) - 1} more)" if len(valid) > 1 else ""
        allowed = ", ".join(ctx.policy.authorized_associations)
        return (f"{root}: {last.author} ({last.comment.author_association or 'NONE'}) posted it in "
                f"{last.comment.url}{others} but is not authorized ({allowed} or write permission); {fix}")
    if malformed:
        last = malformed[-1]
        return (f"{root}: `{name} {last.argument}` in {last.comment.url} is not a command "
                f"(the argument must be a run id); {fix}")
    return f"{root}; {fix}"


def _run_problem(ctx: Context, run_id: int, run: WorkflowRun | Missing) -> str:
    """Why the reuse path would refuse the pinned run; "" when it would accept it."""
    fix = "pin a completed sweep run of a commit currently in this PR"
    if isinstance(run, Missing):
        return f"pins run {run_id}, which could not be found in {ctx.snap.repo}; {fix}"
    problem = run_problem(run, ctx.policy, ctx.snap.commits)
    return f"pins run {run_id}, which {problem}; {fix}" if problem else ""
