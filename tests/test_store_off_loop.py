"""No store call blocks the event loop: the App, served for real against the fake GitHub, makes every
call to its store from a thread of its own (asyncio.to_thread). A call on the loop would stall every
delivery and job of the process for as long as the database takes, a network round trip on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from typing import Any

import httpx
import uvicorn

from app.fake_github import FakeGitHub
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, throwaway_key
from app.settings import Settings
from app.store.sql import SqliteStore
from app.web.server import create_app

from .apphost import REPO, free_port
from .variants import edit_world, pull_of

SECRET = "off-loop-secret"
PR, HEAD, SIGNOFF_ID = 42, "b2" * 20, 5001


class OffLoopStore:
    """A store that records each method called and, apart, each one called on a thread running an event loop."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.called: set[str] = set()
        self.on_loop: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.called.add(name)
            try:
                asyncio.get_running_loop()
                self.on_loop.append(name)
            except RuntimeError:  # no loop runs on this thread: as it should be
                pass
            return method(*args, **kwargs)

        return call


def wait(predicate, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_every_store_call_of_the_app_is_made_off_the_event_loop(tmp_path):
    """The demo PR without its sign-off: the start-up reconcile pass records NO_SIGNOFF; then the PR
    is opened, the sign-off posted (a verdict is decided), the head pushed, /readyz and /metrics read."""
    signoff: dict[str, Any] = {}

    def unsigned(data: dict[str, Any]) -> None:
        comments = pull_of(data)["issue_comments"]
        signoff.update(next(c for c in comments if c["id"] == SIGNOFF_ID))
        comments.remove(signoff)

    world = edit_world(shutil.copytree(DEMO_WORLD, tmp_path / "world"), unsigned)
    port = free_port()
    store = OffLoopStore(SqliteStore(str(tmp_path / "bot.db")))
    with FakeGitHub(world, webhook_url=f"http://127.0.0.1:{port}/webhook", webhook_secret=SECRET) as fake:
        # short leases: heartbeats run during the jobs
        settings = Settings(app_id=REPLAY_APP_ID, private_key=throwaway_key(), webhook_secret=SECRET,
                            github_url=fake.url, db_path=store.inner.path, lease_seconds=0.3)
        server = uvicorn.Server(uvicorn.Config(create_app(settings, store), host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            wait(lambda: server.started, "the App to start", 180)
            wait(lambda: (store.inner.verdict_for(REPO, PR, HEAD) or {}).get("label") == "NO_SIGNOFF", "NO_SIGNOFF")
            delivered = httpx.post(f"{fake.url}/_fake/deliver", timeout=60,
                                   json={"repo": REPO, "event": "pull_request", "id": PR, "action": "opened"})
            assert delivered.json()["status"] == 202
            posted = httpx.post(f"{fake.url}/repos/{REPO}/issues/{PR}/comments", json={"body": signoff["body"]},
                                headers={"Authorization": f"token user:{signoff['user']}"}, timeout=60)
            assert posted.status_code == 201
            wait(lambda: store.inner.audit(pr=PR), "a decision")
            pushed = httpx.post(f"{fake.url}/_fake/push", json={"repo": REPO, "number": PR, "sha": HEAD}, timeout=60)
            assert pushed.json()["status"] == 202  # a synchronize delivery: the App reads the last verdict
            wait(lambda: store.inner.queue_depth() == 0, "an empty queue")
            for path in ("/readyz", "/metrics"):
                assert httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).status_code == 200
        finally:
            server.should_exit = True
            thread.join(20)
    assert store.on_loop == []
    assert store.called >= {"record_deliveries", "lease", "heartbeat", "complete", "enqueue", "verdict_for",
                            "last_verdict", "pin_signoff", "record_decision", "record_verdict", "ping",
                            "queue_depth"}, store.called
