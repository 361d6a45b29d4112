"""Acceptance: the engine's verdict on each world agrees with the world's expected.yaml.

Agreeing is: the verdict, each asserted check's status, every listed annotation found, and, where a world
lists its annotations, no finding it does not expect (`unexpected`).

Runs on the bundled demo world always, and on every shared real-PR world when
../shared/fixtures/worlds exists (it always does in CI). The snapshot is built
straight from the world's files (app.offline.snapshot); tests/test_replay.py checks the
same expectations through the fake GitHub over HTTP.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.offline.replay import DEMO_WORLD
from app.offline.snapshot import snapshot_from_world
from app.offline.world import World
from checks.engine import evaluate
from checks.result import Finding, Severity

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
    listed = {(a["path"], a["line"], a["rule"]) for a in expected.get("annotations") or []}
    for path, line, rule in sorted(listed - found):
        problems.append(f"missing finding {rule} at {path}:{line}")
    if "annotations" in expected:
        problems += [f"unexpected finding {f.rule} at {f.path}:{f.line} ({why}): {f.message}"
                     for f, why in unexpected(verdict, expected, listed)]
    assert not problems, "\n".join(problems)


def unexpected(verdict, expected: dict, listed: set) -> list[tuple]:
    """The findings a world that lists its annotations does not expect: any on a check it expects to PASS or
    be N/A (a finding there contradicts the row), and any error outside the checks' rows (recipe lint,
    completeness). A finding that explains a check the world expects to FAIL, or one the world leaves
    unasserted, need not be listed; nor need lint's warnings and notices, which are advice."""
    asserted = {int(n): status for n, status in (expected.get("checks") or {}).items()}
    out = []
    for f in verdict.findings:
        if (f.path, f.line, f.rule) in listed:
            continue
        rows = [r.number for r in verdict.results if f in r.findings]
        contradicted = [f"check {n} is expected to be {asserted[n]}" for n in rows if asserted.get(n) in ("PASS", "N/A")]
        if contradicted:
            out.append((f, contradicted[0]))
        elif not rows and f.severity is Severity.ERROR:
            out.append((f, "an error of no check"))
    return out


def test_demo_world():
    assert_agrees(DEMO_WORLD, evaluate(snapshot_from_world(World.load(DEMO_WORLD))))


@pytest.mark.parametrize("world_dir", world_params())
def test_shared_world(world_dir):
    assert_agrees(world_dir, evaluate(snapshot_from_world(World.load(world_dir))))


@pytest.mark.parametrize("world_dir", world_params())
def test_same_snapshot_same_verdict_byte_for_byte(world_dir):
    from app.github import render

    snap = snapshot_from_world(World.load(world_dir))
    first, second = evaluate(snap), evaluate(snap)
    assert first == second
    assert render.comment(first) == render.comment(second)


def test_a_truncated_snapshot_cannot_pass():
    from dataclasses import replace

    snap = snapshot_from_world(World.load(DEMO_WORLD))
    verdict = evaluate(replace(snap, truncated="GitHub lists at most 3000 files of a pull request; this one has more"))
    assert not verdict.passed
    assert [r.name for r in verdict.extra if r.status.value == "UNDECIDED"][-1] == "Complete evidence"


def test_a_finding_the_world_does_not_expect_fails_the_acceptance():
    """The demo world lists its one annotation: a finding on a check it expects to pass, or a lint error it
    does not list, is a disagreement; a lint warning or a finding explaining its expected FAIL of check 4
    is not."""
    from dataclasses import replace

    v = evaluate(snapshot_from_world(World.load(DEMO_WORLD)))
    assert_agrees(DEMO_WORLD, v)

    def with_finding(number: int | None, severity: Severity):
        f = Finding("configs/nvidia-master.yaml", 3, "some-rule", severity, "m")
        results = tuple(replace(r, findings=(*r.findings, f)) if r.number == number else r for r in v.results)
        return replace(v, results=results, findings=tuple(sorted((*v.findings, f))))

    for number, severity in ((0, Severity.NOTICE), (3, Severity.WARNING), (None, Severity.ERROR)):
        with pytest.raises(AssertionError, match="unexpected finding some-rule at configs/nvidia-master.yaml:3"):
            assert_agrees(DEMO_WORLD, with_finding(number, severity))
    for number, severity in ((4, Severity.ERROR), (7, Severity.ERROR), (None, Severity.WARNING)):
        assert_agrees(DEMO_WORLD, with_finding(number, severity))
