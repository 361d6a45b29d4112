"""What the engine concludes: one result per check, findings anchored to lines, a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .policy import Policy
from .signoff import SignOff


class Status(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    NA = "N/A"

    @property
    def emoji(self) -> str:
        return {"PASS": "✅", "FAIL": "❌", "N/A": "➖"}[self.value]


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

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
        }


@dataclass(frozen=True)
class CheckResult:
    number: int
    name: str
    status: Status
    reason: str
    findings: tuple[Finding, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status is not Status.FAIL

    @classmethod
    def failed(cls, number: int, name: str, findings, rule_in_reason: bool = False) -> "CheckResult":
        """A FAIL whose one-line reason is the first finding (path:line message), plus how many more."""
        findings = tuple(sorted(findings))
        first = findings[0]
        rule = f" [{first.rule}]" if rule_in_reason else ""
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        return cls(number, name, Status.FAIL, f"{first.path}:{first.line}{rule} {first.message}{more}", findings)


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
    def passed(self) -> bool:
        return self.signer is not None and all(r.passed for r in self.rows)

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "REJECTED"

    @property
    def conclusion(self) -> str:
        """The sign-off check run's conclusion: success on PASS; on REJECTED failure, or neutral where the
        repository makes the gate advisory (`advisory: true`)."""
        if self.passed:
            return "success"
        return "neutral" if self.policy.advisory else "failure"

    @property
    def lint_conclusion(self) -> str:
        """The lint check run's conclusion: "success" without errors; with errors, "failure" where the
        repository makes lint blocking (`lint: blocking`), else "neutral" (advice)."""
        if not any(f.severity is Severity.ERROR for f in self.lint_findings):
            return "success"
        return "failure" if self.lint_blocking else "neutral"

    @property
    def commit_state(self) -> str:
        """The commit status beside the check run: an advisory REJECTED does not block either."""
        return "failure" if self.conclusion == "failure" else "success"

    def result(self, number: int) -> CheckResult:
        return next(r for r in self.results if r.number == number)
