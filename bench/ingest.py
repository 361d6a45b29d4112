"""Webhook ingest: the bot's POST /webhook beside a bare FastAPI endpoint that only answers 202, idle and busy.

    python bench/ingest.py [--json] [--connections 8] [--seconds 5] [--postgres] [--no-busy]

Each server is one uvicorn process (`python bench/ingest.py serve KIND PORT
SPEC`) started the way `signoff-bot serve` starts the bot: JSON logging at
INFO, uvicorn's defaults otherwise. The bare app gets the same uvicorn and
logging setup and nothing else: it is the limit. Two bots:
- `bot`: `app.web.server.create_app` with workers off, so every 202 is a verified
  signature, a parsed and routed event, and a delivery row with its job
  committed (SQLite in a temporary directory, or the --db PostgreSQL);
- `busy`: the same App with 21 workers, against a fake GitHub (a process of its
  own, 100 ms per request) serving the load world: the goal world's PR
  (pr2554, else the demo world's) in 20 copies of distinct numbers. A thread
  keeps a verification of each copy queued (coalescing keeps one queued per
  PR, and a PR runs one job at a time), so 20 verifications run in the App's
  process all along while its webhook endpoint is measured.

The load generator drives them with the same closed loop: N keep-alive
connections, each posting a signed `issue_comment` delivery (a user's comment
on the load world's PR; a unique X-GitHub-Delivery per request, so the bot
records every one) and sending the next as soon as the 202 arrives. After a
warm-up, `bare` and `bot` take turns in short slices, T seconds each in all,
so that other load on the machine weighs on both alike; then, once its 20
verifications run, `busy` and `bare` take turns the same way (the
verifications go on during the bare endpoint's turns, so both are measured on
the machine as the busy App loads it). The generator speaks HTTP/1.1 over asyncio streams rather than through
httpx, which would cap the rate below what the bare endpoint serves. Its own
CPU use and the servers' are reported, so a run shows which side was the
bottleneck; a server's CPU is its process's and its descendants' (the busy
App runs its jobs and their checks in processes of their own, app/jobs/process.py
and app/judge.py). With a closed loop, latency ≈ N / throughput (Little's law): N is part of the result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import hashlib
import hmac
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECRET = "bench-webhook-secret"
GOAL_WORLD = ROOT.parent / "shared" / "fixtures" / "worlds" / "pr2554-dsv4-b200-sglang-mtp"
WARMUP_SECONDS = 1.0
SLICES = 10
START_TIMEOUT = 60.0
VERIFICATIONS = 20  # run at once in the busy App
LATENCY_MS = 100  # the busy App's fake GitHub, per request
FEED_SECONDS = 0.25  # how often the busy App's feeder re-queues each copy's verification
SETTLE_TIMEOUT = 120.0  # for the busy App's verifications to start, or to stop
ID_STEP = 10**9  # between the ids of a PR's copies


def load_world() -> Path:
    """The world whose PR the busy App verifies: the goal world when ../shared holds it, else the demo."""
    from app.offline.replay import DEMO_WORLD

    return GOAL_WORLD if (GOAL_WORLD / "world.yaml").exists() else DEMO_WORLD


def crowd_world(source: Path, copies: int, dest: Path) -> tuple[str, int, list[int]]:
    """`source` copied to `dest` with its PR repeated `copies` times in all, each copy a PR of its own as
    GitHub would hold it: a head commit of its own (same tree), with its own branch, check runs, sweep run
    and artifacts, comments and reviews (numbers + k·100000, ids + k·10⁹, run ids in comments rewritten).
    Returns (repository, installation id, PR numbers)."""
    shutil.copytree(source, dest)
    data = yaml.safe_load((dest / "world.yaml").read_text(encoding="utf-8"))
    repo = next(r for r in data["repos"] if r.get("installation_id") is not None and r.get("pulls"))
    pull = repo["pulls"][0]
    head = pull["head"]["sha"]
    for k in range(1, copies):
        step = ID_STEP * k
        sha, branch = hashlib.sha1(f"{head}+{k}".encode()).hexdigest(), f"{pull['head']['ref']}-copy{k}"
        repo["commits"].append({**next(c for c in repo["commits"] if c["sha"] == head), "sha": sha})
        repo["branches"][branch] = sha
        twin = copy.deepcopy(pull)
        twin.update(number=pull["number"] + 100_000 * k, head={"ref": branch, "sha": sha},
                    commits=[sha if c == head else c for c in pull["commits"]])
        runs: dict[int, int] = {}
        for run in [r for r in repo.get("workflow_runs") or [] if r["head_sha"] == head]:
            runs[run["id"]] = run["id"] + step
            artifacts = [{**a, "id": a["id"] + step} for a in run.get("artifacts") or []]
            for old, new in zip(run.get("artifacts") or [], artifacts):
                folder, archive = dest / "artifacts" / str(old["id"]), dest / "artifacts" / f"{old['id']}.zip"
                if folder.is_dir():
                    shutil.copytree(folder, dest / "artifacts" / str(new["id"]))
                if archive.is_file():
                    shutil.copy(archive, dest / "artifacts" / f"{new['id']}.zip")
            repo["workflow_runs"].append({**copy.deepcopy(run), "id": runs[run["id"]], "head_sha": sha,
                                          "head_branch": branch, "pull_requests": [twin["number"]],
                                          "artifacts": artifacts})
        repo["check_runs"] += [{**c, "id": c["id"] + step, "head_sha": sha, "run_id": runs.get(c.get("run_id"),
                                c.get("run_id"))} for c in repo["check_runs"] if c["head_sha"] == head]
        for kind in ("issue_comments", "reviews", "review_comments"):
            for item in twin.get(kind) or []:
                item["id"] += step
                if item.get("commit_id") == head:
                    item["commit_id"] = sha
                for old_id, new_id in runs.items():
                    item["body"] = str(item.get("body", "")).replace(str(old_id), str(new_id))
        repo["pulls"].append(twin)
    (dest / "world.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return repo["full_name"], repo["installation_id"], [p["number"] for p in repo["pulls"]]


def bot_app(spec: dict[str, Any]):
    """The App; with `spec["load"]`, its workers run and a feeder keeps the load's verifications queued,
    switched on and off through POST /_bench/load (and GET tells how many jobs run)."""
    from app.offline.replay import REPLAY_APP_ID, throwaway_key
    from app.settings import Settings
    from app.store.choose import open_store
    from app.store.sql import JobSpec
    from app.web.server import create_app

    load = spec.get("load")
    settings = Settings(app_id=REPLAY_APP_ID, private_key=throwaway_key(), webhook_secret=SECRET,
                        db_path=spec["db"], github_url=load["github_url"] if load else Settings.github_url,
                        workers=VERIFICATIONS + 1, reconcile_seconds=3600)
    app = create_app(settings, run_workers=load is not None)  # its own store, as `signoff-bot serve` has
    if load is None:
        return app
    store = open_store(spec["db"])  # the feeder's

    from starlette.requests import Request
    from starlette.responses import JSONResponse

    feeding = threading.Event()
    jobs = [JobSpec("verify", load["repo"], pr, load["installation"], {"reason": "bench load"}) for pr in load["prs"]]

    def feed() -> None:
        while True:
            feeding.wait()
            store.enqueue(jobs)
            time.sleep(FEED_SECONDS)

    threading.Thread(target=feed, name="bench-feeder", daemon=True).start()

    async def control(request: Request) -> JSONResponse:
        if request.method == "POST":
            (feeding.set if (await request.json())["on"] else feeding.clear)()
        running = await asyncio.to_thread(store.jobs, "running")
        queued = await asyncio.to_thread(store.jobs, "queued")
        done = await asyncio.to_thread(store.jobs, "done")
        return JSONResponse({"running": sum(j["kind"] == "verify" for j in running),
                             "queued": len(queued), "verified": sum(j["kind"] == "verify" for j in done)})

    app.add_route("/_bench/load", control, methods=["GET", "POST"])
    return app


def bare_app():
    from fastapi import FastAPI, Response

    app = FastAPI()

    @app.post("/webhook")
    async def webhook() -> Response:
        return Response(status_code=202)

    return app


def serve(kind: str, port: int, spec: dict[str, Any]) -> None:
    """Run one server in the foreground, configured as `signoff-bot serve` configures the bot."""
    import uvicorn

    from app.observability import setup_logging

    setup_logging("INFO")
    app = bare_app() if kind == "bare" else bot_app(spec)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, log_level="info", access_log=False)


def delivery_body(world_dir: Path) -> bytes:
    """A full `issue_comment` payload as GitHub sends it: the first user comment on the world's PR."""
    from app.fake_github.payloads import Site
    from app.fake_github.state import GitHubState
    from app.fake_github.webhooks import stored_event
    from app.offline.world import World

    world = World.load(world_dir)
    repo = next(r for r in world.repos.values() if r.installation_id is not None and r.pulls)
    comment = next(c for c in next(iter(repo.pulls.values()))["issue_comments"]
                   if not str(c["user"]).endswith("[bot]"))
    state = GitHubState.from_worlds([world])
    event = stored_event(Site(state, "http://127.0.0.1:1"), state.repos[repo.full_name.lower()], "issue_comment", "created",
                         comment["id"])
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
    load_average: float

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
    load_averages: list[float] = field(default_factory=list)

    def load(self) -> Load:
        done = sorted(self.latencies)
        return Load(rps=len(done) / self.wall, p50_ms=statistics.median(done) * 1000,
                    p99_ms=done[min(len(done) - 1, int(len(done) * 0.99))] * 1000, requests=len(done),
                    errors=self.errors, client_cpu_pct=100 * self.client_cpu / self.wall,
                    server_cpu_pct=100 * self.server_cpu / self.wall,
                    load_average=statistics.mean(self.load_averages))


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
    """User + system CPU time of a process, all its threads and all its descendants (the bot's checks
    processes are the bot's), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                    for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):  # it has just exited
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(map(_cpu_seconds, children))


@dataclass(frozen=True)
class Server:
    port: int
    pid: int


async def _slice(server: Server, body: bytes, connections: int, seconds: float, tally: Tally | None) -> None:
    """`connections` closed loops against one server for `seconds`, added to `tally` (None: a warm-up)."""
    head = request_head(server.port, body)
    latencies: list[float] | None = None if tally is None else tally.latencies
    cpu, server_cpu, start = time.process_time(), _cpu_seconds(server.pid), time.perf_counter()
    until = start + seconds
    errors = await asyncio.gather(*(_connection(server.port, head, body, until, latencies)
                                    for _ in range(connections)))
    if tally is not None:
        tally.wall += time.perf_counter() - start
        tally.client_cpu += time.process_time() - cpu
        tally.server_cpu += _cpu_seconds(server.pid) - server_cpu
        tally.errors += sum(errors)
        tally.load_averages.append(os.getloadavg()[0])


async def drive(servers: dict[str, Server], body: bytes, connections: int, seconds: float) -> dict[str, Load]:
    """Warm every server up, then give them turns of seconds / SLICES until each had `seconds`."""
    tallies = {name: Tally() for name in servers}
    for server in servers.values():
        await _slice(server, body, connections, WARMUP_SECONDS, None)
    for _ in range(SLICES):
        for name, server in servers.items():
            await _slice(server, body, connections, seconds / SLICES, tallies[name])
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


def _stopped_with(stack: contextlib.ExitStack, proc: subprocess.Popen) -> None:
    stack.callback(proc.wait, timeout=10)
    stack.callback(proc.terminate)


def start(kind: str, spec: dict[str, Any], workdir: Path, stack: contextlib.ExitStack) -> Server:
    """A new server process, stopped when `stack` closes; its JSON log goes to a file."""
    port = free_port()
    log = stack.enter_context(open(workdir / f"{kind}.log", "wb"))
    proc = subprocess.Popen([sys.executable, __file__, "serve", kind, str(port), json.dumps(spec)],
                            stdout=log, stderr=log)
    _stopped_with(stack, proc)
    wait_listening(port, proc)
    return Server(port, proc.pid)


def start_fake(world: Path, workdir: Path, stack: contextlib.ExitStack) -> str:
    """The busy App's fake GitHub, a process of its own (its CPU is not the App's); its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "fake-github", str(world), "--latency-ms",
                             str(LATENCY_MS)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            stderr=stack.enter_context(open(workdir / "fake.log", "wb")))
    _stopped_with(stack, proc)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        raise RuntimeError("the fake GitHub did not start")
    return url


def load_state(server: Server, on: bool | None = None) -> dict[str, int]:
    """The busy App's verification jobs ({"running", "queued", "verified"}); `on` switches its feeder."""
    import httpx

    url = f"http://127.0.0.1:{server.port}/_bench/load"
    answer = httpx.post(url, json={"on": on}, timeout=30) if on is not None else httpx.get(url, timeout=30)
    answer.raise_for_status()
    return answer.json()


def settle(server: Server, running: int, verified: int = 0) -> dict[str, int]:
    """Wait until the busy App runs `running` verifications (0: and has none queued, and has finished
    `verified`)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        state = load_state(server)
        idle = state["running"] == state["queued"] == 0 and state["verified"] >= verified
        if (state["running"] >= running) if running else idle:
            return state
        if time.monotonic() > deadline:
            raise RuntimeError(f"the busy App did not reach {running} running verifications: {state}")
        time.sleep(0.2)


@dataclass
class Busy:
    """The busy App's closed loop; the verifications it finished and the GitHub requests it made meanwhile."""

    load: Load
    verifications: int
    github_requests_per_s: float
    running: int  # verifications running at the end of the window

    def to_json(self) -> dict[str, Any]:
        return {**self.load.to_json(), "verifications_finished": self.verifications,
                "github_requests_per_s": round(self.github_requests_per_s, 1), "running_verifications": self.running}


def github_requests(fake_url: str) -> int:
    import httpx

    return httpx.get(f"{fake_url}/_fake/stats", timeout=30).json()["requests"]


async def drive_busy(busy: Server, bare: Server, fake_url: str, body: bytes, connections: int,
                     seconds: float) -> dict[str, Load | Busy]:
    """Once the busy App runs its 20 verifications, it and the bare endpoint take turns as in `drive` (the
    verifications go on during the bare endpoint's turns: its figures are the floor on the machine as the
    busy App leaves it)."""
    await asyncio.to_thread(load_state, busy, True)
    before = await asyncio.to_thread(settle, busy, VERIFICATIONS)
    requests, start = await asyncio.to_thread(github_requests, fake_url), time.perf_counter()
    runs = await drive({"busy": busy, "bare": bare}, body, connections, seconds)
    wall = time.perf_counter() - start
    served = await asyncio.to_thread(github_requests, fake_url) - requests
    after = await asyncio.to_thread(load_state, busy, False)
    return {"busy": Busy(runs["busy"], after["verified"] - before["verified"], served / wall, after["running"]),
            "bare_beside_busy": runs["bare"]}


def compare(connections: int, seconds: float, new_db: Callable[[], str] | None = None,
            busy: bool = True) -> dict[str, Load | Busy]:
    """The bare endpoint and the bot under the same load, taking turns; then, with `busy`, the bot with 20
    verifications running and the bare endpoint, taking turns. `new_db` gives each bot an empty PostgreSQL
    database (its URL); without it they record into SQLite files in a temporary directory."""
    source = load_world()
    body = delivery_body(source)
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as tmp, contextlib.ExitStack() as stack:
        workdir = Path(tmp)
        servers = {"bare": start("bare", {}, workdir, stack),
                   "bot": start("bot", {"db": new_db() if new_db else str(workdir / "bot.db")}, workdir, stack)}
        result: dict[str, Load | Busy] = dict(asyncio.run(drive(servers, body, connections, seconds)))
        if busy:
            repo, installation, prs = crowd_world(source, VERIFICATIONS, workdir / "world")
            url = start_fake(workdir / "world", workdir, stack)
            spec = {"db": new_db() if new_db else str(workdir / "busy.db"),
                    "load": {"github_url": url, "repo": repo, "installation": installation, "prs": prs}}
            server = start("busy", spec, workdir, stack)
            # The start-up reconcile pass verifies every copy once: wait it out. The App is warm then, as
            # one that has served a while is (githubkit imports its models and pydantic builds their
            # schemas on first use: seconds of CPU, holding the GIL, that a long-running App never pays).
            settle(server, 0, verified=len(prs))
            result.update(asyncio.run(drive_busy(server, servers["bare"], url, body, connections, seconds)))
        return result


def summary(runs: dict[str, Load | Busy], connections: int, seconds: float, database: str) -> dict[str, Any]:
    """The figures bench/run.py reports and checks, and each run in full."""
    bot, bare = runs["bot"], runs["bare"]
    out: dict[str, Any] = {"bot_rps": round(bot.rps, 1), "bare_rps": round(bare.rps, 1),
                           "ratio": round(bot.rps / bare.rps, 3), "p99_ms": round(bot.p99_ms, 2),
                           "connections": connections, "seconds": seconds, "database": database,
                           "verifications": VERIFICATIONS, "latency_ms": LATENCY_MS,
                           "bot": bot.to_json(), "bare": bare.to_json()}
    busy, beside = runs.get("busy"), runs.get("bare_beside_busy")
    if isinstance(busy, Busy) and isinstance(beside, Load):
        out.update(busy_p99_ms=round(busy.load.p99_ms, 2), busy_ratio=round(busy.load.rps / beside.rps, 3),
                   busy=busy.to_json(), bare_beside_busy=beside.to_json())
    return out


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            for row in rows]


def table(r: dict[str, Any]) -> list[str]:
    """`summary`'s figures as a table with its heading and the busy App's load."""
    heading = (f"Webhook ingest ({r['database']}): {r['connections']} keep-alive connections in a closed loop, "
               f"{r['seconds']:g} s per server in {SLICES} alternating slices, one uvicorn process each")
    header = ("endpoint", "deliveries/s", "p50 ms", "p99 ms", "errors", "server CPU", "load gen CPU", "load avg")
    rows = [header, tuple("-" * len(h) for h in header)]
    named = [("bare FastAPI (the limit)", "bare"), ("signoff-bot, idle", "bot"),
             ("bare FastAPI, beside the busy bot", "bare_beside_busy"),
             (f"signoff-bot, {r['verifications']} verifications running", "busy")]
    for name, key in named:
        if key in r:
            x = r[key]
            rows.append((name, f"{x['rps']:.0f}", f"{x['p50_ms']:.2f}", f"{x['p99_ms']:.2f}", str(x["errors"]),
                         f"{x['server_cpu_pct']:.0f}%", f"{x['client_cpu_pct']:.0f}%", f"{x['load_average']:.1f}"))
    lines = [heading, "", *_aligned(rows), "", f"ratio (signoff-bot idle / bare): {r['ratio']:.2f}"]
    if "busy" in r:
        b = r["busy"]
        lines.append(f"ratio (signoff-bot busy / bare beside it): {r['busy_ratio']:.2f}")
        lines.append(f"busy bot: {b['running_verifications']} verifications running against a fake GitHub at "
                     f"{r['latency_ms']} ms a request, {b['github_requests_per_s']:.0f} GitHub requests/s, "
                     f"{b['verifications_finished']} verifications finished in the window")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Webhook ingest beside a bare endpoint (see bench/ingest.py).")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0, help="per server, in slices")
    parser.add_argument("--postgres", action="store_true",
                        help="record into a throwaway PostgreSQL server (tests/databases.py) instead of SQLite")
    parser.add_argument("--no-busy", action="store_true", help="skip the App running 20 verifications")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        new_db = None
        if args.postgres:
            from tests.databases import PostgresServer

            server = PostgresServer().start()
            stack.callback(server.stop)
            new_db = server.new_database
        runs = compare(args.connections, args.seconds, new_db, busy=not args.no_busy)
    result = summary(runs, args.connections, args.seconds, "postgresql" if args.postgres else "sqlite")
    print(json.dumps(result, indent=2) if args.json else "\n".join(table(result)))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
    else:
        sys.exit(main())
