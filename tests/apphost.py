"""Run the App and the fake GitHub as real processes on loopback, for end-to-end tests.

`Stack` starts `signoff-bot fake-github WORLD --webhook-url …` and
`signoff-bot serve` with its environment pointing at the fake, and offers the
few moves a test needs: act as a GitHub user, deliver a stored object as a
webhook, read what the App wrote (on GitHub and in its database), wait for a
condition, kill and restart the App.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import httpx

from app.offline.replay import throwaway_key
from app.store.choose import open_store
from app.store.sql import SqlStore

SECRET = "e2e-webhook-secret"
E2E_WORLD = Path(__file__).resolve().parent / "worlds" / "e2e"
REPO = "demo-org/InferenceX-demo"
KEY = throwaway_key()
PATIENCE = 180.0  # seconds the tests wait at least for a state they expect (Stack.wait)
START_TIMEOUT = 180.0  # seconds for a started App to answer /healthz: a bound for a hung start, not a speed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end(proc: subprocess.Popen, grace: float = 30) -> None:
    """Ask a process to stop; kill it if it has not within `grace` s (a busy machine stops it slowly)."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Stack:
    def __init__(self, tmp: Path, world: Path = E2E_WORLD, env: dict[str, str] | None = None, apps: int = 1,
                 db: str | None = None):
        self.tmp = tmp
        self.world = world
        self.db = db or str(tmp / "signoff-bot.db")  # SIGNOFF_BOT_DB: a SQLite file, or a postgresql:// URL
        self._store: SqlStore | None = None
        self.extra_env = env or {}
        self.app_ports = [free_port() for _ in range(apps)]
        self.app_url = f"http://127.0.0.1:{self.app_ports[0]}"
        self.apps: list[subprocess.Popen | None] = [None] * apps
        self.fake: subprocess.Popen | None = None
        self.fake_url = ""

    # --- processes -------------------------------------------------------------

    def start(self) -> "Stack":
        fake_port = free_port()
        self.fake = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "fake-github", str(self.world), "--port", str(fake_port),
             "--webhook-url", f"{self.app_url}/webhook", "--webhook-secret", SECRET],
            stdout=subprocess.PIPE, stderr=open(self.tmp / "fake.log", "wb"), text=True)
        self.fake_url = self.fake.stdout.readline().strip()
        assert self.fake_url.startswith("http://127.0.0.1:"), "the fake GitHub did not start"
        for n in range(len(self.apps)):  # side by side: a second App does not start in the first one's work
            self._spawn(n)
        for n in range(len(self.apps)):
            self._wait_healthy(n)
        return self

    def start_app(self, n: int = 0) -> None:
        self._spawn(n)
        self._wait_healthy(n)

    def _spawn(self, n: int) -> None:
        env = {**os.environ, "SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": KEY,
               "SIGNOFF_BOT_WEBHOOK_SECRET": SECRET, "SIGNOFF_BOT_GITHUB_URL": self.fake_url,
               "SIGNOFF_BOT_DB": self.db, "SIGNOFF_BOT_LEASE_SECONDS": "3", "SIGNOFF_BOT_RECONCILE_SECONDS": "3600",
               **self.extra_env}
        log = open(self.tmp / f"app{n}.log", "ab")
        self.apps[n] = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.app_ports[n])],
            env=env, stdout=log, stderr=log)

    def _wait_healthy(self, n: int) -> None:
        # Importing the App takes a few seconds of CPU; on two cores shared with busy Apps and other
        # test runs, several times that.
        self.wait(lambda: self._healthy(n), START_TIMEOUT, f"app {n} did not become healthy")

    def _healthy(self, n: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.app_ports[n]}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def pid(self, n: int = 0) -> int | None:
        proc = self.apps[n]
        return proc.pid if proc is not None else None

    def kill_app(self, n: int = 0) -> None:
        proc = self.apps[n]
        if proc is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
            self.apps[n] = None

    def stop(self) -> None:
        for proc in [*self.apps, self.fake]:
            if proc is not None:
                end(proc)
        if self._store is not None:
            self._store.close()

    def store(self) -> SqlStore:
        """The App's database, opened by the test as another process would."""
        if self._store is None:
            self._store = open_store(self.db)
        return self._store

    def __enter__(self) -> "Stack":
        try:
            return self.start()
        except BaseException:  # an App that did not come up: end the processes already started
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in sorted(self.tmp.glob("*.log")))

    # --- acting on the fake ----------------------------------------------------------

    def as_user(self, login: str) -> httpx.Client:
        return httpx.Client(base_url=self.fake_url, headers={"Authorization": f"token user:{login}"}, timeout=30)

    def comment(self, login: str, pr: int, body: str) -> dict[str, Any]:
        with self.as_user(login) as c:
            r = c.post(f"/repos/{REPO}/issues/{pr}/comments", json={"body": body})
            r.raise_for_status()
            return r.json()

    def edit_comment(self, login: str, comment_id: int, body: str) -> None:
        with self.as_user(login) as c:
            c.patch(f"/repos/{REPO}/issues/comments/{comment_id}", json={"body": body}).raise_for_status()

    def admin(self, route: str, **body: Any) -> dict[str, Any]:
        r = httpx.post(f"{self.fake_url}/_fake/{route}", json={"repo": REPO, **body}, timeout=60)
        r.raise_for_status()
        return r.json()

    def deliver(self, event: str, object_id: int, action: str | None = None, delivery: str | None = None) -> dict:
        body: dict[str, Any] = {"event": event, "id": object_id}
        if action:
            body["action"] = action
        if delivery:
            body["delivery"] = delivery
        return self.admin("deliver", **body)

    def writes(self) -> list[dict[str, Any]]:
        return httpx.get(f"{self.fake_url}/_fake/writes", timeout=30).json()

    def issue_comments(self, pr: int) -> list[dict[str, Any]]:
        """Every conversation comment of the PR (all pages)."""
        url: str | None = f"{self.fake_url}/repos/{REPO}/issues/{pr}/comments?per_page=100"
        comments: list[dict[str, Any]] = []
        while url:
            r = httpx.get(url, timeout=30)
            comments += r.json()
            url = r.links.get("next", {}).get("url")
        return comments

    def verdict_comments(self, pr: int) -> list[dict[str, Any]]:
        return [c for c in self.issue_comments(pr) if c["body"].startswith("<!-- codeowner-signoff-verify sha=")]

    def check_runs(self, sha: str, name: str = "codeowner-signoff-verify") -> list[dict[str, Any]]:
        r = httpx.get(f"{self.fake_url}/repos/{REPO}/commits/{sha}/check-runs", params={"check_name": name},
                      timeout=30)
        return r.json()["check_runs"]

    def reactions(self, comment_id: int) -> list[str]:
        r = httpx.get(f"{self.fake_url}/repos/{REPO}/issues/comments/{comment_id}/reactions", timeout=30)
        return [x["content"] for x in r.json()]

    @staticmethod
    def wait(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
        """`predicate`'s first true value, polled. `timeout` is what an idle machine needs; a busy one gets at
        least PATIENCE: the bound only tells a hang from a slow machine, and costs nothing when all is well."""
        deadline = time.monotonic() + max(timeout, PATIENCE)
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for: {what}")
            time.sleep(0.1)
