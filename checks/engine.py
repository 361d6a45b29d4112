"""The verdict the rules add up to, and the evidence rounds that complete its snapshot.

Each rule (`checks.registry`, protocol `checks.rule`) is a pure function of
the context; its docstring is its documentation. `evaluate` runs them all on
one context. Recipe lint runs on every PR, signed off or not. It is advice,
not the gate: the sign-off verdict is checks 0-12 as the spec writes them.
Its findings are posted as inline review comments and summed up on the
verdict's "Recipe lint" row, which FAILs on an error on a changed file but
blocks PASS only where `.github/signoff-bot.yml` sets `lint: blocking`.
Settings of `.github/signoff-bot.yml` that are unknown or have a bad value
are ignored one by one, and the verdict's `notes` say which (the others
apply).

Evidence rounds (`Completion`): the rules run on the first snapshot and ask
the context for what they need beyond it (`Context.need`); the app fetches
what is missing (`Completion.wanted`) and hands back the fuller snapshot
(`Completion.add`); the rules run again on the same context, until nothing
new is wanted or `MAX_ROUNDS` fetches were made. A rule's result is cached
like any fact (`Context.memo`): a round runs again only the rules that read
what was missing, or what changed. The last round's verdict is the verdict: what is still missing then is judged as absent, and the checks
that need it fail closed. One loop serves every fetcher: GitHub
(`app.github.gather`), a world and a git repository (`app.offline.snapshot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from . import acceptance, progress
from .context import Context
from .evidence import Wanted
from .registry import RULES
from .result import CheckResult, Finding, Severity, Status, Verdict
from .rule import LINT_ROW, Rule, run
from .snapshot import Snapshot

MAX_ROUNDS = 8  # evidence fetches: a launcher, the script it picks, and what that runs (checks.facts.runs)
LINT_NAME = "Recipe lint"


def _run(rule: Rule, ctx: Context) -> CheckResult | tuple[Finding, ...] | None:
    progress.rule(rule.id)
    return run(rule, ctx)


def evaluate(subject: Snapshot | Context, rules: Sequence[Rule] = RULES) -> Verdict:
    """The verdict of `rules` on a snapshot (as it stands: nothing is fetched) or on a context."""
    ctx = subject if isinstance(subject, Context) else Context(subject)
    results: list[CheckResult] = []
    extra: list[CheckResult] = []
    lint: set[Finding] = set()
    for rule in rules:
        out = ctx.memo(("rule", rule), partial(_run, rule, ctx))  # kept across rounds, as facts are
        if isinstance(out, tuple):  # a lint rule's findings (`run`)
            lint.update(out)
        elif rule.kind == "check" and out is not None:
            results.append(out)
        elif out is not None:
            extra.append(out)
    lint_findings = tuple(sorted(lint, key=lambda f: (f.path, f.line, f.rule, f.severity.value, f.message)))
    findings = sorted({f for r in (*results, *extra) for f in r.findings} | lint,
                      key=lambda f: (f.path, f.line, f.rule, f.message))
    sign = ctx.signoff
    lint_row = _lint_row(ctx, lint_findings) if any(r.kind == "lint" for r in rules) else None
    lint_blocking = ctx.policy.lint == "blocking"
    # Every acceptance is read (its author's permission asked) whether or not a row waits for it, so the
    # app pins each to the content it was given on, before a push could make it apply to other content.
    accepts = acceptance.commands(ctx)
    return Verdict(
        head_sha=ctx.snap.pr.head_sha,
        signer=sign.author if sign else None,
        signoff_url=sign.comment.url if sign else None,
        results=tuple(results),
        extra=tuple(extra),
        lint=lint_row,
        lint_blocking=lint_blocking,
        findings=tuple(findings),
        lint_findings=lint_findings,
        policy=ctx.policy,
        signoff=sign,
        notes=ctx.policy_problems,
        acceptances=accepts,
    )


def _lint_row(ctx: Context, findings: tuple[Finding, ...]) -> CheckResult:
    """The "Recipe lint" row: FAIL on an error-severity finding on a file the PR changes, else PASS."""
    changed = {f.path for f in ctx.changed_files}
    errors = [f for f in findings if f.severity is Severity.ERROR and f.path in changed]
    if errors:
        return CheckResult.failed(LINT_ROW, LINT_NAME, errors, rule_in_reason=True)
    others = len(findings)
    return CheckResult(LINT_ROW, LINT_NAME, Status.PASS,
                       f"no errors on the changed files ({others} other finding{'s' * (others != 1)})"
                       if others else "no findings")


class Completion:
    """The evidence rounds of one PR over one context. A fetcher drives it:

        done = Completion(first_snapshot)
        while (want := done.wanted()) is not None:
            done.add(fetch(done.snapshot, want))
        done.snapshot, done.verdict
    """

    def __init__(self, snap: Snapshot, rules: Sequence[Rule] = RULES):
        self.rules = tuple(rules)
        self.ctx = Context(snap)
        self.asked = Wanted()
        self.rounds = 0
        self.verdict = evaluate(self.ctx, self.rules)

    @property
    def snapshot(self) -> Snapshot:
        return self.ctx.snap

    def wanted(self) -> Wanted | None:
        """Everything to fetch (what was asked before, and what this round found missing); None when nothing
        new is wanted or the rounds are spent."""
        more = self.ctx.missing
        if not more or more <= self.asked or self.rounds >= MAX_ROUNDS:
            return None
        self.asked = self.asked | more
        return self.asked

    def add(self, snap: Snapshot) -> None:
        """Go on with `snap`, the snapshot completed with what `wanted` named, and judge it."""
        self.rounds += 1
        self.ctx.advance(snap, self.asked)
        self.verdict = evaluate(self.ctx, self.rules)
