"""Row 14 — "Complete evidence": the checks can see what they judge.

## What it enforces

Every part of the PR the checks judge is visible to them: the PR's file and
commit lists are complete, and every changed file whose content the checks
read (a benchmark script, recipe, launcher, workflow, master config, the
changelog: `Policy.is_benchmark_file`) is text they can read. The row is
shown only when it fails.

## Why

A check that cannot read a file sees no lines in it, so an engine patch in a
latin-1 script would otherwise pass unseen.

## How it decides

UNDECIDED (never PASS: a maintainer must confirm what was not read) when part
of the PR is beyond the checks: GitHub truncated the PR's file or commit list,
or a changed file whose content the checks read is not text they can read
(binary, not UTF-8, over the size limit, a symlink). A binary image in the
docs is nobody's evidence and fails nothing.

## Passing example

A PR changing a UTF-8 launch script and adding a PNG under `docs/`: no row.

## Failing example

A PR changing a benchmark script saved as latin-1: UNDECIDED, "cannot decide:
benchmarks/... cannot be read (...); the checks read only text files".
"""

from __future__ import annotations

from checks.context import Context
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 14
NAME = "Complete evidence"
UNREADABLE_RULE = "unreadable-file"


def check(ctx: Context) -> CheckResult | None:
    unreadable = [Finding(f.path, 1, UNREADABLE_RULE, Severity.ERROR,
                          f"cannot decide: {f.path} cannot be read ({f.error or 'no readable content at head'})",
                          undecided=True)
                  for f in ctx.changed_files if f.head_text is None and ctx.policy.is_benchmark_file(f.path)]
    reasons = []
    if ctx.snap.truncated:  # GitHub cut a list short: what it did not list cannot have been verified
        reasons.append(f"{ctx.snap.truncated}; the unlisted part cannot be verified")
    if unreadable:
        more = f" (+{len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        reasons.append(f"{unreadable[0].message}{more}; the checks read only text files")
    if not reasons:
        return None
    return CheckResult(NUMBER, NAME, Status.UNDECIDED, "cannot decide: " + "; ".join(reasons).removeprefix(
        "cannot decide: ") + ", so the PR cannot pass unconfirmed", tuple(unreadable))
