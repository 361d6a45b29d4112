"""What each queued job does. A job reads GitHub afresh: it never trusts the webhook payload's copy.

Kinds:
- comment: a user's comment, review or review comment. Re-read it; a sign-off
  queues a verification; `/reuse-sweep-run` is validated and acknowledged;
  the re-check command queues a verification (maintainers only).
- verify: gather, check, publish at the PR's current head, pinned for the job.
  A sign-off counts only as its author's own words, and vouches for the
  content it was first verified on (`checks.facts.freshness`): when the PR's
  effective diff has changed since, or no record says what it was given on,
  the head's check run is `action_required` (a fresh sign-off is needed)
  instead of a verdict. What it was first verified on is kept in the
  database and in the App's own check runs, so it survives either's loss.
- opened: post the check run as queued ("awaiting a sign-off") so a required
  check is never stuck at "Expected".
- synchronize: the head moved → verify again, if a sign-off was verified before
  (by this database's verdicts, or by the App's record on the previous head).
- sweep: a sweep workflow finished on a commit of the PR → verify.
- commit: a check suite, check run or workflow run on a commit whose delivery
  names no PR (GitHub leaves `pull_requests` empty for a fork's PR): find
  the open PRs whose head is that commit, and queue the job it implies
  (`then`: verify or sweep) for each.
- lint: recipe lint on every push, as the `signoff-bot lint` check run plus
  inline comments; fixed findings' comments are marked resolved.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from githubkit import GitHub
from githubkit.exception import RequestFailed

from app.files import decode_text
from app.github.client import (
    CallStats,
    GitHubError,
    as_github_error,
    call,
    http_timeout,
    installation_client,
    pages,
    url_path,
    warm_up,
)
from app.github.gather import MAX_COMMITS, Gatherer
from app.github.objects import as_artifact, as_comment, as_workflow_run
from app.github.publish import Published, Publisher, finding_key
from app.judge import IN_THREAD, Checks
from app.observability import Metrics
from app.settings import CHECK_NAME, LINT_CHECK_NAME, Settings
from app.store.sql import Job, JobSpec, LeaseLost, Store
from checks import acceptance
from checks.facts import commands as command_rules
from checks.facts import freshness, signoff
from checks.policy import Policy
from checks.registry import LINT
from checks.result import JobFacts, Outcome, job_outcome
from checks.snapshot import Comment, Snapshot

log = logging.getLogger("signoff_bot.jobs")

ACK_TAG = "<!-- signoff-bot ack {comment_id} -->"
_CREATED = {"issue_comment": "created_at", "review": "submitted_at", "review_comment": "created_at"}
JOB_HEADER = "X-Signoff-Bot-Job"
# "<job id>@<worker>" of the job a worker is running, sent with each of its GitHub calls so that
# a proxy or the fake GitHub can tell which job made a call (the logs carry the same job id).
current_job: ContextVar[str | None] = ContextVar("signoff_bot_job", default=None)


class MetricsStats(CallStats):
    def __init__(self, metrics: Metrics):
        super().__init__()
        self.metrics = metrics

    async def on_request(self, request) -> None:
        await super().on_request(request)
        self.metrics.github_calls.inc()
        job = current_job.get()
        if job is not None:
            request.headers[JOB_HEADER] = job

    async def on_response(self, response) -> None:
        await super().on_response(response)
        if self.rate_limit_remaining is not None:
            self.metrics.rate_limit_remaining.set(self.rate_limit_remaining)


class Clients:
    """One githubkit client per installation, reused so tokens and the HTTP cache are reused too."""

    def __init__(self, settings: Settings, metrics: Metrics):
        self.settings = settings
        self.metrics = metrics
        self._clients: dict[int, GitHub] = {}
        warm_up()  # at start, not in the first verification

    def installation(self, installation_id: int | None) -> GitHub:
        if installation_id is None:
            raise GitHubError("the delivery names no installation", 400)
        if installation_id not in self._clients:
            self._clients[installation_id] = installation_client(
                self.settings.app_id, self.settings.private_key, installation_id, self.settings.github_url,
                MetricsStats(self.metrics), http_timeout(self.settings.http_timeout))
        return self._clients[installation_id]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class JobRunner:
    settings: Settings
    store: Store
    clients: Clients
    metrics: Metrics
    checks: Checks = IN_THREAD  # where a verification's checks run (app/judge.py)
    # The pulls this runner's jobs read, for its later jobs to reuse: None in the App, whose every job reads
    # GitHub afresh; `signoff-bot verify` runs the jobs one event causes back to back, within one command, and
    # keeps them (a comment job's read of the PR is then its verification's, one round trip less).
    pulls: dict[tuple[str, int], Any] | None = None

    async def run(self, job: Job) -> None:
        handler = getattr(self, f"_{job.kind}", None)
        if handler is None:
            log.warning("unknown job kind", extra={"job": job.id, "kind": job.kind})
            return
        gh = self.clients.installation(job.installation_id)
        async with gh:  # one HTTP client, keep-alive connections, for the whole job
            await handler(job, gh)

    # --- helpers ------------------------------------------------------------------

    async def _policy(self, gh: GitHub, repo: str, ref: str | None) -> Policy:
        """The repository's policy, read from its base branch (None: its default branch) as a verification
        reads it (`decode_text`, `Policy.from_yaml`): what it ignores is logged here and noted on the verdict."""
        owner, name = repo.split("/", 1)
        path = self.settings.config_path
        quoted = url_path(path)
        if quoted is None:
            return Policy()  # no request can name it; the verification reads none either
        try:
            resp = await gh.rest.repos.async_get_content(owner, name, quoted, **({"ref": ref} if ref else {}))
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return Policy()
            raise as_github_error(exc, path) from None
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, path) from None
        content = getattr(resp.parsed_data, "content", None)
        text, _why = decode_text(base64.b64decode(content) if content else None)
        policy, problems = Policy.from_yaml(text, path)
        if problems:
            log.warning("ignoring repository settings", extra={"repo": repo, "problems": list(problems)})
        return policy

    async def _pull(self, gh: GitHub, repo: str, pr: int, fresh: bool = False):
        """The pull as GitHub has it now, or as an earlier job of this runner read it (`pulls`) unless `fresh`."""
        if not fresh and self.pulls is not None and (repo, pr) in self.pulls:
            return self.pulls[repo, pr]
        owner, name = repo.split("/", 1)
        resp = await call(f"pull #{pr}", gh.rest.pulls.async_get, owner, name, pr)
        if self.pulls is not None:
            self.pulls[repo, pr] = resp.parsed_data
        return resp.parsed_data

    async def _enqueue_verify(self, job: Job, reason: str, **extra: Any) -> None:
        await asyncio.to_thread(self.store.enqueue, [JobSpec("verify", job.repo, job.pr, job.installation_id,
                                                             {"reason": reason, "delivery": job.payload.get("delivery"),
                                                              **extra})])

    # --- comment -----------------------------------------------------------------------

    async def _comment(self, job: Job, gh: GitHub) -> None:
        owner, name = job.repo.split("/", 1)
        kind, cid = job.payload["comment_kind"], int(job.payload["comment_id"])
        # The policy of the default branch is read beside the PR, a guess at its base branch's (most PRs are
        # based on it): a PR based on another branch costs a round trip more, every other one a round trip less.
        pull, comment, at_default = await asyncio.gather(self._pull(gh, job.repo, job.pr),
                                                         self._read_comment(gh, job.repo, job.pr, kind, cid),
                                                         self._policy(gh, job.repo, None))
        policy = at_default if pull.base.ref == pull.base.repo.default_branch else \
            await self._policy(gh, job.repo, pull.base.ref)
        if comment is None or signoff.is_bot(comment, self.settings.bot_login):
            return
        # An edit may also have made a sign-off no sign-off: re-verify a PR that had a verdict.
        if signoff.is_signoff(comment, policy.signoff_phrase, self.settings.bot_login) or (
                job.payload.get("action") == "edited"
                and await asyncio.to_thread(self.store.last_verdict, job.repo, job.pr) is not None):
            await self._enqueue_verify(job, f"sign-off {kind} {cid}")
        if kind != "issue_comment":
            return
        if command_rules.command_pattern(policy.reuse_command).search(comment.body):
            await self._reuse(job, gh, policy, pull, cid)
        if command_rules.command_pattern(policy.recheck_command).search(comment.body):
            await self._recheck(job, gh, policy, comment)
        if acceptance.mentions(comment):
            await self._accept(job, gh, pull, comment)

    async def _read_comment(self, gh: GitHub, repo: str, pr: int, kind: str, cid: int) -> Comment | None:
        """The comment as GitHub has it now, as the checks read one; None when it was deleted."""
        owner, name = repo.split("/", 1)
        rest = gh.rest
        try:
            if kind == "issue_comment":
                resp = await rest.issues.async_get_comment(owner, name, cid)
            elif kind == "review":
                resp = await rest.pulls.async_get_review(owner, name, pr, cid)
            else:
                resp = await rest.pulls.async_get_review_comment(owner, name, cid)
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return None  # deleted meanwhile
            raise as_github_error(exc, f"{kind} {cid}") from None
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, f"{kind} {cid}") from None
        raw = resp.parsed_data
        return as_comment(raw, kind, getattr(raw, _CREATED[kind], None))

    async def _authorized(self, gh: GitHub, repo: str, comment: Comment, policy: Policy) -> tuple[bool, str]:
        """`commands.authorized`, asking GitHub for the author's permission only when the association
        does not already authorize them; (authorized, who they are, for a refusal)."""
        association, associations = comment.author_association, policy.authorized_associations
        if command_rules.authorized(association, None, associations):
            return True, association
        permission = await self._permission(gh, repo, comment.author)
        return command_rules.authorized(association, permission, associations), f"{association}, permission {permission}"

    async def _permission(self, gh: GitHub, repo: str, login: str) -> str:
        """`login`'s permission on the repository ("none" when GitHub does not know them)."""
        owner, name = repo.split("/", 1)
        try:
            resp = await gh.rest.repos.async_get_collaborator_permission_level(owner, name, login)
            return str(resp.parsed_data.permission)
        except RequestFailed as exc:
            if exc.response.status_code != 404:
                raise as_github_error(exc, "collaborator permission") from None
            return "none"
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, "collaborator permission") from None

    async def _acknowledge(self, gh: GitHub, job: Job, cid: int, accepted: bool, text: str) -> None:
        """+1/-1 reaction and one reply, never repeated when a job is retried."""
        owner, name = job.repo.split("/", 1)
        rest = gh.rest
        await call("reaction", rest.reactions.async_create_for_issue_comment, owner, name, cid,
                         data={"content": "+1" if accepted else "-1"})
        tag = ACK_TAG.format(comment_id=cid)
        existing = await pages("list comments", rest.issues.async_list_comments, owner, name, job.pr)
        if any(tag in (c.body or "") for c in existing if c.user and
               c.user.login.lower() == self.settings.bot_login.lower()):
            return
        await call("reply", rest.issues.async_create_comment, owner, name, job.pr,
                         data={"body": f"{text}\n\n{tag}"})

    async def _reuse(self, job: Job, gh: GitHub, policy: Policy, pull, cid: int) -> None:
        for _ in range(3):  # re-read before acknowledging: an edit made meanwhile is validated again
            comment = await self._read_comment(gh, job.repo, job.pr, "issue_comment", cid)
            if comment is None:
                return
            matches = list(command_rules.command_pattern(policy.reuse_command).finditer(comment.body))
            if not matches:
                return
            arg = matches[-1].group("arg")
            ok, who = await self._authorized(gh, job.repo, comment, policy)
            if not ok:
                accepted, text = False, (f"`{policy.reuse_command}` refused: @{comment.author} is not authorized "
                                         f"({who}); it needs {', '.join(policy.authorized_associations)} "
                                         "or write permission.")
            else:
                accepted, text = await self._validate_run(gh, job, policy, pull, arg)
            again = await self._read_comment(gh, job.repo, job.pr, "issue_comment", cid)
            if again is not None and again.body == comment.body:
                await self._acknowledge(gh, job, cid, accepted, text)
                if accepted:
                    await self._enqueue_verify(job, f"{policy.reuse_command} accepted")
                return
        raise GitHubError("the reuse comment keeps changing; retrying later", 503)

    async def _validate_run(self, gh: GitHub, job: Job, policy: Policy, pull, arg: str) -> tuple[bool, str]:
        """Whether the reuse path would take the command's run (`commands.run_problem`, the rule check 4
        judges by, and `commands.artifact_problem`); (accepted, the reply)."""
        owner, name = job.repo.split("/", 1)
        rest = gh.rest
        commits = await pages("PR commits", rest.pulls.async_list_commits, owner, name, job.pr, limit=MAX_COMMITS)
        in_pr = {c.sha for c in commits}
        if arg:
            run_id = command_rules.parse_run_id(arg)
            if run_id is None:
                return False, f"`{policy.reuse_command} {arg}` refused: `{arg}` is not a run id."
            try:
                run = as_workflow_run((await rest.actions.async_get_workflow_run(owner, name, run_id)).parsed_data)
            except RequestFailed as exc:
                if exc.response.status_code == 404:
                    return False, f"`{policy.reuse_command} {arg}` refused: no such workflow run."
                raise as_github_error(exc, f"run {arg}") from None
            problem = command_rules.run_problem(run, policy, in_pr) or await self._artifact_problem(gh, job.repo,
                                                                                                   run.id, policy)
            if problem:
                return False, f"`{policy.reuse_command} {arg}` refused: run {arg} {problem}."
            return True, f"`{policy.reuse_command}` accepted: run {run.id} ({run.head_sha[:8]}, {run.conclusion})."
        listed = await pages("workflow runs", rest.actions.async_list_workflow_runs_for_repo, owner, name,
                             key="workflow_runs", branch=pull.head.ref, event="pull_request", status="success")
        for run in map(as_workflow_run, sorted(listed, key=lambda r: r.created_at, reverse=True)):
            if not command_rules.run_problem(run, policy, in_pr) and \
                    not await self._artifact_problem(gh, job.repo, run.id, policy):
                return True, f"`{policy.reuse_command}` accepted: the newest green sweep is run {run.id} ({run.head_sha[:8]})."
        return False, f"`{policy.reuse_command}` refused: no completed, successful sweep with eval artifacts on a commit of this PR."

    async def _artifact_problem(self, gh: GitHub, repo: str, run_id: int, policy: Policy) -> str | None:
        owner, name = repo.split("/", 1)
        listed = await pages("artifacts", gh.rest.actions.async_list_workflow_run_artifacts, owner, name, run_id,
                             key="artifacts")
        return command_rules.artifact_problem(map(as_artifact, listed), policy)

    async def _recheck(self, job: Job, gh: GitHub, policy: Policy, comment) -> None:
        ok, who = await self._authorized(gh, job.repo, comment, policy)
        if ok:
            await self._enqueue_verify(job, f"{policy.recheck_command} by {comment.author}")
            await call("reaction", gh.rest.reactions.async_create_for_issue_comment,
                             *job.repo.split("/", 1), comment.id, data={"content": "+1"})
            return
        await self._acknowledge(gh, job, comment.id, False,
                                f"`{policy.recheck_command}` refused: @{comment.author} is not a maintainer ({who}).")

    async def _accept(self, job: Job, gh: GitHub, pull, comment: Comment) -> None:
        """`/signoff-accept`: acknowledged (a reaction, or a reply saying why it cannot count) and verified
        again; whether it counts, and for which row, the verification decides (`checks.acceptance`)."""
        author = pull.user.login if pull.user else ""
        refused = acceptance.refusal(comment.author, author, "", "write")  # the author first: no permission asked
        if not refused:
            refused = acceptance.refusal(comment.author, author, "", await self._permission(gh, job.repo,
                                                                                           comment.author))
        if refused:
            await self._acknowledge(gh, job, comment.id, False,
                                    f"`{acceptance.COMMAND}` refused: @{comment.author}: {refused}.")
            return
        await call("reaction", gh.rest.reactions.async_create_for_issue_comment, *job.repo.split("/", 1), comment.id,
                   data={"content": "eyes"})
        await self._enqueue_verify(job, f"{acceptance.COMMAND} by {comment.author}")

    # --- verify ------------------------------------------------------------------------

    async def _verify(self, job: Job, gh: GitHub) -> None:
        started = time.monotonic()
        gatherer = Gatherer(gh, job.repo, self.settings.bot_login, self.checks, self.settings.config_path)
        if self.pulls is not None and (job.repo, job.pr) in self.pulls:
            gatherer.known_pull(job.pr, self.pulls[job.repo, job.pr])
        done = await gatherer.verify(job.pr, utc_now())
        snap, verdict = done.snapshot, done.verdict
        for row in verdict.rows:
            if row.internal_error:  # a bug of ours: its row failed closed; here is where it raised
                self.metrics.internal_errors.labels("rule").inc()
                log.error(f"check {row.number} ({row.name}) raised; its row fails closed\n{row.internal_error}",
                          extra={"repo": job.repo, "pr": job.pr, "head_sha": snap.pr.head_sha, "job": job.id})
        publisher = Publisher(gh, job.repo, self.settings.bot_login, gatherer.owned_check_runs)
        # The facts `job_outcome` decides by, each read only where the one before leaves it to decide.
        ready = snap.pr.state == "open" and not snap.pr.draft
        fresh: freshness.Freshness | None = None
        content = ""  # what the sign-off vouches for: read once there is one
        if ready:
            records = await self._records(gatherer, snap, job.payload.get("before"))
            if verdict.signoff is not None:
                content = freshness.content(snap)
                fresh = await asyncio.to_thread(self._freshness, job, snap, verdict.signoff, content, records)
                if not fresh.needs_signoff:
                    verdict = acceptance.apply(verdict, [a for a in verdict.acceptances if not a.problem and (
                        await asyncio.to_thread(self._freshness, job, snap, a.comment, content, records,
                                                "acceptance")).fresh])
        outcome = job_outcome(JobFacts(ready=ready, signed=verdict.signoff is not None,
                                       needs_signoff=fresh is not None and fresh.needs_signoff,
                                       verdict=verdict.outcome))
        if outcome is Outcome.SKIPPED:
            await asyncio.to_thread(self.store.record_verdict, job.repo, job.pr, snap.pr.head_sha, outcome)
            return
        if outcome is Outcome.NO_SIGNOFF:
            await publisher.check_run(snap.pr.head_sha, CHECK_NAME, None, "Awaiting a CODEOWNER sign-off",
                                      f"No comment starting with \"{verdict.policy.signoff_phrase}\" yet.",
                                      status="queued", record=await self._record(job, snap))
            await asyncio.to_thread(self.store.record_verdict, job.repo, job.pr, snap.pr.head_sha, outcome)
            return
        if outcome is Outcome.STALE:
            assert fresh is not None  # STALE is decided by the sign-off's freshness
            await publisher.check_run(snap.pr.head_sha, CHECK_NAME, "action_required", "A fresh sign-off is needed",
                                      fresh.reason, details_url=snap.pr.url, record=await self._record(job, snap))
            await asyncio.to_thread(self.store.record_verdict, job.repo, job.pr, snap.pr.head_sha, outcome)
            return
        current = await self._pull(gh, job.repo, job.pr, fresh=True)
        # A push landed while verifying: the result belongs to the old head only; the sticky comment waits.
        sticky = current.head.sha == snap.pr.head_sha
        if not await asyncio.to_thread(self.store.heartbeat, job, job.owner, self.settings.lease_seconds):
            raise LeaseLost(f"job {job.id}: another worker holds the lease; this verdict is not published")
        published = await publisher.verdict(snap, verdict, sticky=sticky, record=await self._record(job, snap))
        decided = await asyncio.to_thread(self.store.record_decision, job, snap.pr.head_sha, outcome, content, {
            "delivery": job.payload.get("delivery"), "repo": job.repo, "pr": job.pr, "head_sha": snap.pr.head_sha,
            "inputs_digest": await self.checks.digest(snap), "verdict": outcome.value,
            "published": {**_published_record(published, job.payload.get("reason", ""), job.id),
                          **({"accepted": accepted} if (accepted := [
                              {"row": r.number, "by": r.accepted_by, "reason": r.reason}
                              for r in verdict.rows if r.accepted_by]) else {})},
        })
        if not decided:
            log.warning("lease lost before the verdict was recorded; the job runs again",
                        extra={"repo": job.repo, "pr": job.pr, "job": job.id})
            return
        self.metrics.verification_seconds.observe(time.monotonic() - started)
        log.info("verified", extra={"repo": job.repo, "pr": job.pr, "head_sha": snap.pr.head_sha,
                                    "verdict": outcome.value, "job": job.id})

    async def _records(self, gatherer: Gatherer, snap: Snapshot, before: str | None) -> list[freshness.Record]:
        """The App's records on the PR's commits and on the head a push replaced (gone after a force push);
        what they pin is adopted into this database, which may have lost it."""
        texts = [c.record for c in snap.check_runs if c.record]
        if before and before not in snap.commits:
            texts += await gatherer.records_on(before)
        records = [r for r in map(freshness.Record.from_json, texts) if r is not None and r.pr == snap.pr.number]
        for pin in sorted({p for r in records for p in r.pins}, key=lambda p: p.signoff):
            await asyncio.to_thread(self.store.pin_signoff, snap.repo, snap.pr.number, pin.signoff, pin.content,
                                    pin.head_sha)
        return records

    def _freshness(self, job: Job, snap: Snapshot, sign: signoff.SignOff | Comment, content: str,
                   records: list[freshness.Record], what: str = "sign-off") -> freshness.Freshness:
        """`freshness.decide` on this database's pin and the App's records, storing the pin it asks for
        (if another worker pinned this sign-off first, its pin decides). A maintainer's acceptance is a
        comment pinned the same way (`what`)."""
        comment = sign.comment if isinstance(sign, signoff.SignOff) else sign
        row = next(filter(None, (self.store.signoff_pin(job.repo, job.pr, key)
                                 for key in freshness.pin_keys(comment))), None)
        local = freshness.Pin(row["signoff"], row["fingerprint"], row["head_sha"]) if row else None
        fresh = freshness.decide(comment, content, snap.pr.head_sha, local, records, what)
        wanted = fresh.record
        if wanted is not None:
            pinned = self.store.pin_signoff(job.repo, job.pr, wanted.signoff, wanted.content, wanted.head_sha)
            if pinned["fingerprint"] != wanted.content:
                local = freshness.Pin(wanted.signoff, pinned["fingerprint"], pinned["head_sha"])
                fresh = freshness.decide(comment, content, snap.pr.head_sha, local, records, what)
        return fresh

    async def _record(self, job: Job, snap: Snapshot) -> freshness.Record:
        """What this verification leaves in its check run: when it read the PR, and every pin of the PR."""
        pins = await asyncio.to_thread(self.store.pins, job.repo, job.pr)
        return freshness.Record(job.pr, freshness.seen(snap), tuple(
            freshness.Pin(p["signoff"], p["fingerprint"], p["head_sha"]) for p in pins))

    async def _sweep(self, job: Job, gh: GitHub) -> None:
        pull = await self._pull(gh, job.repo, job.pr)
        policy = await self._policy(gh, job.repo, pull.base.ref)
        if policy.is_sweep_workflow(job.payload.get("workflow_path")):
            await self._enqueue_verify(job, f"sweep run {job.payload.get('run_id')} completed")

    async def _commit(self, job: Job, gh: GitHub) -> None:
        """The open PRs whose head is the commit (a fork's PR is found only this way) each get `then`."""
        owner, name = job.repo.split("/", 1)
        sha = job.payload["head_sha"]
        pulls = await pages("open pulls", gh.rest.pulls.async_list, owner, name, state="open")
        fields = {k: v for k, v in job.payload.items() if k not in ("head_sha", "then")}
        await asyncio.to_thread(self.store.enqueue, [JobSpec(job.payload["then"], job.repo, p.number,
                                                             job.installation_id, fields)
                                                     for p in pulls if p.head.sha == sha])

    async def _opened(self, job: Job, gh: GitHub) -> None:
        pull = await self._pull(gh, job.repo, job.pr)
        if job.payload.get("action") == "reopened":
            await self._enqueue_verify(job, "reopened")
            return
        if pull.draft or await asyncio.to_thread(self.store.verdict_for, job.repo, job.pr, pull.head.sha):
            return
        await Publisher(gh, job.repo, self.settings.bot_login).check_run(
            pull.head.sha, CHECK_NAME, None, "Awaiting a CODEOWNER sign-off",
            "signoff-bot verifies the CODEOWNER sign-off checklist once it is posted.", status="queued")

    async def _synchronize(self, job: Job, gh: GitHub) -> None:
        """The head moved: verify again if a sign-off was verified before; `_verify` decides whether it
        still vouches for the new content (same diff) or a fresh sign-off is needed (action_required).
        A database that lost its verdicts learns it from the App's record on the previous head."""
        before = job.payload.get("before")
        if await asyncio.to_thread(self.store.last_verdict, job.repo, job.pr) is not None or (
                before and await Gatherer(gh, job.repo, self.settings.bot_login).records_on(before)):
            await self._enqueue_verify(job, "head moved", before=before)

    # --- lint ----------------------------------------------------------------------------

    async def _lint(self, job: Job, gh: GitHub) -> None:
        done = await Gatherer(gh, job.repo, self.settings.bot_login, self.checks,
                              self.settings.config_path).verify(job.pr, utc_now(), rules=LINT)
        snap, findings = done.snapshot, done.verdict.lint_findings
        publisher = Publisher(gh, job.repo, self.settings.bot_login)
        summary = "\n".join(f"- `{f.path}:{f.line}` [{f.rule}] {f.message}" for f in findings) or "No findings."
        await publisher.check_run(snap.pr.head_sha, LINT_CHECK_NAME, done.verdict.lint_conclusion,
                                  f"{len(findings)} finding(s)", summary, findings)
        out = Published()
        await publisher.inline_findings(snap, findings, out)
        await publisher.resolve_fixed(snap, {finding_key(f) for f in findings})


def _published_record(p: Published, reason: str, job_id: int) -> dict[str, Any]:
    return {"reason": reason, "job": job_id, "comment_id": p.comment_id, "comment": p.comment_action,
            "check_run_id": p.check_run_id, "status": p.status_state, "review_id": p.review_id,
            "inline_comments": p.inline_comments, "writes": p.writes}
