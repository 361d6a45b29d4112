"""A hostile PR beside normal ones, through real processes (issue 28): the server, its jobs' process and its
checks' process, against the fake GitHub. The hostile PR's checks outrun their CPU budget: the checks' process
is killed and replaced, the PR gets a verdict that is UNDECIDED on every row, naming the file; the normal PRs
queued with it get their verdicts, and the process that took over serves the next job."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from .apphost import Stack
from .test_jobs_process import _spawned
from .test_reliability import idle, jobs, running
from .worldgen import Pull, build_world

HOSTILE, NORMAL, OTHER = 801, 802, 803
SCRIPT = "benchmarks/single_node/dsv4_fp4_gb300.sh"
BUDGET = "0.5"  # CPU seconds: a normal verification takes a fifth of it, the hostile one four times it


def _world(tmp_path: Path) -> Path:
    """Three signed-off PRs; the first's head adds a long benchmark script (far more than the budget)."""
    root = build_world(tmp_path / "world", [HOSTILE, NORMAL, OTHER])
    shutil.copytree(root / "trees" / "fixed", root / "trees" / "hostile")
    script = root / "trees" / "hostile" / SCRIPT
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/bash\n" + "a=$b; vllm serve $a\n" * 19_000, encoding="utf-8")  # 2 s in the thread
    data = yaml.safe_load((root / "world.yaml").read_text(encoding="utf-8"))
    for commit in data["repos"][0]["commits"]:
        if commit["sha"] == Pull(HOSTILE).head:
            commit["tree"] = "hostile"
    (root / "world.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


def _checks_process(stack: Stack) -> int | None:
    jobs_processes = _spawned(stack.pid())
    found = [p for jp in jobs_processes for p in _spawned(jp)]
    return found[0] if len(found) == 1 else None


def _verdict(stack: Stack, pr: int) -> str | None:
    comments = stack.verdict_comments(pr)
    return comments[0]["body"] if comments and f"sha={Pull(pr).head} -->" in comments[0]["body"] else None


@pytest.mark.slow
def test_a_hostile_pr_ends_undecided_within_its_budget_and_the_prs_queued_with_it_get_their_verdicts(tmp_path):
    with running(tmp_path, _world(tmp_path), env={"SIGNOFF_BOT_CHECK_CPU_SECONDS": BUDGET}) as stack:
        first = stack.wait(lambda: _checks_process(stack), 60, "the checks' process")
        # The start-up reconcile pass queues the three PRs together.
        hostile = stack.wait(lambda: _verdict(stack, HOSTILE), 180, "the hostile PR's verdict")
        assert f"could not be read within the budget ({BUDGET} s of CPU time)" in hostile
        assert SCRIPT in hostile and "UNDECIDED" in hostile and "PASS" not in hostile.split("\n", 2)[1]
        for pr in (NORMAL, OTHER):
            normal = stack.wait(lambda pr=pr: _verdict(stack, pr), 180, f"PR {pr}'s verdict")
            assert "within the budget" not in normal
        replacement = stack.wait(lambda: _checks_process(stack), 60, "the checks' process that took over")
        assert replacement != first
        stack.wait(lambda: idle(stack), 60, "the queue to drain")
        stack.deliver("issue_comment", Pull(NORMAL).recheck, delivery="after-the-overrun")
        stack.wait(lambda: idle(stack) and any(json.loads(j["payload"]).get("delivery") == "after-the-overrun"
                                               and j["state"] == "done" for j in jobs(stack)), 120,
                   "the next job, served by the checks' process that took over")
        assert _checks_process(stack) == replacement
        assert "within the budget" not in _verdict(stack, NORMAL)
