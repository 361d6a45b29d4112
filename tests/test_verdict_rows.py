"""The rows that decide a verdict: checks 0-12, an incomplete snapshot; recipe lint as advice unless blocking."""

from __future__ import annotations

import shutil

from app import render
from app.replay import DEMO_WORLD
from checks.engine import COMPLETENESS_NAME, LINT_NAME, evaluate
from checks.result import Status
from checks.snapshot import ChangedFile
from tests.builders import snapshot
from tests.variants import RECIPE, base, green_world, head, verdict


def lint_only_world(tmp_path):
    """The passing world, with the head recipe missing its CAR_V2 setting: a recipe-lint error, nothing more."""
    root = green_world(tmp_path)
    shutil.copy(DEMO_WORLD / "trees" / "head" / RECIPE, head(root) / RECIPE)
    return root


def test_lint_findings_alone_leave_the_verdict_pass_and_show_as_advice(tmp_path):
    v = verdict(lint_only_world(tmp_path))
    assert v.label == "PASS"
    assert v.lint.status is Status.FAIL and not v.lint_blocking and v.advice is v.lint
    assert LINT_NAME not in {r.name for r in v.rows}
    comment = render.comment(v)
    assert comment.splitlines()[1] == "## ✅✅✅ **Verdict: PASS** ✅✅✅"
    assert "Advice, not part of the sign-off: Recipe lint found 1 error(s)" in comment
    assert f"`{RECIPE}:29` [car-v2-multinode-decode]" in comment


def test_lint_blocks_where_the_repository_says_so(tmp_path):
    root = lint_only_world(tmp_path)
    for tree in (base(root), head(root)):
        (tree / ".github" / "signoff-bot.yml").write_text("lint: blocking\n")
    v = verdict(root)
    assert v.label == "REJECTED" and v.lint_blocking and v.advice is None
    assert [r.name for r in v.rows if not r.passed] == [LINT_NAME]
    assert "blocking: Recipe lint" in render.comment(v)


def test_a_clean_pr_has_no_advice(tmp_path):
    v = verdict(green_world(tmp_path))
    assert v.label == "PASS" and v.lint.status is Status.PASS and v.advice is None
    assert "Advice" not in render.comment(v)


def unreadable(path: str) -> ChangedFile:
    return ChangedFile(path, "added", None, None, None, None, "binary file; not read")


def test_an_unreadable_file_no_check_reads_is_nobodys_evidence():
    v = evaluate(snapshot(files=[unreadable("docs/images/curve.png")]))
    assert COMPLETENESS_NAME not in {r.name for r in v.extra}


def test_an_unreadable_benchmark_file_cannot_be_decided():
    v = evaluate(snapshot(files=[unreadable("benchmarks/single_node/x.sh")]))
    [row] = [r for r in v.extra if r.name == COMPLETENESS_NAME]
    assert row.status is Status.FAIL and row.reason.startswith("cannot decide: benchmarks/single_node/x.sh cannot be read")
