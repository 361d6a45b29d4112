"""Check 9: speculative-decoding configs benchmark through the chat template."""

from __future__ import annotations

import pytest

from checks.result import Status
from checks.rules import check09_chat_template
from checks.rules.check09_chat_template import RULE
from tests.builders import HEAD, changed, ctx, decided, needs
from tests.conftest import assert_check_agrees, world_params

RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-b200-1p1d-mtp.yaml"
FIXED = "benchmarks/single_node/fixed_seq_len/dsv4_fp4_b200_sglang_mtp.sh"
AGENTIC = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_sglang_mtp.sh"
LIB = "benchmarks/benchmark_lib.sh"
MASTER = "configs/nvidia-master.yaml"

RECIPE_HEAD = """\
name: "disagg-b200-1p1d-mtp"
backend:
  type: sglang
  sglang_config:
    decode:
      speculative-algo: "EAGLE"
      speculative-num-steps: 3
benchmark:
  type: "sa-bench"
  isl: 8192
"""

SERVE = "source \"$(dirname \"$0\")/../../benchmark_lib.sh\"\n" \
        "python3 -m sglang.launch_server --speculative-algorithm EAGLE --speculative-num-steps 3 &\n"
CLIENT = "run_benchmark_serving \\\n    --model \"$MODEL\" \\\n    --backend vllm \\\n    --port \"$PORT\""
REPLAY = "build_replay_cmd \"$RESULT_DIR\"\nrun_agentic_replay_and_write_outputs \"$RESULT_DIR\"\n"
LIB_CHAT = "build_replay_cmd() {\n    REPLAY_CMD=\"$AIPERF_CLI profile\"\n" \
           "    REPLAY_CMD+=\" --endpoint /v1/chat/completions\"\n    REPLAY_CMD+=\" --endpoint-type chat\"\n}\n"


def run(**kw):
    return check09_chat_template.check(ctx(**kw))


def test_na_without_spec_decoding():
    r = run(files=[changed("benchmarks/single_node/fixed_seq_len/x_fp8_h200.sh", None, "vllm serve m\n")])
    assert r.status is Status.NA


def test_recipe_with_chat_template_passes():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + "  use_chat_template: true\n")])
    assert r.status is Status.PASS and "use_chat_template: true" in r.reason


def test_recipe_without_the_key_runs_srt_slurms_default_the_chat_template():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD)])
    assert r.status is Status.PASS and "use_chat_template: true" in r.reason


@pytest.mark.parametrize("spelled", ["false", "False", "no", "off", "0"])
def test_recipe_turning_the_chat_template_off_fails_at_that_line_in_any_spelling_srt_slurm_reads(spelled):
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + f"  use_chat_template: {spelled}\n")])
    assert r.status is Status.FAIL
    (f,) = r.findings
    assert (f.path, f.line, f.rule) == (RECIPE, 11, "spec-decode-no-chat-template")


@pytest.mark.parametrize("spelled", ["true", "yes", "on", "1", "'true'"])
def test_recipe_turning_the_chat_template_on_passes_in_any_spelling_srt_slurm_reads(spelled):
    assert run(files=[changed(RECIPE, None, RECIPE_HEAD + f"  use_chat_template: {spelled}\n")]).status is Status.PASS


def test_a_use_chat_template_srt_slurm_cannot_read_as_a_boolean_is_undecided():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + '  use_chat_template: "${CHAT}"\n')])
    assert r.status is Status.UNDECIDED
    (f,) = r.findings
    assert (f.path, f.line, f.undecided) == (RECIPE, 11, True)


def test_recipe_with_chat_template_false_fails_at_that_line():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + "  use_chat_template: false\n")])
    decided(r, Status.FAIL, (RULE, RECIPE, 11), only=True)


def test_malformed_recipe_fails_with_its_line():
    r = run(files=[changed(RECIPE, None, "name: x-mtp\nbackend: [\n")])
    assert r.status is Status.FAIL and r.findings[0].path == RECIPE and r.findings[0].line >= 2


def test_script_without_chat_template_fails_naming_the_client_line():
    r = run(files=[changed(FIXED, None, SERVE + CLIENT + "\n")])
    decided(r, Status.FAIL, (RULE, FIXED, 3), only=True)
    assert "run_benchmark_serving" in r.findings[0].message  # the client it names


def test_script_with_use_chat_template_passes():
    r = run(files=[changed(FIXED, None, SERVE + CLIENT + " \\\n    --use-chat-template\n")])
    assert r.status is Status.PASS and "--use-chat-template" in r.reason


def test_chat_flag_through_an_argument_array():
    head = SERVE + "ARGS=(\n  --model m\n  --dsv4\n)\nrun_benchmark_serving \"${ARGS[@]}\"\n"
    assert run(files=[changed(FIXED, None, head)]).status is Status.PASS


def test_eval_only_client_is_not_the_benchmark():
    head = SERVE + 'if [ "$EVAL_ONLY" = "true" ]; then\n' + CLIENT + "\nfi\n"
    r = run(files=[changed(FIXED, None, head)])
    assert r.status is Status.UNDECIDED and "no recognisable benchmark client" in r.findings[0].message


def test_agentic_replay_is_undecided_when_the_library_is_absent():
    c = ctx(files=[changed(AGENTIC, None, SERVE + REPLAY)])
    assert needs(check09_chat_template, c).files == ((HEAD, LIB),)
    r = check09_chat_template.check(c)
    decided(r, Status.UNDECIDED, (RULE, AGENTIC, 3), only=True)
    assert LIB in r.reason  # what it could not read


def test_agentic_replay_through_chat_completions_passes():
    r = run(files=[changed(AGENTIC, None, SERVE + REPLAY)], extra_files={HEAD: {LIB: LIB_CHAT}})
    assert r.status is Status.PASS and "chat-completions replay" in r.reason


def test_agentic_replay_on_raw_completions_fails():
    lib = LIB_CHAT.replace("/v1/chat/completions", "/v1/completions").replace("chat\"", "completions\"")
    r = run(files=[changed(AGENTIC, None, SERVE + REPLAY)], extra_files={HEAD: {LIB: lib}})
    assert r.status is Status.FAIL and "chat-completions endpoint" in r.findings[0].message


def test_a_chat_endpoint_only_in_a_comment_of_the_replay_function_does_not_count():
    """The function is read as bash reads it: its body up to its closing brace, comments left out, however
    it is laid out."""
    raw = LIB_CHAT.replace("/v1/chat/completions", "/v1/completions").replace("chat\"", "completions\"")
    lib = raw.replace("{\n", "{  # replays on /v1/chat/completions (--endpoint-type chat)\n", 1)
    r = run(files=[changed(AGENTIC, None, SERVE + REPLAY)], extra_files={HEAD: {LIB: lib}})
    assert r.status is Status.FAIL and "chat-completions endpoint" in r.findings[0].message
    one_line = "function build_replay_cmd { REPLAY_CMD=\"$AIPERF_CLI profile --endpoint-type chat\"; }\n"
    assert run(files=[changed(AGENTIC, None, SERVE + REPLAY)], extra_files={HEAD: {LIB: one_line}}).status is Status.PASS


def test_library_changed_by_the_pr_is_read_at_head():
    c = ctx(files=[changed(AGENTIC, None, SERVE + REPLAY), changed(LIB, "x() {\n}\n", LIB_CHAT)])
    assert needs(check09_chat_template, c).files == ()
    assert check09_chat_template.check(c).status is Status.PASS


ENTRY = """\
dsv4-fp4-b200-dynamo-sglang-mtp:
  image: lmsysorg/sglang:{tag}
  model-prefix: dsv4
  multinode: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: "mtp"
        prefill:
          additional-settings:
          - "CONFIG_FILE=recipes/sglang/deepseek-v4/8k1k/disagg-b200-1p1d-mtp.yaml"
"""


def test_master_only_change_checks_the_recipe_it_runs():
    base, head = ENTRY.format(tag="a"), ENTRY.format(tag="b")
    kw = dict(files=[changed(MASTER, base, head)], master_base={MASTER: base}, master_head={MASTER: head})
    c = ctx(**kw)
    assert needs(check09_chat_template, c).files == ((HEAD, RECIPE),)
    missing = check09_chat_template.check(c)
    assert missing.status is Status.UNDECIDED and RECIPE in missing.reason and missing.findings[0].path == MASTER
    fetched = run(**kw, extra_files={HEAD: {RECIPE: RECIPE_HEAD + "  use_chat_template: false\n"}})
    assert fetched.status is Status.FAIL and fetched.findings[0].path == RECIPE
    good = run(**kw, extra_files={HEAD: {RECIPE: RECIPE_HEAD + "  use_chat_template: true\n"}})
    assert good.status is Status.PASS


@pytest.mark.parametrize("world", world_params())
def test_shared_world(world):
    assert_check_agrees(world, check09_chat_template)


# --- what a config runs: custom benchmarks, layered recipes, launchers, shared scripts -------------------

AGENTIC_RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/agg-gb300-tp4-mtp.yaml"
AGENTIC_SRT = "benchmarks/multi_node/agentic_srt.sh"
CUSTOM_RECIPE = """\
backend:
  type: sglang
  sglang_config:
    aggregated:
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
benchmark:
  type: custom
  command: bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh
  env:
    INFMAX_CONTAINER_WORKSPACE: /infmax-workspace
"""
SRT_CLIENT = ('INFMAX_CONTAINER_WORKSPACE="${INFMAX_CONTAINER_WORKSPACE:-/infmax-workspace}"\n'
              'source "$INFMAX_CONTAINER_WORKSPACE/benchmarks/benchmark_lib.sh"\n'
              'for c in $CONC_LIST; do\n  build_replay_cmd "$RESULT_DIR"\ndone\n')


def test_a_custom_benchmark_is_judged_by_the_script_its_command_runs():
    """`use_chat_template` means nothing for `type: custom`: the command's script is the client, found at
    its repository path, and the replay function of the library it sources is read."""
    c = ctx(files=[changed(AGENTIC_RECIPE, None, CUSTOM_RECIPE)])
    assert {p for _sha, p in needs(check09_chat_template, c).files} == {AGENTIC_SRT}
    files = [changed(AGENTIC_RECIPE, None, CUSTOM_RECIPE)]
    r = run(files=files, extra_files={HEAD: {AGENTIC_SRT: SRT_CLIENT, LIB: LIB_CHAT}})
    assert r.status is Status.PASS and "chat-completions replay (benchmarks/benchmark_lib.sh)" in r.reason
    raw = LIB_CHAT.replace("/v1/chat/completions", "/v1/completions").replace("chat\"", "completions\"")
    bad = run(files=files, extra_files={HEAD: {AGENTIC_SRT: SRT_CLIENT, LIB: raw}})
    assert bad.status is Status.FAIL and (bad.findings[0].path, bad.findings[0].line) == (AGENTIC_SRT, 4)
    missing = run(files=files, extra_files={HEAD: {AGENTIC_SRT: None}})
    assert missing.status is Status.UNDECIDED and missing.findings[0].message.startswith("cannot decide:")


LAYERED = RECIPE_HEAD.replace("name:", "base:\n  name:", 1)


def test_a_layered_recipe_is_read_variant_by_variant():
    base = ("base:\n  backend:\n    sglang_config:\n      decode: {speculative-algo: EAGLE, speculative-num-steps: 3}\n"
            "  benchmark:\n    type: sa-bench\n    use_chat_template: true\n"
            "zip_override_lowlat:\n  name: [a, b]\n")
    assert run(files=[changed(RECIPE, None, base)]).status is Status.PASS
    off = base + "override_raw:\n  benchmark:\n    use_chat_template: false\n"
    r = run(files=[changed(RECIPE, None, off)])
    decided(r, Status.FAIL, (RULE, RECIPE, 12), only=True)
    assert "override_raw" in r.findings[0].message  # the variant it names


SERVER = "benchmarks/multi_node/amd_utils/server_sglang.sh"
SHARED = ('DECODE_MTP_SIZE="${DECODE_MTP_SIZE:-0}"\n'
          'if [ "$DECODE_MTP_SIZE" -gt 0 ]; then MTP="--speculative-num-steps $DECODE_MTP_SIZE"; fi\n'
          'python3 -m sglang.launch_server --speculative-algorithm EAGLE $MTP &\n')
AMD_MASTER = "configs/amd-master.yaml"
AMD_ENTRY = """\
dsv4-fp4-mi355x-sglang-disagg:
  model-prefix: dsv4
  precision: fp4
  runner: mi355x-disagg
  framework: sglang-disagg
  multinode: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: "{spec}"
        decode:
          additional-settings:
          - "DECODE_MTP_SIZE={size}"
"""


def test_speculative_flags_in_a_shared_launcher_count_only_through_a_config_that_turns_them_on():
    entry = AMD_ENTRY.format(spec="none", size=0)
    r = run(files=[changed(SERVER, "x=1\n", SHARED), changed(AMD_MASTER, None, entry)], master_head={AMD_MASTER: entry})
    assert r.status is Status.NA and f"the speculative flags in {SERVER} are dormant" in r.reason


PER_CONFIG = "benchmarks/multi_node/dsv4_fp4_mi355x_sglang-disagg.sh"
AMD_LAUNCHER = ('SCRIPT_NAME="${EXP_NAME%%_*}_${PRECISION}_mi355x_${FRAMEWORK}.sh"\n'
                'JOB_ID=$(bash "benchmarks/multi_node/${SCRIPT_NAME}")\n')
AMD_FILES = {"configs/runners.yaml": "labels:\n  mi355x-disagg:\n  - mi355x-amds_00\n",
             "runners/launch_mi355x-amds.sh": AMD_LAUNCHER, "benchmarks/benchmark_lib.sh": "f() { :; }\n",
             PER_CONFIG: 'cd "$GITHUB_WORKSPACE/benchmarks/multi_node/amd_utils"\nbash ./server_sglang.sh\n'}


def test_the_client_is_found_where_a_server_launcher_runs_it_and_read_for_the_configs_variables():
    """A server launcher runs the client (`eval "$BENCH_CMD"`); the client passes the chat template only when
    MTP is on, which the config's DECODE_MTP_SIZE decides."""
    bench = "benchmarks/multi_node/amd_utils/bench.sh"
    server = SHARED + ('if [ "$DECODE_MTP_SIZE" -gt 0 ]; then export IS_MTP=true; else export IS_MTP=false; fi\n'
                       'BENCH_CMD="bash $SGLANG_WS_PATH/bench.sh 1 1"\neval "$BENCH_CMD"\n')
    client = ('extra=""\nif [ "$IS_MTP" = "true" ]; then extra="--use-chat-template"; fi\n'
              'run_benchmark_serving --model "$MODEL" --backend openai $extra\n')
    entry = AMD_ENTRY.format(spec="mtp", size=1)
    kw = dict(files=[changed(SERVER, "x=1\n", server), changed(AMD_MASTER, None, entry)],
              master_head={AMD_MASTER: entry}, extra_files={HEAD: {**AMD_FILES, bench: client}})
    r = run(**kw)
    assert r.status is Status.PASS and "--use-chat-template" in r.reason
    kw["extra_files"] = {HEAD: {**AMD_FILES, bench: client.replace("$extra", "")}}
    raw = run(**kw)
    assert raw.status is Status.FAIL and (raw.findings[0].path, raw.findings[0].line) == (bench, 3)


def test_a_flag_branches_the_variables_do_not_decide_is_undecided():
    head = SERVE + 'if [ "$MYSTERY" = "1" ]; then X=--use-chat-template; else X=--trust-remote-code; fi\n' \
                   "run_benchmark_serving --model m $X\n"
    r = run(files=[changed(FIXED, None, head)])
    assert r.status is Status.UNDECIDED and r.findings[0].message.startswith("cannot decide whether `run_benchmark_serving`")


def test_an_unfixed_option_value_is_not_a_missing_chat_flag():
    r = run(files=[changed(FIXED, None, SERVE + 'run_benchmark_serving --model "$MODEL" --backend vllm\n')])
    assert r.status is Status.FAIL and "drives raw completions" in r.findings[0].message


SPEEDBENCH = "benchmarks/single_node/speedbench/kimik3_fp4_b300_vllm.sh"


def test_a_dataset_that_renders_the_chat_template_counts_as_chat():
    """SpeedBench's `speed_bench` dataset renders the chat template client-side; the client here is a python
    program the script writes from a heredoc that imports vLLM's benchmark."""
    head = ('vllm serve m --speculative-config "{\\"method\\": \\"dspark\\", \\"num_speculative_tokens\\": 2}" &\n'
            'DRIVER="$RESULTS_DIR/bench.py"\ncat > "$DRIVER" <<\'PY\'\nfrom vllm.benchmarks.serve import main\nPY\n'
            'HELP="$(python3 "$DRIVER" --help=all)"\n'
            'python3 "$DRIVER" --model m --dataset-name speed_bench --num-prompts -1\n')
    r = run(files=[changed(SPEEDBENCH, None, head)])
    assert r.status is Status.PASS and "speed_bench" in r.reason
    raw = run(files=[changed(SPEEDBENCH, None, head.replace("speed_bench", "random"))])
    assert raw.status is Status.FAIL and raw.findings[0].line == 7 and "python3 …/bench.py" in raw.findings[0].message


def test_an_eval_arm_written_the_other_way_round_is_read_as_bash_reads_it():
    """`[ "true" = "$EVAL_ONLY" ]` is the eval arm whichever side the literal is on: its raw client is not the
    benchmark's (one bash reader decides branches for checks 9 and 11)."""
    head = SERVE + 'if [ "true" = "${EVAL_ONLY:-false}" ]; then\n' + CLIENT + "\nelse\n" + CLIENT \
        + " \\\n    --use-chat-template\nfi\n"
    assert run(files=[changed(FIXED, None, head)]).status is Status.PASS
    swapped = head.replace('"true" = "${EVAL_ONLY:-false}"', '"false" = "${EVAL_ONLY:-false}"')
    assert run(files=[changed(FIXED, None, swapped)]).status is Status.FAIL
