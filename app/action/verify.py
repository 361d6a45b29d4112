"""`signoff-bot verify`: one pull request verified as the App verifies it, with no server and no database.

Credentials: `GITHUB_TOKEN` or `GH_TOKEN` (a workflow's token or a person's), else the App's settings as
`serve` reads them (`SIGNOFF_BOT_APP_ID`, `SIGNOFF_BOT_PRIVATE_KEY[_FILE]`: the App's installation on the
repository); the API at `SIGNOFF_BOT_GITHUB_URL`.

A dry run (the default) gathers and checks exactly as `replay` does (`app.jobs.pipeline.verify`, nothing
published) and prints the verdict. `--publish` runs the App's own jobs (`app.jobs.runner.JobRunner`: the verify
job, and for an event the jobs the App's router queues for it, `app.action.event`) on a database that lives for
this one command: what each sign-off was first verified on comes from the records the verifier keeps in
its own check runs (`checks.facts.freshness`), which the first verification of a PR starts. With a token, "its
own" check runs are those of the app the token writes as: a workflow's GITHUB_TOKEN writes as the GitHub
Actions app (`SIGNOFF_BOT_CHECKS_APP_ID`, default 15368, GitHub.com's), whose check runs every workflow of
the repository with `checks: write` can also write (docs/action.md).

Exit codes: 0 PASS (or nothing to verify), 1 REJECTED (or a fresh sign-off is needed), 3 NEEDS A
MAINTAINER, 2 the verification could not run, with one line saying why.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from githubkit import GitHub

from app.github import render
from app.github.client import (
    ACTIONS_APP_ID,
    CallStats,
    GitHubError,
    WorkflowTokenAuth,
    app_client,
    call,
    client,
    installation_client,
    url_path,
)
from app.github.publish import Published
from app.jobs.pipeline import Outcome, verify
from app.jobs.runner import JobRunner, utc_now
from app.judge import IN_THREAD, Checks, Rounds
from app.observability import Metrics
from app.offline.replay import Replay
from app.settings import ConfigError, Settings
from app.store.sql import JobSpec, SqliteStore
from checks import result
from checks.facts import freshness
from checks.policy import CONFIG_PATH
from checks.result import JobFacts, Verdict, job_outcome
from checks.rule import Rule
from checks.snapshot import Snapshot

# The exit code of each verdict label (checks.result.Verdict.label); a label not here is not a pass.
EXIT = {"PASS": 0, "REJECTED": 1, "NEEDS A MAINTAINER": 3}
NOT_PASSED = 1
COULD_NOT_RUN = 2
WORKFLOW_LOGIN = "github-actions[bot]"
NOT_A_VERDICT = ("NO_SIGNOFF", "STALE", "SKIPPED")  # what the verify job records when it posts no verdict
LEASE_SECONDS = 900.0
_PR_URL = re.compile(r"^https?://[^/]+/(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/pull/(?P<number>\d+)(?:/[a-z]*)?/?(?:[#?].*)?$")
_PR_REF = re.compile(r"^(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(?P<number>\d+)$")
# What each write of a job is called in its GitHubError (app/github/client.py `call`), and the permission it needs.
WRITE_PERMISSION = {
    "create check run": "checks: write", "update check run": "checks: write", "add annotations": "checks: write",
    "commit status": "statuses: write",
    "create verdict comment": "issues: write", "update verdict comment": "issues: write",
    "create verdict-change comment": "issues: write", "reply": "issues: write", "reaction": "issues: write",
    "create review": "pull-requests: write", "resolve review comment": "pull-requests: write",
}


PERSONAL = " (a personal token can never write check runs)"


class CannotRun(Exception):
    """The verification could not run; the message is the one line that says why."""


def config_path(text: str) -> str:
    """A policy file's path in the repository (`--config`), as the App reads `.github/signoff-bot.yml`: at the
    tip of the PR's base branch, never from the PR or the workspace."""
    path = text.strip()
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or url_path(path) is None:
        raise CannotRun(f"--config {text!r} is not a path in the repository (like {CONFIG_PATH})")
    return path


def parse_pr(text: str) -> tuple[str, int]:
    """(owner/name, number) of `https://github.com/OWNER/REPO/pull/N` or `OWNER/REPO#N`."""
    m = _PR_URL.match(text.strip()) or _PR_REF.match(text.strip())
    if m is None or int(m["number"]) == 0:
        raise CannotRun(f"{text!r} is not a pull request: give https://github.com/OWNER/REPO/pull/N or OWNER/REPO#N")
    return m["repo"], int(m["number"])


@dataclass
class Access:
    """A client acting for whoever the credentials are, and the login its comments appear under."""

    gh: GitHub
    stats: CallStats
    bot_login: str
    via: str  # what the credentials are, for messages: "GITHUB_TOKEN", "the App's installation", ...


def token_of(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(the variable, the token) of the first of GITHUB_TOKEN and GH_TOKEN that is set."""
    return next(((n, env[n].strip()) for n in ("GITHUB_TOKEN", "GH_TOKEN") if env.get(n, "").strip()), None)


def bot_login(env: Mapping[str, str]) -> str:
    """The login the verifier's comments appear under: a token's, GitHub Actions' bot; the App's, its own."""
    default = WORKFLOW_LOGIN if token_of(env) else Settings.bot_login
    return env.get("SIGNOFF_BOT_LOGIN", "").strip() or default


async def access(repo: str, env: Mapping[str, str] | None = None) -> Access:
    """The client the environment's credentials give for `repo` (see the module's docstring)."""
    env = os.environ if env is None else env
    url = env.get("SIGNOFF_BOT_GITHUB_URL", Settings.github_url).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise CannotRun("SIGNOFF_BOT_GITHUB_URL must be an http(s) URL")
    stats = CallStats()
    found = token_of(env)
    if found is not None:
        name, token = found
        app_id_text = env.get("SIGNOFF_BOT_CHECKS_APP_ID", str(ACTIONS_APP_ID)).strip()
        if not app_id_text.isdigit():
            raise CannotRun("SIGNOFF_BOT_CHECKS_APP_ID must be a number (the app a token's check runs are of)")
        auth = WorkflowTokenAuth(token, app_id=int(app_id_text))
        return Access(client(auth, url, stats), stats, bot_login(env), name)
    if not env.get("SIGNOFF_BOT_APP_ID"):
        raise CannotRun("no credentials: set GITHUB_TOKEN or GH_TOKEN (a workflow's or a personal token), or the "
                        "App's SIGNOFF_BOT_APP_ID and SIGNOFF_BOT_PRIVATE_KEY")
    try:  # the App's settings as `serve` reads them; verify receives no webhooks, so needs no secret
        settings = Settings.from_env({"SIGNOFF_BOT_WEBHOOK_SECRET": "not used by verify", **env})
    except ConfigError as exc:
        raise CannotRun(str(exc)) from None
    owner, name = repo.split("/", 1)
    app = app_client(settings.app_id, settings.private_key, settings.github_url)
    try:
        async with app:
            installed = await call(f"the App's installation on {repo}", app.rest.apps.async_get_repo_installation,
                                   owner, name)
    except GitHubError as exc:
        if exc.status == 404:
            raise CannotRun(f"the App (id {settings.app_id}) is not installed on {repo}") from None
        raise CannotRun(one_line(exc, "the App's credentials")) from None
    gh = installation_client(settings.app_id, settings.private_key, installed.parsed_data.id, settings.github_url,
                             stats)
    return Access(gh, stats, settings.bot_login, "the App's installation")


def one_line(exc: GitHubError, via: str, pr: str = "") -> str:
    """What a GitHub failure means for the one running the command (`pr`: OWNER/REPO#N, for a 404)."""
    text = str(exc)
    what = text.rsplit(": GitHub answered", 1)[0]
    if exc.status == 401:
        return f"GitHub refused {via} (401 Bad credentials): {what}"
    permission = WRITE_PERMISSION.get(what)
    if permission and exc.status in (403, 404):
        return (f"{via} lacks the {permission} permission: GitHub answered {exc.status} to \"{what}\"; grant it "
                f"in the workflow's permissions{PERSONAL if permission == 'checks: write' else ''}, or use the App")
    if exc.status == 404 and what.startswith("pull #"):
        return f"no such pull request {pr or what}: GitHub answered 404 ({via} cannot read it, or it does not exist)"
    if exc.transient:
        return f"{text}; GitHub failed for now, run it again"
    return text


# --- running the App's jobs --------------------------------------------------------------------------


class _OneClient:
    """`app.jobs.runner.Clients` for one client: whatever installation a job names, the command's credentials act."""

    def __init__(self, gh: GitHub) -> None:
        self.gh = gh

    def installation(self, _installation_id: int | None) -> GitHub:
        return self.gh


class Recording:
    """The App's checks (in this thread), keeping each PR's last verification, to print its verdict."""

    def __init__(self, inner: Checks = IN_THREAD) -> None:
        self.inner = inner
        self.last: dict[int, Rounds] = {}

    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds:
        done = await self.inner.rounds(snap, rules)
        self.last[snap.pr.number] = done
        return done

    async def digest(self, snap: Snapshot) -> str:
        return await self.inner.digest(snap)


@dataclass
class Result:
    """One PR's outcome: its verdict (None if it was not judged), what the App recorded and posted."""

    repo: str
    pr: int
    recorded: str  # the App's record (an Outcome's value: a verdict's, NO_SIGNOFF, STALE, SKIPPED), or UNKNOWN
    snapshot: Snapshot | None = None
    verdict: Verdict | None = None
    writes: list[str] = field(default_factory=list)
    reason: str = ""  # why a fresh sign-off is needed, when it is known here

    @property
    def exit_code(self) -> int:
        if self.recorded in ("NO_SIGNOFF", "SKIPPED"):
            return 0
        return EXIT.get(self.recorded, NOT_PASSED)

    @property
    def outcome(self) -> str:
        """The verdict's label, or what was posted instead of a verdict (NO_SIGNOFF, STALE, SKIPPED)."""
        if self.recorded in NOT_A_VERDICT or self.verdict is None:
            return self.recorded
        return self.verdict.label

    def note(self) -> str | None:
        """A line for what the verdict alone does not say."""
        return {"NO_SIGNOFF": f"{self.repo}#{self.pr}: no CODEOWNER sign-off yet; nothing to verify until one is "
                              "posted",
                "SKIPPED": f"{self.repo}#{self.pr}: closed or draft; nothing to verify",
                "STALE": f"{self.repo}#{self.pr}: a fresh sign-off is needed (check run action_required): "
                         + (self.reason or "the sign-off was first verified on other content"),
                }.get(self.recorded)


async def run_jobs(acc: Access, specs: list[JobSpec], before: Sequence[tuple[str, int]] = (),
                   config: str = CONFIG_PATH) -> list[Result]:
    """Run `specs` and every job they queue, as the App's workers would, on a database of this command's
    own; `before`: PRs that may have had a verdict (the App's database would know; this one cannot);
    `config`: where the repository keeps its policy file."""
    with tempfile.TemporaryDirectory(prefix="signoff-bot-verify-") as tmp:
        store = SqliteStore(str(Path(tmp) / "verify.db"))
        try:
            for repo, pr in before:  # presumed verified before: a verdict on no head ("" is none) says so
                store.record_verdict(repo, pr, "", result.Outcome.REJECTED)
            settings = Settings(app_id=0, private_key="", webhook_secret="", bot_login=acc.bot_login,
                                config_path=config)
            checks = Recording()
            runner = JobRunner(settings, store, _OneClient(acc.gh), Metrics(), checks,  # type: ignore[arg-type]
                               pulls={})
            store.enqueue(specs)
            verified: list[tuple[str, int]] = []
            owner = f"signoff-bot-verify-{os.getpid()}"
            while (job := store.lease(owner, LEASE_SECONDS)) is not None:
                await runner.run(job)
                store.complete(job, owner)
                if job.kind == "verify" and (job.repo, job.pr) not in verified:
                    verified.append((job.repo, job.pr))
            return [_result(store, checks, repo, pr) for repo, pr in verified]
        finally:
            store.close()


def _result(store: SqliteStore, checks: Recording, repo: str, pr: int) -> Result:
    done = checks.last.get(pr)
    head = done.snapshot.pr.head_sha if done else ""
    verdict = store.verdict_for(repo, pr, head) if done else None  # (not the presumed one on no head)
    recorded = verdict["label"].value if verdict else "UNKNOWN"
    writes: list[str] = []
    audit = store.audit(repo, pr)
    if recorded not in NOT_A_VERDICT and audit:
        writes = json.loads(audit[-1]["published"]).get("writes", [])
    elif recorded == "NO_SIGNOFF":
        writes = ["check run codeowner-signoff-verify: queued (awaiting a sign-off)"]
    elif recorded == "STALE":
        writes = ["check run codeowner-signoff-verify: action_required (a fresh sign-off is needed)"]
    return Result(repo, pr, recorded, done.snapshot if done else None, done.verdict if done else None, writes)


async def dry_run(acc: Access, repo: str, number: int, config: str = CONFIG_PATH) -> Result:
    """Gather and check as the App does; publish nothing. What the verify job would record: SKIPPED for a
    closed or draft PR, NO_SIGNOFF without a sign-off, STALE when a fresh one is needed (it posts no verdict
    then), else the verdict."""
    done = await verify(acc.gh, repo, number, utc_now(), acc.bot_login, publish=False, config_path=config)
    snap, verdict = done.snapshot, done.verdict
    ready = snap.pr.state == "open" and not snap.pr.draft
    fresh: freshness.Freshness | None = None
    if ready and verdict.signoff is not None:
        # whether the sign-off still vouches for this diff, by the records in the verifier's check runs on the
        # PR's commits (the verify job reads the same, and its database's pin, which a dry run has none of)
        texts = (c.record for c in snap.check_runs if c.record)
        records = [r for r in map(freshness.Record.from_json, texts) if r is not None and r.pr == number]
        fresh = freshness.decide(verdict.signoff, freshness.content(snap), snap.pr.head_sha, None, records)
    needs_signoff = fresh is not None and fresh.needs_signoff
    outcome = job_outcome(JobFacts(ready=ready, signed=verdict.signoff is not None, needs_signoff=needs_signoff,
                                   verdict=verdict.outcome))
    return Result(repo, number, outcome.value, snap, verdict, reason=fresh.reason if fresh and needs_signoff else "")


# --- printing ------------------------------------------------------------------------------------------


def report(results: list[Result], stats: CallStats, as_json: bool, published: bool) -> str:
    """Each PR's verdict as `replay` prints it (`--json`: replay's object, one line a PR)."""
    lines: list[str] = []
    for r in results:
        if r.verdict is None:
            lines.append(r.note() or f"{r.repo}#{r.pr}: {r.recorded}")
            continue
        shown = Replay(Outcome(r.snapshot, r.verdict, Published(writes=r.writes)), stats.requests)
        if as_json:
            lines.append(json.dumps(shown.to_json(), ensure_ascii=False))
            continue
        lines.append(shown.to_text() if published else
                     f"{render.comment(r.verdict).rstrip()}\n\nDry run: nothing posted (--publish posts it).\n"
                     f"({stats.requests} GitHub API calls)")
        if r.note():
            lines.append(r.note())
    return "\n".join(lines)


def exit_code(results: list[Result]) -> int:
    """The worst PR's: REJECTED over NEEDS A MAINTAINER over PASS."""
    codes = [r.exit_code for r in results] or [0]
    return NOT_PASSED if NOT_PASSED in codes else max(codes)


def write_output(results: list[Result], env: Mapping[str, str] | None = None) -> None:
    """`verdict=LABEL` for a GitHub Actions step's outputs (`$GITHUB_OUTPUT`), when there is one."""
    env = os.environ if env is None else env
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    worst = next((r for r in results if r.exit_code == exit_code(results)), None)
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"verdict={worst.outcome if worst else 'NONE'}\n")


async def verify_pr(target: str, publish: bool, config: str = CONFIG_PATH) -> tuple[list[Result], CallStats]:
    repo, number = parse_pr(target)
    acc = await access(repo)
    try:
        if publish:
            results = await run_jobs(acc, [JobSpec("verify", repo, number, None, {"reason": "signoff-bot verify"})],
                                     config=config)
        else:
            results = [await dry_run(acc, repo, number, config)]
    except GitHubError as exc:
        raise CannotRun(one_line(exc, acc.via, f"{repo}#{number}")) from None
    return results, acc.stats
