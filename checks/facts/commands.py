"""Slash commands in PR conversation comments: `/reuse-sweep-run [run_id]` and the re-check trigger.

Rule: a command counts only at the start of a line (leading whitespace
allowed) of a conversation comment written by a user, not a bot. It is
authorized when the comment's `author_association` is OWNER, MEMBER or
COLLABORATOR (`Policy.authorized_associations`), or when the app confirmed the
author's repository permission as write or above (association hides private
org membership): `authorized`. The last authorized command wins: newest
comment, and within it the last line.

A run a `/reuse-sweep-run` pins is one the reuse path (InferenceX's
`find_reusable_sweep_run.py`) would consume (`run_problem`): a completed
`pull_request` run of exactly `Policy.sweep_workflow_path`, concluding
success, failure or cancelled, on a commit of the PR. Check 4 judges the
command in force by it; the App validates a command by it when it
acknowledges one, and also asks for eval artifacts (`artifact_problem`).

    counts:     "/reuse-sweep-run 31451666262"  by a COLLABORATOR
    counts:     "LGTM\\n/reuse-sweep-run"        (bare: reuse the newest green sweep)
    ignored:    "please run `/reuse-sweep-run`"  (not at the start of a line)
    ignored:    "/reuse-sweep-run"               by a CONTRIBUTOR without write permission
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from checks.context import Context
from checks.policy import Policy
from checks.snapshot import Artifact, Comment, WorkflowRun

from .signoff import is_bot

WRITE_PERMISSIONS = ("admin", "maintain", "write")
PINNED_CONCLUSIONS = ("success", "failure", "cancelled")


@dataclass(frozen=True)
class Command:
    comment: Comment
    run_id: int | None  # the pinned run, None for a bare command
    argument: str  # the raw text after the command ("" when bare)
    authorized: bool

    @property
    def author(self) -> str:
        return self.comment.author


def command_pattern(name: str) -> re.Pattern[str]:
    """`name` at the start of a line, with its optional argument in group `arg`."""
    return re.compile(rf"^[ \t]*{re.escape(name)}(?![\w-])[ \t]*(?P<arg>[^\s]*)", re.MULTILINE)


def authorized(association: str, permission: str | None, associations: tuple[str, ...]) -> bool:
    """Whether an author with this `author_association` and repository `permission` (None: not asked)
    may command."""
    return association.upper() in associations or permission in WRITE_PERMISSIONS


def is_authorized(ctx: Context, comment: Comment, associations: tuple[str, ...]) -> bool:
    """`authorized`, asking for the author's permission only when the association does not decide."""
    if authorized(comment.author_association, None, associations):
        return True
    permission = ctx.need.permission(comment.author)
    return authorized(comment.author_association, permission or None, associations)


def run_problem(run: WorkflowRun, policy: Policy, commits: Collection[str]) -> str | None:
    """Why the reuse path would refuse `run` for a PR of `commits`, as a phrase after "run N"
    ("ran on commit 1a2b3c4d, not a commit of this PR"); None when it would take it.
    A run record without a path or event (never one from GitHub) is not held to them."""
    expected = policy.sweep_workflow_path
    if run.path and not policy.is_sweep_workflow(run.path):
        return f"is a run of {run.path}, not of {expected}"
    if run.event and run.event != "pull_request":
        return f"is a {run.event} run, not a pull_request run"
    if run.status != "completed":
        return f"has not completed (it is {run.status})" if run.status else "has not completed"
    if run.conclusion not in PINNED_CONCLUSIONS:
        return (f"concluded {run.conclusion or 'without a conclusion'}, not "
                f"{', '.join(PINNED_CONCLUSIONS[:-1])} or {PINNED_CONCLUSIONS[-1]}")
    if run.head_sha not in commits:
        return f"ran on commit {run.head_sha[:8]}, not a commit of this PR"
    return None


def artifact_problem(artifacts: Iterable[Artifact], policy: Policy) -> str | None:
    """Why a run's artifacts cannot serve a reuse (no eval artifact left to read); None when they can."""
    evals = [a for a in artifacts if a.name.startswith(policy.eval_artifact_prefixes)]
    if not evals:
        return "has no eval artifacts"
    if all(a.expired for a in evals):
        return "has only expired eval artifacts"
    return None


MAX_RUN_ID_DIGITS = 19  # GitHub's ids are 64-bit


def parse_run_id(arg: str) -> int | None:
    """The run id `arg` names: ASCII digits only (`str.isdigit` takes "²", which `int` refuses), no more than
    an id has; None otherwise."""
    return int(arg) if arg.isascii() and arg.isdigit() and len(arg) <= MAX_RUN_ID_DIGITS else None


def commands(ctx: Context, name: str, associations: tuple[str, ...]) -> list[Command]:
    """Every `name` command in conversation comments, oldest first (last line last)."""
    pattern = command_pattern(name)
    out: list[Command] = []
    for c in sorted(ctx.snap.comments, key=lambda c: (c.created_at, c.id)):
        if c.kind != "issue_comment" or is_bot(c, ctx.snap.bot_login):
            continue
        for m in pattern.finditer(c.body.replace("\r\n", "\n")):
            arg = m.group("arg")
            run_id = parse_run_id(arg)
            out.append(Command(c, run_id, arg, is_authorized(ctx, c, associations)))
    return out


def effective(cmds: list[Command]) -> Command | None:
    """The command in force: the last authorized one."""
    authorized = [c for c in cmds if c.authorized]
    return authorized[-1] if authorized else None
