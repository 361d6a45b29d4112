"""The checks in a process of their own (app/judge.py): the same rounds and verdict as in the thread, errors
that come back as they were raised, and a process that dies costs a retry, not the App."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest

from app.fetcher import complete, with_evidence
from app.judge import IN_THREAD, MB, Budget, Checks, Judge, JudgeLost, inputs_digest
from app.offline import snapshot
from app.offline.replay import DEMO_WORLD
from app.offline.world import World
from checks.registry import LINT, RULES
from checks.result import Status
from checks.rule import Rule
from checks.snapshot import ChangedFile

from .conftest import OWN_WORLDS, shared_worlds


@pytest.fixture(scope="module")
def judge():
    judge = Judge(1)
    yield judge
    judge.close()


async def _judged(checks: Checks, world: World, rules=RULES):
    """The world's PR through `checks`, rounds fetched from the world as `offline.judge_world` does; the
    rounds that were run, and the digest of the final snapshot."""
    repo, pr = world.pull_repo(None)
    done = await checks.rounds(snapshot._base_snapshot(world, repo, pr), rules)
    fetcher = snapshot.WorldFetcher(world, repo)
    rounds = 0
    while (want := done.wanted()) is not None:
        rounds += 1
        await done.add(await with_evidence(fetcher, done.snapshot, want))
    return done, rounds, await checks.digest(done.snapshot)


def _same_as_in_thread(judge: Judge, world_dir: Path, rules=RULES) -> None:
    world = World.load(world_dir)
    ref = snapshot.judge_world(world, rules=rules)
    done, rounds, digest = asyncio.run(_judged(judge, world, rules))
    assert done.verdict == ref.verdict and done.snapshot == ref.snapshot
    assert rounds == ref.rounds and digest == inputs_digest(ref.snapshot)
    assert sum(p.sessions for p in judge._processes) == 0  # the last round closed the session


@pytest.mark.parametrize("world_dir", [DEMO_WORLD, OWN_WORLDS / "mini"], ids=["demo", "mini"])
def test_the_process_reaches_the_verdict_the_thread_reaches(judge, world_dir):
    _same_as_in_thread(judge, world_dir)
    _same_as_in_thread(judge, world_dir, LINT)


@pytest.mark.slow
@pytest.mark.parametrize("world_dir", shared_worlds() or [pytest.param(None, marks=pytest.mark.skip(
    reason="../shared/fixtures/worlds not present"))], ids=lambda p: getattr(p, "name", "none"))
def test_every_shared_world_is_judged_alike_in_the_process(judge, world_dir):
    _same_as_in_thread(judge, world_dir)


def test_in_thread_is_the_engine_itself():
    world = World.load(DEMO_WORLD)
    done, rounds, digest = asyncio.run(_judged(IN_THREAD, world))
    assert done.verdict == snapshot.judge_world(world).verdict and digest == inputs_digest(done.snapshot)


def test_an_error_in_the_checks_comes_back_as_raised_and_the_process_goes_on(judge):
    async def broken():
        await judge.rounds(None, RULES)  # the engine reads attributes of the snapshot: AttributeError

    with pytest.raises(AttributeError):
        asyncio.run(broken())
    _same_as_in_thread(judge, DEMO_WORLD)


def test_a_rule_outside_the_registry_is_refused_before_it_is_sent(judge):
    stray = Rule("stray", 99, "Stray", RULES[0].severity, lambda ctx: None, "extra")
    world = World.load(DEMO_WORLD)
    with pytest.raises(Exception, match="not in checks.registry"):
        asyncio.run(_judged(judge, world, (stray,)))
    _same_as_in_thread(judge, DEMO_WORLD)


def test_a_process_that_dies_is_a_transient_error_and_another_takes_over():
    judge = Judge(1)
    try:
        _same_as_in_thread(judge, DEMO_WORLD)
        process = judge._processes[0]._process
        os.kill(process.pid, signal.SIGKILL)
        process.join(120)  # a bound for a hang: SIGKILL ends it at once
        with pytest.raises(JudgeLost) as lost:
            asyncio.run(_judged(judge, World.load(DEMO_WORLD)))
        assert lost.value.transient  # the worker retries the job
        _same_as_in_thread(judge, DEMO_WORLD)
        assert judge._processes[0]._process.pid != process.pid
    finally:
        judge.close()


def test_rounds_begun_in_a_process_that_died_are_a_transient_error_in_the_next():
    judge = Judge(1)
    try:
        world = World.load(DEMO_WORLD)
        repo, pr = world.pull_repo(None)

        async def begun():
            return await judge.rounds(snapshot._base_snapshot(world, repo, pr), RULES)

        done = asyncio.run(begun())
        want = done.wanted()
        assert want is not None  # the demo world has an evidence round
        os.kill(judge._processes[0]._process.pid, signal.SIGKILL)
        with pytest.raises(JudgeLost):  # the first request after the death learns of it
            asyncio.run(judge.digest(done.snapshot))
        fuller = asyncio.run(with_evidence(snapshot.WorldFetcher(world, repo), done.snapshot, want))
        with pytest.raises(JudgeLost) as lost:  # the next process never saw these rounds
            asyncio.run(done.add(fuller))
        assert lost.value.transient
    finally:
        judge.close()


def test_the_process_runs_nice_below_the_server():
    judge = Judge(1, nice=3)
    try:
        _same_as_in_thread(judge, DEMO_WORLD)
        assert os.getpriority(os.PRIO_PROCESS, judge._processes[0]._process.pid) == os.nice(0) + 3
    finally:
        judge.close()


def test_closing_stops_the_process():
    judge = Judge(1)
    _same_as_in_thread(judge, DEMO_WORLD)
    process = judge._processes[0]._process
    judge.close()
    assert not process.is_alive()


# --- the budget ---------------------------------------------------------------------------------------

SCRIPT = "benchmarks/single_node/dsv4_fp8_b200.sh"


def _heavy(world: World):
    """The world's PR with a long benchmark script added: far more CPU than a small budget."""
    repo, pr = world.pull_repo(None)
    snap = snapshot._base_snapshot(world, repo, pr)
    script = ChangedFile(SCRIPT, "added", None, None, None, "vllm serve m --tensor-parallel-size 8\n" * 10_000)
    return replace(snap, files=snap.files + (script,))


async def _judged_snapshot(checks: Checks, world: World, snap):
    repo, _ = world.pull_repo(None)
    return await complete(await checks.rounds(snap, RULES), snapshot.WorldFetcher(world, repo))


def test_checks_that_outrun_their_cpu_budget_are_stopped_undecided_and_the_process_replaced():
    judge = Judge(1, budget=Budget(cpu_seconds=0.15, wall_seconds=120))
    try:
        world = World.load(DEMO_WORLD)
        process = judge._processes[0]
        first = asyncio.run(_judged_snapshot(judge, world, _heavy(world)))
        verdict = first.verdict
        assert process.replaced == 1 and verdict.label != "PASS"
        assert all(r.status is Status.UNDECIDED for r in verdict.results)
        reason = verdict.results[0].reason
        assert reason.startswith("cannot decide: could not be read within the budget (0.15 s of CPU time)")
        assert verdict.signer == snapshot.judge_world(world).verdict.signer  # the sign-off was read before
        _same_as_in_thread(judge, DEMO_WORLD)  # the process that took over serves the next verification
    finally:
        judge.close()


def test_checks_that_outrun_their_memory_budget_are_stopped_undecided_and_the_process_replaced():
    judge = Judge(1, budget=Budget(memory_bytes=2 * MB, wall_seconds=120))
    try:
        world = World.load(DEMO_WORLD)
        verdict = asyncio.run(_judged_snapshot(judge, world, _heavy(world))).verdict
        assert judge._processes[0].replaced == 1
        assert all(r.status is Status.UNDECIDED for r in verdict.results)
        assert "within the budget (2 MB of memory" in verdict.results[0].reason
    finally:
        judge.close()


def test_a_verification_that_stops_waiting_stops_its_checks():
    judge = Judge(1, budget=Budget(cpu_seconds=600, wall_seconds=600))
    try:
        world = World.load(DEMO_WORLD)
        process = judge._processes[0]
        _same_as_in_thread(judge, DEMO_WORLD)  # started: what follows is sent at once

        async def impatient():
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(_judged_snapshot(judge, world, _heavy(world)), 0.2)

        asyncio.run(impatient())
        _same_as_in_thread(judge, DEMO_WORLD)  # answered by a new process, not after the heavy one
        assert process.replaced == 1
    finally:
        judge.close()
