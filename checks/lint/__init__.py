"""Recipe lint: line-anchored findings on the recipes, master configs and changelog a PR touches.

Reviewers kept catching the same mistakes by hand; each rule here catches
one of them on every PR, signed off or not. A rule is one module with `ID`,
`SEVERITY`, one pure function `check(ctx) -> Iterator[Finding]` and optionally
`wants(ctx) -> Wanted`; its docstring documents the rule. Adding a rule is
adding its module to `RULES`.

The engine (`checks.engine`) runs `run`; its findings are advice: inline
review comments and the verdict's "Recipe lint" row, which blocks the
sign-off only under `lint: blocking`.
"""

from __future__ import annotations

from types import ModuleType

from ..context import Context
from ..evidence import Wanted
from ..result import Finding, Severity
from . import (
    car_v2,
    changelog_append_only,
    changelog_pr_link,
    changelog_unknown_key,
    cpus_per_task,
    master_recipe_parity,
    spec_decode_chat_template,
    yaml_syntax,
)

RULES: tuple[ModuleType, ...] = (
    yaml_syntax,
    car_v2,
    spec_decode_chat_template,
    master_recipe_parity,
    cpus_per_task,
    changelog_pr_link,
    changelog_append_only,
    changelog_unknown_key,
)

_BY_ID = {rule.ID: rule for rule in RULES}


def run(ctx: Context) -> list[Finding]:
    """Every rule's findings, deduplicated and sorted by path, line, rule and message.

    A rule that raises is a bug; like the checks, it fails closed: an error
    finding on the first changed file names the rule and the exception.
    """
    findings: set[Finding] = set()
    for rule in RULES:
        try:
            findings.update(rule.check(ctx))
        except Exception as exc:  # noqa: BLE001 - a gate fails closed, it does not crash
            first = min((f.path for f in ctx.changed_files), default=None)
            if first is not None:
                findings.add(Finding(first, 1, rule.ID, Severity.ERROR,
                                     f"internal error in lint rule {rule.ID} ({type(exc).__name__}: {exc}); "
                                     f"fails closed: report it to the signoff-bot maintainers"))
    return sorted(findings, key=lambda f: (f.path, f.line, f.rule, f.severity.value, f.message))


def conclusion(findings: list[Finding], policy) -> str:
    """The lint check run's conclusion: "success" without errors; with errors, "failure" where the
    repository makes lint blocking (`lint: blocking`), else "neutral" (advice)."""
    if not any(f.severity is Severity.ERROR for f in findings):
        return "success"
    return "failure" if policy.lint == "blocking" else "neutral"


def wants(ctx: Context) -> Wanted:
    """Evidence the rules need beyond the PR's files (e.g. recipes a changed master entry names)."""
    total = Wanted()
    for rule in RULES:
        rule_wants = getattr(rule, "wants", None)
        if rule_wants is not None:
            total = total | rule_wants(ctx)
    return total
