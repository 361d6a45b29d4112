"""Check 9: speculative-decoding configs benchmark through the chat template."""

from __future__ import annotations

import pytest

from checks import chat_template
from checks.result import Status
from tests.builders import HEAD, changed, ctx
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
    return chat_template.check(ctx(**kw))


def test_na_without_spec_decoding():
    r = run(files=[changed("benchmarks/single_node/fixed_seq_len/x_fp8_h200.sh", None, "vllm serve m\n")])
    assert r.status is Status.NA


def test_recipe_with_chat_template_passes():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + "  use_chat_template: true\n")])
    assert r.status is Status.PASS and "use_chat_template: true" in r.reason


def test_recipe_without_chat_template_fails_at_its_benchmark_block():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD)])
    assert r.status is Status.FAIL
    (f,) = r.findings
    assert (f.path, f.line, f.rule) == (RECIPE, 8, "spec-decode-no-chat-template")
    assert r.reason.startswith(f"{RECIPE}:8 ")


def test_recipe_with_chat_template_false_fails_at_that_line():
    r = run(files=[changed(RECIPE, None, RECIPE_HEAD + "  use_chat_template: false\n")])
    assert r.status is Status.FAIL and r.findings[0].line == 11


def test_malformed_recipe_fails_with_its_line():
    r = run(files=[changed(RECIPE, None, "name: x-mtp\nbackend: [\n")])
    assert r.status is Status.FAIL and r.findings[0].path == RECIPE and r.findings[0].line >= 2


def test_script_without_chat_template_fails_naming_the_client_line():
    r = run(files=[changed(FIXED, None, SERVE + CLIENT + "\n")])
    assert r.status is Status.FAIL
    assert (r.findings[0].path, r.findings[0].line) == (FIXED, 3)
    assert "run_benchmark_serving" in r.findings[0].message


def test_script_with_use_chat_template_passes():
    r = run(files=[changed(FIXED, None, SERVE + CLIENT + " \\\n    --use-chat-template\n")])
    assert r.status is Status.PASS and "--use-chat-template" in r.reason


def test_chat_flag_through_an_argument_array():
    head = SERVE + "ARGS=(\n  --model m\n  --dsv4\n)\nrun_benchmark_serving \"${ARGS[@]}\"\n"
    assert run(files=[changed(FIXED, None, head)]).status is Status.PASS


def test_eval_only_client_is_not_the_benchmark():
    head = SERVE + 'if [ "$EVAL_ONLY" = "true" ]; then\n' + CLIENT + "\nfi\n"
    r = run(files=[changed(FIXED, None, head)])
    assert r.status is Status.FAIL and "no recognisable benchmark client" in r.findings[0].message


def test_agentic_replay_fails_closed_when_the_library_is_absent():
    c = ctx(files=[changed(AGENTIC, None, SERVE + REPLAY)])
    assert chat_template.wants(c).files == ((HEAD, LIB),)
    r = chat_template.check(c)
    assert r.status is Status.FAIL and LIB in r.reason and r.findings[0].line == 3


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
    assert chat_template.wants(c).files == ()
    assert chat_template.check(c).status is Status.PASS


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
    assert chat_template.wants(c).files == ((HEAD, RECIPE),)
    missing = chat_template.check(c)
    assert missing.status is Status.FAIL and RECIPE in missing.reason and missing.findings[0].path == MASTER
    fetched = run(**kw, extra_files={HEAD: {RECIPE: RECIPE_HEAD}})
    assert fetched.status is Status.FAIL and fetched.findings[0].path == RECIPE
    good = run(**kw, extra_files={HEAD: {RECIPE: RECIPE_HEAD + "  use_chat_template: true\n"}})
    assert good.status is Status.PASS


@pytest.mark.parametrize("world", world_params())
def test_shared_world(world):
    assert_check_agrees(world, chat_template)
