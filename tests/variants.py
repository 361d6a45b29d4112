"""Variant worlds for the security tests: the demo world made to PASS, then edited one hostile way.

`green_world(tmp)` copies the bundled demo world and makes its PR pass every
check (the head carries the recipe fix of tests/worlds/e2e, and a maintainer
comments `/reuse-sweep-run 9001`), so a test that turns one thing hostile
sees whether that one thing keeps the verdict from PASS.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from app.offline.replay import DEMO_WORLD, replay
from app.offline.snapshot import snapshot_from_world
from app.offline.world import World
from checks.engine import evaluate
from checks.result import Verdict

E2E_WORLD = Path(__file__).resolve().parent / "worlds" / "e2e"
FIXED_HEAD = E2E_WORLD / "trees" / "fixed"
REPO = "demo-org/InferenceX-demo"
PR = 42
BASE_SHA, HEAD_SHA = "a1" * 20, "b2" * 20
SIGNOFF_ID = 5001
REUSE_ID = 5002
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-gb300-1p1d-tp8-tp8-mtp.yaml"
MASTER = "configs/nvidia-master.yaml"
EVAL_ARTIFACT = 71


def edit_world(root: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Apply `change` to the parsed world.yaml and write it back."""
    path = root / "world.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


def repo_of(data: dict[str, Any], name: str = REPO) -> dict[str, Any]:
    return next(r for r in data["repos"] if r["full_name"] == name)


def pull_of(data: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in repo_of(data)["pulls"] if p["number"] == PR)


def comment_of(data: dict[str, Any], cid: int) -> dict[str, Any]:
    return next(c for c in pull_of(data)["issue_comments"] if c["id"] == cid)


def e2e_variant(tmp: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the e2e world, at `tmp/world`, with `change` applied to its parsed world.yaml."""
    shutil.copytree(E2E_WORLD, tmp / "world")
    return edit_world(tmp / "world", change)


def green_world(tmp: Path) -> Path:
    """The demo world, copied to `tmp/world`, whose PR passes every check."""
    root = tmp / "world"
    shutil.copytree(DEMO_WORLD, root)
    shutil.rmtree(root / "trees" / "head")
    shutil.copytree(FIXED_HEAD, root / "trees" / "head")

    def reuse(data: dict[str, Any]) -> None:
        pull_of(data)["issue_comments"].append({
            "id": REUSE_ID, "user": "core-maintainer", "author_association": "MEMBER",
            "created_at": "2026-09-02T11:00:00Z", "body": "/reuse-sweep-run 9001"})

    return edit_world(root, reuse)


def head(root: Path) -> Path:
    return root / "trees" / "head"


def base(root: Path) -> Path:
    return root / "trees" / "base"


def verdict(root: Path) -> Verdict:
    """The engine's verdict on the world's PR, from the snapshot built straight from its files."""
    return evaluate(snapshot_from_world(World.load(root)))


def replayed(root: Path) -> Verdict:
    """The verdict through the whole App pipeline: gather over HTTP from the fake GitHub, check, publish."""
    return replay(root).outcome.verdict


def failing(v: Verdict) -> dict[int, str]:
    """Number -> reason of every failing row (checks 0-12, recipe lint, complete evidence)."""
    return {r.number: r.reason for r in v.rows if not r.passed}


def zipped(entries: list[tuple[str | zipfile.ZipInfo, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip built in memory from (name or ZipInfo, bytes) entries, byte for byte the same every run."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in entries:
            info = name if isinstance(name, zipfile.ZipInfo) else zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            archive.writestr(info, data, method)
    return buffer.getvalue()
