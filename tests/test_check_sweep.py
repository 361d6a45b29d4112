"""Check 1 (sweep on in-PR commit): lanes, latest attempts, commits in the PR, and the shared worlds."""

from __future__ import annotations

import pytest
import yaml

from checks.facts import sweeps
from checks.policy import Policy
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check01_sweep as sweep
from checks.snapshot import CheckRun
from tests.builders import HEAD, changed, comment, ctx, pr
from tests.conftest import world_params

OLD = "0" * 40
GONE = "9" * 40
RUN = 31451666262


def cr(cid: int, name: str, sha: str = HEAD, conclusion: str | None = "success", status: str = "completed",
       run_id: int | None = RUN, started_at: str = "2026-08-01T10:00:00Z") -> CheckRun:
    return CheckRun(id=cid, name=name, head_sha=sha, status=status, conclusion=conclusion, run_id=run_id,
                    started_at=started_at)


def green_sweep(sha: str = HEAD, run_id: int = RUN, first_id: int = 1) -> list[CheckRun]:
    """A typical single-node sweep: two benchmark lanes, one eval lane, aggregators and skipped placeholders."""
    return [
        cr(first_id, "setup", sha, run_id=run_id),
        cr(first_id + 1, "single-node 8k1k / dsv4-fp4-b200-sglang TP8 c4", sha, run_id=run_id),
        cr(first_id + 2, "single-node 8k1k / dsv4-fp4-b200-sglang TP8 c64", sha, run_id=run_id),
        cr(first_id + 3, "eval / dsv4-fp4-b200-sglang TP8 c64", sha, run_id=run_id),
        cr(first_id + 4, "collect-evals / collect-evals", sha, run_id=run_id),
        cr(first_id + 5, "single-node 1k1k / benchmark", sha, "skipped", run_id=run_id),
        cr(first_id + 6, "multi-node eval / benchmark", sha, "skipped", run_id=run_id),
    ]


@pytest.mark.parametrize("name, kind", [
    ("single-node 8k1k / kimik2.5-fp4-mi355x-vllm TP8 c4", sweep.BENCHMARK),
    ("single-node 1k1k / benchmark", sweep.BENCHMARK),
    ("single-node 8192_1024 / x", sweep.BENCHMARK),
    ("multi-node 8k1k / p1 | dsv4 fp4 gb200 dyn-sgl 1P (TP8) x 1D (TP8) mtp c1", sweep.BENCHMARK),
    ("agentic / glm5.2-fp4-mi355x-sglang-agentic-mtp TP4/EP4 mtp dram KV offload c1", sweep.BENCHMARK),
    ("multi-node agentic / benchmark", sweep.BENCHMARK),
    ("eval / kimik2.5-fp4-mi355x-vllm TP8 c64", sweep.EVAL),
    ("multi-node eval / p1 | dsv4 fp4 gb200 ... c128 | eval-only", sweep.EVAL),
    ("agentic eval / glm5.2 TP4 mtp c10 | eval-only", sweep.EVAL),
    ("multi-node agentic eval / benchmark", sweep.EVAL),
    ("collect-evals / collect-evals", None),
    ("collect-results / collect-results", None),
    ("canary / benchmark", None),
    ("setup", None),
    ("single-node / x", sweep.BENCHMARK),  # a lane prefix alone, as `agentic /`
    ("single-node foo / x", None),
    ("evaluation / x", None),
    ("multi-node evals / x", None),
])
def test_lane_names(name, kind):
    found = sweeps.lane(name, Policy())
    assert (found.kind if found else None) == kind


def test_pass_names_commit_lanes_and_run():
    result = sweep.check(ctx(check_runs=green_sweep()))
    assert result.status is Status.PASS
    assert result.number == 1 and result.name == "sweep on in-PR commit"
    assert result.reason == (f"PR head {HEAD[:8]} carries 2 green executed single-node 8k1k / and 1 green executed"
                             f" eval / check-runs from run {RUN}.")


def test_no_check_runs_fails_with_root_issue():
    result = sweep.check(ctx())
    assert result.status is Status.FAIL
    assert result.reason.startswith(sweep.ROOT_ISSUE)
    assert "No in-PR commit carries benchmark or eval check-runs" in result.reason
    assert "/reuse-sweep-run" in result.reason


def test_sweep_on_rebased_out_commit_only_fails():
    result = sweep.check(ctx(check_runs=green_sweep(GONE)))
    assert result.status is Status.FAIL
    assert result.reason.startswith(sweep.ROOT_ISSUE)
    assert f"run {RUN} ran on {GONE[:8]}, which is no longer part of this PR" in result.reason
    assert sweeps.passing_run(ctx(check_runs=green_sweep(GONE))) is None


def test_run_id_quoted_in_signoff_is_not_trusted():
    body = f"As a PR reviewer and CODEOWNER, I have reviewed this and have:\n- [x] evals: run {RUN} on {HEAD}"
    result = sweep.check(ctx(comments=[comment(body)], check_runs=green_sweep(GONE)))
    assert result.status is Status.FAIL


def test_all_lanes_skipped_fails():
    runs = [cr(1, "single-node 8k1k / benchmark", conclusion="skipped"),
            cr(2, "eval / benchmark", conclusion="skipped"),
            cr(3, "collect-evals / collect-evals"), cr(4, "setup")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.FAIL
    assert f"Every benchmark/eval check-run on {HEAD[:8]} was skipped" in result.reason


def test_green_aggregator_over_skipped_evals_fails():
    runs = [cr(1, "single-node 8k1k / x TP8 c4"), cr(2, "eval / benchmark", conclusion="skipped"),
            cr(3, "collect-evals / collect-evals")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.FAIL
    assert "no green executed eval lane" in result.reason


def test_benchmark_without_eval_and_eval_without_benchmark_fail():
    only_bench = sweep.check(ctx(check_runs=[cr(1, "multi-node 8k1k / p1 | x c1")]))
    only_eval = sweep.check(ctx(check_runs=[cr(1, "multi-node eval / p1 | x c128 | eval-only")]))
    assert only_bench.status is only_eval.status is Status.FAIL
    assert "no green executed eval lane" in only_bench.reason
    assert "no green executed benchmark lane" in only_eval.reason


def test_failed_latest_attempt_disqualifies_head_while_older_commit_passes():
    runs = green_sweep(OLD, run_id=111, first_id=1) + green_sweep(HEAD, run_id=222, first_id=100)
    runs.append(cr(200, "eval / dsv4-fp4-b200-sglang TP8 c128", HEAD, "failure", run_id=222))
    c = ctx(commits=(OLD, HEAD), check_runs=runs)
    result = sweep.check(c)
    assert result.status is Status.PASS
    assert result.reason.startswith(f"in-PR commit {OLD[:8]} carries")
    assert "from run 111" in result.reason
    assert sweeps.passing_run(c) == (OLD, 111)


def test_failed_latest_attempt_alone_fails_naming_it():
    runs = green_sweep() + [cr(200, "eval / dsv4-fp4-b200-sglang TP8 c128", conclusion="failure")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.FAIL
    assert (f"Commit {HEAD[:8]}'s latest `eval / dsv4-fp4-b200-sglang TP8 c128` concluded failure (run {RUN})"
            in result.reason)


def test_rerun_attempt_turns_failure_into_success():
    name = "eval / dsv4-fp4-b200-sglang TP8 c64"
    runs = [cr(1, "single-node 8k1k / x TP8 c64"),
            cr(2, name, conclusion="failure", started_at="2026-08-01T10:00:00Z"),
            cr(3, name, conclusion="success", started_at="2026-08-01T12:00:00Z")]
    assert sweep.check(ctx(check_runs=runs)).status is Status.PASS


def test_later_failed_attempt_overrides_earlier_success():
    name = "eval / dsv4-fp4-b200-sglang TP8 c64"
    runs = [cr(1, "single-node 8k1k / x TP8 c64"),
            cr(5, name, conclusion="success", started_at="2026-08-01T10:00:00Z"),
            cr(3, name, conclusion="cancelled", started_at="2026-08-01T12:00:00Z")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.FAIL
    assert "concluded cancelled" in result.reason


def test_same_start_time_breaks_tie_on_id():
    name = "eval / x"
    runs = [cr(1, "single-node 8k1k / x"), cr(7, name, conclusion="failure"), cr(8, name, conclusion="success")]
    assert sweep.check(ctx(check_runs=runs)).status is Status.PASS
    runs = [cr(1, "single-node 8k1k / x"), cr(8, name, conclusion="failure"), cr(7, name, conclusion="success")]
    assert sweep.check(ctx(check_runs=runs)).status is Status.FAIL


def test_unstarted_attempt_is_latest_and_blocks():
    name = "eval / x"
    runs = [cr(1, "single-node 8k1k / x"), cr(2, name, conclusion="success"),
            cr(3, name, conclusion=None, status="queued", started_at="")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.FAIL
    assert "is queued" in result.reason


@pytest.mark.parametrize("conclusion", ["neutral", "timed_out", "action_required", None])
def test_other_conclusions_disqualify(conclusion):
    runs = green_sweep() + [cr(50, "single-node 8k1k / x TP4 c4", conclusion=conclusion)]
    assert sweep.check(ctx(check_runs=runs)).status is Status.FAIL


def test_prefers_newest_passing_commit():
    runs = green_sweep(OLD, run_id=111) + green_sweep(HEAD, run_id=222, first_id=100)
    c = ctx(commits=(OLD, HEAD), check_runs=runs)
    assert sweeps.passing_run(c) == (HEAD, 222)
    assert sweep.check(c).reason.startswith(f"PR head {HEAD[:8]}")


def test_older_commit_passing_when_head_has_no_sweep():
    c = ctx(commits=(OLD, HEAD), check_runs=green_sweep(OLD, run_id=111))
    result = sweep.check(c)
    assert result.status is Status.PASS and f"in-PR commit {OLD[:8]}" in result.reason


def test_newest_eval_run_is_the_one_behind_check_one():
    runs = green_sweep(run_id=111) + [cr(50, "eval / dsv4-fp4-b200-sglang TP8 c128", run_id=222)]
    c = ctx(check_runs=runs)
    assert sweeps.passing_run(c) == (HEAD, 222)
    assert "from runs 111, 222" in sweep.check(c).reason


def test_eval_lane_without_workflow_run():
    runs = [cr(1, "single-node 8k1k / x", run_id=None), cr(2, "eval / x", run_id=None)]
    c = ctx(check_runs=runs)
    assert sweeps.passing_run(c) == (HEAD, None)
    result = sweep.check(c)
    assert result.status is Status.PASS and "(no workflow run linked)" in result.reason


def test_multi_node_and_agentic_lanes_pass():
    runs = [cr(1, "multi-node 8k1k / p1 | dsv4 fp4 b200-nscale dyn-sgl 1P (TP8) x 1D (TP8) mtp c1"),
            cr(2, "multi-node 8k1k / p1 | dsv4 fp4 b200-nscale dyn-sgl 5P x 3D mtp c6144"),
            cr(3, "multi-node agentic eval / p1 | x | eval-only"),
            cr(4, "agentic / x c1"), cr(5, "single-node 8k1k / benchmark", conclusion="skipped")]
    result = sweep.check(ctx(check_runs=runs))
    assert result.status is Status.PASS
    assert ("carries 1 green executed agentic /, 2 green executed multi-node 8k1k / and 1 green executed"
            " multi-node agentic eval / check-runs") in result.reason


def test_deterministic_regardless_of_check_run_order():
    runs = green_sweep(OLD, run_id=111) + green_sweep(HEAD, run_id=222, first_id=100)
    a = sweep.check(ctx(commits=(OLD, HEAD), check_runs=runs))
    b = sweep.check(ctx(commits=(OLD, HEAD), check_runs=list(reversed(runs))))
    assert a == b


def test_head_not_in_commit_list_is_judged_by_commit_list():
    # The PR's commit list is the authority; a head check-run on a SHA missing from it does not count.
    c = ctx(pr=pr(head_sha=GONE), commits=(HEAD,), check_runs=green_sweep(GONE))
    assert sweep.check(c).status is Status.FAIL


WORKFLOW = ".github/workflows/run-sweep.yml"


def test_workflow_change_is_a_note_not_a_fail():
    files = (changed(WORKFLOW, "on: push\n", "on: pull_request\n"), changed("configs/x.yaml", "a: 1\n", "a: 2\n"))
    result = sweep.check(ctx(files=files, check_runs=green_sweep()))
    assert result.status is Status.PASS
    assert result.reason.endswith(f"from run {RUN}. Note: this PR changes {WORKFLOW}, so its sweep ran the PR's own "
                                  "workflows; review that change (`workflow_changes: blocking` in "
                                  ".github/signoff-bot.yml makes this a FAIL).")


def test_workflow_change_note_follows_the_root_issue_of_a_fail():
    result = sweep.check(ctx(files=(changed(".github/actions/setup/action.yml", None, "runs: {}\n"),)))
    assert result.status is Status.FAIL
    assert result.reason.startswith(sweep.ROOT_ISSUE) and "Note: this PR changes .github/actions/" in result.reason


def test_workflow_change_blocks_when_the_repository_says_so():
    policy = {".github/signoff-bot.yml": "workflow_changes: blocking\n"}
    files = (changed(WORKFLOW, "a\n", "b\n"), changed(".github/workflows/other.yml", None, "b\n"))
    result = sweep.check(ctx(files=files, check_runs=green_sweep(), policy=policy))
    assert result.status is Status.FAIL
    assert result.reason.startswith("this PR changes .github/workflows/other.yml (+1 more): its sweep ran the PR's "
                                    "own workflows")
    assert sweep.check(ctx(check_runs=green_sweep(), policy=policy)).status is Status.PASS


def test_workflow_renamed_away_counts_as_a_change():
    files = (changed("docs/old-workflow.yml", "a\n", "a\n", status="renamed", previous_path=WORKFLOW),)
    assert "Note: this PR changes docs/old-workflow.yml" in sweep.check(ctx(files=files, check_runs=green_sweep())).reason


def test_unknown_workflow_changes_setting_is_a_policy_error():
    assert Policy.from_yaml("workflow_changes: fail\n")[1] == (
        ".github/signoff-bot.yml:1: workflow_changes must be one of note, blocking; ignored, the default applies",)


@pytest.mark.parametrize("world", world_params())
def test_shared_world_agrees(world):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World
    from checks.context import Context
    from checks.rules import check02_evals

    expected = yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}
    want = (expected.get("checks") or {}).get(sweep.NUMBER)
    if want is None:
        pytest.skip("expected.yaml does not assert check 1")
    snap = snapshot_from_world(World.load(world), rules=rules_of(sweep, check02_evals))
    result = sweep.check(Context(snap))
    assert result.status.value == want, result.reason
