"""Render a verdict as the sticky PR comment and the check-run summary (Jinja2 templates)."""

from __future__ import annotations

from pathlib import Path

import jinja2

import templates
from checks import acceptance
from checks.result import CheckResult, Status, Verdict

MARKER_PREFIX = "<!-- codeowner-signoff-verify sha="

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(templates.__file__).parent),
    autoescape=False,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
# Compiled once, when the module is imported: compiling them costs ~50 ms of CPU, which the first
# verification would otherwise spend between its last read and its first write.
_COMMENT = _ENV.get_template("verdict.md.j2")
_SUMMARY = _ENV.get_template("summary.md.j2")


def comment(verdict: Verdict) -> str:
    """The verdict comment, exactly in the format of the reference verifier."""
    policy = verdict.policy
    blocking = [_row_name(r) for r in verdict.rows if r.status is Status.FAIL]
    undecided = verdict.undecided
    return _COMMENT.render(
        verdict=verdict, rows=verdict.rows, blocking=blocking, undecided=[_row_name(r) for r in undecided],
        first_undecided=undecided[0].number if undecided else "", accept=acceptance.COMMAND,
        checklist=policy.checklist, phrase=policy.signoff_phrase,
    )


def _row_name(row: CheckResult) -> str:
    return f"Check {row.number} ({row.name})" if row.number <= 12 else row.name


def summary(verdict: Verdict) -> str:
    """The check-run summary: the verdict comment plus a table of every finding."""
    return _SUMMARY.render(verdict=verdict, comment=comment(verdict))


def fit(text: str, limit: int, rest: str) -> str:
    """`text` cut at its last line break that leaves room, within `limit` characters, for the line saying
    where the rest is (`rest`): GitHub refuses a longer comment or summary (422), and nothing is posted."""
    if len(text) <= limit:
        return text
    note = f"\n… cut to fit GitHub's limit: {rest}\n"
    kept = text[:max(0, limit - len(note) - 1)]
    kept = kept[:kept.rfind("\n") + 1] or kept + "\n"  # (no line break at all: cut where the room ends)
    return kept + note


def marker_sha(body: str) -> str | None:
    """The head SHA recorded in a verdict comment's hidden marker, if `body` is one."""
    if not body.startswith(MARKER_PREFIX):
        return None
    end = body.find(" -->", len(MARKER_PREFIX))
    return body[len(MARKER_PREFIX):end] if end > 0 else None
