"""Database outages through real processes: `signoff-bot serve` and the fake GitHub on loopback
(tests/apphost.py), on a PostgreSQL server of the module's own (tests/databases.py) that the tests stop
and start, or on SQLite with the database's directory made read-only (a read-only bind mount over it).

Every outage test ends with one correct verdict, no failed check run ever written (the fake's write log,
not only the check run's last state), no failed job, every worker running and none restarted
(`signoff_bot_workers_running`, `signoff_bot_worker_restarts_total`), and /readyz saying what is true:
503 while the database does not take writes, 200 once it does. They wait on observed states; only the
outage itself lasts a set time. The last test shows the reconcile pass healing a head whose
verification could not complete (GitHub failing, not the database).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .apphost import REPO, Stack
from .databases import PostgresServer, unavailable
from .test_reliability import (BOT, add_faults, all_check_runs, calls, delivery_guids, fake_post, idle, jobs,
                               running, settle, sign_off, start_unsigned, verdict_on)
from .worldgen import Pull, build_world, signoff_text

pytestmark = pytest.mark.slow

OUTAGE_SECONDS = 35.0  # longer than a job's lease (3 s here) and than the pool's reconnection backoff
PROMPT_SECONDS = 5.0  # half of GitHub's 10 s: a webhook answered later is one GitHub has given up on
READY_SECONDS = 10.0  # for /readyz to turn, either way (the App promises 5)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own: the tests stop it, and no other test's database is on it."""
    reason = unavailable()
    if reason:
        if in_ci():
            pytest.fail(f"the outage tests must run in CI, but {reason}")
        pytest.skip(f"PostgreSQL outage tests skipped: {reason}")
    server = PostgresServer().start()
    yield server
    server.stop()


# --- what the tests observe ------------------------------------------------------------------------------


def ready(stack: Stack, n: int = 0) -> int:
    try:
        return httpx.get(f"http://127.0.0.1:{stack.app_ports[n]}/readyz", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def metric(stack: Stack, name: str, n: int = 0) -> float:
    text = httpx.get(f"http://127.0.0.1:{stack.app_ports[n]}/metrics", timeout=30).text
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.split(" ", 1)[0] == name]
    assert len(values) == 1, f"{name} in /metrics"
    return values[0]


def workers_settled(stack: Stack, workers: int, n: int = 0) -> bool:
    return metric(stack, "signoff_bot_workers_running", n) == workers


def failures_written(stack: Stack) -> list[dict[str, Any]]:
    """Every check run the App ever wrote with conclusion failure (created, or updated to it)."""
    return [w for w in stack.writes() if "/check-runs" in w["path"]
            and (w["request"] or {}).get("conclusion") == "failure"]


def log_of(stack: Stack, n: int = 0) -> str:
    return (stack.tmp / f"app{n}.log").read_text(errors="replace")


def assert_healthy_end(stack: Stack, prs: list[int], workers: int, apps: list[int] | None = None) -> None:
    """One PASS verdict comment per PR at its head, its check run a success and never a failure, no job
    failed, every worker running and none restarted, /readyz 200, and no database fault called a
    GitHub one."""
    for pr in prs:
        assert "**Verdict: PASS**" in verdict_on(stack, pr, Pull(pr).head)["body"], f"#{pr}"
        assert [r["conclusion"] for r in all_check_runs(stack, Pull(pr).head)] == ["success"], f"#{pr}"
    assert failures_written(stack) == []
    assert [(j["id"], j["last_error"]) for j in jobs(stack) if j["state"] == "failed"] == []
    for n in apps if apps is not None else range(len(stack.apps)):
        Stack.wait(lambda: workers_settled(stack, workers, n), 30, f"app {n}: {workers} workers running")
        assert metric(stack, "signoff_bot_worker_restarts_total", n) == 0
        assert ready(stack, n) == 200
        log = log_of(stack, n)
        assert "malformed GitHub response" not in log
        assert "the jobs' process stopped" not in log


def hold(stack: Stack, seconds: float, expect: int) -> None:
    """Let `seconds` pass (the outage's length), asserting all along that the App runs and /readyz is
    `expect`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert all(p is None or p.poll() is None for p in stack.apps), "an App exited"
        assert ready(stack) == expect, f"/readyz during the outage, {end - time.monotonic():.0f} s before its end"
        time.sleep(0.5)


def verifying(stack: Stack, pr: int, mark: int) -> None:
    """Wait until the App's verification of `pr` is reading it (it has asked for the PR's commits)."""
    stack.wait(lambda: any((c["method"], c["path"], c["actor"]) == ("GET", f"/repos/{REPO}/pulls/{pr}/commits", BOT)
                           for c in calls(stack, mark)), 60, "the verification to run")


# --- PostgreSQL ------------------------------------------------------------------------------------------


def test_postgresql_stopped_for_35_s_during_a_verification(tmp_path: Path, pg: PostgresServer) -> None:
    """The server is shut down (every session ended with AdminShutdown) while a verification runs, and
    started 35 s later. Meanwhile /readyz is 503, a webhook is answered 503 at once and kept (the
    reconcile pass records it afterwards), and the workers wait: the verification runs again once the
    database is back, and its verdict is the PR's only one; no check run ever says it failed."""
    pr = 701
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    with running(tmp_path, world, db=pg.new_database(), env={"SIGNOFF_BOT_RECONCILE_SECONDS": "5"}) as stack:
        start_unsigned(stack, [pr])
        mark = len(calls(stack))
        add_faults(stack, {"route": f"GET /repos/*/pulls/{pr}/files", "actor": BOT, "delay_ms": 3000})
        signed = stack.comment("nv-owner", pr, signoff_text(pr))
        verifying(stack, pr, mark)
        pg.shut_down()
        down = time.monotonic()
        stack.wait(lambda: ready(stack) == 503, READY_SECONDS, "/readyz 503 once the database is down")
        asked = time.monotonic()
        answer = fake_post(stack, "deliver", {"repo": REPO, "event": "issue_comment", "id": signed["id"],
                                              "delivery": "during-the-outage"})
        assert answer["status"] == 503 and time.monotonic() - asked < PROMPT_SECONDS, answer
        hold(stack, OUTAGE_SECONDS - (time.monotonic() - down), 503)
        pg.start_server()
        stack.wait(lambda: ready(stack) == 200, READY_SECONDS, "/readyz 200 once the database is back")
        settle(stack, {pr: Pull(pr).head}, 120)
        stack.wait(lambda: "during-the-outage" in delivery_guids(stack), 60, "the refused delivery, recorded")
        stack.wait(lambda: idle(stack), 60, "the queue to drain")

        assert_healthy_end(stack, [pr], workers=2)
        log = log_of(stack)
        assert "the database failed during the job; it runs again" in log  # the outage did hit the job
        assert '"msg": "reconcile failed"' in log and '"error": "database: ' in log


def test_postgresql_restarted_during_a_burst_of_40_deliveries(tmp_path: Path, pg: PostgresServer) -> None:
    """40 deliveries over 8 PRs, one after another; after the 10th the server restarts (fast shutdown,
    then start). Each delivery is answered promptly, 202 or 503; those answered 503 are recorded by the
    reconcile pass; every PR gets its one PASS verdict."""
    prs = list(range(801, 809))
    world = build_world(tmp_path / "world", prs)
    hooks = [(pr, oid, action) for pr in prs for oid, action in
             ((pr, "opened"), (Pull(pr).signoff, None), (Pull(pr).reuse, None), (Pull(pr).recheck, None),
              (Pull(pr).signoff, "edited"))]
    assert len(hooks) == 40
    with running(tmp_path, world, db=pg.new_database(), env={"SIGNOFF_BOT_RECONCILE_SECONDS": "5"}) as stack:
        stack.wait(lambda: idle(stack) and ready(stack) == 200, 60, "the start-up reconcile pass")
        answers: list[tuple[str, int, float]] = []

        def burst() -> None:
            for n, (pr, oid, action) in enumerate(hooks):
                body = {"repo": REPO, "event": "pull_request" if action == "opened" else "issue_comment",
                        "id": oid, "delivery": f"burst-{n:02d}"}
                if action:
                    body["action"] = action
                asked = time.monotonic()
                answers.append((body["delivery"], fake_post(stack, "deliver", body)["status"],
                                time.monotonic() - asked))

        sender = threading.Thread(target=burst)
        sender.start()
        stack.wait(lambda: len(answers) >= 10, 60, "10 deliveries answered")
        pg.shut_down()
        stack.wait(lambda: any(status == 503 for _, status, _ in answers), 60, "a delivery refused")
        pg.start_server()
        sender.join(300)
        assert len(answers) == 40
        assert {status for _, status, _ in answers} <= {202, 503}, answers
        assert max(took for *_, took in answers) < PROMPT_SECONDS, answers
        settle(stack, {pr: Pull(pr).head for pr in prs}, 240)
        stack.wait(lambda: sorted(delivery_guids(stack)) == sorted(g for g, _, _ in answers), 60,
                   "every delivery recorded, the refused ones by the reconcile pass")
        stack.wait(lambda: idle(stack), 60, "the queue to drain")

        assert_healthy_end(stack, prs, workers=2)
        for pr in prs:
            assert len(stack.verdict_comments(pr)) == 1


def holder(stack: Stack) -> int | None:
    """Which App's worker (named worker-<its pid>-...) holds a running verification's lease, if one does."""
    owners = [j["lease_owner"] or "" for j in jobs(stack) if j["state"] == "running" and j["kind"] == "verify"]
    return next((n for n in range(len(stack.apps)) for owner in owners
                 if stack.pid(n) and owner.startswith(f"worker-{stack.pid(n)}-")), None)


def test_a_replica_killed_while_it_holds_a_job(tmp_path: Path, pg: PostgresServer) -> None:
    """Two replicas on one PostgreSQL database; the one holding the verification's lease is SIGKILLed.
    The other runs the job once the lease expires: one PASS verdict, no failure written, and the
    survivor ready with all its workers throughout; the killed one, started again, is ready too."""
    pr = 901
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    with running(tmp_path, world, db=pg.new_database(), apps=2) as stack:
        start_unsigned(stack, [pr])
        add_faults(stack, {"route": f"GET /repos/*/pulls/{pr}/files", "actor": BOT, "delay_ms": 2000})
        sign_off(stack, pr)
        (killed,) = stack.wait(lambda: [n for n in [holder(stack)] if n is not None], 60,
                               "a replica to hold the verification")
        stack.kill_app(killed)
        survivor = 1 - killed
        assert ready(stack, survivor) == 200
        settle(stack, {pr: Pull(pr).head}, 120)
        assert ready(stack, survivor) == 200
        stack.start_app(killed)
        assert_healthy_end(stack, [pr], workers=2)


# --- SQLite ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """`directory` read-only for whoever opens a file in it from now on (a read-only bind mount over it),
    writable again on the way out. Files already open stay writable (Linux checks at open). The mount is
    detached lazily: SQLite keeps a closed connection's file open while others of the process hold locks
    on the file, so a file the App opened meanwhile (read-only) keeps the mount busy."""
    subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True, capture_output=True)
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(directory)], check=True, capture_output=True)


def mount_unavailable(directory: Path) -> str | None:
    if shutil.which("mount") is None:
        return "no mount command"
    try:
        with read_only(directory):
            pass
    except subprocess.CalledProcessError as exc:
        return f"cannot make a read-only bind mount here ({exc.stderr.decode(errors='replace').strip()})"
    return None


def test_sqlite_directory_made_read_only_for_35_s_during_a_verification(tmp_path: Path) -> None:
    """The database's directory becomes read-only while a verification runs, and writable again 35 s
    later. /readyz is 503 meanwhile (no new connection could write there: a restarted process could not),
    200 again after; the verification ends with one PASS verdict and no failure written. The App's own
    connections, opened before, go on writing through their open files meanwhile: the outage is one of
    the directory, not of those files."""
    directory = tmp_path / "db"
    directory.mkdir()
    reason = mount_unavailable(directory)
    if reason:
        if in_ci():
            pytest.fail(f"the SQLite outage test must run in CI, but {reason}")
        pytest.skip(reason)
    pr = 711
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    with running(tmp_path, world, db=str(directory / "signoff-bot.db")) as stack:
        start_unsigned(stack, [pr])
        mark = len(calls(stack))
        add_faults(stack, {"route": f"GET /repos/*/pulls/{pr}/files", "actor": BOT, "delay_ms": 3000})
        sign_off(stack, pr)
        verifying(stack, pr, mark)
        with read_only(directory):
            down = time.monotonic()
            stack.wait(lambda: ready(stack) == 503, READY_SECONDS, "/readyz 503 once the directory is read-only")
            hold(stack, OUTAGE_SECONDS - (time.monotonic() - down), 503)
        stack.wait(lambda: ready(stack) == 200, READY_SECONDS, "/readyz 200 once the directory is writable")
        settle(stack, {pr: Pull(pr).head}, 120)
        assert_healthy_end(stack, [pr], workers=2)


# --- a verification that could not complete -------------------------------------------------------------


def test_reconcile_verifies_again_a_head_whose_verification_could_not_complete(tmp_path: Path) -> None:
    """GitHub fails every tree read (502) and a job gets one attempt: the verification ends as a failed
    check run ("Verification could not complete"), its head INCOMPLETE. Once GitHub answers again, the
    next reconcile pass verifies the head again, although it has a verdict: the check run turns success
    and the verdict comment is posted."""
    pr = 721
    head = Pull(pr).head
    world = build_world(tmp_path / "world", [pr], signed_off=False)
    env = {"SIGNOFF_BOT_MAX_ATTEMPTS": "1", "SIGNOFF_BOT_RECONCILE_SECONDS": "3"}
    with running(tmp_path, world, env=env) as stack:
        start_unsigned(stack, [pr])
        add_faults(stack, {"route": "GET /repos/*/git/trees/*", "actor": BOT, "status": 502, "times": 10 ** 6})
        sign_off(stack, pr)
        stack.wait(lambda: failures_written(stack), 60, "the failed check run")
        assert stack.store().verdict_for(REPO, pr, head)["label"] == "INCOMPLETE"
        assert stack.verdict_comments(pr) == []
        httpx.delete(f"{stack.fake_url}/_fake/faults", timeout=30).raise_for_status()
        settle(stack, {pr: head}, 60)
        assert [r["conclusion"] for r in all_check_runs(stack, head)] == ["success"]
        assert "**Verdict: PASS**" in verdict_on(stack, pr, head)["body"]
        assert stack.store().verdict_for(REPO, pr, head)["label"] == "PASS"
        (failed,) = [j["id"] for j in jobs(stack) if j["state"] == "failed"]
        assert [j["state"] for j in jobs(stack) if j["id"] > failed and j["kind"] == "verify"
                and json.loads(j["payload"]).get("reason") == "reconcile"] == ["done"]
