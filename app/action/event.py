"""`signoff-bot verify --event FILE`: a GitHub Actions event, taken as the App's router takes the same delivery.

The event's payload is what GitHub would have delivered to the App (Actions hands the workflow the same
JSON); `app.web.webhooks.route` decides which jobs it causes, and `app.action.verify.run_jobs` runs them and every
job they queue, as the App's workers would: a sign-off comment, review or review comment (or its edit)
is re-read and verified; `/reuse-sweep-run` is validated and acknowledged; `/signoff-recheck` verifies;
a completed sweep workflow verifies the PRs it ran for; a push to the PR (`pull_request_target`
synchronize, or `pull_request`) verifies it again when the head it replaced holds the verifier's record
(so a force push cannot carry a sign-off to content it was not given on), and an opened PR gets its
check run "awaiting a sign-off". `workflow_dispatch` with a `comment_url` input
(a link to a comment, review or review comment on a pull request) is that comment's job. Whatever else
the workflow was started by is nothing to verify.

Two things differ from the App, both because there is no database: a workflow's event names no App
installation (the command's credentials act whatever it names), and an edited comment re-verifies its
PR whether or not the PR had a verdict (the App asks its database; a PR without a sign-off then only
gets its check run "awaiting a sign-off", as the App posts on a PR's opening).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from app.github.client import CallStats, GitHubError
from app.settings import CHECK_NAME
from app.store.sql import JobSpec
from app.web.webhooks import COMMENT_KINDS, Unusable, route
from checks.policy import CONFIG_PATH

from .verify import Access, CannotRun, Result, access, bot_login, dry_run, one_line, run_jobs

# The events the Action is started by (examples/signoff-verify.yml) that the App's router takes as well;
# pull_request_target is pull_request (the same payload) run from the base branch's workflow.
ROUTED = ("issue_comment", "pull_request_review", "pull_request_review_comment", "workflow_run", "pull_request")
AS_ROUTED = {"pull_request_target": "pull_request"}
DISPATCH = "workflow_dispatch"
# The App's recipe lint on every push (the `signoff-bot lint` check run) is the App's: a workflow token's
# requests are better spent on the sign-off (the verdict comment carries the lint findings as advice).
NOT_RUN = ("lint",)
NO_INSTALLATION = 1  # what a workflow's event is taken to name: any; the command's credentials act
_COMMENT_URL = re.compile(
    r"^https?://[^/]+/(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/(?P<pr>\d+)(?:/files|/changes)?"
    r"#(?:issuecomment-(?P<issue_comment>\d+)|pullrequestreview-(?P<review>\d+)|discussion_r(?P<review_comment>\d+))$")


def nothing_to_verify(why: str) -> str:
    return f"nothing to verify: {why}"


def comment_job(url: str, repository: str) -> JobSpec:
    """The App's job for the comment `url` links (a dispatch's `comment_url`), as the router queues it for
    that comment's delivery."""
    m = _COMMENT_URL.match(url.strip())
    if m is None:
        raise CannotRun(f"comment_url {url!r} is not a link to a pull request's comment, review or review comment "
                        "(…/pull/N#issuecomment-ID, #pullrequestreview-ID or #discussion_rID)")
    if m["repo"].lower() != repository.lower():
        raise CannotRun(f"comment_url names {m['repo']}, not this workflow's repository {repository}")
    kind = next(k for k in COMMENT_KINDS.values() if m[k])
    cid = int(m[kind])
    return JobSpec("comment", repository, int(m["pr"]), NO_INSTALLATION,
                   {"comment_kind": kind, "comment_id": cid, "action": "created", "event": DISPATCH},
                   f"{kind}:{cid}")


def jobs_of(event: str, payload: Any, repository: str, bot_login: str) -> list[JobSpec] | str:
    """The jobs the App would queue for this event, or why there are none."""
    if not isinstance(payload, dict):
        raise CannotRun("the event payload is not a JSON object")
    if event == DISPATCH:
        inputs = payload.get("inputs")
        url = inputs.get("comment_url") if isinstance(inputs, dict) else None
        if not isinstance(url, str) or not url.strip():
            return "workflow_dispatch without a comment_url input"
        return [comment_job(url, repository)]
    routed_as = AS_ROUTED.get(event, event)
    if routed_as not in ROUTED:
        return (f"{event or 'an unnamed event'} is not a sign-off trigger (the Action verifies on "
                f"{', '.join((*ROUTED, *AS_ROUTED))} and {DISPATCH} with comment_url)")
    given = payload.get("installation")
    delivery = {**payload, "installation": given if isinstance(given, dict) and given.get("id")
                else {"id": NO_INSTALLATION}}
    if not isinstance(payload.get("repository"), dict):
        delivery["repository"] = {"full_name": repository}
    try:
        routed = route(routed_as, delivery, bot_login, CHECK_NAME)
    except Unusable as exc:
        raise CannotRun(f"the {event} event cannot be used: {exc}") from None
    jobs = [j for j in routed.jobs if j.kind not in NOT_RUN]
    return jobs or (routed.ignored or f"{event} {routed.action} causes no job of the Action's")


def load(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except OSError as exc:
        raise CannotRun(f"cannot read the event file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise CannotRun(f"the event file {path} is not JSON: {exc}") from None


async def verify_event(path: str, publish: bool, env: Mapping[str, str] | None = None,
                       config: str = CONFIG_PATH) -> str | tuple[list[Result], CallStats]:
    """Run what the event causes (see the module's docstring): the results, or why nothing was verified."""
    env = os.environ if env is None else env
    payload = load(path)
    event = env.get("GITHUB_EVENT_NAME", "").strip()
    if not event:
        raise CannotRun("GITHUB_EVENT_NAME is not set (the event the payload is of)")
    named = payload.get("repository", {}).get("full_name") if isinstance(payload, dict) and isinstance(
        payload.get("repository"), dict) else None
    repository = env.get("GITHUB_REPOSITORY", "").strip() or named or ""
    if not repository:
        raise CannotRun("GITHUB_REPOSITORY is not set and the event names no repository")
    specs = jobs_of(event, payload, repository, bot_login(env))
    if isinstance(specs, str):
        return specs
    acc = await access(specs[0].repo, env)
    try:
        if publish:
            edited = [(s.repo, s.pr) for s in specs if s.kind == "comment" and s.payload.get("action") == "edited"]
            return await run_jobs(acc, specs, edited, config), acc.stats
        return await _dry(acc, specs, config), acc.stats
    except GitHubError as exc:
        raise CannotRun(one_line(exc, acc.via)) from None


async def _dry(acc: Access, specs: list[JobSpec], config: str) -> list[Result]:
    """Without --publish: the verdict of each PR the jobs name, now (whether the App would verify it, after
    re-reading the comment or the workflow, is the jobs' to decide, and they are not run)."""
    prs = sorted({(s.repo, s.pr) for s in specs if s.pr})
    if not prs:
        raise CannotRun("the event names no pull request (a fork's run: its PRs are looked up with --publish)")
    return [await dry_run(acc, repo, pr, config) for repo, pr in prs]
