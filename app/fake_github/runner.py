"""Running the fake: `FakeGitHub` serves it from a background thread for tests and
benchmarks; `main` serves it in the foreground (`signoff-bot fake-github`). Each
listens on two loopback ports: the API, and the artifact storage host that
downloads redirect to (another origin, as on GitHub; server.StorageHost).

    with FakeGitHub("tests/worlds/mini", webhook_url=..., webhook_secret=...) as fake:
        gh = GitHub("user:alice", base_url=fake.url + "/")
        ...
        fake.state.ledger.writes       # what was written
        fake.fault(route="GET /repos/*/pulls/*", status=502, times=2)
"""

from __future__ import annotations

import argparse
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import httpx
import uvicorn

from app.offline.world import World

from .faults import Fault
from .server import create_app
from .state import GitHubState
from .webhooks import Delivery

START_TIMEOUT = 10.0


class _QuietDrops(logging.Filter):
    """Dropped connections are injected on purpose; keep the server's error log for real errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


_QUIET_DROPS = _QuietDrops()


def _server(app: Any) -> uvicorn.Server:
    logging.getLogger("uvicorn.error").addFilter(_QUIET_DROPS)  # adding it again is a no-op
    config = uvicorn.Config(app, host="127.0.0.1", log_level="warning", lifespan="off", http="h11",
                            access_log=False)
    return uvicorn.Server(config)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket; TCP_NODELAY (inherited by connections) avoids a 40 ms
    Nagle/delayed-ACK stall per response, which the server writes in two parts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


def warm_up(app: Any, url: str) -> None:
    """Do before the first request what it would otherwise wait for: the state's hashing and diffing
    (`GitHubState.warm`), and FastAPI's building of its routes, which it does on the first request that
    walks them (one to no route walks them all; an admin path, so nothing counts it). GitHub answers a
    request in the same time however many came before it: so does the fake, from its first one."""
    app.state.github.warm()
    httpx.get(f"{url}/_fake/warm-up", timeout=START_TIMEOUT, trust_env=False)


def _url(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


class FakeGitHub:
    """The fake GitHub on 127.0.0.1 (a free port unless `port` is given), in a background thread."""

    def __init__(self, *worlds: World | str | Path, webhook_url: str | None = None,
                 webhook_secret: str | None = None, port: int = 0, latency_ms: int = 0,
                 app_id: int | None = None, tokens: Sequence[str] = ()) -> None:
        self._sock, self._storage = _bind("127.0.0.1", port), _bind("127.0.0.1", 0)
        self.url = _url(self._sock)
        self.app = create_app(worlds, webhook_url, webhook_secret, latency_ms=latency_ms, app_id=app_id,
                              storage_url=_url(self._storage), tokens=tokens)
        self.state: GitHubState = self.app.state.github
        self._server = _server(self.app)
        self._thread: threading.Thread | None = None

    def start(self) -> "FakeGitHub":
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock, self._storage]},
                                        name="fake-github", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake GitHub server did not start")
            time.sleep(0.01)
        warm_up(self.app, self.url)
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(START_TIMEOUT)
            self._thread = None
        self._sock.close()
        self._storage.close()

    def __enter__(self) -> "FakeGitHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_webhook(self, url: str | None, secret: str | None = None) -> None:
        """Point deliveries at the app (e.g. once the app's own port is known)."""
        self.state.webhook.url, self.state.webhook.secret = url, secret

    def fault(self, **spec: Any) -> None:
        """Inject a fault; see `Fault` (route, status, times, delay_ms, drop, retry_after, reset_in,
        message, probability, seed, actor, secondary)."""
        self.state.faults.add(Fault.from_json(spec))

    def wait_deliveries(self, count: int, timeout: float = 10.0) -> list[Delivery]:
        """Wait until at least `count` webhooks were delivered (user writes deliver after responding)."""
        deadline = time.monotonic() + timeout
        while len(self.state.deliveries) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.state.deliveries)} of {count} webhook deliveries after {timeout}s")
            time.sleep(0.01)
        return list(self.state.deliveries)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="signoff-bot fake-github",
                                     description="Serve a fake GitHub REST API from world directories.")
    parser.add_argument("worlds", nargs="+", metavar="WORLD_DIR", help="world directories (see WORLD_FORMAT.md)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--webhook-url", help="where to deliver webhooks for writes made as a user")
    parser.add_argument("--webhook-secret", help="secret to sign webhook deliveries with")
    parser.add_argument("--latency-ms", type=int, default=0, help="latency added to every API request")
    parser.add_argument("--app-id", type=int, help="the GitHub App's id (default: from its JWTs, else 1)")
    parser.add_argument("--token", action="append", default=[], metavar="TOKEN[:PERM,...]",
                        help="accept TOKEN as a workflow's GITHUB_TOKEN (github-actions[bot]); PERMs it may write "
                             "(checks, statuses, issues, pull_requests, members to read teams; default: all but "
                             "members); repeatable")
    args = parser.parse_args(argv)
    sock, storage = _bind("127.0.0.1", args.port), _bind("127.0.0.1", 0)
    app = create_app(args.worlds, args.webhook_url, args.webhook_secret, latency_ms=args.latency_ms,
                     app_id=args.app_id, storage_url=_url(storage), tokens=args.token)
    app.state.github.warm()
    print(_url(sock), flush=True)
    _server(app).run(sockets=[sock, storage])
    return 0
