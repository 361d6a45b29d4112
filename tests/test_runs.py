"""checks/facts/runs.py: what a master entry runs (recipes, the script its launcher picks); checks/facts/tracing.py: what that
runs; checks/facts/recipe_index.py: which entries name a recipe."""

from __future__ import annotations

from checks.facts import recipe_index, runs, tracing
from checks.facts.bash import UNKNOWN
from tests.builders import HEAD, changed, ctx

MASTER = "configs/nvidia-master.yaml"
ROOT = "benchmarks/multi_node/srt-slurm-recipes"

MULTI = """\
qwen3.5-fp4-gb300-dynamo-sglang-mtp:
  image: lmsysorg/sglang:v1
  model: Qwen/Qwen3.5
  model-prefix: qwen3.5
  precision: fp4
  runner: gb300
  framework: dynamo-sglang
  multinode: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: "mtp"
        prefill:
          additional-settings:
          - "CONFIG_FILE={config}"
      - spec-decoding: "mtp"
        prefill:
          additional-settings:
          - "EVAL_CONFIG_FILE=recipes/sglang/qwen3.5/eval.yaml"
"""


def entry_ctx(text: str, **kw):
    return ctx(files=[changed(MASTER, None, text)], master_head={MASTER: text}, **kw)


def test_config_file_relative_to_srt_slurm_or_to_the_repository():
    c = ctx()
    assert runs.recipe_target(c, "recipes/sglang/x.yaml:zip_override_a[1]") == (f"{ROOT}/sglang/x.yaml",
                                                                             "zip_override_a[1]")
    assert runs.recipe_target(c, f"{ROOT}/sglang/x.yaml") == (f"{ROOT}/sglang/x.yaml", "")
    assert runs.recipe_target(c, "../etc/passwd") is None


def test_points_run_their_recipe_and_eval_recipes_are_not_benchmark_configs():
    c = entry_ctx(MULTI.format(config=f"{ROOT}/sglang/qwen3.5/agg.yaml"))
    bench, evals = runs.runs(c, c.changed_entries[0])
    assert [(t.path, t.how, t.line) for t in bench.recipes] == [(f"{ROOT}/sglang/qwen3.5/agg.yaml", "CONFIG_FILE", 17)]
    assert bench.scripts == () and bench.problem == ""
    assert evals.targets == () and [t.path for t in evals.eval_recipes] == [f"{ROOT}/sglang/qwen3.5/eval.yaml"]
    index = recipe_index.recipe_index(c)
    assert [n.eval_only for n in index[f"{ROOT}/sglang/qwen3.5/eval.yaml"]] == [True]


def test_point_env_is_what_the_workflow_gives_the_launcher():
    c = entry_ctx(MULTI.format(config="recipes/x.yaml").replace('"CONFIG_FILE=recipes/x.yaml"',
                                                                '"DECODE_MTP_SIZE=2"'))
    env = runs.point_env(c.changed_entries[0].head, runs.points(c.changed_entries[0].head)[0])
    assert env["SPEC_DECODING"] == "mtp" and env["IS_MULTINODE"] == "true" and env["EVAL_ONLY"] == "false"
    assert env["DECODE_MTP_SIZE"] == "2" and env["EXP_NAME"] == f"qwen3.5_{UNKNOWN}" and env["ISL"] == "8192"


def test_repository_paths_of_container_workspace_and_sibling_paths():
    c = ctx(files=[changed("benchmarks/multi_node/agentic_srt.sh", None, "x\n")])
    assert tracing.repo_paths(c, "/infmax-workspace/benchmarks/multi_node/agentic_srt.sh") == (
        "benchmarks/multi_node/agentic_srt.sh",)
    assert tracing.repo_paths(c, "benchmarks/single_node/agentic/../../benchmark_lib.sh") == (
        "benchmarks/benchmark_lib.sh",)
    assert tracing.repo_paths(c, f"{UNKNOWN}/bench.sh", "benchmarks/multi_node/amd_utils") == (
        "benchmarks/multi_node/amd_utils/bench.sh",)
    assert tracing.repo_paths(c, "./submit.sh", "benchmarks/multi_node", f"{UNKNOWN}/benchmarks/multi_node/amd_utils") == (
        "benchmarks/multi_node/amd_utils/submit.sh",)
    assert tracing.repo_paths(c, "/usr/bin/python3") == ()


LAUNCHER = """\
if [[ "$IS_MULTINODE" == "true" ]]; then
    SCRIPT_NAME="${EXP_NAME%%_*}_${PRECISION}_gb300_${FRAMEWORK}.sh"
    JOB_ID=$(bash "benchmarks/multi_node/${SCRIPT_NAME}")
else
    bash "benchmarks/single_node/${SCENARIO_SUBDIR}x.sh"
fi
"""
PER_CONFIG = ('source "$(dirname "$0")/../benchmark_lib.sh"\nexport ENGINE="$FRAMEWORK"\n'
              'cd "$GITHUB_WORKSPACE/benchmarks/multi_node/utils" || exit 1\nbash ./submit.sh\n')
SUBMIT = 'sbatch -N "$NODES" --parsable "$(dirname "$0")/job.slurm"\n'
JOB = 'RUN_FILE="$WS_PATH/server.sh"\nsrun bash -c "docker run --rm img $RUN_FILE"\n'
SERVER = ('if [ "$ENGINE" = "dynamo-sglang" ]; then MTP=--use-chat-template; fi\n'
          'run_benchmark_serving --model m $MTP\n')


def test_a_point_without_config_file_runs_what_its_launcher_picks_and_that_runs_in_turn():
    text = MULTI.format(config="x").replace('          - "CONFIG_FILE=x"\n', '          - "NODES=2"\n')
    files = {"configs/runners.yaml": "labels:\n  gb300:\n  - gb300-nv_0\n", "runners/launch_gb300-nv.sh": LAUNCHER,
             "benchmarks/multi_node/qwen3.5_fp4_gb300_dynamo-sglang.sh": PER_CONFIG,
             "benchmarks/benchmark_lib.sh": "f() { :; }\n", "benchmarks/multi_node/utils/submit.sh": SUBMIT,
             "benchmarks/multi_node/utils/job.slurm": JOB, "benchmarks/multi_node/utils/server.sh": SERVER}
    c = entry_ctx(text, extra_files={HEAD: files})
    run = runs.runs(c, c.changed_entries[0])[0]
    (target,) = run.scripts
    assert (target.path, target.how) == ("benchmarks/multi_node/qwen3.5_fp4_gb300_dynamo-sglang.sh",
                                         "runners/launch_gb300-nv.sh:3")
    watch = lambda values: values[:1] == ["run_benchmark_serving"]  # noqa: E731
    reached = tracing.reach(c, target.path, dict(target.env), watch)
    assert [(x.path, x.how) for x in reached] == [
        (target.path, ""), ("benchmarks/benchmark_lib.sh", "source"), ("benchmarks/multi_node/utils/submit.sh", "bash"),
        ("benchmarks/multi_node/utils/job.slurm", "sbatch"), ("benchmarks/multi_node/utils/server.sh", "named")]
    (call,) = reached[-1].trace.calls
    assert call.words[-1] == ("--use-chat-template",)  # ENGINE, exported two scripts up, decides the branch
    assert c.missing.files == ()


def test_what_a_point_runs_is_asked_for_when_the_snapshot_lacks_it():
    text = MULTI.format(config="x").replace('          - "CONFIG_FILE=x"\n', "")
    c = entry_ctx(text)
    run = runs.runs(c, c.changed_entries[0])[0]
    assert run.problem == "not known yet" and run.targets == ()
    assert {p for _sha, p in c.missing.files} == {
        "configs/runners.yaml", ".github/configs/runners.yaml", "runners/launch_gb300.sh"}


def test_a_launcher_traced_for_a_points_variables_shows_the_branch_it_reaches():
    text = MULTI.format(config="x").replace('          - "CONFIG_FILE=x"\n', "")
    launcher = 'if [[ "$FRAMEWORK" == "dynamo-sglang" ]]; then\n  git apply fix.patch\nfi\n'
    c = entry_ctx(text, extra_files={HEAD: {"runners/launch_gb300.sh": launcher}})
    run = runs.runs(c, c.changed_entries[0])[0]
    calls = tracing.trace(c, "runners/launch_gb300.sh", run.env, lambda v: v[:1] == ["git"]).calls
    assert [c_.line for c_ in calls] == [2]
    other = dict(run.env, FRAMEWORK="dynamo-trt")
    assert tracing.trace(c, "runners/launch_gb300.sh", other, lambda v: v[:1] == ["git"]).calls == ()
    assert tracing.trace(c, "runners/missing.sh", run.env) is None
