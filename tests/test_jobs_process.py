"""The workers in a process of their own beside `signoff-bot serve` (app/jobs/process.py): at a lower CPU
priority than the server, their metrics on the server's /metrics, started again when it dies (the job it
held runs again), and gone with the server when the server is killed."""

from __future__ import annotations

import os
import pickle
import signal
from pathlib import Path

import httpx
import pytest

from app.jobs import process
from app.jobs.background import Background
from app.jobs.process import Forwarded, apply
from app.jobs.runner import Clients
from app.jobs.worker import Refused
from app.observability import Metrics
from app.offline.replay import REPLAY_APP_ID, throwaway_key
from app.settings import ConfigError, Settings
from app.store.choose import open_store

from .apphost import Stack

HEAD, SIGNOFF_ID = "b2" * 20, 5001


def _figures(metrics: Metrics) -> list[str]:
    """The rendered metrics but when each series was created."""
    return [line for line in metrics.render().decode().splitlines() if "_created" not in line]


def test_metric_calls_made_in_the_jobs_process_are_made_on_the_servers_metrics():
    direct, server, forwarded = Metrics(), Metrics(), Forwarded()
    for metrics in (direct, forwarded):
        metrics.jobs.labels("verify", "done").inc()
        metrics.jobs.labels("comment", "retried").inc()
        metrics.github_calls.inc()
        metrics.github_calls.inc(3)
        metrics.verification_seconds.observe(1.5)
        metrics.rate_limit_remaining.set(4999)
    apply(server, pickle.loads(pickle.dumps(forwarded.taken())))  # as they cross the pipe
    assert _figures(server) == _figures(direct)
    assert forwarded.taken() == []


def _children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


def _spawned(pid: int) -> list[int]:
    """The processes `pid` started with multiprocessing's spawn (not its resource tracker)."""
    return [c for c in _children(pid) if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_a_jobs_process_that_died_counts_as_stopped_until_another_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "RESTART_SECONDS", 60.0)  # not started again within the test
    settings = Settings(app_id=REPLAY_APP_ID, private_key=throwaway_key(), webhook_secret="s",
                        github_url="http://127.0.0.1:9", db_path=str(tmp_path / "bot.db"), workers=1,
                        reconcile_seconds=3600)
    store, metrics = open_store(settings.db_path), Metrics()
    background = Background(settings, store, Clients(settings, metrics), metrics, Refused(), apart=True)
    background.start()
    try:
        assert background.stopped() == 0
        Stack.wait(lambda: background.workers_running() == 1, 30, "the jobs' process to report its worker")
        assert "\nsignoff_bot_workers_running 1.0\n" in metrics.render().decode()
        os.kill(background.jobs.pid, signal.SIGKILL)
        Stack.wait(lambda: not background.jobs.alive(), 10, "the jobs' process to be seen dead")
        assert background.stopped() == 1  # /readyz is 503
        Stack.wait(lambda: background.workers_running() == 0, 10, "no worker running")  # /readyz says so too
    finally:
        background.stop()
        store.close()


@pytest.mark.slow
def test_the_jobs_run_apart_at_a_lower_priority_and_their_metrics_are_the_servers(tmp_path):
    with Stack(tmp_path, env={"SIGNOFF_BOT_WORK_NICE": "7"}) as stack:
        stack.deliver("issue_comment", SIGNOFF_ID)
        stack.wait(lambda: stack.verdict_comments(42), 60, "the verdict comment")
        (jobs,) = _spawned(stack.pid())
        checks = _spawned(jobs)
        assert _nice(stack.pid()) == 0 and _nice(jobs) == 7 and [_nice(c) for c in checks] == [7]

        def metrics() -> str:
            text = httpx.get(f"{stack.app_url}/metrics", timeout=30).text
            return text if 'signoff_bot_jobs_total{kind="verify",outcome="done"}' in text else ""

        text = stack.wait(metrics, 30, "the verification's metrics on the server's /metrics")
        figures = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if not line.startswith("#")}
        assert figures["signoff_bot_verification_seconds_count"] >= 1  # the start-up reconcile pass's too
        assert figures['signoff_bot_deliveries_total{event="issue_comment",outcome="queued"}'] == 1
        assert figures["signoff_bot_github_api_calls_total"] > 10


@pytest.mark.slow
def test_a_killed_jobs_process_is_started_again_its_job_runs_again_and_none_outlives_the_server(tmp_path):
    with Stack(tmp_path) as stack:
        httpx.post(f"{stack.fake_url}/_fake/faults", json={"faults": [], "latency_ms": 300},  # a verification
                   timeout=30).raise_for_status()  # long enough to be killed in
        (first,) = _spawned(stack.pid())
        stack.deliver("issue_comment", SIGNOFF_ID)
        mine = f"worker-{stack.pid()}-"  # the workers are named for the server, as in its own process
        stack.wait(lambda: any(j["state"] == "running" and j["kind"] == "verify" and
                               (j["lease_owner"] or "").startswith(mine) for j in stack.store().jobs()),
                   60, "the verification to run")
        os.kill(first, signal.SIGKILL)
        again = stack.wait(lambda: [p for p in _spawned(stack.pid()) if p != first], 30, "another jobs' process")
        stack.wait(lambda: httpx.get(f"{stack.app_url}/readyz", timeout=10).status_code == 200, 30, "/readyz")
        stack.wait(lambda: any(f"sha={HEAD}" in c["body"] for c in stack.verdict_comments(42)), 90,
                   "the verdict, from the job run again once its lease expired")
        assert len(stack.verdict_comments(42)) == 1
        (jobs,) = again
        descendants = [jobs, *_spawned(jobs)]
        stack.kill_app()
        stack.wait(lambda: all(map(_gone, descendants)), 20, "the jobs' and checks' processes to exit")


@pytest.mark.parametrize("text, nice", [(None, 10), ("0", 0), ("19", 19), (" 5 ", 5)])
def test_the_work_nice_setting(text, nice):
    env = {"SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": throwaway_key(), "SIGNOFF_BOT_WEBHOOK_SECRET": "s"}
    assert Settings.from_env(env if text is None else {**env, "SIGNOFF_BOT_WORK_NICE": text}).work_nice == nice


@pytest.mark.parametrize("text", ["20", "-1", "ten", "2.5", ""])
def test_a_work_nice_out_of_range_is_refused(text):
    env = {"SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": throwaway_key(), "SIGNOFF_BOT_WEBHOOK_SECRET": "s",
           "SIGNOFF_BOT_WORK_NICE": text}
    with pytest.raises(ConfigError, match="SIGNOFF_BOT_WORK_NICE must be a whole number from 0 to 19"):
        Settings.from_env(env)
