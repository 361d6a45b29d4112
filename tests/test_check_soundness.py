"""The soundness invariants, held for every check of the registry on every world (issue 26's guards).

Each check runs on each pull request of the bundled worlds (the demo world, tests/worlds) and of the shared
ones (../shared/fixtures/worlds, when present) twice: on the first snapshot, before any evidence is fetched,
and on the snapshot with the evidence the check asked for. Every result must be sound (`builders.sound`:
its own row, a one-line reason, no internal error, no error finding on a passing row, UNDECIDED only saying
what it cannot decide, every finding on a line at head, the same result from a fresh Context); a PASS on the
first snapshot must stay a PASS once the evidence it asked for is read (a PASS never rests on what was not
read); and the whole verdict is the same, byte for byte, from two fresh readings of the same world.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.offline.replay import DEMO_WORLD
from app.offline.snapshot import snapshot_from_world
from app.offline.world import World
from checks.context import Context
from checks.engine import evaluate
from checks.registry import RULES, rules_of
from checks.result import Status
from checks.rule import Rule
from tests.builders import sound
from tests.conftest import shared_worlds

WORLDS: tuple[Path, ...] = (DEMO_WORLD, *sorted((Path(__file__).parent / "worlds").iterdir()), *shared_worlds())
CHECKS: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "check")


def _pulls(world: World) -> list[int]:
    """The numbers of the world's pull requests a check can verify (those of an installed repository)."""
    return sorted(pr["number"] for repo in world.repos.values() if repo.installation_id is not None
                  for pr in repo.pulls.values())


def test_every_check_of_the_registry_is_covered():
    assert len(CHECKS) == 13 and sorted(r.row for r in CHECKS) == list(range(13))


@pytest.mark.parametrize("rule", CHECKS, ids=lambda r: f"{r.row}-{r.id}")
def test_every_check_is_sound_on_every_world(rule: Rule):
    judged = 0
    for root in WORLDS:
        world = World.load(root)
        for number in _pulls(world):
            first = sound(rule.module, Context(snapshot_from_world(world, number, rules=())))
            read = sound(rule.module, Context(snapshot_from_world(world, number, rules=rules_of(rule.module))))
            where = f"{root.name} #{number}"
            assert first.status is not Status.PASS or read.status is Status.PASS, (where, first, read)
            judged += 1
    assert judged >= 4  # the bundled worlds hold four pull requests


@pytest.mark.parametrize("root", WORLDS, ids=lambda p: p.name)
def test_the_verdict_is_the_same_from_two_readings_of_a_world(root: Path):
    for number in _pulls(World.load(root)):
        once, again = (evaluate(snapshot_from_world(World.load(root), number)) for _ in range(2))
        assert repr(once) == repr(again)
