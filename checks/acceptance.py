"""`/signoff-accept <check> <reason>`: a maintainer confirms what the checks could not decide.

What it does: a check that cannot read or decide its evidence reports its row
UNDECIDED, and a verdict with UNDECIDED rows and no FAIL reads NEEDS A
MAINTAINER. A maintainer who has looked at what the row names accepts it
with one line in a conversation comment; the row then reads PASS, "accepted
by @x: reason", for the content the acceptance was given on.

Why: a deterministic verifier always meets configs it cannot read. Blaming the
signer for what the bot could not see is wrong; passing it silently is worse.
A named person with write access taking responsibility, on the record, is the
honest middle.

How it decides (`commands`, pure; the app pins each command to the content
like a sign-off, `checks.facts.freshness`, and hands back the ones still standing):
- the command opens a line of a conversation comment by a user (not a bot):
  `/signoff-accept <row> <reason>`, the row's number (`11`, `check 11` or
  `#11`) and a reason of at least `MIN_REASON_WORDS` words;
- its author has write permission or above on the repository (asked of
  GitHub), and is neither the PR's author nor the signer: the people the gate
  exists to check cannot waive it;
- it counts only on the content it was first verified on: a push that changes
  the PR's effective diff voids it (`Acceptance.pin_key`, as `signoff.version`;
  an edit of the comment is a new acceptance);
- it turns an UNDECIDED row into PASS; it never changes a FAIL (a violation
  the bot did see is the signer's to fix) or a PASS. Of several acceptances
  of one row, the newest counts.

    accepts:  "/signoff-accept 11 the AL is exported by lib/spec.sh:14, 2.61 matches the curve"  by a writer
    ignored:  "/signoff-accept 11 looks fine"  by the PR's author (or the signer, or a reader)
    ignored:  "/signoff-accept 11 ..." given before a push that changed a recipe (void)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .context import Context
from .facts.commands import WRITE_PERMISSIONS
from .facts.signoff import is_bot, version
from .result import CheckResult, Status, Verdict
from .snapshot import Comment

COMMAND = "/signoff-accept"
MIN_REASON_WORDS = 2
_LINE = re.compile(rf"^[ \t]*{re.escape(COMMAND)}(?![\w-])[ \t]*(?:check[ \t]+|#)?(?P<row>\d{{1,2}})\b[ \t]*"
                   r"(?P<reason>[^\n]*)", re.MULTILINE)


@dataclass(frozen=True)
class Acceptance:
    """One `/signoff-accept` line; `problem` says why it does not count ("" when it may)."""

    comment: Comment
    row: int
    reason: str
    problem: str = ""

    @property
    def by(self) -> str:
        return self.comment.author

    @property
    def pin_key(self) -> str:
        """What pins it to content, as a sign-off is pinned (`checks.facts.freshness`)."""
        return version(self.comment)


def mentions(comment: Comment) -> bool:
    """Whether `comment` holds the command at the start of a line (what the app routes)."""
    return _LINE.search(comment.body) is not None


def commands(ctx: Context) -> tuple[Acceptance, ...]:
    """Every acceptance in the conversation, oldest first, each with why it does not count (if it does not).

    Asks GitHub (`ctx.need.permission`) for the permission of each author who could otherwise accept."""
    if not any(COMMAND in c.body for c in ctx.snap.comments):
        return ()
    pr_author = ctx.snap.pr.author.lower()
    signer = ctx.signoff.author.lower() if ctx.signoff else ""
    out: list[Acceptance] = []
    for comment in sorted(ctx.snap.comments, key=lambda c: (c.created_at, c.id)):
        if comment.kind != "issue_comment" or is_bot(comment, ctx.snap.bot_login):
            continue
        for m in _LINE.finditer(comment.body):
            row, reason = int(m.group("row")), " ".join(m.group("reason").split())
            out.append(Acceptance(comment, row, reason, _problem(ctx, comment, reason, pr_author, signer)))
    return tuple(out)


def _problem(ctx: Context, comment: Comment, reason: str, pr_author: str, signer: str) -> str:
    if len(reason.split()) < MIN_REASON_WORDS:
        return f"no reason given (`{COMMAND} <check> <reason>`)"
    if comment.author.lower() in (pr_author, signer):
        return refusal(comment.author, pr_author, signer, "")
    permission = ctx.need.permission(comment.author)
    if not isinstance(permission, str):
        return "their repository permission is not known yet"
    return refusal(comment.author, pr_author, signer, permission)


def refusal(login: str, pr_author: str, signer: str, permission: str) -> str:
    """Why `login` may not accept (the app says it when it acknowledges the command); "" when they may.
    `signer` is "" where the sign-off is not known yet (the verification still refuses the signer)."""
    who = login.lower()
    if who == pr_author.lower():
        return "the PR's author cannot accept for their own PR"
    if signer and who == signer.lower():
        return "the signer cannot accept what their sign-off is checked for"
    if permission not in WRITE_PERMISSIONS:
        return f"needs write permission on the repository (has {permission or 'none'})"
    return ""


def apply(verdict: Verdict, standing: Iterable[Acceptance]) -> Verdict:
    """`verdict` with each UNDECIDED row that a standing acceptance names turned PASS, saying who accepted
    it and why. `standing` are acceptances without a problem whose pin holds on the current content."""
    newest: dict[int, Acceptance] = {}
    for a in standing:
        if not a.problem:
            newest[a.row] = a

    def accepted(row: CheckResult) -> CheckResult:
        a = newest.get(row.number)
        if a is None or row.status is not Status.UNDECIDED:
            return row
        where = a.comment.url or f"comment {a.comment.id}"
        reason = f"accepted by @{a.by}: {a.reason} ({where}; was: {row.reason})"
        return replace(row, status=Status.PASS, reason=reason, accepted_by=a.by)

    if not any(r.status is Status.UNDECIDED and r.number in newest for r in verdict.rows):
        return verdict
    lint = accepted(verdict.lint) if verdict.lint is not None and verdict.lint_blocking else verdict.lint
    return replace(verdict, results=tuple(map(accepted, verdict.results)),
                   extra=tuple(map(accepted, verdict.extra)), lint=lint)
