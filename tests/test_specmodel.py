"""The model of a speculative config, read as its engine reads it: one regression test per kind of misread.

Each kind is written as a small synthetic config (no copy of the shared history): the value the run gets
reaches the launch through a variable, an arm, a library, a master setting, a table or another spelling;
the bot must read it as bash and the engine do, and reject a config only for a value it did read.
"""

from __future__ import annotations

from checks.facts import engines, specmodel
from checks.result import Status
from checks.rules import check11_golden_al
from tests.builders import BASE, HEAD, changed, ctx

GLM = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_sglang_mtp.sh"
TRT = "benchmarks/single_node/agentic/minimaxm3_fp4_b200_trt_mtp.sh"
VLLM = "benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh"
ATOM = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh"
LIB = "benchmarks/spec_lib.sh"
MASTER = "configs/amd-master.yaml"
CURVES = {
    "golden_al_distribution/glm5.2_mtp.yaml": "glm-5.2:\n  thinking_on:\n    3: 2.99\n    5: 3.61\n"
                                              "  thinking_off:\n    3: 3.10\n",
    "golden_al_distribution/minimaxm3_eagle3.yaml": "m:\n  thinking_on:\n    3: 2.83\n",
    "golden_al_distribution/minimaxm3_eagle3_gqa.yaml": "m:\n  thinking_on:\n    3: 2.78\n",
}
SERVE = "python3 -m sglang.launch_server --model-path m --speculative-algorithm EAGLE --speculative-num-steps {k} &\n"


def check(files, **kw):
    kw.setdefault("policy", CURVES)
    return check11_golden_al.check(ctx(files=files, **kw))


def glm(head: str, **kw):
    return check([changed(GLM, None, head)], **kw)


# --- indirection followed -------------------------------------------------------------------------------

def test_the_al_set_per_draft_length_in_a_case_arm_keyed_by_the_default():
    head = ('K="${NUM_SPEC_TOKENS:-3}"\ncase "$K" in\n  3) AL=2.99 ;;\n  5) AL=3.61 ;;\nesac\n'
            'export SGLANG_SIMULATE_ACC_LEN="$AL"\n' + SERVE.format(k="$K"))
    assert glm(head).status is Status.PASS
    r = glm(head.replace("2.99", "3.04"))
    assert r.status is Status.FAIL and (r.findings[0].path, r.findings[0].line) == (GLM, 6)


def test_an_arm_the_variables_do_not_decide_pairs_each_target_with_its_draft_length():
    head = ('if [[ "$MYSTERY" == 1 ]]; then K=3; AL=2.99; else K=5; AL=3.61; fi\n'
            'export SGLANG_SIMULATE_ACC_LEN=$AL\n' + SERVE.format(k="$K"))
    assert glm(head).status is Status.PASS
    assert glm(head.replace("3.61", "3.66")).status is Status.FAIL  # one arm off by 0.05
    assert glm(head.replace("K=5", "K=4")).status is Status.FAIL  # a draft length changed without its target


def test_a_sourced_library_sets_the_target():
    lib = "enable_simulated_acceptance() {\n  export SGLANG_SIMULATE_ACC_LEN=\"$1\"\n}\nGOLDEN_GLM_K3=2.99\n"
    head = ('source "$(dirname "$0")/../../spec_lib.sh"\nenable_simulated_acceptance "$GOLDEN_GLM_K3"\n'
            + SERVE.format(k=3))
    assert glm(head, extra_files={HEAD: {LIB: lib}}).status is Status.PASS
    r = glm(head, extra_files={HEAD: {LIB: lib.replace("2.99", "3.04")}})
    assert r.status is Status.FAIL and (r.findings[0].path, r.findings[0].line) == (LIB, 2)


def test_a_table_indexed_by_the_draft_length():
    head = ("K=3\nALS=(1 1.8 2.4 2.99 3.3 3.61)\nexport SGLANG_SIMULATE_ACC_LEN=${ALS[$K]}\n" + SERVE.format(k="$K"))
    assert glm(head).status is Status.PASS
    assert glm(head.replace("K=3", "K=5")).status is Status.PASS
    assert glm(head.replace("2.99 3.3", "2.94 3.3")).status is Status.FAIL


ENTRY = """\
glm5.2-fp4-mi355x-sglang-agentic-mtp:
  image: lmsysorg/sglang:v1
  model: zai-org/GLM-5.2
  model-prefix: glm5.2
  runner: mi355x
  precision: fp4
  framework: sglang
  scenarios:
    agentic-coding:
    - search-space:
      - tp: 8
        spec-decoding: mtp
        additional-settings:
        - "SPEC_AL={al}"
        - "SPEC_STEPS=3"
"""
ABSENT = {"configs/runners.yaml": None, ".github/configs/runners.yaml": None, "runners/launch_mi355x.sh": None}


def test_a_master_entrys_settings_reach_the_script():
    head = "export SGLANG_SIMULATE_ACC_LEN=$SPEC_AL\n" + SERVE.format(k="$SPEC_STEPS")
    for al, status in (("2.99", Status.PASS), ("3.04", Status.FAIL)):
        entry = ENTRY.format(al=al)
        r = check([changed(MASTER, None, entry), changed(GLM, None, head)], master_head={MASTER: entry},
                  extra_files={HEAD: ABSENT})
        assert r.status is status, r.reason


# --- the draft actually configured, from an options file the script writes ----------------------------------

TRT_HEAD = """\
DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA"
OPTIONS="$RESULT_DIR/extra.yml"
export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={accepted}
cat > "$OPTIONS" <<EOF
speculative_config:
  decoding_type: Eagle3
  max_draft_len: 3
  speculative_model_dir: $DRAFT_MODEL
EOF
trtllm-serve serve m --extra_llm_api_options "$OPTIONS" &
"""


def test_the_curve_of_the_draft_named_in_a_variable_and_an_options_file():
    r = check([changed(TRT, None, TRT_HEAD.format(accepted="1.78"))])
    assert r.status is Status.PASS and "minimaxm3_eagle3_gqa.yaml" in r.reason
    plain = check([changed(TRT, None, TRT_HEAD.format(accepted="1.83"))])
    assert plain.status is Status.FAIL and "golden AL is 2.78" in plain.reason  # not the plain EAGLE3 curve


# --- another spelling of the same knob ----------------------------------------------------------------------

def vllm(fields: str) -> str:
    return ("vllm serve m --speculative-config "
            f"'{{\"method\": \"mtp\", \"num_speculative_tokens\": 3, \"rejection_sample_method\": \"synthetic\", {fields}}}'\n")


def test_a_rate_is_the_same_target_as_a_length():
    assert check([changed(VLLM, None, vllm('"synthetic_acceptance_rate": 0.6633'))]).status is Status.PASS
    assert check([changed(VLLM, None, vllm('"synthetic_acceptance_rates": [0.9, 0.65, 0.44]'))]).status is Status.PASS
    r = check([changed(VLLM, None, vllm('"synthetic_acceptance_rate": 0.70'))])
    assert r.status is Status.FAIL and "synthetic_acceptance_rate=0.6633" in r.reason
    atom = "python3 -m atom.entrypoints.openai_server --model m --method mtp --num-speculative-tokens 3 " \
           "--spec-decode-acceptance-rate {r} &\n"
    assert check([changed(ATOM, None, atom.format(r="0.6633"))]).status is Status.PASS
    assert check([changed(ATOM, None, atom.format(r="0.7"))]).status is Status.FAIL


def test_a_target_computed_by_awk_bc_python_printf_and_arithmetic():
    computed = [
        "AL=$(awk 'BEGIN { printf \"%.2f\", 1 + 0.6633 * 3 }')",
        "AL=$(echo \"1.99 + 1\" | bc)",
        "AL=$(python3 -c 'print(round(1 + 0.6633 * 3, 2))')",
        "AL=$(printf '%.2f' 2.9899)",
        "AL=2.$(( 90 + 9 ))",
        "printf -v AL '%.2f' 2.9899",
        ': "${AL:=2.99}"',
        'read -r AL <<< "2.99"',
        'AL=$(bc <<< "1.99 + 1")',
    ]
    for line in computed:
        head = f"{line}\nexport SGLANG_SIMULATE_ACC_LEN=$AL\n" + SERVE.format(k=3)
        assert glm(head).status is Status.PASS, line
    trt = TRT_HEAD.replace("export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={accepted}",
                           'AL=2.78\nexport TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(echo "$AL - 1" | bc)')
    assert check([changed(TRT, None, trt)]).status is Status.PASS


def test_an_unknown_acceptance_knob_is_undecided_not_real_acceptance():
    r = check([changed(VLLM, None, vllm('"synthetic_acceptance_target": 2.99'))])
    assert r.status is Status.UNDECIDED and "synthetic_acceptance_target" in r.reason
    r = glm("export SGLANG_SIMULATE_ACCEPT_LENGTH=2.99\n" + SERVE.format(k=3))
    assert r.status is Status.UNDECIDED and "SGLANG_SIMULATE_ACCEPT_LENGTH" in r.reason
    assert r.findings[0].undecided


# --- eval-only twins -----------------------------------------------------------------------------------------

def test_an_eval_arm_written_the_other_way_round_is_not_the_throughput_arm():
    head = ('if [ "true" = "$EVAL_ONLY" ]; then\n  echo eval\nelse\n  export SGLANG_SIMULATE_ACC_LEN=2.99\nfi\n'
            + SERVE.format(k=3))
    assert glm(head).status is Status.PASS
    swapped = head.replace('"true" = "$EVAL_ONLY"', '"false" = "$EVAL_ONLY"')  # the eval arm made the throughput one
    assert glm(swapped).status is Status.FAIL


def test_an_eval_twin_recipe_is_not_a_throughput_config():
    recipe = "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/disagg-mtp-eval.yaml"
    text = "backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algorithm: EAGLE\n" \
           "      speculative-num-steps: 3\n"
    r = check([changed(recipe, None, text)])
    assert r.status is Status.NA  # not a speculative config the PR submits for a benchmark


# --- the model itself ----------------------------------------------------------------------------------------

def test_the_model_names_engine_draft_thinking_and_evidence():
    head = "export SGLANG_SIMULATE_ACC_LEN=2.99\n" + SERVE.format(k=3)
    (read,) = specmodel.model(ctx(files=[changed(GLM, None, head)], policy=CURVES)).reads
    assert (read.engine, read.method, read.draft_length, read.acceptance, read.throughput) == (
        "sglang", "mtp", 3, "simulated", True)
    assert read.thinking == "thinking_on" and read.thinking_why.startswith("assumed thinking_on")
    assert [(p.knob, p.length_at(3), p.path, p.line) for p in read.pins] == [("SGLANG_SIMULATE_ACC_LEN", 2.99, GLM, 1)]
    off = head.replace("&\n", "--chat-template-kwargs '{\"enable_thinking\": false}' &\n")
    (read,) = specmodel.model(ctx(files=[changed(GLM, None, off)], policy=CURVES)).reads
    assert read.thinking == "thinking_off" and "enable_thinking" in read.thinking_why
    assert glm(off.replace("2.99", "3.10")).status is Status.PASS


def test_every_knob_of_the_table_is_documented_and_converts_its_target():
    assert all(k.doc and k.means for k in engines.KNOBS)
    assert abs(engines.to_length("accepted", "1.78", None) - 2.78) < 1e-9
    assert abs(engines.to_length("rate", "0.5", 4) - 3.0) < 1e-9
    assert engines.to_length("rate", "0.5", None) is None
    assert abs(engines.to_length("rates", "[0.9, 0.5]", 2) - 2.4) < 1e-9
    assert engines.spelled("accepted", 2.78, 3) == "1.78" and engines.spelled("rate", 2.5, 3) == "0.5"
    assert engines.unknown_acceptance_knob("synthetic_acceptance_target")
    assert not engines.unknown_acceptance_knob("synthetic_acceptance_length")
    assert not engines.unknown_acceptance_knob("trust-remote-code")


def test_a_model_table_read_by_the_server_script_the_benchmark_script_runs():
    server = "benchmarks/single_node/agentic/sglang_server.sh"
    table = ('declare -A GOLDEN_AL=([glm5.2]=2.99 [dsv4]=2.49)\n'
             'export SGLANG_SIMULATE_ACC_LEN="${GOLDEN_AL[$MODEL_PREFIX]}"\n' + SERVE.format(k="$STEPS"))
    head = 'export MODEL_PREFIX=glm5.2 STEPS=3\nbash "$(dirname "$0")/sglang_server.sh"\n'
    r = glm(head, extra_files={HEAD: {server: table}})
    assert r.status is Status.PASS and "SGLANG_SIMULATE_ACC_LEN=2.99" in r.reason
    r = glm(head, extra_files={HEAD: {server: table.replace("2.99", "2.49")}})
    assert r.status is Status.FAIL and r.findings[0].path == server


EVAL_ENTRY = """\
glm5.2-fp4-gb300-dynamo-sglang-agentic-mtp:
  model-prefix: glm5.2
  multinode: true
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        prefill:
          additional-settings:
          - "{name}=recipes/sglang/glm5.2/agentic/disagg-mtp-accuracy.yaml"
"""


def test_a_recipe_named_by_eval_config_file_only_is_not_a_throughput_config():
    recipe = "benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/disagg-mtp-accuracy.yaml"
    text = "backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algorithm: EAGLE\n" \
           "      speculative-num-steps: 3\n"
    entry = EVAL_ENTRY.format(name="EVAL_CONFIG_FILE")
    r = check([changed(recipe, None, text)], master_head={MASTER: entry}, master_base={MASTER: entry})
    assert r.status is Status.NA
    entry = EVAL_ENTRY.format(name="CONFIG_FILE")  # a benchmark config: real acceptance is rejected
    r = check([changed(recipe, None, text)], master_head={MASTER: entry}, master_base={MASTER: entry})
    assert r.status is Status.FAIL and "SGLANG_SIMULATE_ACC_LEN=2.99" in r.reason


def test_a_speculative_config_the_reader_cannot_build_is_undecided_not_real_acceptance():
    r = check([changed(VLLM, None, 'SPEC=$(jq -nc --arg al "$AL" \'{method: "mtp"}\')\n'
                                   'vllm serve m --speculative-config "$SPEC"\n')])
    assert r.status is Status.UNDECIDED and "cannot follow" in r.reason
    partly = vllm('"synthetic_acceptance_length": $AL').replace("'{", '"{').replace("}'", '}"').replace('"', '\\"')
    partly = partly.replace('\\"{', '"{').replace('}\\"', '}"')
    r = check([changed(VLLM, None, partly)])
    assert r.status is Status.UNDECIDED and "cannot read the pinned acceptance length" in r.reason


def test_vllm_dotted_and_underscored_flags_are_the_same_config():
    head = ("vllm serve m --speculative_config.method mtp --speculative-config.num_speculative_tokens 3 "
            "--speculative-config.rejection_sample_method synthetic "
            "--speculative-config.synthetic_acceptance_length {al}\n")
    assert check([changed(VLLM, None, head.format(al="2.99"))]).status is Status.PASS
    assert check([changed(VLLM, None, head.format(al="3.04"))]).status is Status.FAIL



README = "golden_al_distribution/README.md"
RATE_DOC = ("# Golden curves\n\nSGLang also takes the target as a rate: `SGLANG_SIMULATE_ACC_RATE` is the mean "
            "acceptance rate over the k draft tokens, (AL - 1) / k.\n")


def test_a_spelling_the_golden_readme_documents_is_read_as_documented():
    head = "export SGLANG_SIMULATE_ACC_RATE={r}\n" + SERVE.format(k=3)
    documented = {BASE: {README: RATE_DOC}}
    r = glm(head.format(r="0.6633"), extra_files=documented)
    assert r.status is Status.PASS and "SGLANG_SIMULATE_ACC_RATE=0.6633 (AL 2.99)" in r.reason
    assert glm(head.format(r="0.70"), extra_files=documented).status is Status.FAIL
    undocumented = glm(head.format(r="0.6633"), extra_files={BASE: {README: "# Golden curves\n"}})
    assert undocumented.status is Status.UNDECIDED and "SGLANG_SIMULATE_ACC_RATE" in undocumented.reason


def test_options_written_per_branch_and_by_echo_pair_with_their_targets():
    branches = ('if [[ "$MYSTERY" == 1 ]]; then\n  K=3; ACC=1.78\nelse\n  K=4; ACC=2.02\nfi\n'
                "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$ACC\n"
                'cat > opts.yml <<EOF\nspeculative_config:\n  decoding_type: Eagle3\n  max_draft_len: $K\n'
                "  speculative_model_dir: Inferact/MiniMax-M3-EAGLE3-GQA\nEOF\n"
                "trtllm-serve serve m --config opts.yml &\n")
    curves = {**CURVES, "golden_al_distribution/minimaxm3_eagle3_gqa.yaml": "m:\n  thinking_on:\n    3: 2.78\n    4: 3.02\n"}
    assert check([changed(TRT, None, branches)], policy=curves).status is Status.PASS
    assert check([changed(TRT, None, branches.replace("2.02", "2.07"))], policy=curves).status is Status.FAIL
    echoed = ("export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78\n"
              "echo 'speculative_config: {decoding_type: Eagle3, max_draft_len: 3, "
              "speculative_model_dir: Inferact/MiniMax-M3-EAGLE3-GQA}' > opts.yml\n"
              "trtllm-serve serve m --extra_llm_api_options opts.yml &\n")
    r = check([changed(TRT, None, echoed)], policy=curves)
    assert r.status is Status.PASS and "minimaxm3_eagle3_gqa.yaml" in r.reason


SIBLING_ENTRY = """\
dsv4-fp4-gb300-dynamo-sglang-agentic-mtp:
  model-prefix: dsv4
  multinode: true
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        prefill:
          additional-settings:
          - "CONFIG_FILE=recipes/sglang/deepseek-v4/agentic/disagg-a-mtp.yaml"
"""


def test_a_recipe_no_entry_runs_yet_takes_the_model_of_its_directory():
    recipe = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-b-mtp.yaml"
    text = ("backend:\n  type: sglang\n  decode_environment:\n    SGLANG_SIMULATE_ACC_LEN: '{al}'\n"
            "  sglang_config:\n    decode:\n      speculative-algorithm: EAGLE\n      speculative-num-steps: 3\n")
    curves = {**CURVES, "golden_al_distribution/dsv4_mtp.yaml": "deepseek-v4-pro:\n  thinking_on:\n    3: 2.49\n"}
    kw = dict(policy=curves, master_head={MASTER: SIBLING_ENTRY}, master_base={MASTER: SIBLING_ENTRY})
    assert check([changed(recipe, None, text.format(al="2.49"))], **kw).status is Status.PASS
    r = check([changed(recipe, None, text.format(al="2.54"))], **kw)
    assert r.status is Status.FAIL and r.findings[0].path == recipe
    alone = check([changed(recipe, None, text.format(al="2.49"))], policy=curves)
    assert alone.status is Status.UNDECIDED and "cannot read the model" in alone.reason
