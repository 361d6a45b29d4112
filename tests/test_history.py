"""The real InferenceX history as an acceptance suite: `signoff-bot backtest` held to labels.yaml.

The squash-merged PRs of the window were all accepted by InferenceX's
maintainers; labels.yaml says which of them really violate the spec (the bot
must FAIL those checks) and which findings were misreads. Every labelled
violation must be caught, and at most three PRs without a violation may be
rejected on content: each is named in `NOT_FALSE_REJECTIONS` with why.
Runs whenever ../shared exists (always in CI).
"""

from __future__ import annotations

import subprocess
from datetime import date

import pytest
import yaml

from app.history import backtest
from app.history.gitrepo import Commits, Git
from tests.conftest import SHARED_HISTORY

BUNDLE = SHARED_HISTORY / "inferencex.bundle"
LABELS = SHARED_HISTORY / "labels.yaml"
WINDOW = date(2026, 7, 15)
CONTENT = {str(n) for n in backtest.CONTENT_CHECKS}
MAX_FALSE = 3

# PRs without a labelled violation that the bot rejects, and why it is right to (or cannot decide).
NOT_FALSE_REJECTIONS = {
    2427: "check 10: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh runs `sed -i` on "
          "/sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py: an inline patch of the "
          "installed engine, which the spec names as one; no waiver (labels.yaml does not list it)",
    2428: "check 10: the same in-place `sed -i` of SGLang's multi_tokenizer_mixin.py in qwen3.5_fp8_h200_mtp.sh",
}

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not BUNDLE.exists(), reason=f"{BUNDLE} not present")]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "inferencex"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def labels() -> dict:
    return yaml.safe_load(LABELS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows(clone) -> dict[int, dict]:
    return {r.pr.number: r.to_json() for r in backtest.backtest(clone, since=WINDOW)}


def rejecting(row: dict) -> dict[str, str]:
    """What rejects a PR on content, as compare_history.py reads it: failing checks 6-12, blocking lint."""
    out = {c: r["reason"] for c, r in row["checks"].items() if c in CONTENT and r["status"] == "FAIL"}
    lint = row.get("lint") or {}
    if lint.get("status") == "FAIL" and lint.get("blocking"):
        out["lint"] = lint["reason"]
    return out


def test_every_labelled_pr_is_backtested_and_readable(rows, labels):
    assert set(labels["prs"]) <= set(rows)
    assert [n for n, r in rows.items() if r["verdict"] == "ERROR"] == []


def test_every_labelled_violation_fails_its_check(rows, labels):
    missed = [(n, c, rows[n]["checks"][c]["reason"]) for n, lab in labels["prs"].items()
              for c in lab.get("violates") or [] if rows[n]["checks"][c]["status"] != "FAIL"]
    assert missed == []


def test_prs_without_a_violation_are_not_rejected(rows, labels):
    false = {}
    for n, lab in labels["prs"].items():
        if lab.get("violates"):
            continue
        debatable = {d.split(":")[0].replace("check ", "").strip() for d in lab.get("debatable") or []}
        wrong = {c: r for c, r in rejecting(rows[n]).items() if c not in debatable}
        if wrong:
            false[n] = wrong
    unexplained = {n: w for n, w in false.items() if n not in NOT_FALSE_REJECTIONS}
    assert unexplained == {}
    assert len(false) <= MAX_FALSE


def test_known_violations_before_the_window_are_caught(clone, labels):
    git = Git(clone)
    try:
        prs = {p.number: p for p in backtest.merged_prs(git, backtest.default_branch(git))}
        commits = Commits(git)
        for n, lab in labels["known_violations_before_window"].items():
            row = backtest.backtest_one(git, commits, backtest.repo_name(git), prs[n])
            for c in lab["violates"]:
                assert row.checks[int(c)].status.value == "FAIL", (n, c, lab["evidence"], row.checks[int(c)].reason)
    finally:
        git.close()


def test_the_backtest_is_deterministic(clone, rows):
    again = {r.pr.number: r.to_json() for r in backtest.backtest(clone, since=date(2026, 8, 7), workers=1)}
    assert again == {n: r for n, r in rows.items() if n in again}
