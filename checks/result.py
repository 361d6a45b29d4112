"""What the engine concludes: one result per check, findings anchored to lines, a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

from .facts.signoff import SignOff
from .policy import Policy


class Status(str, Enum):
    """A row's status. UNDECIDED: the rule could not read or decide its evidence; never a PASS, never a
    violation the signer is blamed for (the verdict asks a maintainer instead)."""

    PASS = "PASS"
    FAIL = "FAIL"
    UNDECIDED = "UNDECIDED"
    NA = "N/A"

    @property
    def emoji(self) -> str:
        return {"PASS": "✅", "FAIL": "❌", "UNDECIDED": "❔", "N/A": "➖"}[self.value]


class Outcome(str, Enum):
    """What a verdict adds up to (PASS, REJECTED, NEEDS A MAINTAINER), or what a job records for a PR's
    head instead of a verdict; `job_outcome` decides which. The values are the labels the App's database
    keeps (app/store/sql.py), spelt as they always were."""

    PASS = "PASS"
    REJECTED = "REJECTED"
    NEEDS_MAINTAINER = "NEEDS A MAINTAINER"
    STALE = "STALE"  # the sign-off vouches for other content, or for none known: a fresh one is needed
    NO_SIGNOFF = "NO_SIGNOFF"  # no sign-off yet: nothing to verify (the check run waits for one)
    SKIPPED = "SKIPPED"  # a closed or draft PR: nothing verified
    # The verification could not complete (GitHub failed past the retries, the job's budget ran out):
    # reconcile verifies the head again.
    INCOMPLETE = "INCOMPLETE"
    # Our own bug ended the job (an exception that is neither GitHub's nor the database's): recorded once,
    # never retried, so a bug is not run again and again; a new push or the re-check command verifies again.
    INTERNAL_ERROR = "INTERNAL_ERROR"

    @property
    def verified(self) -> bool:
        """Whether a sign-off was judged: a verdict, or STALE (judged to vouch for other content). Only
        these make a PR "verified before" (app/jobs/runner.py verifies it again when its head moves)."""
        return self in VERIFIED


VERDICTS = frozenset({Outcome.PASS, Outcome.REJECTED, Outcome.NEEDS_MAINTAINER})  # what `Verdict.outcome` gives
VERIFIED = VERDICTS | {Outcome.STALE}


@dataclass(frozen=True)
class JobFacts:
    """What a job knows of a PR's head when it records an outcome (app/jobs/runner.py, app/jobs/worker.py)."""

    ready: bool = True  # the PR is open and not a draft
    signed: bool = False  # a sign-off was found
    needs_signoff: bool = False  # `freshness.Freshness.needs_signoff`: the sign-off no longer vouches for the diff
    verdict: Outcome | None = None  # the engine's (`Verdict.outcome`, acceptances applied); None: none reached
    incomplete: bool = False  # the job ended before a verification completed (GitHub, its budget)
    bug: bool = False  # the job raised an exception of ours


def job_outcome(facts: JobFacts) -> Outcome:
    """The one decision of what a job records, first match wins: our bug; a verification that could not
    complete; a closed or draft PR; no sign-off; a sign-off that needs renewing; else the engine's verdict.
    A verdict that was not reached is INCOMPLETE (what was not read never passes)."""
    if facts.bug:
        return Outcome.INTERNAL_ERROR
    if facts.incomplete:
        return Outcome.INCOMPLETE
    if not facts.ready:
        return Outcome.SKIPPED
    if not facts.signed:
        return Outcome.NO_SIGNOFF
    if facts.needs_signoff:
        return Outcome.STALE
    if facts.verdict is None:
        return Outcome.INCOMPLETE
    if facts.verdict not in VERDICTS:
        raise ValueError(f"{facts.verdict.value} is not a verdict's outcome")
    return facts.verdict


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, order=True)
class Finding:
    """A problem on one line of a file at the PR head; becomes an annotation or inline comment."""

    path: str
    line: int
    rule: str
    severity: Severity
    message: str
    # True when the finding says what could not be read or decided, not a violation: a row whose every
    # finding is undecided is UNDECIDED (`CheckResult.failed`), and its message starts "cannot decide".
    undecided: bool = False

    def to_json(self) -> dict[str, object]:
        out = {
            "path": self.path,
            "line": self.line,
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
        }
        if self.undecided:
            out["undecided"] = True
        return out


@dataclass(frozen=True)
class CheckResult:
    number: int
    name: str
    status: Status
    reason: str
    findings: tuple[Finding, ...] = ()
    accepted_by: str = ""  # the maintainer whose `/signoff-accept` turned this UNDECIDED row PASS
    # What the row could judge only with a sign-off that the snapshot lacks (a git history has none): what
    # the repository provides and the sign-off must link ("the sign-off must link docs/waiver/2508.md").
    notes: tuple[str, ...] = ()
    internal_error: str = ""  # the traceback of the rule's own exception (a bug), for the app to log; never shown

    @property
    def passed(self) -> bool:
        return self.status in (Status.PASS, Status.NA)

    @classmethod
    def failed(cls, number: int, name: str, findings: Iterable[Finding], rule_in_reason: bool = False
               ) -> "CheckResult":
        """A FAIL whose one-line reason is the first violation (path:line message), plus how many more
        findings; UNDECIDED when every finding is undecided (nothing was found wrong, something was not read)."""
        findings = tuple(sorted(findings))
        decided = [f for f in findings if not f.undecided]
        first = decided[0] if decided else findings[0]
        rule = f" [{first.rule}]" if rule_in_reason else ""
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        status = Status.FAIL if decided else Status.UNDECIDED
        return cls(number, name, status, f"{first.path}:{first.line}{rule} {first.message}{more}", findings)

    @classmethod
    def undecided(cls, number: int, name: str, reason: str, findings: tuple[Finding, ...] = ()) -> "CheckResult":
        """An UNDECIDED row: `reason` says what could not be read or decided, and where."""
        if not reason.startswith("cannot decide"):
            reason = f"cannot decide: {reason}"
        return cls(number, name, Status.UNDECIDED, reason, findings)


@dataclass(frozen=True)
class Verdict:
    """The engine's whole answer for one snapshot."""

    head_sha: str
    signer: str | None  # login of the sign-off's author, None when there is no sign-off
    signoff_url: str | None
    results: tuple[CheckResult, ...]
    # Rows beyond checks 0-12, shown only when they fail: an incomplete snapshot.
    extra: tuple[CheckResult, ...] = ()
    lint: CheckResult | None = None  # the "Recipe lint" row: advice, unless `lint_blocking`
    lint_blocking: bool = False
    findings: tuple[Finding, ...] = field(default=())  # every finding, checks' and lint's, sorted
    lint_findings: tuple[Finding, ...] = ()  # recipe lint's findings, sorted by path, line, rule, severity
    policy: Policy = field(default_factory=Policy)  # the repository's policy the checks applied
    signoff: SignOff | None = None  # the sign-off judged
    notes: tuple[str, ...] = ()  # what the verdict must say beyond its rows (ignored repository settings)
    # `/signoff-accept` commands in the conversation (`checks.acceptance.Acceptance`), read when a row is
    # UNDECIDED; the app keeps those pinned to this content and `acceptance.apply` turns their rows PASS.
    acceptances: tuple[object, ...] = ()  # (typed loosely: checks.acceptance imports this module)

    @property
    def rows(self) -> tuple[CheckResult, ...]:
        """The rows that decide the verdict: checks 0-12, a failing completeness row, blocking lint."""
        lint = (self.lint,) if self.lint is not None and self.lint_blocking else ()
        return self.results + self.extra + lint

    @property
    def advice(self) -> CheckResult | None:
        """The lint row when it is advice and has something to say (it never changes the verdict)."""
        if self.lint is None or self.lint_blocking or self.lint.status is not Status.FAIL:
            return None
        return self.lint

    @property
    def outcome(self) -> Outcome:
        """PASS when a sign-off exists and every row passes; REJECTED when there is no sign-off or a row
        FAILs; NEEDS A MAINTAINER when nothing FAILs but a row is UNDECIDED (never PASS)."""
        if self.signer is None or any(r.status is Status.FAIL for r in self.rows):
            return Outcome.REJECTED
        if any(r.status is Status.UNDECIDED for r in self.rows):
            return Outcome.NEEDS_MAINTAINER
        return Outcome.PASS

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS

    @property
    def undecided(self) -> tuple[CheckResult, ...]:
        """The rows a maintainer must confirm."""
        return tuple(r for r in self.rows if r.status is Status.UNDECIDED)

    @property
    def label(self) -> str:
        return self.outcome.value

    @property
    def conclusion(self) -> str:
        """The sign-off check run's conclusion: success on PASS; failure on REJECTED; action_required on
        NEEDS A MAINTAINER; neutral instead of either where the repository makes the gate advisory
        (`advisory: true`)."""
        outcome = self.outcome
        if outcome is Outcome.PASS:
            return "success"
        if self.policy.advisory:
            return "neutral"
        return "failure" if outcome is Outcome.REJECTED else "action_required"

    @property
    def lint_conclusion(self) -> str:
        """The lint check run's conclusion, from the one decision the "Recipe lint" row makes (an error on a
        file the PR changes): "success" when the row does not FAIL; else "failure" where the repository
        makes lint blocking (`lint: blocking`), "neutral" where lint is advice."""
        if self.lint is None or self.lint.status is not Status.FAIL:
            return "success"
        return "failure" if self.lint_blocking else "neutral"

    @property
    def commit_state(self) -> str:
        """The commit status beside the check run: an advisory verdict does not block either; one waiting
        for a maintainer is pending (not success, not a failure of the signer)."""
        return {"failure": "failure", "action_required": "pending"}.get(self.conclusion, "success")

    def result(self, number: int) -> CheckResult:
        return next(r for r in self.results if r.number == number)
