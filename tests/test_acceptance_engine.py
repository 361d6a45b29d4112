"""Acceptance: the engine's verdict on each world agrees with the world's expected.yaml.

Runs on the bundled demo world always, and on every shared real-PR world when
../shared/fixtures/worlds exists (it always does in CI). The snapshot is built
straight from the world's files (app.offline); tests/test_replay.py checks the
same expectations through the fake GitHub over HTTP.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.offline import snapshot_from_world
from app.replay import DEMO_WORLD
from app.world import World
from checks.engine import evaluate

from .conftest import world_params


def expectations(world_dir: Path) -> dict:
    path = world_dir / "expected.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


def assert_agrees(world_dir: Path, verdict) -> None:
    expected = expectations(world_dir)
    got = {str(r.number): r for r in verdict.results}
    problems = []
    if "verdict" in expected and verdict.label != expected["verdict"]:
        problems.append(f"verdict {verdict.label}, expected {expected['verdict']}")
    for number, status in (expected.get("checks") or {}).items():
        result = got[str(number)]
        if result.status.value != status:
            problems.append(f"check {number} {result.status.value}, expected {status}: {result.reason}")
    found = {(f.path, f.line, f.rule) for f in verdict.findings}
    for a in expected.get("annotations") or []:
        if (a["path"], a["line"], a["rule"]) not in found:
            problems.append(f"missing finding {a['rule']} at {a['path']}:{a['line']}")
    assert not problems, "\n".join(problems)


def test_demo_world():
    assert_agrees(DEMO_WORLD, evaluate(snapshot_from_world(World.load(DEMO_WORLD))))


@pytest.mark.parametrize("world_dir", world_params())
def test_shared_world(world_dir):
    assert_agrees(world_dir, evaluate(snapshot_from_world(World.load(world_dir))))


@pytest.mark.parametrize("world_dir", world_params())
def test_same_snapshot_same_verdict_byte_for_byte(world_dir):
    from app import render

    snap = snapshot_from_world(World.load(world_dir))
    first, second = evaluate(snap), evaluate(snap)
    assert first == second
    assert render.comment(first) == render.comment(second)


def test_a_truncated_snapshot_cannot_pass():
    from dataclasses import replace

    snap = snapshot_from_world(World.load(DEMO_WORLD))
    verdict = evaluate(replace(snap, truncated="GitHub lists at most 3000 files of a pull request; this one has more"))
    assert not verdict.passed
    assert [r.name for r in verdict.extra if r.status.value == "FAIL"][-1] == "Complete evidence"
