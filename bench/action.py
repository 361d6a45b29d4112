"""What the Action costs: one `signoff-bot verify --event … --publish` in a cold process, as a workflow runs it.

    python bench/action.py [--latency-ms 100] [--world NAME] [--json]

For the demo world and every shared world (../shared/fixtures/worlds, when present), the fake GitHub
serves the world from this process with a fixed latency per request (as bench/run.py does) and takes a
workflow's token; the event is the PR's sign-off comment (or review, or review comment) as a workflow
receives it (no installation). A new Python process runs the command: the wall time is from starting it
to its exit, the verdict printed (imports, the App's jobs, gather, checks and publish, all cold); the
requests are the fake's count, the depth the longest chain of them each sent after the previous one's
answer (bench/verification.py), so that wall time ≈ depth × latency + the process's CPU time (printed,
with the load average: on a machine busy with other work the process also waits for a CPU). Goals: at most 45 GitHub requests (a workflow token may make 1,000 an hour
per repository) and at most 2 s at 100 ms a request.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from verification import Span, critical_path  # noqa: E402

from app.fake_github import FakeGitHub  # noqa: E402
from app.offline.replay import DEMO_WORLD  # noqa: E402
from app.offline.world import World  # noqa: E402
from checks.policy import Policy  # noqa: E402

SHARED_WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
TOKEN = "bench-workflow-token"
STORAGE = "/_fake/download/"  # the fake's artifact storage host (app/fake_github/server.py StorageHost)
MAX_REQUESTS = 45
MAX_WALL_S = 2.0
# (world.yaml's list, the event, the payload's key for it, the action)
KINDS = (("issue_comments", "issue_comment", "comment", "created"),
         ("reviews", "pull_request_review", "review", "submitted"),
         ("review_comments", "pull_request_review_comment", "comment", "created"))


def worlds() -> list[Path]:
    shared = sorted(p for p in SHARED_WORLDS.iterdir() if (p / "world.yaml").exists()) if SHARED_WORLDS.is_dir() else []
    return [DEMO_WORLD, *shared]


def signoff_event(world: World) -> tuple[str, dict[str, Any], str]:
    """(event name, payload, repository) of the world's PR's first sign-off, as a workflow receives it."""
    repo, pr = world.pull_repo()
    phrase = Policy().signoff_phrase
    for key, event, item, action in KINDS:
        for c in pr.get(key) or []:
            if str(c.get("body") or "").lstrip().startswith(phrase):
                payload: dict[str, Any] = {
                    "action": action, item: {"id": c["id"], "user": {"login": c["user"], "type": "User"}},
                    "repository": {"full_name": repo.full_name}, "sender": {"login": c["user"]}}
                if event == "issue_comment":
                    payload["issue"] = {"number": pr["number"], "pull_request": {"url": ""}}
                else:
                    payload["pull_request"] = {"number": pr["number"]}
                return event, payload, repo.full_name
    raise ValueError(f"{world.root.name}: the PR has no sign-off")


def measure(world_dir: Path, latency_ms: int) -> dict[str, Any]:
    event, payload, repository = signoff_event(World.load(world_dir))
    with tempfile.TemporaryDirectory() as tmp, FakeGitHub(world_dir, latency_ms=latency_ms, tokens=[TOKEN]) as fake:
        path = Path(tmp) / "event.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        # as a runner runs it: bytecode compiled at install (pip does), never compiled again in the process
        env = {**{k: v for k, v in os.environ.items()
                  if not k.startswith(("GITHUB_", "GH_", "SIGNOFF_BOT_")) and k != "PYTHONDONTWRITEBYTECODE"},
               "GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_NAME": event, "GITHUB_REPOSITORY": repository,
               "SIGNOFF_BOT_GITHUB_URL": fake.url}
        fake.state.ledger.reset_stats()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "app.cli", "verify", "--event", str(path), "--publish",
                               "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
        # GitHub's API: an artifact's download is redirected to blob storage, which is not the API
        api = [c for c in fake.state.ledger.calls if not c.path.startswith(STORAGE)]
        requests = len(api)
        depth = len(critical_path([Span(c.started, c.finished, f"{c.method} {c.path}") for c in api]))
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"{world_dir.name}: verify exited {done.returncode}: {done.stderr.strip()}")
    verdict = json.loads(done.stdout.splitlines()[0])["verdict"]
    return {"world": world_dir.name, "event": event, "verdict": verdict, "requests": requests, "depth": depth,
            "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "exit": done.returncode}


def compiled() -> None:
    """Compile signoff-bot's modules as `pip install` does, so the measured process reads bytecode."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "checks", "templates"], cwd=ROOT, check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=int, default=100, help="latency the fake GitHub adds to every request")
    parser.add_argument("--world", action="append", default=[], metavar="NAME",
                        help="measure only worlds whose name contains NAME (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    chosen = [w for w in worlds() if not args.world or any(part in w.name for part in args.world)]
    compiled()
    results = [measure(w, args.latency_ms) for w in chosen]
    goals = {"requests": max(r["requests"] for r in results) <= MAX_REQUESTS,
             "wall_s": max(r["wall_s"] for r in results) <= MAX_WALL_S}
    if args.json:
        print(json.dumps({"latency_ms": args.latency_ms, "worlds": results, "goals_met": goals}, indent=2))
        return 0
    print(f"signoff-bot verify --event … --publish, a cold process, fake GitHub latency {args.latency_ms} ms a request")
    width = max(len(r["world"]) for r in results)
    print(f"{'world'.ljust(width)}  {'event':<28} {'verdict':<9} requests  depth  wall s  cpu s")
    for r in results:
        print(f"{r['world'].ljust(width)}  {r['event']:<28} {r['verdict']:<9} {r['requests']:>8}  {r['depth']:>5}  "
              f"{r['wall_s']:>6.2f}  {r['cpu_s']:>5.2f}")
    print(f"(wall s: from starting the process to its exit; cpu s: the process's CPU time. On a machine busy with "
          f"other work, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs now, wall exceeds "
          f"depth × latency + cpu s by the time the process waited for a CPU.)")
    print(f"Goals: at most {MAX_REQUESTS} requests: {'✓' if goals['requests'] else '✗'} "
          f"({max(r['requests'] for r in results)} at most); at most {MAX_WALL_S:g} s: "
          f"{'✓' if goals['wall_s'] else '✗'} ({max(r['wall_s'] for r in results):.2f} s at most)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
