"""Check 2 (evals pass): the audited run, eval rows per changed config, thresholds, images, and the shared worlds."""

from __future__ import annotations

import json

import pytest
import yaml

from checks.evidence import Wanted
from checks.facts import hardware
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check01_sweep
from checks.rules import check02_evals as evals
from checks.snapshot import Artifact, ArtifactFiles, CheckRun, WorkflowRun, frozen_map
from tests.builders import HEAD, comment, ctx, needs
from tests.conftest import world_params

OLD = "0" * 40
GONE = "9" * 40
RUN = 31451666262
PINNED = 31500000000
CFG = "configs/nvidia-master.yaml"
IMAGE = "lmsysorg/sglang:v0.5.9-cu130"
OLD_IMAGE = "lmsysorg/sglang:v0.5.8-cu130"

THRESHOLDS_YAML = """\
default:
  gsm8k: 0.90
models:
  dsv4:
    gsm8k: 0.91
"""
THRESHOLDS_JSON = json.dumps({"default": {"gsm8k": 0.90}, "models": {"dsv4": {"gsm8k": 0.91}}})

EXISTING = """\
dsr1-fp8-h200-sglang:
  image: lmsysorg/sglang:v0.5.0
  model: deepseek-ai/DeepSeek-R1
  model-prefix: dsr1
  runner: h200
  precision: fp8
  framework: sglang
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
"""


def entry(key: str = "dsv4-fp4-b200-sglang", image: str = IMAGE, runner: str = "b200-nscale",
          scenarios: str | None = None, prefix: str = "dsv4") -> str:
    scenarios = scenarios or """\
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 128 }
"""
    return f"""
{key}:
  image: {image}
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: {prefix}
  runner: {runner}
  precision: fp4
  framework: sglang
  multinode: false
  scenarios:
{scenarios}"""


def row(score=0.95, conc=64, hw="B200", prefix="dsv4", spec="none", isl=8192, osl=1024, task="gsm8k", **kw) -> dict:
    data = {"is_multinode": False, "model_prefix": prefix, "hw": hw, "framework": "sglang", "precision": "fp4",
            "spec_decoding": spec, "isl": isl, "osl": osl, "tp": 8, "conc": conc, "task": task,
            "em_strict": score, "score": score, "score_name": "em_strict"}
    data.update(kw)
    return data


def eval_artifact(rows, run_id: int = RUN, name: str = "eval_results_all", aid: int = 9101, error=None,
                  text: str | None = None) -> ArtifactFiles:
    files = {} if error else {"agg_eval_all.json": text if text is not None else json.dumps(rows)}
    return ArtifactFiles(aid, name, run_id, frozen_map(files), error)


def bmk_artifact(rows, run_id: int = RUN, aid: int = 9102) -> ArtifactFiles:
    return ArtifactFiles(aid, "results_bmk", run_id, frozen_map({"agg_bmk.json": json.dumps(rows)}))


def workflow_run(run_id: int = RUN, sha: str = HEAD) -> WorkflowRun:
    return WorkflowRun(run_id, "Run Sweep", ".github/workflows/run-sweep.yml", "pull_request", sha, "completed",
                       "success", artifacts=(Artifact(9101, "eval_results_all"), Artifact(9102, "results_bmk")))


def lanes(sha: str = HEAD, run_id: int = RUN) -> list[CheckRun]:
    return [CheckRun(1, "single-node 8k1k / dsv4-fp4-b200-sglang TP8 c64", sha, "completed", "success", run_id),
            CheckRun(2, "eval / dsv4-fp4-b200-sglang TP8 c64", sha, "completed", "success", run_id)]


def make(rows=None, head_cfg: str | None = None, base_cfg: str = EXISTING, artifacts=None, check_runs=None,
         workflow_runs=None, policy=None, **kw):
    """A PR adding `dsv4-fp4-b200-sglang` (8k1k, B200) with a green sweep run RUN on its head."""
    rows = [row(0.9644, 64), row(0.9682, 128)] if rows is None else rows
    head_cfg = base_cfg + entry() if head_cfg is None else head_cfg
    return ctx(
        master_base={CFG: base_cfg},
        master_head={CFG: head_cfg},
        policy={"utils/evals/thresholds.yaml": THRESHOLDS_YAML} if policy is None else policy,
        check_runs=lanes() if check_runs is None else check_runs,
        workflow_runs=[workflow_run()] if workflow_runs is None else workflow_runs,
        artifacts=[eval_artifact(rows)] if artifacts is None else artifacts,
        **kw,
    )


def run(c):
    result = evals.check(c)
    assert result.number == 2 and result.name == "evals pass"
    return result


# --- PASS ------------------------------------------------------------------


def test_pass_reason_names_file_run_range_bar_and_image():
    result = run(make())
    assert result.status is Status.PASS
    assert result.reason == (f"agg_eval_all.json of run {RUN}: gsm8k em_strict 0.9644–0.9682 across 2 rows, above"
                             f" the dsv4 bar 0.91 (utils/evals/thresholds.yaml), on the head image {IMAGE}.")


def test_default_bar_for_model_without_its_own():
    head = EXISTING + entry(key="glm5-fp4-b200-sglang", prefix="glm5.2")
    result = run(make([row(0.971, prefix="glm5.2")], head_cfg=head))
    assert result.status is Status.PASS
    assert "gsm8k em_strict 0.971 on 1 row, above the default gsm8k bar 0.90" in result.reason


def test_score_equal_to_bar_passes():
    result = run(make([row(0.91)]))
    assert result.status is Status.PASS and "at or above the dsv4 bar 0.91" in result.reason


# --- the audited run --------------------------------------------------------


def test_no_run_follows_from_check_one():
    result = run(make(check_runs=[]))
    assert result.status is Status.FAIL
    assert result.reason == "no eval run to audit (follows from Check 1)"


def test_green_eval_lane_without_workflow_run():
    runs = [CheckRun(1, "single-node 8k1k / x", HEAD, "completed", "success"),
            CheckRun(2, "eval / x", HEAD, "completed", "success")]
    result = run(make(check_runs=runs))
    assert result.status is Status.FAIL and "link no workflow run" in result.reason


def test_pinned_run_overrides_check_one_run():
    pin = comment(f"/reuse-sweep-run {PINNED}", author="maintainer", association="MEMBER")
    artifacts = [eval_artifact([row(0.97)]), eval_artifact([row(0.80)], run_id=PINNED, aid=9201)]
    c = make(artifacts=artifacts, workflow_runs=[workflow_run(), workflow_run(PINNED)], comments=[pin])
    assert evals.target(c).run_id == PINNED
    result = run(c)
    assert result.status is Status.FAIL
    assert f"agg_eval_all.json of run {PINNED}: dsv4 B200 sglang fp4 conc 64 gsm8k em_strict 0.80 is below" \
           f" the dsv4 bar 0.91 (utils/evals/thresholds.yaml)" in result.reason


def test_pinned_run_passes_when_check_one_run_would_fail():
    pin = comment(f"/reuse-sweep-run {PINNED}", author="maintainer", association="COLLABORATOR")
    artifacts = [eval_artifact([row(0.50)]), eval_artifact([row(0.97)], run_id=PINNED, aid=9201)]
    result = run(make(artifacts=artifacts, workflow_runs=[workflow_run(), workflow_run(PINNED)], comments=[pin]))
    assert result.status is Status.PASS
    assert f"of run {PINNED} (pinned by `/reuse-sweep-run`)" in result.reason


def test_pinned_run_audited_even_without_check_one():
    pin = comment(f"/reuse-sweep-run {PINNED}", association="OWNER")
    c = make(check_runs=[], artifacts=[eval_artifact([row(0.97)], run_id=PINNED)],
             workflow_runs=[workflow_run(PINNED)], comments=[pin])
    assert run(c).status is Status.PASS


def test_unauthorized_pin_is_ignored():
    pin = comment(f"/reuse-sweep-run {PINNED}", author="drive-by", association="CONTRIBUTOR")
    artifacts = [eval_artifact([row(0.97)]), eval_artifact([row(0.50)], run_id=PINNED, aid=9201)]
    c = make(artifacts=artifacts, workflow_runs=[workflow_run(), workflow_run(PINNED)], comments=[pin])
    assert evals.target(c).run_id == RUN
    assert run(c).status is Status.PASS
    assert needs(evals, c).permissions == ("drive-by",)


def test_bare_reuse_command_falls_back_to_check_one_run():
    c = make(comments=[comment("/reuse-sweep-run", association="MEMBER")])
    assert evals.target(c).run_id == RUN and evals.target(c).pin is None


def test_pinned_run_on_commit_outside_pr_fails():
    pin = comment(f"/reuse-sweep-run {PINNED}", association="MEMBER")
    c = make(artifacts=[eval_artifact([row(0.97)], run_id=PINNED)], workflow_runs=[workflow_run(PINNED, GONE)],
             comments=[pin])
    result = run(c)
    assert result.status is Status.FAIL
    assert f"run {PINNED} pinned by `/reuse-sweep-run`" in result.reason
    assert f"ran on {GONE[:8]}, which is not a commit of this PR" in result.reason


def test_unknown_pinned_run_fails_closed():
    pin = comment(f"/reuse-sweep-run {PINNED}", association="MEMBER")
    result = run(make(comments=[pin]))
    assert result.status is Status.FAIL and "could not be read" in result.reason


# --- artifacts --------------------------------------------------------------


def test_malformed_artifact_fails_naming_it():
    result = run(make(artifacts=[eval_artifact(None, text="[{not json")]))
    assert result.status is Status.FAIL
    assert result.reason.startswith(f"eval_results_all/agg_eval_all.json of run {RUN} is not valid JSON")


def test_artifact_that_is_not_a_list_of_rows_fails():
    result = run(make(artifacts=[eval_artifact(None, text='{"rows": []}')]))
    assert result.status is Status.FAIL and "is not a JSON list of row objects" in result.reason


def test_artifact_without_rows_fails():
    result = run(make(rows=[]))
    assert result.status is Status.FAIL
    assert f"eval_results_all/agg_eval_all.json of run {RUN} has no eval rows" in result.reason


def test_artifact_with_error_fails():
    result = run(make(artifacts=[eval_artifact(None, error="artifact expired")]))
    assert result.status is Status.FAIL
    assert f"eval artifact eval_results_all of run {RUN} could not be read (artifact expired)" in result.reason


def test_run_without_eval_artifact_fails():
    bare = WorkflowRun(RUN, "Run Sweep", "", "pull_request", HEAD, "completed", "success")
    result = run(make(artifacts=[], workflow_runs=[bare]))
    assert result.status is Status.FAIL
    assert f"run {RUN} uploaded no eval artifact" in result.reason


def test_listed_but_undownloaded_artifact_fails():
    result = run(make(artifacts=[]))
    assert result.status is Status.FAIL and "eval artifact eval_results_all of run" in result.reason
    assert "was not downloaded" in result.reason


def test_eval_artifact_without_aggregate_fails():
    raw = ArtifactFiles(9101, "eval_dsv4_fp4_sglang_0", RUN, frozen_map({"results.json": "{}"}))
    result = run(make(artifacts=[raw]))
    assert result.status is Status.FAIL
    assert "no agg_eval_*.json in eval artifact(s) eval_dsv4_fp4_sglang_0" in result.reason


def test_row_without_score_fails():
    result = run(make([row(None)]))
    assert result.status is Status.FAIL and "gsm8k has no score (the eval failed)" in result.reason


def test_speedbench_rows_use_their_own_bounds():
    ok = row(3.1, task="speedbench_al/on/mtp3", score_name="acceptance_length", speedbench_passed=True)
    bad = dict(ok, speedbench_passed=False, speedbench_min_acceptance_length=3.2,
               speedbench_max_acceptance_length=3.9)
    passed = run(make([row(0.95), ok]))
    assert passed.status is Status.PASS and "1 SpeedBench acceptance-length row within bounds" in passed.reason
    failed = run(make([row(0.95), bad]))
    assert failed.status is Status.FAIL and "acceptance length 3.1 failed its bounds [3.2, 3.9]" in failed.reason


# --- thresholds -------------------------------------------------------------


def test_score_below_bar_fails():
    result = run(make([row(0.97, 64), row(0.88, 128)]))
    assert result.status is Status.FAIL
    assert result.reason.startswith(f"agg_eval_all.json of run {RUN}: dsv4 B200 sglang fp4 conc 128 gsm8k em_strict"
                                    f" 0.88 is below the dsv4 bar 0.91 (utils/evals/thresholds.yaml)")


def test_several_problems_report_first_and_count():
    result = run(make([row(0.80, 64), row(0.70, 128)]))
    assert result.status is Status.FAIL and "conc 64" in result.reason and result.reason.endswith("(+1 more)")


def test_thresholds_json_is_read():
    c = make([row(0.95)], policy={"utils/evals/thresholds.json": THRESHOLDS_JSON})
    result = run(c)
    assert result.status is Status.PASS and "(utils/evals/thresholds.json)" in result.reason


def test_thresholds_yaml_preferred_over_json():
    strict = "models:\n  dsv4:\n    gsm8k: 0.99\n"
    both = {"utils/evals/thresholds.yaml": strict, "utils/evals/thresholds.json": THRESHOLDS_JSON}
    c = make([row(0.95)], policy=both)
    result = run(c)
    assert result.status is Status.FAIL and "below the dsv4 bar 0.99 (utils/evals/thresholds.yaml)" in result.reason


def test_no_thresholds_file_fails_closed():
    result = run(make(policy={}))
    assert result.status is Status.FAIL and result.reason.startswith("no eval thresholds on the base branch")


def test_malformed_thresholds_fail_closed():
    result = run(make(policy={"utils/evals/thresholds.json": "{"}))
    assert result.status is Status.FAIL
    assert result.reason.startswith("utils/evals/thresholds.json on the base branch does not parse")
    shape = run(make(policy={"utils/evals/thresholds.yaml": "default: [0.9]\n"}))
    assert shape.status is Status.FAIL and "must map `default` and `models`" in shape.reason


def test_task_without_bar_fails_closed():
    result = run(make([row(0.95, task="mmlu")]))
    assert result.status is Status.FAIL
    assert "no mmlu bar for model dsv4 in utils/evals/thresholds.yaml" in result.reason


def test_non_numeric_bar_fails_closed():
    result = run(make(policy={"utils/evals/thresholds.yaml": "models:\n  dsv4:\n    gsm8k: high\n"}))
    assert result.status is Status.FAIL and "models.dsv4.gsm8k in utils/evals/thresholds.yaml is not a number" \
        in result.reason


# --- rows per changed config ------------------------------------------------


def test_missing_row_for_changed_config_fails():
    result = run(make([row(0.95, hw="H200")]))
    assert result.status is Status.FAIL
    line = (EXISTING + entry()).splitlines().index("dsv4-fp4-b200-sglang:") + 1
    assert result.reason.startswith(f"no eval row for {CFG}:{line} dsv4-fp4-b200-sglang"
                                    f" (dsv4 fp4 sglang B200 single-node) in agg_eval_all.json of run {RUN}")


def test_missing_spec_decoding_variant_fails():
    scenarios = """\
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 128 }
      - { tp: 8, conc-start: 4, conc-end: 128, spec-decoding: mtp }
"""
    head = EXISTING + entry(scenarios=scenarios)
    result = run(make([row(0.95)], head_cfg=head))
    assert result.status is Status.FAIL and "at isl/osl 8192/1024 spec-decoding mtp" in result.reason
    assert run(make([row(0.95), row(0.96, spec="mtp")], head_cfg=head)).status is Status.PASS


def test_only_8k1k_points_need_rows():
    scenarios = """\
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 128 }
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 128 }
"""
    assert run(make([row(0.95)], head_cfg=EXISTING + entry(scenarios=scenarios))).status is Status.PASS


def test_agentic_config_needs_zero_length_rows():
    scenarios = """\
    agentic-coding:
    - dram-utilization: 0.8
      search-space:
      - { tp: 8, conc-list: [1, 4, 10], spec-decoding: mtp }
"""
    head = EXISTING + entry(runner="cluster:b200-amds", scenarios=scenarios)
    assert run(make([row(0.95, spec="mtp", isl=0, osl=0)], head_cfg=head)).status is Status.PASS
    result = run(make([row(0.95, spec="mtp")], head_cfg=head))
    assert result.status is Status.FAIL and "at isl/osl 0/0 spec-decoding mtp" in result.reason


def test_rows_of_other_configs_are_not_judged():
    result = run(make([row(0.95), row(0.10, hw="H200", prefix="dsr1")]))
    assert result.status is Status.PASS and "across" not in result.reason


def test_multinode_must_match():
    result = run(make([row(0.95, is_multinode="true")]))
    assert result.status is Status.FAIL and result.reason.startswith("no eval row for")


def test_no_changed_config_audits_every_row():
    c = make([row(0.95, hw="H200", prefix="dsr1")], head_cfg=EXISTING)
    result = run(c)
    assert result.status is Status.PASS
    assert result.reason.endswith("the PR changes no master-config entry, so every row of the run was audited.")
    below = run(make([row(0.80, hw="H200", prefix="dsr1")], head_cfg=EXISTING))
    assert below.status is Status.FAIL and "below the default gsm8k bar 0.90" in below.reason


def test_removed_config_needs_no_rows():
    base = EXISTING + entry()
    result = run(make([row(0.95, hw="H200", prefix="dsr1")], base_cfg=base, head_cfg=EXISTING))
    assert result.status is Status.PASS


def test_unparsable_changed_config_fails_closed():
    head = EXISTING + "\nbroken-config:\n  image: [unclosed\n"
    result = run(make(head_cfg=head))
    assert result.status is Status.FAIL and "config broken-config at" in result.reason


@pytest.mark.parametrize("hw, family", [
    ("b200-nscale", "B200"), ("cluster:mi355x-amds", "MI355X"), ("gb200", "GB200"), ("B200", "B200"),
    ("h200_cw", "H200"), ("MI355X", "MI355X"), (None, ""),
])
def test_sku_family(hw, family):
    assert hardware.sku(hw).upper() == family


# --- image ------------------------------------------------------------------


def _older_commit(old_cfg_text: str | None, extra: bool = True, **kw):
    files = {OLD: {CFG: old_cfg_text}} if extra else {}
    return make(commits=(OLD, HEAD), check_runs=lanes(OLD), workflow_runs=[workflow_run(sha=OLD)], extra_files=files,
                **kw)


def test_image_mismatch_at_evaluated_commit_fails():
    c = _older_commit(EXISTING + entry(image=OLD_IMAGE))
    result = run(c)
    assert result.status is Status.FAIL
    assert result.reason == (f"run {RUN} evaluated {OLD[:8]}, where dsv4-fp4-b200-sglang uses image {OLD_IMAGE},"
                             f" but the head uses {IMAGE}; re-run the sweep on the head image")


def test_same_image_at_evaluated_commit_passes():
    assert run(_older_commit(EXISTING + entry())).status is Status.PASS


def test_evaluated_commit_configs_are_wanted_and_missing_ones_fail_closed():
    c = _older_commit(None, extra=False)
    assert needs(evals, c) == Wanted(files=((OLD, CFG),))
    assert needs(evals, _older_commit(None, extra=False, artifacts=[])) == Wanted(files=((OLD, CFG),), runs=(RUN,))
    result = run(c)
    assert result.status is Status.FAIL and f"{CFG} at {OLD[:8]} (the commit run {RUN} evaluated) is not available" \
        in result.reason


def test_config_absent_at_evaluated_commit_fails():
    result = run(_older_commit(EXISTING))
    assert result.status is Status.FAIL
    assert f"where {CFG} has no readable config dsv4-fp4-b200-sglang" in result.reason


def test_benchmark_artifact_image_mismatch_fails():
    bmk = [{"config_key": "dsv4-fp4-b200-sglang", "hw": "b200-nscale", "image": OLD_IMAGE}]
    result = run(make(artifacts=[eval_artifact([row(0.95)]), bmk_artifact(bmk)]))
    assert result.status is Status.FAIL
    assert result.reason == (f"results_bmk/agg_bmk.json of run {RUN} ran dsv4-fp4-b200-sglang on image {OLD_IMAGE},"
                             f" but the head config uses {IMAGE}; re-run the sweep on the head image")


def test_benchmark_artifact_identity_rows():
    same = {"hw": "b200-nscale", "image": IMAGE, "infmax_model_prefix": "dsv4", "framework": "sglang",
            "precision": "fp4", "spec_decoding": "none", "is_multinode": False}
    sibling = dict(same, image=OLD_IMAGE, spec_decoding="mtp")  # a sibling -mtp config, not this PR's
    assert run(make(artifacts=[eval_artifact([row(0.95)]), bmk_artifact([same, sibling])])).status is Status.PASS
    stale = dict(same, image=OLD_IMAGE)
    result = run(make(artifacts=[eval_artifact([row(0.95)]), bmk_artifact([same, stale, stale])]))
    assert result.status is Status.FAIL and not result.reason.endswith("more)")


def test_registry_hash_separator_is_a_slash():
    head = EXISTING + entry(image="nvcr.io#nvidia/sglang:25.01")
    bmk = [{"config_key": "dsv4-fp4-b200-sglang", "image": "nvcr.io/nvidia/sglang:25.01"}]
    assert run(make([row(0.95)], head_cfg=head, artifacts=[eval_artifact([row(0.95)]), bmk_artifact(bmk)])).status \
        is Status.PASS


def test_unreadable_benchmark_artifact_fails_closed():
    broken = ArtifactFiles(9102, "results_bmk", RUN, frozen_map({"agg_bmk.json": "nope"}))
    result = run(make(artifacts=[eval_artifact([row(0.95)]), broken]))
    assert result.status is Status.FAIL and result.reason.startswith(f"results_bmk/agg_bmk.json of run {RUN} is not")


# --- evidence asked for, and determinism --------------------------------------------------


def test_wants_the_audited_run_only():
    assert needs(evals, make(artifacts=[])) == Wanted(runs=(RUN,))
    assert needs(evals, make()) == Wanted()  # its artifacts are held
    assert needs(evals, make(check_runs=[])) == Wanted()


def test_deterministic_regardless_of_artifact_order():
    first = eval_artifact([row(0.80, 64)], name="eval_results_a", aid=1)
    second = eval_artifact([row(0.95, 128)], name="eval_results_b", aid=2)
    a, b = run(make(artifacts=[first, second])), run(make(artifacts=[second, first]))
    assert a == b and a.status is Status.FAIL and "conc 64" in a.reason


def test_nan_score_is_no_score():
    result = run(make(artifacts=[eval_artifact(None, text=json.dumps([row(0.95)]).replace("0.95", "NaN"))]))
    assert result.status is Status.FAIL and "has no score" in result.reason


@pytest.mark.parametrize("world", world_params())
def test_shared_world_agrees(world):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World
    from checks.context import Context

    expected = yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}
    want = (expected.get("checks") or {}).get(evals.NUMBER)
    if want is None:
        pytest.skip("expected.yaml does not assert check 2")
    snap = snapshot_from_world(World.load(world), rules=rules_of(check01_sweep, evals))
    result = evals.check(Context(snap))
    assert result.status.value == want, result.reason
