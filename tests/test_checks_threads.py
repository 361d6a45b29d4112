"""The checks may run on several threads at once (app/judge.py `InThread`): each thread parses with its own
tree-sitter parser, and what threads share is the process-wide readings of `checks.memo` (immutable values
keyed by content). Every world judged on two threads at once, from cold caches and in opposite orders, gives
byte for byte the verdict it gets alone."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from app.github import render
from app.offline.replay import DEMO_WORLD
from app.offline.snapshot import judge_world
from app.offline.world import World
from checks import memo
from tests.conftest import shared_worlds

WORLDS = [DEMO_WORLD, *shared_worlds()]


def _verdict(world_dir: Path) -> str:
    v = judge_world(World.load(world_dir)).verdict
    return json.dumps({"verdict": v.label, "rows": [[r.number, r.name, r.status.value, r.reason] for r in v.rows],
                       "findings": [f.to_json() for f in v.findings], "comment": render.comment(v)},
                      sort_keys=True)


def _on_threads(orders: list[list[Path]]) -> list[dict[Path, str]]:
    """Each order of worlds judged on a thread of its own, all threads started at once."""
    start = threading.Barrier(len(orders))
    found: list[dict[Path, str]] = [{} for _ in orders]
    failed: list[BaseException] = []

    def judge(order: list[Path], into: dict[Path, str]) -> None:
        try:
            start.wait()
            for world in order:
                into[world] = _verdict(world)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            failed.append(e)

    threads = [threading.Thread(target=judge, args=(order, into)) for order, into in zip(orders, found)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return found


def test_two_checks_threads_give_every_world_the_verdict_one_thread_gives():
    memo.clear()
    alone = {world: _verdict(world) for world in WORLDS}
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often, inside parses and readings
    try:
        for orders in ([WORLDS, WORLDS], [WORLDS, WORLDS[::-1]]):
            memo.clear()
            for found in _on_threads(orders):
                assert found == alone
    finally:
        sys.setswitchinterval(switch)
