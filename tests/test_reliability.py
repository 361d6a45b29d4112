"""Reliability of the App end to end: crashes, a flaky and rate-limited GitHub, two servers on one
database, and pushes that race a verification. `signoff-bot serve` and the fake GitHub run as
real processes on loopback (tests/apphost.py); worlds of many PRs come from tests/worldgen.py.
The tests of two servers on one database run on SQLite and on PostgreSQL (the `db` fixture).

What the tests read: the fake's writes (`/_fake/writes`) and its timed call log
(`/_fake/calls`: every API call with its arrival and answer times and the
`X-Signoff-Bot-Job` header naming the job that made it), and the App's own
database (deliveries, jobs, audit trail).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .apphost import REPO, Stack
from .databases import query
from .worldgen import Pull, build_world, signoff_text

pytestmark = pytest.mark.slow

SEED = 20260902
BOT = "signoff-bot[bot]"
CHECK = "codeowner-signoff-verify"
ACK_PREFIX = "<!-- signoff-bot ack "  # the hidden tag of the App's reply to a command comment


@contextlib.contextmanager
def running(tmp_path: Path, world: Path, **kw: Any) -> Iterator[Stack]:
    """The App and the fake GitHub for `world`; their logs are printed on the way out (shown on failure)."""
    with Stack(tmp_path, world, **kw) as stack:
        try:
            yield stack
        finally:
            print(stack.logs())


# --- reading the fake and the App's database ------------------------------------------------------


def fake_post(stack: Stack, route: str, body: dict[str, Any]) -> dict[str, Any]:
    """An admin call that does not raise when the App is down (the delivery then has no status)."""
    return httpx.post(f"{stack.fake_url}/_fake/{route}", json=body, timeout=120).json()


def add_faults(stack: Stack, *faults: dict[str, Any], latency_ms: int | None = None) -> None:
    body: dict[str, Any] = {"faults": list(faults)}
    if latency_ms is not None:
        body["latency_ms"] = latency_ms
    httpx.post(f"{stack.fake_url}/_fake/faults", json=body, timeout=30).raise_for_status()


def calls(stack: Stack, since: int = 0) -> list[dict[str, Any]]:
    return httpx.get(f"{stack.fake_url}/_fake/calls", params={"since": since}, timeout=30).json()


def all_check_runs(stack: Stack, sha: str, name: str = CHECK) -> list[dict[str, Any]]:
    r = httpx.get(f"{stack.fake_url}/repos/{REPO}/commits/{sha}/check-runs",
                  params={"check_name": name, "filter": "all"}, timeout=30)
    return r.json()["check_runs"]


def statuses(stack: Stack, sha: str) -> list[dict[str, Any]]:
    return httpx.get(f"{stack.fake_url}/repos/{REPO}/commits/{sha}/statuses", timeout=30).json()


def head_of(stack: Stack, pr: int) -> str:
    return httpx.get(f"{stack.fake_url}/repos/{REPO}/pulls/{pr}", timeout=30).json()["head"]["sha"]


def jobs(stack: Stack) -> list[dict[str, Any]]:
    return stack.store().jobs()


def audit(stack: Stack) -> list[dict[str, Any]]:
    return [{**r, "published": json.loads(r["published"])} for r in stack.store().audit()]


def delivery_guids(stack: Stack) -> list[str]:
    return [key.rsplit(":", 1)[-1] for (key,) in query(stack.db, "SELECT key FROM deliveries")]


def decided(stack: Stack, heads: dict[int, str]) -> bool:
    """Whether the App recorded a verdict on each PR's head (read from its database, not the fake)."""
    return all(stack.store().verdict_for(REPO, pr, sha) for pr, sha in heads.items())


def idle(stack: Stack) -> bool:
    return not any(j["state"] in ("queued", "running") for j in jobs(stack))


def verdict_on(stack: Stack, pr: int, sha: str) -> dict[str, Any] | None:
    comments = stack.verdict_comments(pr)
    return comments[0] if len(comments) == 1 and f"sha={sha} -->" in comments[0]["body"] else None


def start_unsigned(stack: Stack, prs: list[int]) -> None:
    """Wait out the App's start-up reconcile pass over PRs without a sign-off (it records NO_SIGNOFF
    and an "awaiting a sign-off" check run on each), so that what follows is the test's alone."""
    stack.wait(lambda: decided(stack, {pr: Pull(pr).head for pr in prs}) and idle(stack), 180,
               "the start-up reconcile pass")


def restart_with_budget(stack: Stack, seconds: int, warm_up: int | None = None) -> None:
    """Restart the App with a job budget of `seconds`, the PRs' start-up verifications done (they ran
    with the default budget: a cold start on a busy machine takes longer than a short budget, and
    the restarted App's reconcile pass finds every head decided). With `warm_up`, a PR the test does
    not look at again, wait until a verification of it ended (done, or failed its budget): the
    jobs' and checks' processes have started, and what follows is timed from a warm App."""
    stack.kill_app()
    stack.extra_env["SIGNOFF_BOT_JOB_BUDGET_SECONDS"] = str(seconds)
    stack.start_app()
    if warm_up is None:
        return
    ended = len([j for j in jobs(stack) if j["pr"] == warm_up and j["state"] in ("done", "failed")])
    stack.deliver("issue_comment", Pull(warm_up).recheck)
    stack.wait(lambda: len([j for j in jobs(stack) if j["pr"] == warm_up and j["state"] in ("done", "failed")])
               > ended and idle(stack), 300, "the warm-up verification")


def sign_off(stack: Stack, pr: int) -> None:
    """The CODEOWNER posts the sign-off; the fake delivers the webhook."""
    stack.comment("nv-owner", pr, signoff_text(pr))


def settle(stack: Stack, heads: dict[int, str], timeout: float) -> None:
    """Wait until every PR's verdict comment is for `heads[pr]` and the App's queue is empty."""
    stack.wait(lambda: all(verdict_on(stack, pr, sha) for pr, sha in heads.items()) and idle(stack), timeout,
               f"verdicts on {len(heads)} PRs and an empty queue")


def assert_nothing_twice(stack: Stack, prs: list[int], shas: list[str]) -> None:
    """One verdict comment per PR, one sign-off check run per commit, at most one reply per command."""
    for pr in prs:
        assert len(stack.verdict_comments(pr)) == 1, f"#{pr}: verdict comments"
        replies = Counter(c["body"].rsplit(ACK_PREFIX, 1)[1] for c in stack.issue_comments(pr)
                          if c["user"]["login"] == BOT and ACK_PREFIX in c["body"])
        assert all(n == 1 for n in replies.values()), f"#{pr}: acknowledgements {replies}"
    for sha in shas:
        assert len(all_check_runs(stack, sha)) <= 1, f"{sha[:8]}: sign-off check runs"


def job_spans(log: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """(first call's arrival, last call's answer) of each job run, by its X-Signoff-Bot-Job tag."""
    spans: dict[str, tuple[float, float]] = {}
    for c in log:
        if c["job"]:
            start, end = spans.get(c["job"], (c["started"], c["finished"]))
            spans[c["job"]] = (min(start, c["started"]), max(end, c["finished"]))
    return spans


# --- crash safety --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hook:
    """One webhook of a schedule: a stored object delivered as `event`, or a push (`event` "push")."""

    pr: int
    event: str
    object_id: int
    action: str | None = None


def crash_schedule(rng: random.Random, prs: list[int]) -> tuple[list[Hook], set[int]]:
    """100 deliveries over 20 PRs, each PR's in a plausible order, the PRs interleaved at random.

    Every PR is opened, signed off and given `/reuse-sweep-run`; 34 extras (an edited
    sign-off, a `/signoff-recheck`, the sweep completing) and 6 pushes of a new head with
    the same content are spread over the PRs. Returns the schedule and the pushed PRs.
    """
    extras = set(rng.sample([(pr, kind) for pr in prs for kind in ("edited", "recheck", "sweep")], 34))
    pushed = set(rng.sample(prs, 6))
    queues: dict[int, list[Hook]] = {}
    for pr in prs:
        p = Pull(pr)
        seq = [Hook(pr, "issue_comment", p.signoff), Hook(pr, "issue_comment", p.reuse)]
        rng.shuffle(seq)
        if (pr, "edited") in extras:
            seq.append(Hook(pr, "issue_comment", p.signoff, "edited"))
        if (pr, "recheck") in extras:
            seq.insert(rng.randint(0, len(seq)), Hook(pr, "issue_comment", p.recheck))
        if (pr, "sweep") in extras:
            seq.insert(rng.randint(0, len(seq)), Hook(pr, "workflow_run", p.run))
        if pr in pushed:
            seq.insert(rng.randint(1, len(seq)), Hook(pr, "push", 0))
        queues[pr] = [Hook(pr, "pull_request", pr, "opened")] + seq
    schedule = []
    while queues:
        pr = rng.choice([pr for pr, q in queues.items() for _ in q])  # weighted by what is left
        schedule.append(queues[pr].pop(0))
        if not queues[pr]:
            del queues[pr]
    return schedule, pushed


def send(stack: Stack, hook: Hook, guid: str, server: int = 0) -> tuple[str, int | None]:
    """Deliver `hook` (GUID `guid`; a push gets the fake's) to App `server` (a push: to App 0, the
    fake's webhook URL); returns the GUID and the App's status."""
    if hook.event == "push":
        answer = fake_post(stack, "push", {"repo": REPO, "number": hook.pr, "sha": Pull(hook.pr).same})
    else:
        body = {"repo": REPO, "event": hook.event, "id": hook.object_id, "delivery": guid,
                "url": f"http://127.0.0.1:{stack.app_ports[server]}/webhook"}
        answer = fake_post(stack, "deliver", body if hook.action is None else {**body, "action": hook.action})
    return answer["delivery"], answer["status"]


def holds_a_lease(stack: Stack, n: int = 0, within: float = 2.0) -> bool:
    """Whether a worker of App `n` (named worker-<pid>-…) holds a job's lease now or within `within` s."""
    mine = f"worker-{stack.pid(n)}-"
    deadline = time.monotonic() + within
    while not any(j["state"] == "running" and (j["lease_owner"] or "").startswith(mine) for j in jobs(stack)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_two_servers_one_sigkilled_twice_lose_nothing_and_do_nothing_twice(tmp_path: Path, db: str) -> None:
    """Two `serve` processes on one database (SQLite, or PostgreSQL as on several machines) take
    100 deliveries across 20 PRs in turn, as behind a load balancer; App 0 is killed (SIGKILL)
    twice at seeded random points while its jobs run, and restarted; the delivery that finds it
    down is redelivered, as GitHub's "Redeliver" does. App 1 meanwhile goes on working.

    Nothing lost: every delivery the Apps acknowledged is in the database, every job ended
    `done`, every PR has its verdict comment for its newest head, every command was answered.
    Nothing done twice: a GUID is recorded once however often it is delivered; a job's decision
    (its audit record) is recorded at most once though a killed job runs again; no GitHub
    effect is repeated (one verdict comment per PR, one sign-off check run per commit, one reply
    per command). A job that runs again after a kill republishes idempotently, which is allowed.
    """
    rng = random.Random(SEED)
    prs = list(range(101, 121))
    schedule, pushed = crash_schedule(rng, prs)
    assert len(schedule) == 100
    kills = sorted(rng.sample(range(15, 75), 2))  # App 0 dies at the first delivery from here on that finds it working
    world = build_world(tmp_path / "world", prs)
    with running(tmp_path, world, env={"SIGNOFF_BOT_WORKERS": "3"}, apps=2, db=db) as stack:
        add_faults(stack, latency_ms=10)  # longer jobs: App 1 does not drain the queue alone
        sent: list[str] = []
        killed = 0
        for n, hook in enumerate(schedule):
            guid = f"crash-{n:03d}"
            if killed < len(kills) and n >= kills[killed] and holds_a_lease(stack):
                stack.kill_app()
                killed += 1
                guid, status = send(stack, hook, guid)
                assert status is None, "a delivery while the App is down must fail"
                stack.start_app()
                status = fake_post(stack, "redeliver", {"delivery": guid})["status"]
            else:
                guid, status = send(stack, hook, guid, server=n % 2)
            assert status == 202, (n, hook, status)
            sent.append(guid)
        assert killed == len(kills), "App 0 was killed twice while its jobs ran"
        heads = {pr: Pull(pr).same if pr in pushed else Pull(pr).head for pr in prs}
        settle(stack, heads, 180)

        assert sorted(delivery_guids(stack)) == sorted(sent), "deliveries recorded once each"
        assert [j for j in jobs(stack) if j["state"] != "done"] == []
        for pr, sha in heads.items():
            assert head_of(stack, pr) == sha
            assert "**Verdict: PASS**" in verdict_on(stack, pr, sha)["body"]
            assert [r["conclusion"] for r in all_check_runs(stack, sha)] == ["success"]
        delivered = {(h.pr, h.object_id) for h in schedule if h.event == "issue_comment"}
        for pr in prs:
            p = Pull(pr)
            assert stack.reactions(p.reuse) == ["+1"]
            assert sum(f"{ACK_PREFIX}{p.reuse} -->" in c["body"] for c in stack.issue_comments(pr)) == 1
            if (pr, p.recheck) in delivered:
                assert stack.reactions(p.recheck) == ["+1"]
        decisions = Counter(r["published"]["job"] for r in audit(stack))
        assert [job for job, n in decisions.items() if n > 1] == [], "a job's decision recorded twice"
        assert_nothing_twice(stack, prs, [Pull(pr).head for pr in prs] + [Pull(pr).same for pr in pushed])


# --- GitHub faults ------------------------------------------------------------------------------------


def test_every_verification_completes_when_30_percent_of_calls_fail(tmp_path: Path) -> None:
    """About 30% of the App's calls fail: 20% answer 502, 5% drop the connection, 5% answer after
    the client's timeout (3 s here: long enough for a busy machine's ordinary answers, so that the
    timeouts are the faults'). Every signed-off PR still gets its verdict, once."""
    prs = [201, 202, 203, 204]
    world = build_world(tmp_path / "world", prs, signed_off=False)
    with running(tmp_path, world, env={"SIGNOFF_BOT_HTTP_TIMEOUT": "3"}) as stack:
        start_unsigned(stack, prs)
        mark = len(calls(stack))
        forever = 10 ** 6
        add_faults(stack,
                   {"route": "*", "actor": BOT, "status": 502, "times": forever, "probability": 0.2, "seed": SEED},
                   {"route": "*", "actor": BOT, "drop": True, "times": forever, "probability": 0.0625,
                    "seed": SEED + 1},
                   {"route": "*", "actor": BOT, "delay_ms": 4000, "times": forever, "probability": 0.0667,
                    "seed": SEED + 2})
        for pr in prs:
            sign_off(stack, pr)
        settle(stack, {pr: Pull(pr).head for pr in prs}, 300)

        log = [c for c in calls(stack, mark) if c["actor"] == BOT]
        failed = Counter("502" if c["status"] == 502 else "dropped" if c["status"] == 0 else "slow"
                         for c in log if c["status"] in (0, 502) or c["finished"] - c["started"] >= 3.9)
        assert min(failed["502"], failed["dropped"], failed["slow"]) > 0, failed
        assert 0.15 < sum(failed.values()) / len(log) < 0.5, (failed, len(log))
        assert [j for j in jobs(stack) if j["state"] == "failed"] == []
        for pr in prs:
            assert "**Verdict: PASS**" in verdict_on(stack, pr, Pull(pr).head)["body"]
            assert [r["conclusion"] for r in all_check_runs(stack, Pull(pr).head)] == ["success"]
        assert_nothing_twice(stack, prs, [Pull(pr).head for pr in prs])


RATE_LIMIT_BUDGET = 20  # seconds: longer than a warm App's verification takes on a busy machine
RATE_LIMITS = {  # fault, and the seconds GitHub's answer asks the App to wait: longer than the job budget
    "primary": ({"status": 403, "reset_in": RATE_LIMIT_BUDGET + 10}, RATE_LIMIT_BUDGET + 10),
    "secondary": ({"status": 429, "retry_after": RATE_LIMIT_BUDGET + 10}, RATE_LIMIT_BUDGET + 10),
    "secondary-without-retry-after": ({"status": 403, "secondary": True}, 60),  # GitHub: wait at least a minute
}


@pytest.mark.parametrize("limit", list(RATE_LIMITS))
def test_an_exhausted_rate_limit_is_waited_out_without_calls(tmp_path: Path, limit: str) -> None:
    """403 with x-ratelimit-remaining: 0 (primary), 429 with retry-after (secondary), or a 403 that
    only its message says is a secondary limit, without retry-after: from the moment the App learns
    of the limit until the reset it makes no call at all (none of its workers), then every
    verification completes. The wait outlasts the job budget: waiting for a reset is not
    failing. (A worker per PR: a job waiting in the queue behind another spends its budget.)"""
    fault, wait = RATE_LIMITS[limit]
    assert wait > RATE_LIMIT_BUDGET
    prs, warm_up = [301, 302, 303], 300
    world = build_world(tmp_path / "world", [warm_up, *prs], signed_off=False)
    with running(tmp_path, world, env={"SIGNOFF_BOT_WORKERS": str(len(prs))}) as stack:
        start_unsigned(stack, [warm_up, *prs])
        restart_with_budget(stack, RATE_LIMIT_BUDGET, warm_up)
        mark = len(calls(stack))
        add_faults(stack, {"route": "/repos/*", "actor": BOT, **fault})
        for pr in prs:
            sign_off(stack, pr)
        settle(stack, {pr: Pull(pr).head for pr in prs}, 180 + wait)

        log = [c for c in calls(stack, mark) if c["actor"] == BOT]
        limited = [c for c in log if c["status"] in (403, 429)]
        assert len(limited) == 1, limited
        learned = limited[0]["finished"] + 0.25  # the App reads the answer a moment after the fake sent it
        reset = int(limited[0]["started"]) + wait if limit == "primary" else limited[0]["finished"] + wait
        during = [(c["method"], c["path"], round(c["started"] - reset, 2)) for c in log
                  if learned < c["started"] < reset]
        assert during == [], "calls between the limit and its reset"
        verdicts = [c for c in log if c["method"] == "POST" and c["route"].endswith("/issues/{number}/comments")]
        assert len(verdicts) == len(prs) and all(c["started"] >= reset for c in verdicts)
        assert [j for j in jobs(stack) if j["state"] == "failed" and j["pr"] != warm_up] == []
        for pr in prs:
            assert [r["conclusion"] for r in all_check_runs(stack, Pull(pr).head)] == ["success"]


@pytest.mark.parametrize("github", ["failing", "slow"])
def test_a_job_that_cannot_finish_within_its_budget_fails_its_check_run_with_the_reason(
        tmp_path: Path, github: str) -> None:
    """Every tree read fails (502), or answers after 8 s (within the client's timeout): no
    verification of the PR can finish within its 4 s budget, however fast the machine. The job
    ends when the budget is spent, and its check run says why."""
    pr = 401
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    with running(tmp_path, world) as stack:
        start_unsigned(stack, [pr])
        restart_with_budget(stack, 4)
        fault = {"status": 502, "times": 10 ** 6} if github == "failing" else {"delay_ms": 8000, "times": 10 ** 6}
        add_faults(stack, {"route": "GET /repos/*/git/trees/*", "actor": BOT, **fault})
        sign_off(stack, pr)
        runs = stack.wait(lambda: [r for r in all_check_runs(stack, Pull(pr).head) if r["status"] == "completed"],
                          180, "a completed check run")
        assert [(r["conclusion"], r["output"]["title"]) for r in runs] == [
            ("failure", "Verification could not complete")]
        assert "did not finish within its 4 s budget" in runs[0]["output"]["summary"]
        failed = [j for j in jobs(stack) if j["state"] == "failed"]
        # the sign-off's comment job, or the verification it queued: which one the budget ends depends on how
        # fast the restarted App's processes start; either way the PR's verification
        assert [j["pr"] for j in failed] == [pr] and failed[0]["kind"] in ("comment", "verify")
        assert "budget" in failed[0]["last_error"]
        assert stack.verdict_comments(pr) == []


# --- two servers, one database ---------------------------------------------------------------------


def test_two_servers_on_one_database_never_work_on_one_pr_at_once(tmp_path: Path, db: str) -> None:
    """Two `serve` processes (three workers each) share one database (a SQLite file, or PostgreSQL);
    deliveries for the same PRs go to both, some to both at once under one GUID. From the fake's
    call log: the calls of two jobs of one PR never interleave in time. And no PR gets two verdict
    comments."""
    rng = random.Random(SEED)
    prs = [501, 502, 503, 504, 505, 506]
    world = build_world(tmp_path / "world", prs)
    with running(tmp_path, world, env={"SIGNOFF_BOT_WORKERS": "3"}, apps=2, db=db) as stack:
        add_faults(stack, latency_ms=15)  # longer jobs: more chances to overlap
        urls = [f"http://127.0.0.1:{port}/webhook" for port in stack.app_ports]
        hooks = [(pr, oid, action) for pr in prs for oid, action in
                 ((Pull(pr).signoff, None), (Pull(pr).reuse, None), (Pull(pr).recheck, None),
                  (Pull(pr).signoff, "edited"))]
        rng.shuffle(hooks)
        for n, (pr, oid, action) in enumerate(hooks):
            body = {"repo": REPO, "event": "issue_comment", "id": oid, "delivery": f"twin-{n}"}
            body = body if action is None else {**body, "action": action}
            targets = urls if n % 3 == 0 else [urls[n % 2]]  # every third goes to both servers
            for url in targets:
                assert fake_post(stack, "deliver", {**body, "url": url})["status"] == 202
        settle(stack, {pr: Pull(pr).head for pr in prs}, 120)

        pr_of = {j["id"]: j["pr"] for j in jobs(stack)}
        by_pr: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
        for tag, (start, end) in job_spans(calls(stack)).items():
            by_pr[pr_of[int(tag.split("@")[0])]].append((start, end, tag))
        assert set(by_pr) == set(prs)
        servers = {tag.split("@")[1].rsplit("-", 1)[0] for spans in by_pr.values() for *_x, tag in spans}
        assert len(servers) == 2, "both servers worked"  # workers are named worker-<pid>-<random>
        for pr, spans in by_pr.items():
            spans.sort()
            overlaps = [(a[2], b[2]) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
            assert overlaps == [], f"#{pr}: jobs overlapping in time"
        assert sorted(delivery_guids(stack)) == sorted(f"twin-{n}" for n in range(len(hooks))), "once each"
        for pr in prs:
            assert stack.reactions(Pull(pr).reuse) == ["+1"] and stack.reactions(Pull(pr).recheck) == ["+1"]
        assert_nothing_twice(stack, prs, [Pull(pr).head for pr in prs])


# --- stale state ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("during", ["gathering", "publishing"])
def test_a_push_during_a_verification_gets_no_pass_from_it(tmp_path: Path, during: str) -> None:
    """A PR that passes at its head; while its sign-off is verified, a push changes the diff (the
    new head would be rejected, and needs a fresh sign-off). The push lands while the PR is
    read (its files answered after the push, its head before), or after the verdict comment
    was written and while its check run is. The old verification's result lands on the old head
    only: no PASS check run or status on the new head, no verdict comment claiming it; the new
    head asks for a fresh sign-off."""
    pr = 601
    p = Pull(pr)
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    with running(tmp_path, world) as stack:
        start_unsigned(stack, [pr])
        mark = len(calls(stack))
        if during == "gathering":
            slow, signal = f"GET /repos/*/pulls/{pr}/files", ("GET", f"/repos/{REPO}/pulls/{pr}/commits")
        else:
            slow, signal = "PATCH /repos/*/check-runs/*", ("POST", f"/repos/{REPO}/issues/{pr}/comments")
        # the slow answer holds the verification where it is until the test has seen it there and pushed:
        # long enough for that on a busy machine (the push lands in well under a second on an idle one)
        add_faults(stack, {"route": slow, "actor": BOT, "delay_ms": 10_000})
        sign_off(stack, pr)
        stack.wait(lambda: any((c["method"], c["path"]) == signal and c["actor"] == BOT for c in calls(stack, mark)),
                   180, f"the verification to be {during}")
        assert fake_post(stack, "push", {"repo": REPO, "number": pr, "sha": p.changed})["status"] == 202
        runs = stack.wait(lambda: [r for r in all_check_runs(stack, p.changed) if r["status"] == "completed"],
                          180, "the new head's check run")
        stack.wait(lambda: idle(stack), 180, "the queue to drain")

        assert [r["conclusion"] for r in runs] == ["action_required"]
        assert [r["conclusion"] for r in all_check_runs(stack, p.head)] == ["success"]
        assert [s["state"] for s in statuses(stack, p.changed)] == []
        assert {s["state"] for s in statuses(stack, p.head)} == {"success"}
        new_runs = {f"/check-runs/{r['id']}" for r in all_check_runs(stack, p.changed)}
        passes = [w for w in stack.writes() if "/check-runs" in w["path"] and (w["request"] or {}).get("conclusion")
                  == "success" and ((w["request"] or {}).get("head_sha") == p.changed
                                    or any(w["path"].endswith(run) for run in new_runs))]
        assert passes == []
        assert all(f"sha={p.changed}" not in c["body"] for c in stack.issue_comments(pr))
        if during == "gathering":  # the head had moved before anything was published: the comment waits
            assert stack.verdict_comments(pr) == []
        else:  # written before the push, for the head it names
            assert verdict_on(stack, pr, p.head) is not None
