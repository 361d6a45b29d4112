"""One Context across the evidence rounds: what a round keeps, what it computes again, and the loop.

The rule (`checks.context`): a cached entry that read evidence the snapshot did not hold, or a volatile fact
that changed, is computed again when the snapshot grows; any other entry is kept. The loop
(`checks.engine.Completion`) must reach the verdict a fresh evaluation of its final snapshot reaches.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.offline.replay import DEMO_WORLD
from app.offline.snapshot import judge_world
from app.offline.world import World
from checks.context import Context
from checks.engine import MAX_ROUNDS, Completion, evaluate
from checks.evidence import MISSING, Wanted
from checks.snapshot import frozen_map
from tests.builders import HEAD, changed, comment, snapshot

from .conftest import world_params

LIB = "benchmarks/lib.sh"


def _reads_lib(ctx: Context) -> object:
    calls.append("lib")
    return ctx.need.file("head", LIB)


def _reads_nothing_missing(ctx: Context) -> int:
    calls.append("plain")
    return len(ctx.snap.files)


def _uses_lib(ctx: Context) -> object:
    calls.append("outer")
    return ctx.once(_reads_lib)


def _dirs(ctx: Context) -> frozenset[str]:
    return frozenset(p.split("/", 1)[0] for files in ctx.snap.extra_files.values() for p in files)


def _uses_dirs(ctx: Context) -> frozenset[str]:
    calls.append("dirs")
    return ctx.volatile(_dirs)


calls: list[str] = []


@pytest.fixture(autouse=True)
def _clear():
    calls.clear()


def test_an_entry_that_read_missing_evidence_is_computed_again_and_the_others_are_kept():
    snap = snapshot(files=[changed("benchmarks/x.sh", None, "bash lib.sh\n")])
    ctx = Context(snap)
    assert ctx.once(_uses_lib) is MISSING and ctx.once(_reads_nothing_missing) == 1
    assert ctx.missing == Wanted(files=((HEAD, LIB),))
    ctx.once(_uses_lib)
    assert calls == ["outer", "lib", "plain"]  # within a round, computed once
    ctx.advance(replace(snap, extra_files=frozen_map({HEAD: frozen_map({LIB: "echo hi\n"})})),
                Wanted(files=((HEAD, LIB),)))
    assert not ctx.missing
    assert ctx.once(_uses_lib) == "echo hi\n" and ctx.once(_reads_nothing_missing) == 1
    assert calls == ["outer", "lib", "plain", "outer", "lib"]  # the entry using a missing one is dropped too


def test_an_entry_on_a_volatile_fact_is_kept_while_the_fact_stays_the_same():
    snap = snapshot(extra_files={HEAD: {"benchmarks/a.sh": "x"}})
    ctx = Context(snap)
    assert ctx.once(_uses_dirs) == {"benchmarks"}
    ctx.advance(replace(snap, extra_files=frozen_map({HEAD: frozen_map({"benchmarks/a.sh": "x", "benchmarks/b": "y"})})),
                Wanted())
    assert ctx.once(_uses_dirs) == {"benchmarks"} and calls == ["dirs"]
    ctx.advance(replace(snap, extra_files=frozen_map({HEAD: frozen_map({"runners/l.sh": "z"})})), Wanted())
    assert ctx.once(_uses_dirs) == {"runners"} and calls == ["dirs", "dirs"]


def test_evidence_asked_for_and_not_known_after_the_fetch_is_not_missing_any_more():
    ctx = Context(snapshot())
    assert ctx.need.member("org/team", "someone") is MISSING and ctx.need.artifacts(7) == ()
    assert ctx.missing == Wanted(runs=(7,), teams=(("org/team", "someone"),))
    ctx.advance(ctx.snap, Wanted(runs=(7,), teams=(("org/team", "someone"),)))  # GitHub would not tell
    assert ctx.need.member("org/team", "someone") is None and ctx.need.artifacts(7) == ()
    assert not ctx.missing


def test_the_loop_asks_for_what_the_checks_lack_and_stops_when_nothing_new_is_wanted():
    done = Completion(snapshot(comments=[comment("/reuse-sweep-run 555")]))
    wants = []
    while (want := done.wanted()) is not None:
        wants.append(want)
        done.add(done.snapshot)  # a fetcher that finds nothing: run 555 stays unknown
    assert [w.runs for w in wants] == [(555,)] and done.rounds == 1 < MAX_ROUNDS
    assert "pins run 555, which could not be found" in done.verdict.result(4).reason


@pytest.mark.parametrize("world", [pytest.param(DEMO_WORLD, id="demo"), *world_params()])
def test_the_rounds_reach_the_verdict_a_fresh_evaluation_of_their_snapshot_reaches(world: Path):
    done = judge_world(World.load(world))
    assert done.verdict == evaluate(done.snapshot)
