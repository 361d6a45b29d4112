"""Check 11: agentic spec-decode configs simulate acceptance at the golden AL."""

from __future__ import annotations

import pytest

from checks.result import Status
from checks.rules import check11_golden_al
from checks.rules.check11_golden_al import RULE_MISMATCH, RULE_UNSIMULATED
from tests.builders import HEAD, SIGNOFF_HEAD, changed, comment, ctx, decided, needs
from tests.conftest import assert_check_agrees, world_params

GLM = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_sglang_mtp.sh"
K3 = "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh"
TRT = "benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh"
FIXED = "benchmarks/single_node/fixed_seq_len/glm5.2_fp4_mi355x_sglang_mtp.sh"
NEW = "benchmarks/single_node/agentic/newmodel_fp4_b200_vllm_mtp.sh"
MASTER = "configs/amd-master.yaml"

CURVES = {
    "golden_al_distribution/glm5.2_mtp.yaml": "glm-5.2-fp8:\n  thinking_on:\n    3: 2.99\n    5: 3.61\n",
    "golden_al_distribution/kimik3_dspark.yaml":
        "# key = num_speculative_tokens\nkimi-k3:\n  thinking_on:\n    2: 2.45\n",
    "golden_al_distribution/kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml":
        "# speculative-config: draft_sample_method=probabilistic | rejection_sample_method=block\n"
        "kimi-k3:\n  thinking_on:\n    2: 2.51\n",
    "golden_al_distribution/qwen3.5_mtp.yaml":
        "q:\n  thinking_on:\n    3: 3.39\n  thinking_off:\n    3: 3.33\n",
}

SGLANG = "python3 -m sglang.launch_server \\\n    --speculative-algorithm EAGLE \\\n    --speculative-num-steps {n}\n"


def k3_script(al: str, draft: str = "probabilistic") -> str:
    return ("SPEC_NUM_TOKENS=\"${SPEC_NUM_TOKENS:-2}\"\n"
            f"AL={al}\n"
            'if [ "${EVAL_ONLY:-false}" = "true" ]; then\n'
            "  CFG=\"{\\\"method\\\":\\\"dspark\\\",\\\"num_speculative_tokens\\\":$SPEC_NUM_TOKENS,"
            f"\\\"draft_sample_method\\\":\\\"{draft}\\\",\\\"rejection_sample_method\\\":\\\"block\\\"}}\"\n"
            "else\n"
            "  CFG=\"{\\\"method\\\":\\\"dspark\\\",\\\"num_speculative_tokens\\\":$SPEC_NUM_TOKENS,"
            f"\\\"draft_sample_method\\\":\\\"{draft}\\\",\\\"rejection_sample_method\\\": \\\"synthetic\\\", "
            "\\\"synthetic_acceptance_length\\\": $AL}\"\n"
            "fi\n"
            'vllm serve "$MODEL" --speculative-config "$CFG"\n')


def run(files, **kw):
    kw.setdefault("policy", CURVES)
    return check11_golden_al.check(ctx(files=files, **kw))


def signoff(detail: str):
    return comment(f"{SIGNOFF_HEAD}\n- [x] item\n\n### Additional detail section:\n{detail}\n")


def test_na_without_agentic_spec_decoding():
    r = run([changed(FIXED, None, SGLANG.format(n=3))])
    assert r.status is Status.NA and "no agentic" in r.reason


def test_real_acceptance_in_an_agentic_config_fails_with_the_golden_value():
    r = run([changed(GLM, None, "set -x\n" + SGLANG.format(n=5))])
    decided(r, Status.FAIL, (RULE_UNSIMULATED, GLM, 3), only=True)
    (f,) = r.findings
    assert "SGLANG_SIMULATE_ACC_LEN=3.61" in f.message and "glm5.2_mtp.yaml thinking_on/5" in f.message


def test_sglang_simulated_at_the_golden_value_passes():
    head = "export SGLANG_SIMULATE_ACC_LEN=2.99\nexport SGLANG_SIMULATE_ACC_METHOD=match-expected\n" + SGLANG.format(n=3)
    r = run([changed(GLM, None, head)])
    assert r.status is Status.PASS and "glm5.2_mtp.yaml thinking_on/3" in r.reason


def test_wrong_golden_al_fails_naming_config_pinned_and_golden():
    head = "export SGLANG_SIMULATE_ACC_LEN=3.2\n" + SGLANG.format(n=3)
    r = run([changed(GLM, None, head)])
    decided(r, Status.FAIL, (RULE_MISMATCH, GLM, 1), only=True)
    (f,) = r.findings
    assert "glm5.2_fp4_mi355x_sglang_mtp.sh" in f.message and "pins AL 3.2" in f.message and "golden AL is 2.99" in f.message


def test_probabilistic_draft_sampler_selects_the_probabilistic_curve():
    assert run([changed(K3, None, k3_script("2.51"))]).status is Status.PASS
    plain = run([changed(K3, None, k3_script("2.45"))])
    assert plain.status is Status.FAIL and "golden AL is 2.51" in plain.reason


def test_default_draft_sampler_uses_the_plain_curve():
    assert run([changed(K3, None, k3_script("2.45", draft="greedy"))]).status is Status.PASS


def test_eval_only_real_acceptance_is_ignored():
    r = run([changed(K3, None, k3_script("2.51"))])
    assert r.status is Status.PASS and "synthetic_acceptance_length=2.51" in r.reason


def test_synthetic_length_without_synthetic_sampler_fails():
    head = 'vllm serve m --speculative-config \'{"method": "dspark", "num_speculative_tokens": 2, ' \
           '"synthetic_acceptance_length": 2.51}\'\n'
    r = run([changed(K3, None, head)])
    assert r.status is Status.FAIL and "without \"rejection_sample_method\": \"synthetic\"" in r.reason


TRT_SCRIPT = "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={v}\ncat > extra.yml <<EOF\nspeculative_config:\n" \
             "  decoding_type: MTP\n  num_nextn_predict_layers: 5\nEOF\ntrtllm-serve m --extra_llm_api_options extra.yml\n"


def test_trtllm_counts_draft_tokens_only():
    assert run([changed(TRT, None, TRT_SCRIPT.format(v="2.61"))]).status is Status.PASS
    r = run([changed(TRT, None, TRT_SCRIPT.format(v="3.61"))])
    assert r.status is Status.FAIL
    assert "pins AL 4.61" in r.findings[0].message and "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.61" in r.findings[0].message


def test_thinking_off_uses_the_thinking_off_values():
    script = "benchmarks/single_node/agentic/qwen3.5_fp8_h200_vllm_mtp.sh"
    head = "vllm serve m --default-chat-template-kwargs '{\"enable_thinking\": false}' --speculative-config " \
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3, \"rejection_sample_method\": \"synthetic\", " \
           "\"synthetic_acceptance_length\": 3.33}'\n"
    assert run([changed(script, None, head)]).status is Status.PASS


def new_model(al: str) -> str:
    return ('vllm serve m --speculative-config \'{"method": "mtp", "num_speculative_tokens": 3, '
            f'"rejection_sample_method": "synthetic", "synthetic_acceptance_length": {al}}}\'\n')


def test_missing_curve_without_stated_source_fails():
    r = run([changed(NEW, None, new_model("2.7"))], comments=[signoff("- nothing about AL")])
    assert r.status is Status.FAIL and r.findings[0].rule == "golden-al-no-curve"
    assert "no committed golden curve for newmodel mtp" in r.reason


def test_missing_curve_with_stated_source_passes():
    detail = "- AL 2.7 from the pending golden-curve collection run https://github.com/o/r/actions/runs/1"
    r = run([changed(NEW, None, new_model("2.7"))], comments=[signoff(detail)])
    assert r.status is Status.PASS and "source stated in the sign-off" in r.reason


def test_synthetic_acceptance_on_a_non_agentic_config_fails():
    head = "export SGLANG_SIMULATE_ACC_LEN=2.99\n" + SGLANG.format(n=3)
    r = run([changed(FIXED, None, head)])
    assert r.status is Status.FAIL
    assert (r.findings[0].path, r.findings[0].line, r.findings[0].rule) == (FIXED, 1, "synthetic-acceptance-non-agentic")


def test_documented_exception_allows_non_agentic_synthetic():
    head = "export SGLANG_SIMULATE_ACC_LEN=2.99\n" + SGLANG.format(n=3)
    detail = "- glm5.2_fp4_mi355x_sglang_mtp.sh: synthetic AL is a sanctioned exception for this bring-up"
    r = run([changed(FIXED, None, head)], comments=[signoff(detail)])
    assert r.status is Status.NA


FIXED_ENTRY = """\
dsv4-fp4-b200-dynamo-vllm-mtp:
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
{settings}          - "CONFIG_FILE=recipes/vllm/deepseek-v4/8k1k/disagg-mtp.yaml"
"""


def test_master_synthetic_acceptance_on_a_fixed_seq_len_entry_fails():
    base = FIXED_ENTRY.format(settings="")
    head = FIXED_ENTRY.format(settings='          - "SYNTHETIC_ACCEPTANCE=true"\n'
                                      '          - "SYNTHETIC_ACCEPTANCE_LENGTH=2.49"\n')
    r = run([changed(MASTER, base, head)], master_base={MASTER: base}, master_head={MASTER: head})
    assert r.status is Status.FAIL
    assert [(f.path, f.line) for f in r.findings] == [(MASTER, 12), (MASTER, 13)]
    assert "dsv4-fp4-b200-dynamo-vllm-mtp: SYNTHETIC_ACCEPTANCE=true" in r.reason


AGENTIC_ENTRY = """\
dsv4-fp4-b200-dynamo-sglang-agentic-mtp:
  model-prefix: dsv4
  multinode: true
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        prefill:
          additional-settings:
          - "SYNTHETIC_ACCEPTANCE=true"
          - "SYNTHETIC_ACCEPTANCE_LENGTH={al}"
          - "CONFIG_FILE=recipes/sglang/deepseek-v4/agentic/disagg-mtp.yaml"
"""
AGENTIC_RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-mtp.yaml"
RECIPE_TEXT = "backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algo: EAGLE\n" \
              "      speculative-num-steps: 3\n"


def test_agentic_recipe_simulated_through_its_master_point():
    curves = {**CURVES, "golden_al_distribution/dsv4_mtp.yaml": "deepseek-v4-pro:\n  thinking_on:\n    3: 2.49\n"}
    for al, status in (("2.49", Status.PASS), ("2.27", Status.FAIL)):
        head = AGENTIC_ENTRY.format(al=al)
        r = run([changed(AGENTIC_RECIPE, None, RECIPE_TEXT), changed(MASTER, None, head)],
                policy=curves, master_head={MASTER: head})
        assert r.status is status
    decided(r, Status.FAIL, (RULE_MISMATCH, MASTER, 11), only=True)  # the master point's pin


def test_non_numeric_pinned_value_is_undecided():
    head = "export SGLANG_SIMULATE_ACC_LEN=nan\n" + SGLANG.format(n=3)
    r = run([changed(GLM, None, head)])
    assert r.status is Status.UNDECIDED and "cannot read the pinned acceptance length" in r.reason


def test_malformed_agentic_recipe_is_undecided_with_its_line():
    r = run([changed(AGENTIC_RECIPE, None, "speculative-algo: EAGLE\nbackend: [\n")])
    assert r.status is Status.UNDECIDED and r.findings[0].path == AGENTIC_RECIPE and r.findings[0].line >= 2


def test_agentic_entry_whose_script_is_missing_is_undecided():
    entry = ("glm5.2-fp4-mi355x-sglang-agentic-mtp:\n  model-prefix: glm5.2\n  precision: fp4\n"
             "  runner: mi355x\n  framework: sglang\n  scenarios:\n    agentic-coding:\n"
             "    - search-space:\n      - { tp: 4, spec-decoding: mtp }\n")
    r = run([changed(MASTER, None, entry)], master_head={MASTER: entry},
            extra_files={HEAD: {"benchmarks/single_node/agentic/glm5.2_fp4_mi355x_sglang_mtp.sh": None,
                                    "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_mtp.sh": None}})
    assert r.status is Status.UNDECIDED and (r.findings[0].path, r.findings[0].line) == (MASTER, 9)  # its point
    assert "glm5.2_fp4_mi355x_sglang_mtp.sh" in r.reason


def test_only_the_curves_of_agentic_configs_are_asked_for():
    files = [changed(GLM, None, SGLANG.format(n=5)), changed(K3, None, k3_script("2.51")),
             changed(FIXED, None, SGLANG.format(n=3))]
    assert needs(check11_golden_al, ctx(files=files)).golden == ("glm5.2_mtp", "kimik3_dspark")
    assert needs(check11_golden_al, ctx(files=[changed(FIXED, None, SGLANG.format(n=3))])).golden == ()


def test_a_stem_names_its_plain_curve_and_its_variants_only():
    policy = ctx(files=[]).policy
    assert [p for p in CURVES if policy.is_golden_curve(p, "kimik3_dspark")] == list(CURVES)[1:3]
    assert not policy.is_golden_curve("golden_al_distribution/kimik3_dspark2.yaml", "kimik3_dspark")
    assert not policy.is_golden_curve("golden_al_distribution/old/glm5.2_mtp.yaml", "glm5.2_mtp")
    assert not policy.is_policy_file("golden_al_distribution/glm5.2_mtp.yaml")  # read only when asked for


def test_deterministic():
    files = [changed(GLM, None, SGLANG.format(n=5)), changed(FIXED, None, "export SGLANG_SIMULATE_ACC_LEN=1\n")]
    assert run(files) == run(list(reversed(files)))


@pytest.mark.parametrize("world", world_params())
def test_shared_world(world):
    assert_check_agrees(world, check11_golden_al)


# --- the AL as the run reads it; the draft method actually configured -------------------------------

MINIMAX = "benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh"
MINIMAX_CURVES = {**CURVES,
                  "golden_al_distribution/minimaxm3_eagle3.yaml": "m:\n  thinking_on:\n    3: 2.83\n    4: 3.10\n",
                  "golden_al_distribution/minimaxm3_eagle3_gqa.yaml": "m:\n  thinking_on:\n    3: 2.78\n    4: 3.02\n"}
BRANCHES = """\
DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3{gqa}"
DRAFT_MODEL_PATH="${{DRAFT_MODEL_PATH:-/data/models/${{DRAFT_MODEL##*/}}}}"
if [[ "${{DCP_SIZE:-1}}" -gt 1 ]]; then
    NUM_SPEC_TOKENS=3
    SYNTHETIC_ACCEPT_LEN={al3}
else
    NUM_SPEC_TOKENS=4
    SYNTHETIC_ACCEPT_LEN={al4}
fi
SPEC_CONFIG=$(printf \\
    '{{"method":"eagle3","model":"%s","num_speculative_tokens":%d,"rejection_sample_method":"synthetic","synthetic_acceptance_length":%.2f}}' \\
    "$DRAFT_MODEL_PATH" "$NUM_SPEC_TOKENS" "$SYNTHETIC_ACCEPT_LEN")
VLLM_CMD=(vllm serve "$MODEL" --speculative-config "$SPEC_CONFIG")
"${{VLLM_CMD[@]}}" &
"""


def test_the_al_is_read_through_the_branch_that_sets_it_and_printf():
    """The pinned AL is the one the run gets: set beside its draft length (the branch the config's variables
    choose; the default without them) and formatted by printf."""
    r = run([changed(MINIMAX, None, BRANCHES.format(gqa="-GQA", al3="2.78", al4="3.02"))], policy=MINIMAX_CURVES)
    assert r.status is Status.PASS and "synthetic_acceptance_length=3.02 = golden minimaxm3_eagle3_gqa.yaml" in r.reason
    wrong = run([changed(MINIMAX, None, BRANCHES.format(gqa="-GQA", al3="2.78", al4="3.10"))], policy=MINIMAX_CURVES)
    assert wrong.status is Status.FAIL and "golden AL is 3.02" in wrong.reason


def test_the_curve_is_the_one_of_the_draft_method_configured():
    """An EAGLE3 draft without GQA is held to the plain EAGLE3 curve."""
    r = run([changed(MINIMAX, None, BRANCHES.format(gqa="", al3="2.83", al4="3.10"))], policy=MINIMAX_CURVES)
    assert r.status is Status.PASS and "minimaxm3_eagle3.yaml thinking_on/4" in r.reason


def test_atoms_simulated_acceptance_knob_pins_the_al():
    atom = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh"
    head = ("python3 -m atom.entrypoints.openai_server --model m --method mtp --num-speculative-tokens 3 "
            "--spec-decode-acceptance-length {al} &\n")
    assert run([changed(atom, None, head.format(al="2.99"))]).status is Status.PASS
    r = run([changed(atom, None, head.format(al="3.10"))])
    assert r.status is Status.FAIL and "spec-decode-acceptance-length=3.10" in r.reason


AGENTX = "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentx-v1/disagg-mtp.yaml"
DISAGG = """\
backend:
  type: sglang
  prefill_environment: {}
  decode_environment:
    SGLANG_SIMULATE_ACC_LEN: "2.99"
  sglang_config:
    prefill:
      speculative-algorithm: NEXTN
      speculative-num-steps: 5
    decode:
      speculative-algorithm: NEXTN
      speculative-num-steps: 3
"""


def test_a_disaggregated_recipe_is_held_to_its_decode_sides_settings():
    """The prefill worker's draft settings decide nothing accepted; an `agentx*` directory is agentic."""
    master = ("glm5.2-fp4-gb300-dynamo-sglang-mtp:\n  model-prefix: glm5.2\n  scenarios:\n    fixed-seq-len:\n"
              "    - search-space:\n      - spec-decoding: mtp\n        prefill:\n          additional-settings:\n"
              "          - \"CONFIG_FILE=recipes/sglang/glm5.2/agentx-v1/disagg-mtp.yaml\"\n")
    r = run([changed(AGENTX, None, DISAGG)], master_head={MASTER: master})
    assert r.status is Status.PASS and "SGLANG_SIMULATE_ACC_LEN=2.99 = golden glm5.2_mtp.yaml thinking_on/3" in r.reason
    r = run([changed(AGENTX, None, DISAGG.replace("2.99", "3.61"))], master_head={MASTER: master})
    assert r.status is Status.FAIL and "golden AL is 2.99" in r.reason
