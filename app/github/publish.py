"""Publish a verdict to GitHub: one sticky comment, a check run, a commit status, inline findings.

Publishing is idempotent, so a job that is retried or raced publishes once:
- the verdict comment is found by its hidden marker among the bot's comments
  in the snapshot (a PR runs one job at a time, so no other job posts one
  meanwhile) and edited in place (never a second one); when the verdict
  flips between PASS and REJECTED a short comment says so and links the
  sticky one;
- the `codeowner-signoff-verify` check run of the head SHA is updated if it
  exists (and says something else), else created; annotations go in
  batches of 50 (GitHub's cap). Only this App's own run is looked for (by
  name and app id): a same-named run of another app or of a workflow job is
  never touched (GitHub would refuse the update), ours is created beside it.
  Its summary ends with the App's hidden record of what each sign-off was
  first verified on (`checks.facts.freshness`): only this App can write its check
  runs, so that record survives the loss of the database; an update that
  brings no record keeps the run's one;
- findings on lines of the diff are posted once as one review with inline
  comments, each tagged with a hidden key (path, line, rule) so a
  re-verification never repeats them.

The comment, the commit status, the check run and the review do not depend
on each other: they go out as one wave (app/github/backoff.py says why one wave
and no more), so publishing costs one round trip. The existing comment and
check run to update are the ones gathered with the snapshot (its comments;
the check runs the gatherer listed for the head, `listed`), so nothing is
read first. The status links the verdict comment when there is one already,
else the PR's conversation, where the comment is being posted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from githubkit import GitHub

from app.settings import CHECK_NAME
from checks.facts import freshness
from checks.result import Finding, Severity, Status, Verdict
from checks.snapshot import Comment, Snapshot

from . import render
from .client import GitHubError, app_id_of, call, pages, write_wave
from .patches import commentable_lines

ANNOTATIONS_PER_REQUEST = 50
SUMMARY_LIMIT = 65_000
COMMENT_LIMIT = 65_536  # characters of a comment's body, GitHub's limit
FINDING_TAG = "<!-- signoff-bot finding {key} -->"
RESOLVED_PREFIX = "Resolved"
_LEVEL = {Severity.ERROR: "failure", Severity.WARNING: "warning", Severity.NOTICE: "notice"}


@dataclass
class Published:
    """What one publish did, for logs, the audit trail and the replay output."""

    comment_id: int | None = None
    comment_url: str | None = None
    comment_action: str = ""  # created | updated | unchanged
    flip_comment_id: int | None = None
    check_run_id: int | None = None
    status_state: str | None = None
    review_id: int | None = None
    inline_comments: int = 0
    writes: list[str] = field(default_factory=list)


def finding_key(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.rule}"


class Publisher:
    """`listed(sha)`: this App's sign-off check runs on `sha` as already read (app/github/gather.py
    `Gatherer.owned_check_runs`), or None to list them here."""

    def __init__(self, gh: GitHub, repo: str, bot_login: str = "signoff-bot[bot]",
                 listed: Callable[[str], list[Any] | None] | None = None):
        self.gh = gh
        self.repo = repo
        self.owner, self.name = repo.split("/", 1)
        self.bot_login = bot_login
        self.listed = listed
        app_id = app_id_of(gh)
        self._mine = {} if app_id is None else {"app_id": app_id}  # list filter: this App's check runs only

    # --- the verdict -------------------------------------------------------------

    async def verdict(self, snap: Snapshot, verdict: Verdict, sticky: bool = True,
                      record: freshness.Record | None = None) -> Published:
        """Publish everything; `sticky=False` (the head moved meanwhile) leaves the PR's comment alone;
        `record` goes into the check run's summary. What is posted is the verdict's: its conclusion
        (`Verdict.conclusion`, `Verdict.commit_state`) and its rendering."""
        out, review = Published(), Published()
        conclusion = verdict.conclusion
        title = f"Sign-off {verdict.label}" + (f" ({verdict.signer})" if verdict.signer else "")
        existing = self._sticky_of(snap)
        link = (existing.url if existing else snap.pr.url) if sticky else None
        async with write_wave(self.gh):
            (out.check_run_id, written), _, out.status_state, _ = await asyncio.gather(
                self._put_check_run(snap.pr.head_sha, CHECK_NAME, conclusion, title, render.summary(verdict),
                                    verdict.findings, summary_lists_findings=True, record=record,
                                    # GitHub: an action_required run should say where the action is
                                    details_url=(link or snap.pr.url) if conclusion == "action_required" else None),
                self._sticky_comment(snap, existing, _comment(snap, verdict), out) if sticky else _nothing(),
                self._status(snap.pr.head_sha, verdict, link),
                self.inline_findings(snap, verdict.findings, review),
            )
        out.review_id, out.inline_comments = review.review_id, review.inline_comments
        if written:
            out.writes.append(f"check run {CHECK_NAME}: {conclusion}")
        out.writes += [f"commit status {out.status_state}", *review.writes]
        return out

    def _sticky_of(self, snap: Snapshot) -> Comment | None:
        """The bot's verdict comment on the PR, found by its hidden marker among the gathered comments."""
        return next((c for c in self._bot_comments(snap) if render.marker_sha(c.body) is not None), None)

    async def _sticky_comment(self, snap: Snapshot, sticky: Comment | None, body: str, out: Published) -> None:
        rest = self.gh.rest
        number = snap.pr.number
        if sticky is None:
            resp = await call("create verdict comment", rest.issues.async_create_comment,
                                    self.owner, self.name, number, data={"body": body})
            created = resp.parsed_data
            out.comment_id, out.comment_url, out.comment_action = created.id, created.html_url, "created"
            out.writes.append("verdict comment created")
            return
        out.comment_id, out.comment_url = sticky.id, sticky.url
        if sticky.body == body:
            out.comment_action = "unchanged"
            return
        await call("update verdict comment", rest.issues.async_update_comment,
                         self.owner, self.name, sticky.id, data={"body": body})
        out.comment_action = "updated"
        out.writes.append("verdict comment updated")
        before, after = _label(sticky.body), _label(body)
        if before and after and before != after:
            note = f"Sign-off verdict changed from {before} to {after}: see [the verdict]({sticky.url})."
            resp = await call("create verdict-change comment", rest.issues.async_create_comment,
                                    self.owner, self.name, number, data={"body": note})
            out.flip_comment_id = resp.parsed_data.id
            out.writes.append(f"verdict change comment ({before} -> {after})")

    def _bot_comments(self, snap: Snapshot) -> list[Comment]:
        """The bot's conversation comments on the PR, oldest first, as gathered."""
        return [c for c in snap.comments if c.kind == "issue_comment" and c.author.lower() == self.bot_login.lower()]

    async def _status(self, sha: str, verdict: Verdict, link: str | None) -> str:
        """Set the commit status, linking `link` (the verdict); returns its state."""
        state = verdict.commit_state
        failing = [r for r in verdict.rows if r.status is Status.FAIL]
        if verdict.passed:
            description = "Sign-off verified"
        elif not verdict.signer:
            description = "No CODEOWNER sign-off yet"
        elif failing:
            description = f"Sign-off rejected: {len(failing)} check(s) failed"
        else:
            description = f"Needs a maintainer: {len(verdict.undecided)} check(s) could not be decided"
        data = {"state": state, "context": CHECK_NAME, "description": description[:140]}
        if link:
            data["target_url"] = link
        await call("commit status", self.gh.rest.repos.async_create_commit_status,
                         self.owner, self.name, sha, data=data)
        return state

    # --- check runs ----------------------------------------------------------------

    async def check_run(self, sha: str, name: str, conclusion: str | None, title: str, summary: str,
                        findings: tuple[Finding, ...] = (), status: str = "completed",
                        details_url: str | None = None, record: freshness.Record | None = None) -> int:
        """Create or update the check run `name` on `sha`; annotations in batches of 50. Returns its id."""
        run_id, _written = await self._put_check_run(sha, name, conclusion, title, summary, findings, status,
                                                     details_url, record=record)
        return run_id

    async def _put_check_run(self, sha: str, name: str, conclusion: str | None, title: str, summary: str,
                             findings: tuple[Finding, ...], status: str = "completed", details_url: str | None = None,
                             summary_lists_findings: bool = False,
                             record: freshness.Record | None = None) -> tuple[int, bool]:
        """(id, whether anything was written). When the summary lists every finding (path, line, rule,
        severity, message), a run that already shows it has the same annotations too and is left alone."""
        rest = self.gh.rest
        mine = self.listed(sha) if self.listed is not None and name == CHECK_NAME else None
        if mine is None:
            mine = await pages(f"list check runs {name}", rest.checks.async_list_for_ref, self.owner, self.name,
                               sha, key="check_runs", check_name=name, filter_="latest", **self._mine)
        annotations = [_annotation(f) for f in findings]
        batches = [annotations[i:i + ANNOTATIONS_PER_REQUEST]
                   for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)] or [[]]
        own = bool(mine) and name == CHECK_NAME and bool(self._mine)  # listed by app id: the App's own run
        kept = freshness.recorded(mine[0].output.summary or "") if own else ""
        # The record closes the summary; an update without one keeps the run's (a record is never lost).
        marker = record.marker() if record is not None else (
            f"{freshness.RECORD_PREFIX}{kept}{freshness.RECORD_SUFFIX}" if kept else "")
        limit = SUMMARY_LIMIT - len(marker)
        truncated = len(summary) > limit
        if truncated:
            summary = render.fit(summary, limit, "every finding is an annotation of this check run")
        if marker:
            summary += "\n" + marker
        first = {"name": name, "head_sha": sha, "status": status,
                 "output": {"title": title, "summary": summary, "annotations": batches[0]}}
        if status == "completed":
            first["conclusion"] = conclusion
        if details_url:
            first["details_url"] = details_url
        if mine and summary_lists_findings and not truncated and _says(mine[0], first, len(annotations)):
            return mine[0].id, False
        if mine:
            run_id = mine[0].id
            update = {k: v for k, v in first.items() if k != "head_sha"}
            await call("update check run", rest.checks.async_update, self.owner, self.name, run_id, data=update)
        else:
            created = await call("create check run", rest.checks.async_create, self.owner, self.name, data=first)
            run_id = created.parsed_data.id
        for batch in batches[1:]:
            await call("add annotations", rest.checks.async_update, self.owner, self.name, run_id,
                             data={"output": {"title": title, "summary": summary, "annotations": batch}})
        return run_id, True

    # --- inline findings --------------------------------------------------------------

    async def inline_findings(self, snap: Snapshot, findings: tuple[Finding, ...], out: Published) -> None:
        """One review with an inline comment per new finding on a line of the diff."""
        posted = {_finding_key_of(c.body) for c in snap.comments
                  if c.kind == "review_comment" and c.author.lower() == self.bot_login.lower()
                  and not c.body.startswith(RESOLVED_PREFIX)}
        lines = {f.path: commentable_lines(f.patch) for f in snap.files}
        fresh = [f for f in findings if f.line in lines.get(f.path, ()) and finding_key(f) not in posted]
        if not fresh:
            return
        comments = [{"path": f.path, "line": f.line, "side": "RIGHT",
                     "body": f"**{f.severity.value}** `{f.rule}`: {f.message}\n\n{FINDING_TAG.format(key=finding_key(f))}"}
                    for f in fresh]
        try:
            resp = await call("create review", self.gh.rest.pulls.async_create_review, self.owner, self.name,
                                    snap.pr.number, data={"commit_id": snap.pr.head_sha, "event": "COMMENT",
                                                          "body": f"signoff-bot found {len(fresh)} issue(s) on changed lines.",
                                                          "comments": comments})
        except GitHubError as exc:
            if exc.status == 422:  # a line GitHub does not consider part of the diff: annotations still carry it
                out.writes.append("inline review refused by GitHub (422)")
                return
            raise
        out.review_id = resp.parsed_data.id
        out.inline_comments = len(fresh)
        out.writes.append(f"review with {len(fresh)} inline comment(s)")

    async def resolve_fixed(self, snap: Snapshot, current: set[str]) -> int:
        """Mark the bot's inline comments whose finding no longer occurs at head as resolved; returns how many."""
        marked = 0
        for c in snap.comments:
            if c.kind != "review_comment" or c.author.lower() != self.bot_login.lower():
                continue
            key = _finding_key_of(c.body)
            if key is None or key in current or c.body.startswith(RESOLVED_PREFIX):
                continue
            body = f"{RESOLVED_PREFIX} at {snap.pr.head_sha[:8]}.\n\n~~{c.body.split(chr(10))[0]}~~\n\n" + \
                FINDING_TAG.format(key=key)
            await call("resolve review comment", self.gh.rest.pulls.async_update_review_comment,
                             self.owner, self.name, c.id, data={"body": body})
            marked += 1
        return marked


async def _nothing() -> None:
    return None


def _says(run, wanted: dict, annotations: int) -> bool:
    """Whether an existing check run already shows `wanted` (status, conclusion, output, details URL)."""
    output = run.output
    return (str(run.status) == wanted["status"] and run.conclusion == wanted.get("conclusion")
            and output.title == wanted["output"]["title"] and output.summary == wanted["output"]["summary"]
            and output.annotations_count == annotations
            and ("details_url" not in wanted or run.details_url == wanted["details_url"]))


def _finding_key_of(body: str) -> str | None:
    if "<!-- signoff-bot finding " not in body:
        return None
    return body.split("<!-- signoff-bot finding ", 1)[1].split(" -->", 1)[0]


def _comment(snap: Snapshot, verdict: Verdict) -> str:
    """The verdict comment, within GitHub's limit: when cut, it points to the check run, whose summary and
    annotations hold every row and finding."""
    return render.fit(render.comment(verdict), COMMENT_LIMIT,
                      f"every row and finding is in [the `{CHECK_NAME}` check run]({snap.pr.url}/checks)")


def _annotation(f: Finding) -> dict:
    """A check-run annotation; what could not be decided is a warning, never a failure of the signer's."""
    level = "warning" if f.undecided else _LEVEL[f.severity]
    return {"path": f.path, "start_line": f.line, "end_line": f.line, "annotation_level": level,
            "title": f.rule, "message": f.message[:64_000]}


def _label(body: str) -> str | None:
    if "**Verdict: PASS**" in body:
        return "PASS"
    if "**REJECTED**" in body:
        return "REJECTED"
    if "**NEEDS A MAINTAINER**" in body:
        return "NEEDS A MAINTAINER"
    return None
