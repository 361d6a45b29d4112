"""The registry of checks 0-12 and the verdict they add up to.

Each check module has `NUMBER`, `NAME` and one pure function
`check(ctx) -> CheckResult`; its docstring is the rule's documentation.
`evaluate` runs them all on one snapshot. A check that raises is a bug, but
a merge gate must fail closed, not crash: the exception becomes that check's
FAIL with its type and message.

Recipe lint (`checks.lint`) runs on every PR, signed off or not. It is
advice, not the gate: the sign-off verdict is checks 0-12 as the spec writes
them. Its findings are posted as inline review comments and summed up on the
verdict's "Recipe lint" row, which FAILs on an error on a changed file but
blocks PASS only where `.github/signoff-bot.yml` sets `lint: blocking`.

A "Signer's own words" row fails when the sign-off was last edited by someone
other than its author (`checks.standing`): every path that evaluates (the
App, replay, backtest) applies it, because it is part of the verdict.

Settings of `.github/signoff-bot.yml` that are unknown or have a bad value are
ignored one by one, and the verdict's `notes` say which (the others apply).

A "Complete evidence" row fails when the checks could not see what they
judge: GitHub truncated the PR's file or commit list, or a changed file whose
content the checks read (a benchmark script, recipe, launcher, workflow,
master config, the changelog: `Policy.is_benchmark_file`) is not text they
can read (binary, not UTF-8, over the size limit, a symlink). A binary image
in the docs is nobody's evidence and fails nothing.
"""

from __future__ import annotations

from . import (
    append_only,
    architecture,
    chat_template,
    checklist,
    codeowner,
    deprecation,
    engine_patches,
    evals,
    golden_al,
    images,
    lint,
    recipe_link,
    reuse_command,
    standing,
    sweep,
)
from .context import Context
from .result import CheckResult, Finding, Severity, Status, Verdict
from .snapshot import Snapshot

CHECKS = (
    codeowner,
    sweep,
    evals,
    recipe_link,
    reuse_command,
    checklist,
    images,
    deprecation,
    architecture,
    chat_template,
    engine_patches,
    golden_al,
    append_only,
)

LINT_NUMBER = 13
LINT_NAME = "Recipe lint"
COMPLETENESS_NUMBER = 14
COMPLETENESS_NAME = "Complete evidence"
UNREADABLE_RULE = "unreadable-file"


def run_check(module, ctx: Context) -> CheckResult:
    """Run one check, turning an unexpected exception into a fail-closed FAIL."""
    try:
        result = module.check(ctx)
    except Exception as exc:  # noqa: BLE001 - a gate fails closed, it does not crash
        return CheckResult(module.NUMBER, module.NAME, Status.FAIL,
                           f"internal error while checking ({type(exc).__name__}: {exc}); fails closed")
    return result


def evaluate(snap: Snapshot) -> Verdict:
    ctx = Context(snap)
    results = [run_check(m, ctx) for m in CHECKS]
    lint_findings = lint.run(ctx)
    lint_row = _lint_row(ctx, lint_findings)
    sign = ctx.signoff
    extra = tuple(r for r in (standing.own_words(sign), _completeness(ctx)) if r is not None)
    findings = sorted({f for r in (*results, *extra) for f in r.findings} | set(lint_findings),
                      key=lambda f: (f.path, f.line, f.rule, f.message))
    return Verdict(
        head_sha=snap.pr.head_sha,
        signer=sign.author if sign else None,
        signoff_url=sign.comment.url if sign else None,
        results=tuple(results),
        extra=extra,
        lint=lint_row,
        lint_blocking=ctx.policy.lint == "blocking",
        findings=tuple(findings),
        policy=ctx.policy,
        signoff=sign,
        notes=ctx.policy_problems,
    )


def _completeness(ctx: Context) -> CheckResult | None:
    """FAIL when part of the PR is beyond the checks: lists GitHub truncated, or changed benchmark files whose
    head content could not be read as text (binary, not UTF-8, too large, a symlink). A check that cannot read
    a file sees no lines in it, so an engine patch in a latin-1 script would otherwise pass unseen."""
    unreadable = [Finding(f.path, 1, UNREADABLE_RULE, Severity.ERROR,
                          f"cannot decide: {f.path} cannot be read ({f.error or 'no readable content at head'})")
                  for f in ctx.changed_files if f.head_text is None and ctx.policy.is_benchmark_file(f.path)]
    reasons = []
    if ctx.snap.truncated:  # GitHub cut a list short: what it did not list cannot have been verified
        reasons.append(f"{ctx.snap.truncated}; the unlisted part cannot be verified")
    if unreadable:
        more = f" (+{len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        reasons.append(f"{unreadable[0].message}{more}; the checks read only text files")
    if not reasons:
        return None
    return CheckResult(COMPLETENESS_NUMBER, COMPLETENESS_NAME, Status.FAIL,
                       "; ".join(reasons) + ", so the PR cannot pass", tuple(unreadable))


def _lint_row(ctx: Context, findings: list[Finding]) -> CheckResult:
    """The "Recipe lint" row: FAIL on an error-severity finding on a file the PR changes, else PASS."""
    changed = {f.path for f in ctx.changed_files}
    errors = [f for f in findings if f.severity is Severity.ERROR and f.path in changed]
    if errors:
        return CheckResult.failed(LINT_NUMBER, LINT_NAME, errors, rule_in_reason=True)
    others = len(findings)
    return CheckResult(LINT_NUMBER, LINT_NAME, Status.PASS,
                       f"no errors on the changed files ({others} other finding{'s' * (others != 1)})"
                       if others else "no findings")
