"""What a job records for a PR's head: one typed decision (`checks.result.job_outcome`), stored as the
`Outcome` it is, by the verify job (app/jobs/runner.py) and the worker (app/jobs/worker.py), against the fake GitHub;
and a bug of ours inside a GitHub call site ends its job once, logged with its traceback and counted."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from app.fake_github import FakeGitHub
from app.settings import CHECK_NAME
from app.jobs.runner import Clients, JobRunner
from app.jobs.worker import Reconciler, Worker
from app.judge import IN_THREAD
from app.observability import Metrics
from app.offline.replay import REPLAY_APP_ID, throwaway_key
from app.settings import Settings
from app.store.sql import JobSpec, SqliteStore
from checks.result import VERDICTS, CheckResult, JobFacts, Outcome, job_outcome

from .variants import HEAD_SHA, PR, REPO, SIGNOFF_ID, edit_world, green_world, pull_of

KEY = throwaway_key()

# --- the decision ----------------------------------------------------------------------------------------

# The facts, in the order they decide: the first that holds names the outcome.
FIRST_THAT_HOLDS = (
    (lambda f: f.bug, Outcome.INTERNAL_ERROR),
    (lambda f: f.incomplete, Outcome.INCOMPLETE),
    (lambda f: not f.ready, Outcome.SKIPPED),
    (lambda f: not f.signed, Outcome.NO_SIGNOFF),
    (lambda f: f.needs_signoff, Outcome.STALE),
    (lambda f: f.verdict is None, Outcome.INCOMPLETE),  # no verdict reached: never a PASS
)
EVERY_COMBINATION = [JobFacts(ready, signed, needs_signoff, verdict, incomplete, bug)
                     for ready, signed, needs_signoff, verdict, incomplete, bug in itertools.product(
                         (True, False), (True, False), (True, False),
                         (None, Outcome.PASS, Outcome.REJECTED, Outcome.NEEDS_MAINTAINER), (False, True), (False, True))]


@pytest.mark.parametrize("facts", EVERY_COMBINATION, ids=repr)
def test_every_combination_of_facts_has_one_outcome(facts: JobFacts):
    expected = next((outcome for holds, outcome in FIRST_THAT_HOLDS if holds(facts)), facts.verdict)
    assert job_outcome(facts) is expected


def test_the_table_names_every_outcome_and_only_a_verdict_can_pass():
    outcomes = {job_outcome(f) for f in EVERY_COMBINATION}
    assert outcomes == set(Outcome)
    passing = [f for f in EVERY_COMBINATION if job_outcome(f) is Outcome.PASS]
    assert passing == [JobFacts(ready=True, signed=True, needs_signoff=False, verdict=Outcome.PASS)]


@pytest.mark.parametrize("outcome", sorted(set(Outcome) - VERDICTS))
def test_what_is_not_a_verdicts_outcome_is_refused_as_a_verdict(outcome: Outcome):
    with pytest.raises(ValueError, match="not a verdict's outcome"):
        job_outcome(JobFacts(signed=True, verdict=outcome))


def test_verified_before_means_a_sign_off_was_judged():
    assert {o for o in Outcome if o.verified} == {Outcome.PASS, Outcome.REJECTED, Outcome.NEEDS_MAINTAINER,
                                                  Outcome.STALE}


def test_the_stored_spellings_are_the_ones_databases_already_hold():
    assert {o.value for o in Outcome} == {"PASS", "REJECTED", "NEEDS A MAINTAINER", "STALE", "NO_SIGNOFF",
                                          "SKIPPED", "INCOMPLETE", "INTERNAL_ERROR"}


# --- the verify job records each outcome -------------------------------------------------------------------


class Undecided:
    """The App's checks with check 1's row UNDECIDED: a verdict that waits for a maintainer."""

    async def rounds(self, snap, rules):
        return _UndecidedRounds(await IN_THREAD.rounds(snap, rules))

    async def digest(self, snap) -> str:
        return await IN_THREAD.digest(snap)


class _UndecidedRounds:
    def __init__(self, inner) -> None:
        self.inner = inner

    @property
    def snapshot(self):
        return self.inner.snapshot

    @property
    def verdict(self):
        v = self.inner.verdict
        return replace(v, results=tuple(CheckResult.undecided(r.number, r.name, "a test's row") if r.number == 1
                                        else r for r in v.results))

    def wanted(self):
        return self.inner.wanted()

    async def add(self, snap) -> None:
        await self.inner.add(snap)

    def close(self) -> None:
        self.inner.close()


def _runner(fake: FakeGitHub, db: Path, checks=IN_THREAD) -> tuple[JobRunner, SqliteStore, Metrics]:
    settings = Settings(app_id=REPLAY_APP_ID, private_key=KEY, webhook_secret="unused", github_url=fake.url,
                        db_path=str(db), max_attempts=3)
    store = SqliteStore(settings.db_path)
    metrics = Metrics()
    return JobRunner(settings, store, Clients(settings, metrics), metrics, checks), store, metrics


def _run(runner: JobRunner, store: SqliteStore, kind: str, **payload) -> None:
    """Run one job as a worker would: leased (a verdict is recorded only under its lease), then ended."""
    store.enqueue([JobSpec(kind, REPO, PR, 1, payload)])
    job = store.lease("test", 60)
    assert job is not None and job.kind == kind
    asyncio.run(runner.run(job))
    store.complete(job, "test")


def _draft(data) -> None:
    pull_of(data)["draft"] = True


def _unsigned(data) -> None:
    pull_of(data)["issue_comments"] = [c for c in pull_of(data)["issue_comments"] if c["id"] != SIGNOFF_ID]


def _rejected(data) -> None:
    body = next(c for c in pull_of(data)["issue_comments"] if c["id"] == SIGNOFF_ID)
    body["body"] = body["body"].replace("- [x] Verified that this PR passes evals", "- [ ] Verified that this PR passes evals")


def _stale(store: SqliteStore) -> None:
    """This database pinned the sign-off to other content: a fresh sign-off is needed."""
    store.pin_signoff(REPO, PR, f"issue_comment:{SIGNOFF_ID}:2026-09-02T10:00:00Z", "0" * 64, "c3" * 20)


def _checks_of(fake: FakeGitHub) -> list[dict]:
    return [c for c in fake.state.repo(*REPO.split("/")).check_runs.values()
            if c["head_sha"] == HEAD_SHA and c["name"] == CHECK_NAME]


@pytest.mark.parametrize("case, world_change, before, checks, outcome, conclusion", [
    ("draft", _draft, None, IN_THREAD, Outcome.SKIPPED, None),
    ("no sign-off", _unsigned, None, IN_THREAD, Outcome.NO_SIGNOFF, "queued"),
    ("stale", None, _stale, IN_THREAD, Outcome.STALE, "action_required"),
    ("green", None, None, IN_THREAD, Outcome.PASS, "success"),
    ("a box unticked", _rejected, None, IN_THREAD, Outcome.REJECTED, "failure"),
    ("a row undecided", None, None, Undecided(), Outcome.NEEDS_MAINTAINER, "action_required"),
])
def test_the_verify_job_records_each_outcome(tmp_path, case, world_change, before, checks, outcome, conclusion):
    world = green_world(tmp_path)
    if world_change is not None:
        edit_world(world, world_change)
    with FakeGitHub(world) as fake:
        runner, store, _metrics = _runner(fake, tmp_path / "bot.db", checks)
        if before is not None:
            before(store)
        _run(runner, store, "verify")
        runs = _checks_of(fake)
    recorded = store.verdict_for(REPO, PR, HEAD_SHA)
    assert recorded["label"] is outcome
    assert [r["conclusion"] or r["status"] for r in runs] == ([conclusion] if conclusion else [])
    audit = store.audit(REPO, PR)
    assert [a["verdict"] for a in audit] == ([outcome.value] if outcome in VERDICTS else [])
    assert (store.last_verdict(REPO, PR) is not None) is outcome.verified


def test_a_skipped_draft_is_not_verified_before_and_its_push_verifies_nothing(tmp_path):
    """A draft's verification is skipped; a push to it then queues no verification, as for a PR never
    verified (a skipped head used to count as verified before). Once it is verified, a push does."""
    with FakeGitHub(edit_world(green_world(tmp_path), _draft)) as fake:
        runner, store, _metrics = _runner(fake, tmp_path / "bot.db")
        _run(runner, store, "verify")
        assert store.verdict_for(REPO, PR, HEAD_SHA)["label"] is Outcome.SKIPPED
        _run(runner, store, "synchronize", head_sha=HEAD_SHA, before="c3" * 20)
        assert store.jobs("queued") == []
        fake.state.repo(*REPO.split("/")).pulls[PR]["draft"] = False  # ready for review
        _run(runner, store, "verify")
        assert store.verdict_for(REPO, PR, HEAD_SHA)["label"] is Outcome.PASS
        _run(runner, store, "synchronize", head_sha=HEAD_SHA, before="c3" * 20)
        assert [j["kind"] for j in store.jobs("queued")] == ["verify"]


# --- the worker: GitHub's failure is retried, our bug is not ----------------------------------------------


def _worker_run(runner: JobRunner, store: SqliteStore, metrics: Metrics, spec: JobSpec) -> None:
    store.enqueue([spec])
    worker = Worker(runner.settings, store, runner, metrics, "w1")

    async def once() -> None:
        await worker.process(await asyncio.to_thread(store.lease, "w1", runner.settings.lease_seconds))

    asyncio.run(once())


def _comment_job() -> JobSpec:
    return JobSpec("comment", REPO, PR, 1, {"comment_kind": "issue_comment", "comment_id": SIGNOFF_ID,
                                            "action": "created"})


def test_a_type_error_inside_a_github_call_site_ends_the_job_once_logged_and_counted(tmp_path, monkeypatch, caplog):
    """Reading the comment (a GitHub call site, `as_github_error` around it) raises a TypeError of ours: the
    worker logs it with its traceback, counts it, and ends the job at once, failed, with the head's verdict
    INTERNAL_ERROR and a check run that says so; it is not re-queued, and reconcile leaves the head be."""
    with FakeGitHub(green_world(tmp_path)) as fake:
        runner, store, metrics = _runner(fake, tmp_path / "bot.db")
        issues = type(runner.clients.installation(1).rest.issues)

        async def buggy_get_comment(self, *args, **kw):
            return len(None)  # a TypeError of ours

        monkeypatch.setattr(issues, "async_get_comment", buggy_get_comment)
        with caplog.at_level(logging.ERROR, logger="signoff_bot.worker"):
            _worker_run(runner, store, metrics, _comment_job())
        runs = _checks_of(fake)
    (job,) = store.jobs()
    assert (job["state"], job["attempts"], job["last_error"]) == ("failed", 1, "internal error (TypeError)")
    assert store.verdict_for(REPO, PR, HEAD_SHA)["label"] is Outcome.INTERNAL_ERROR
    assert [(r["conclusion"], r["output"]["title"]) for r in runs] == [("failure", "Internal error")]
    crashed = [r for r in caplog.records if r.message.startswith("job crashed")]
    assert len(crashed) == 1 and crashed[0].exc_info[0] is TypeError
    assert "buggy_get_comment" in logging.Formatter().formatException(crashed[0].exc_info)
    assert metrics.registry.get_sample_value("signoff_bot_internal_errors_total", {"where": "job"}) == 1
    assert metrics.registry.get_sample_value("signoff_bot_jobs_total", {"kind": "comment", "outcome": "retried"}) \
        is None
    assert not asyncio.run(Reconciler(runner.settings, store, runner.clients)._unsettled(REPO, PR, HEAD_SHA))


def test_a_github_failure_at_the_same_call_site_is_retried(tmp_path):
    """GitHub answers 502 to the same read: the job is re-queued (its next try may succeed), no bug counted,
    no verdict recorded."""
    with FakeGitHub(green_world(tmp_path)) as fake:
        fake.fault(route=f"GET /repos/{REPO}/issues/comments/{SIGNOFF_ID}", status=502, times=10)
        runner, store, metrics = _runner(fake, tmp_path / "bot.db")
        _worker_run(runner, store, metrics, _comment_job())
    (job,) = store.jobs()
    assert (job["state"], job["attempts"]) == ("queued", 1) and "502" in job["last_error"]
    assert metrics.registry.get_sample_value("signoff_bot_internal_errors_total", {"where": "job"}) == 0
    assert store.verdict_for(REPO, PR, HEAD_SHA) is None
