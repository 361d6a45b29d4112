"""The one rule protocol: every check and every lint rule is a `Rule`, run by `run` alone.

A rule has an `id`, the verdict `row` it feeds, a `severity` and a pure
`check(ctx)`. Three kinds, by what `check` returns:

- "check": checks 0-12 (the spec's gate), one row each: a `CheckResult`;
- "lint": recipe lint rules, summed up on the "Recipe lint" row (13): `Finding`s;
- "extra": rows beyond the spec, shown only when they fail ("Complete
  evidence", 14; "Signer's own words", 15): a `CheckResult`, or None.

A rule that raises is a bug, but a merge gate fails closed, not crash: `run`
turns the exception into the rule's failure, a FAIL row for a row of its own
(carrying the traceback in `CheckResult.internal_error`, which the app logs)
and an error finding on the first changed file for a lint rule.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

from .context import Context
from .result import CheckResult, Finding, Severity, Status

LINT_ROW = 13


@dataclass(frozen=True)
class Rule:
    id: str
    row: int
    name: str  # the row's name
    severity: Severity
    check: Callable[[Context], CheckResult | Iterable[Finding] | None]
    kind: str  # check | lint | extra
    module: ModuleType | None = None  # where it is defined and documented

    @classmethod
    def of_check(cls, module: ModuleType) -> "Rule":
        """A check module: `NUMBER`, `NAME`, `check(ctx) -> CheckResult`."""
        # the id is the module's name after its number: checks.rules.check03_recipe_link -> recipe-link
        name = module.__name__.rsplit(".", 1)[-1].partition("_")[2]
        return cls(name.replace("_", "-"), module.NUMBER, module.NAME,
                   Severity.ERROR, module.check, "check", module)

    @classmethod
    def of_lint(cls, module: ModuleType) -> "Rule":
        """A lint rule module: `ID`, `SEVERITY`, `check(ctx) -> Iterator[Finding]`."""
        return cls(module.ID, LINT_ROW, "Recipe lint", module.SEVERITY, module.check, "lint", module)


def run(rule: Rule, ctx: Context) -> CheckResult | tuple[Finding, ...] | None:
    """What `rule` decides on `ctx`; an unexpected exception becomes the rule's fail-closed failure."""
    try:
        out = rule.check(ctx)
        return out if out is None or isinstance(out, CheckResult) else tuple(out)  # (a lint rule's findings)
    except MemoryError:  # the budget of the checks' process (app/judge.py), not a bug of the rule
        raise
    except Exception as exc:  # noqa: BLE001 - a gate fails closed, it does not crash
        error = f"{type(exc).__name__}: {exc}"
        # where it raised (our code's frames; the message may quote the PR's content, the reason holds it)
        trace = f"{type(exc).__name__}\n" + "".join(traceback.format_tb(exc.__traceback__))
    if rule.kind != "lint":
        return CheckResult(rule.row, rule.name, Status.FAIL, f"internal error while checking ({error}); fails closed",
                           internal_error=trace)
    first = min((f.path for f in ctx.changed_files), default=None)
    if first is None:
        return ()
    return (Finding(first, 1, rule.id, Severity.ERROR,
                    f"internal error in lint rule {rule.id} ({error}); fails closed: report it to the signoff-bot "
                    f"maintainers"),)
