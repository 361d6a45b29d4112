"""Webhook ingest: the bot's POST /webhook beside a bare FastAPI endpoint that only answers 202.

Each server is one uvicorn process (`python bench/ingest.py serve bot|bare
PORT DB`) started the way `signoff-bot serve` starts the bot: JSON logging at
INFO, uvicorn's defaults otherwise. The bot is `app.server.create_app` with
workers off and SQLite in a temporary directory, so every 202 is a verified
signature, a parsed and routed event, and a committed delivery row. The bare
app gets the same uvicorn and logging setup and nothing else: it is the limit.

The load generator drives both in turn with the same closed loop: N
keep-alive connections, each posting a signed `issue_comment` delivery (the
demo world's sign-off comment; a unique X-GitHub-Delivery per request, so
the bot records every one) and sending the next as soon as the 202 arrives,
for T seconds after a short warm-up. It speaks HTTP/1.1 over asyncio streams
rather than through httpx, which would cap the rate below what the bare
endpoint serves. Its own CPU use and the server's are reported, so a run
shows which side was the bottleneck. With a closed loop, latency ≈ N /
throughput (Little's law): N is part of the result.
"""

from __future__ import annotations

import asyncio
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECRET = "bench-webhook-secret"
COMMENT_ID = 5001  # the demo world's sign-off comment
WARMUP_SECONDS = 1.0
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
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, log_level="info")


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
    """What one closed-loop run measured."""

    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    client_cpu_pct: float
    server_cpu_pct: float

    def to_json(self) -> dict[str, float | int]:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in self.__dict__.items()}


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


async def drive(port: int, server_pid: int, body: bytes, connections: int, seconds: float) -> Load:
    """Warm up, then run `connections` closed loops for `seconds`."""
    head = request_head(port, body)
    warm_until = time.perf_counter() + WARMUP_SECONDS
    await asyncio.gather(*(_connection(port, head, body, warm_until, None) for _ in range(connections)))
    latencies: list[float] = []
    cpu, server_cpu, start = time.process_time(), _cpu_seconds(server_pid), time.perf_counter()
    until = start + seconds
    errors = await asyncio.gather(*(_connection(port, head, body, until, latencies) for _ in range(connections)))
    wall = time.perf_counter() - start
    cpu, server_cpu = time.process_time() - cpu, _cpu_seconds(server_pid) - server_cpu
    latencies.sort()
    return Load(rps=len(latencies) / wall, p50_ms=statistics.median(latencies) * 1000,
                p99_ms=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
                requests=len(latencies), errors=sum(errors), client_cpu_pct=100 * cpu / wall,
                server_cpu_pct=100 * server_cpu / wall)


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


def measure(kind: str, body: bytes, connections: int, seconds: float, workdir: str) -> Load:
    """Start one server process, drive it, stop it."""
    port = free_port()
    log = open(Path(workdir) / f"{kind}.log", "wb")  # the servers' JSON logs, written as in production
    proc = subprocess.Popen([sys.executable, __file__, "serve", kind, str(port), str(Path(workdir) / f"{kind}.db")],
                            stdout=log, stderr=log)
    try:
        wait_listening(port, proc)
        return asyncio.run(drive(port, proc.pid, body, connections, seconds))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def compare(connections: int, seconds: float) -> dict[str, Load]:
    """The bare endpoint and the bot, one after the other, with the same load."""
    body = delivery_body()
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as workdir:
        return {kind: measure(kind, body, connections, seconds, workdir) for kind in ("bare", "bot")}


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
