"""Webhook ingest: the bot's POST /webhook beside a bare FastAPI endpoint that only answers 202.

Each server is one uvicorn process (`python bench/ingest.py serve bot|bare
PORT DB`) started the way `signoff-bot serve` starts the bot: JSON logging at
INFO, uvicorn's defaults otherwise. The bot is `app.server.create_app` with
workers off and SQLite in a temporary directory, so every 202 is a verified
signature, a parsed and routed event, and a committed delivery row. The bare
app gets the same uvicorn and logging setup and nothing else: it is the limit.

The load generator drives both with the same closed loop: N keep-alive
connections, each posting a signed `issue_comment` delivery (the demo
world's sign-off comment; a unique X-GitHub-Delivery per request, so the bot
records every one) and sending the next as soon as the 202 arrives. After a
warm-up, the two servers take turns in short slices, T seconds each in all,
so that other load on the machine weighs on both alike. The generator speaks
HTTP/1.1 over asyncio streams rather than through httpx, which would cap the
rate below what the bare endpoint serves. Its own CPU use and the servers'
are reported, so a run shows which side was the bottleneck. With a closed
loop, latency ≈ N / throughput (Little's law): N is part of the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECRET = "bench-webhook-secret"
COMMENT_ID = 5001  # the demo world's sign-off comment
WARMUP_SECONDS = 1.0
SLICES = 5
START_TIMEOUT = 20.0


def bot_app(db_path: str):
    from app.server import create_app
    from app.settings import Settings
    from app.store import SqliteStore

    settings = Settings(app_id=1, private_key="-----BEGIN PRIVATE KEY-----", webhook_secret=SECRET,
                        db_path=db_path)
    return create_app(settings, SqliteStore(db_path), run_workers=False)


def bare_app():
    from fastapi import FastAPI, Response

    app = FastAPI()

    @app.post("/webhook")
    async def webhook() -> Response:
        return Response(status_code=202)

    return app


def serve(kind: str, port: int, db_path: str) -> None:
    """Run one server in the foreground, configured as `signoff-bot serve` configures the bot."""
    import uvicorn

    from app.observability import setup_logging

    setup_logging("INFO")
    app = bot_app(db_path) if kind == "bot" else bare_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, log_level="info", access_log=False)


def delivery_body() -> bytes:
    """A full, signed-as-GitHub-would `issue_comment` payload from the demo world."""
    from app.fake_github.payloads import Site
    from app.fake_github.state import GitHubState
    from app.fake_github.webhooks import stored_event
    from app.replay import DEMO_WORLD
    from app.world import World

    state = GitHubState.from_worlds([World.load(DEMO_WORLD)])
    repo = next(iter(state.repos.values()))
    event = stored_event(Site(state, "http://127.0.0.1:1"), repo, "issue_comment", "created", COMMENT_ID)
    return json.dumps(event.payload).encode()


def request_head(port: int, body: bytes) -> str:
    """The request up to X-GitHub-Delivery, which each request fills in; the body and signature are fixed."""
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return (f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nX-GitHub-Event: issue_comment\r\n"
            f"X-GitHub-Hook-ID: 1\r\nX-GitHub-Hook-Installation-Target-ID: 1\r\n"
            f"X-Hub-Signature-256: {signature}\r\nX-GitHub-Delivery: ")


@dataclass
class Load:
    """What the closed loop measured on one server, over all its slices."""

    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    client_cpu_pct: float
    server_cpu_pct: float

    def to_json(self) -> dict[str, float | int]:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass
class Tally:
    """Running totals of one server's slices."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    wall: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0

    def load(self) -> Load:
        done = sorted(self.latencies)
        return Load(rps=len(done) / self.wall, p50_ms=statistics.median(done) * 1000,
                    p99_ms=done[min(len(done) - 1, int(len(done) * 0.99))] * 1000, requests=len(done),
                    errors=self.errors, client_cpu_pct=100 * self.client_cpu / self.wall,
                    server_cpu_pct=100 * self.server_cpu / self.wall)


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> int:
    """Send one request and read its whole response; returns the status code."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = next((int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")), 0)
    await reader.readexactly(length)
    return status


async def _connection(port: int, head: str, body: bytes, until: float, latencies: list[float] | None) -> int:
    """One keep-alive connection posting deliveries until `until`; returns the number of non-202 answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    errors = 0
    try:
        while time.perf_counter() < until:
            request = f"{head}{uuid.uuid4()}\r\n\r\n".encode() + body
            start = time.perf_counter()
            status = await _exchange(reader, writer, request)
            if latencies is not None:
                latencies.append(time.perf_counter() - start)
            errors += status != 202
    finally:
        writer.close()
    return errors


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _slice(port: int, pid: int, body: bytes, connections: int, seconds: float, tally: Tally | None) -> None:
    """`connections` closed loops against one server for `seconds`, added to `tally` (None: a warm-up)."""
    head = request_head(port, body)
    latencies: list[float] | None = None if tally is None else tally.latencies
    cpu, server_cpu, start = time.process_time(), _cpu_seconds(pid), time.perf_counter()
    until = start + seconds
    errors = await asyncio.gather(*(_connection(port, head, body, until, latencies) for _ in range(connections)))
    if tally is not None:
        tally.wall += time.perf_counter() - start
        tally.client_cpu += time.process_time() - cpu
        tally.server_cpu += _cpu_seconds(pid) - server_cpu
        tally.errors += sum(errors)


async def drive(servers: dict[str, tuple[int, int]], body: bytes, connections: int, seconds: float) -> dict[str, Load]:
    """Warm every server up, then give them turns of seconds / SLICES until each had `seconds`."""
    tallies = {name: Tally() for name in servers}
    for port, pid in servers.values():
        await _slice(port, pid, body, connections, WARMUP_SECONDS, None)
    for _ in range(SLICES):
        for name, (port, pid) in servers.items():
            await _slice(port, pid, body, connections, seconds / SLICES, tallies[name])
    return {name: tally.load() for name, tally in tallies.items()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the {port} server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server listening on {port} after {START_TIMEOUT}s")


def start(kind: str, workdir: Path, stack: contextlib.ExitStack) -> tuple[int, int]:
    """(port, pid) of a new server process, stopped when `stack` closes; its JSON log goes to a file."""
    port = free_port()
    log = stack.enter_context(open(workdir / f"{kind}.log", "wb"))
    proc = subprocess.Popen([sys.executable, __file__, "serve", kind, str(port), str(workdir / f"{kind}.db")],
                            stdout=log, stderr=log)
    stack.callback(proc.wait, timeout=10)
    stack.callback(proc.terminate)
    wait_listening(port, proc)
    return port, proc.pid


def compare(connections: int, seconds: float) -> dict[str, Load]:
    """The bare endpoint and the bot under the same load, taking turns."""
    body = delivery_body()
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as workdir, contextlib.ExitStack() as stack:
        servers = {kind: start(kind, Path(workdir), stack) for kind in ("bare", "bot")}
        return asyncio.run(drive(servers, body, connections, seconds))


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
