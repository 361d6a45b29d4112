"""Recipe lint over the shared real-PR worlds: expected annotations, and no error on a world that passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.offline.snapshot import judge_world
from app.offline.world import World
from checks.registry import LINT
from checks.result import Severity
from tests.conftest import world_params


def lint_world(world: Path):
    done = judge_world(World.load(world), rules=LINT)
    return done.ctx, list(done.verdict.lint_findings)


def expected(world: Path) -> dict:
    return yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}


@pytest.mark.parametrize("world", world_params())
def test_every_expected_annotation_is_reported(world):
    _ctx, findings = lint_world(world)
    got = {(f.path, f.line, f.rule) for f in findings}
    lint_rules = {rule.id for rule in LINT}
    for a in expected(world).get("annotations") or []:
        if a["rule"] in lint_rules:
            assert (a["path"], a["line"], a["rule"]) in got


@pytest.mark.parametrize("world", world_params())
def test_no_blocking_finding_on_a_world_that_passes(world):
    if expected(world).get("verdict") != "PASS":
        pytest.skip("world is expected to be rejected")
    ctx, findings = lint_world(world)
    changed = {f.path for f in ctx.changed_files}
    assert [f for f in findings if f.severity is Severity.ERROR and f.path in changed] == []


def test_pr1676_flags_the_two_low_latency_recipes_and_none_of_the_mid_curve_siblings():
    world = next((p.values[0] for p in world_params() if p.id == "pr1676-gb200-sglang-mtp"), None)
    if world is None:
        pytest.skip("shared worlds not present")
    _ctx, findings = lint_world(world)
    car = sorted((f.path.rsplit("/", 1)[1], f.line) for f in findings if f.rule == "car-v2-multinode-decode")
    assert car == [("disagg-gb200-low-latency-1p1d-tp8-tp8-mtp.yaml", 50),
                   ("disagg-gb200-low-latency-1p6d-dep8-tp8-mtp.yaml", 55)]
    assert not [f for f in findings if "mid-curve" in f.path]
