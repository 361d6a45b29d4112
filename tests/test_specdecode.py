"""The spec-decode settings and inventory behind checks 9 and 11 (the shell reading is tested in test_shell)."""

from __future__ import annotations

from checks.facts import runs, spec_settings
from checks.facts import specdecode as sd
from checks.facts.bash import Script
from checks.facts.yamlload import load
from tests.builders import HEAD, changed, ctx, sound

AGENTIC = "benchmarks/single_node/agentic/glm5.2_fp4_mi355x_sglang_mtp.sh"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-mtp.yaml"
MASTER = "configs/amd-master.yaml"


def test_eval_only_branches():
    text = "\n".join([
        'if [ "${EVAL_ONLY:-false}" = "true" ]; then',
        "  A=1",
        "else",
        "  A=2",
        "fi",
        'if [ "$EVAL_ONLY" != "true" ]; then',
        "  B=1",
        "fi",
    ])
    eval_only = spec_settings.eval_only_lines(Script(text))
    flags = {n: n in eval_only for n in range(1, 9)}
    assert flags[2] is True and flags[4] is False and flags[7] is False


def test_script_settings_vllm_json_with_variables_and_eval_branch():
    text = "\n".join([
        "SPEC=3",
        "AL=2.49",
        'if [ "${EVAL_ONLY:-false}" = "true" ]; then',
        '  CFG="{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": $SPEC}"',
        "else",
        '  CFG="{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": $SPEC, '
        '\\"rejection_sample_method\\": \\"synthetic\\", \\"synthetic_acceptance_length\\": $AL}"',
        "fi",
        'vllm serve m --speculative-config "$CFG"',
    ])
    configs, sims = spec_settings.script_settings(Script(text), "x.sh")
    assert [(c.line, c.engine, c.method, c.num_tokens, c.eval_only, c.synthetic) for c in configs] == [
        (4, "vllm", "mtp", 3, True, False), (6, "vllm", "mtp", 3, False, True)]
    assert [(s.knob, s.raw, s.line) for s in sims] == [("synthetic_acceptance_length", "2.49", 6)]


def test_script_settings_sglang_flags_and_env():
    text = "export SGLANG_SIMULATE_ACC_LEN=2.99\npython3 -m sglang.launch_server \\\n" \
           "  --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1\n"
    configs, sims = spec_settings.script_settings(Script(text), "x.sh")
    assert [(c.engine, c.method, c.num_tokens) for c in configs] == [("sglang", "mtp", 3)]
    assert sims[0].knob == "SGLANG_SIMULATE_ACC_LEN" and sims[0].length == 2.99


def test_eagle3_and_draft_length_from_draft_tokens():
    text = "--speculative-algorithm EAGLE3 --speculative-draft-model-path lmsys/x-eagle3 " \
           "--speculative-num-draft-tokens 5\n"
    (config,), _ = spec_settings.script_settings(Script(text), "x.sh")
    assert (config.method, config.num_tokens) == ("eagle3", 4)


def test_trtllm_heredoc_config_and_off_by_one():
    text = "\n".join([
        "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.61",
        "cat > extra.yml <<EOF",
        "speculative_config:",
        "  decoding_type: MTP",
        "  num_nextn_predict_layers: 5",
        "EOF",
        "trtllm-serve m --extra_llm_api_options extra.yml",
    ])
    configs, sims = spec_settings.script_settings(Script(text), "x.sh")
    assert [(c.engine, c.method, c.num_tokens, c.line) for c in configs] == [("trtllm", "mtp", 5, 4)]
    assert sims[0].length == 3.61


def test_recipe_settings():
    doc = load("\n".join([
        "backend:",
        "  type: sglang",
        "  decode_environment:",
        "    SGLANG_SIMULATE_ACC_LEN: '2.49'",
        "  sglang_config:",
        "    decode:",
        "      speculative-algo: EAGLE",
        "      speculative-num-steps: 3",
    ]))
    configs, sims = spec_settings.recipe_settings(doc, RECIPE)
    assert [(c.line, c.method, c.num_tokens) for c in configs] == [(7, "mtp", 3)]
    assert [(s.knob, s.raw, s.line) for s in sims] == [("SGLANG_SIMULATE_ACC_LEN", "2.49", 4)]
    assert spec_settings.recipe_engine(doc) == "sglang"


def test_thinking_mode():
    assert spec_settings.thinking_mode('X=\'{"enable_thinking": false}\'') == "thinking_off"
    assert spec_settings.thinking_mode('SGLANG_DEFAULT_THINKING: "0"') == "thinking_off"
    assert spec_settings.thinking_mode('SGLANG_DEFAULT_THINKING: "1"') == "thinking_on"
    assert spec_settings.thinking_mode("# enable_thinking: false (comment)") == "thinking_on"


def test_inventory_of_a_changed_agentic_script():
    script = "python3 -m sglang.launch_server --speculative-algorithm EAGLE --speculative-num-steps 5\n"
    inv = sd.inventory(ctx(files=[changed(AGENTIC, None, script)]))
    (unit,) = inv.units
    assert (unit.kind, unit.agentic, unit.engine, unit.model_prefix, unit.changed) == (
        "script", True, "sglang", "glm5.2", True)
    assert unit.anchor == 1


def test_non_spec_files_are_not_in_the_inventory():
    inv = sd.inventory(ctx(files=[changed("benchmarks/single_node/fixed_seq_len/x_fp8_h200.sh", None, "vllm serve m\n")]))
    assert inv.units == () and inv.unlocated == ()


MASTER_MULTI = """\
dsv4-fp4-b200-dynamo-sglang-agentic-mtp:
  model-prefix: dsv4
  precision: fp4
  runner: b200
  framework: dynamo-sglang
  multinode: true
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        conc-list: [1]
        prefill:
          additional-settings:
          - "SYNTHETIC_ACCEPTANCE=true"
          - "SYNTHETIC_ACCEPTANCE_LENGTH=2.49"
          - "CONFIG_FILE=recipes/sglang/deepseek-v4/8k1k/disagg-mtp.yaml"
"""


def test_recipe_takes_prefix_agentic_and_synthetic_length_from_its_master_point():
    recipe = "backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algo: EAGLE\n" \
             "      speculative-num-steps: 3\n"
    inv = sd.inventory(ctx(files=[changed(RECIPE, None, recipe)], master_head={MASTER: MASTER_MULTI}))
    (unit,) = inv.units
    assert (unit.model_prefix, unit.agentic) == ("dsv4", True)
    assert [(s.knob, s.raw, s.path, s.line) for s in unit.simulations] == [
        ("SYNTHETIC_ACCEPTANCE_LENGTH", "2.49", MASTER, 15)]


SINGLE_ENTRY = """\
kimik3-fp4-mi355x-vllm-agentic-mtp:
  image: vllm/vllm-openai-rocm:nightly
  model-prefix: kimik3
  precision: fp4
  runner: cluster:mi355x-amds
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 8, conc-list: [1], spec-decoding: mtp }
"""


NO_LAUNCHER = {"configs/runners.yaml": None, ".github/configs/runners.yaml": None,
               "runners/launch_mi355x-amds.sh": None}


def test_master_only_change_wants_the_launcher_and_the_scripts_named_after_the_entry():
    """Asked for up front: the runners config, the launcher of the runner, and the scripts the launcher most
    likely picks (so a round is saved when it picks one of them)."""
    base = SINGLE_ENTRY.replace("nightly", "old")
    c = ctx(files=[changed(MASTER, base, SINGLE_ENTRY)], master_base={MASTER: base}, master_head={MASTER: SINGLE_ENTRY})
    inv = sd.inventory(c)
    assert inv.units == ()
    assert set(c.missing.files) == {(HEAD, p) for p in (
        "configs/runners.yaml", ".github/configs/runners.yaml", "benchmarks/single_node/agentic/kimik3_fp4_mi355x_vllm_mtp.sh",
        "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh", "runners/launch_mi355x-amds.sh")}
    (u,) = inv.unlocated
    assert (u.key, u.agentic, u.line) == ("kimik3-fp4-mi355x-vllm-agentic-mtp", True, 11)


LAUNCHER = """\
SPEC_SUFFIX=$([[ "$SPEC_DECODING" == "mtp" ]] && printf '_mtp' || printf '')
BENCH_BASE="benchmarks/single_node/${SCENARIO_SUBDIR}${EXP_NAME%%_*}_${PRECISION}_mi355x"
BENCH_SCRIPT="${BENCH_BASE}_${FRAMEWORK}${SPEC_SUFFIX}.sh"
if [[ ! -f "$BENCH_SCRIPT" ]]; then
    BENCH_SCRIPT="${BENCH_BASE}${SPEC_SUFFIX}.sh"
fi
docker run --rm --entrypoint=/bin/bash -v "$GITHUB_WORKSPACE:/workspace" "$IMAGE" "$BENCH_SCRIPT"
"""


def test_the_launcher_picks_the_script_for_the_points_variables():
    """The launcher is run with the point's variables; its `-f` fallback is answered from the repository."""
    base = SINGLE_ENTRY.replace("nightly", "old")
    script = 'vllm serve m --speculative-config \'{"method": "dspark", "num_speculative_tokens": 2}\'\n'
    runners = "labels:\n  cluster:mi355x-amds:\n  - mi355x-amds_00\n"
    c = ctx(files=[changed(MASTER, base, SINGLE_ENTRY)], master_base={MASTER: base}, master_head={MASTER: SINGLE_ENTRY},
            extra_files={HEAD: {"configs/runners.yaml": runners, "runners/launch_mi355x-amds.sh": LAUNCHER,
                                "benchmarks/single_node/agentic/kimik3_fp4_mi355x_vllm_mtp.sh": None,
                                "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh": script}})
    (unit,) = sd.inventory(c).units
    assert unit.path == "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh"
    (run,) = runs.runs(c, c.changed_entries[0])
    assert [(t.path, t.how) for t in run.scripts] == [(unit.path, "runners/launch_mi355x-amds.sh:7")]


def test_master_only_change_uses_the_fallback_script_when_fetched():
    base = SINGLE_ENTRY.replace("nightly", "old")
    script = 'vllm serve m --speculative-config \'{"method": "dspark", "num_speculative_tokens": 2}\'\n'
    c = ctx(files=[changed(MASTER, base, SINGLE_ENTRY)], master_base={MASTER: base}, master_head={MASTER: SINGLE_ENTRY},
            extra_files={HEAD: {"benchmarks/single_node/agentic/kimik3_fp4_mi355x_vllm_mtp.sh": None,
                                "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh": script, **NO_LAUNCHER}})
    inv = sd.inventory(c)
    (unit,) = inv.units
    assert (unit.path, unit.changed, unit.agentic, unit.engine) == (
        "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh", False, True, "vllm")
    assert inv.unlocated == () and not c.missing


def test_inventory_is_deterministic():
    script = "--speculative-algorithm EAGLE --speculative-num-steps 5\n"
    c1 = ctx(files=[changed(AGENTIC, None, script), changed(RECIPE, None, "name: x-mtp\n")])
    c2 = ctx(files=[changed(RECIPE, None, "name: x-mtp\n"), changed(AGENTIC, None, script)])
    assert sd.inventory(c1) == sd.inventory(c2)


# --- hostile input: the four checks never raise and stay fast ------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from checks.rules import (  # noqa: E402
    check08_architecture,
    check09_chat_template,
    check10_engine_patches,
    check11_golden_al,
)

CHECKS = (check08_architecture, check09_chat_template, check10_engine_patches, check11_golden_al)
_ALPHABET = st.sampled_from(list("abcEAGLE_$\"'{}[]()=:;#\\<>-/. \n\t0123456789")
                            + ["<<EOF\n", "\nEOF\n", "--speculative-algorithm ", "--hf-overrides ",
                               "SGLANG_SIMULATE_ACC_LEN=", "\"num_speculative_tokens\": ", "build_replay_cmd",
                               "if [ \"$EVAL_ONLY\" = \"true\" ]; then\n", "fi\n", "git apply ", "speculative-algo: ",
                               "benchmark:\n  use_chat_template: ", "spec-decoding: mtp", "CONFIG_FILE=recipes/"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join), st.lists(_ALPHABET, max_size=80).map("".join))
def test_checks_never_raise_on_arbitrary_content(script, recipe):
    c = ctx(files=[changed(AGENTIC, "x\n", script), changed(RECIPE, None, recipe),
                   changed(MASTER, "a: 1\n", recipe)], master_base={MASTER: "a: 1\n"}, master_head={MASTER: recipe})
    for module in CHECKS:
        sound(module, c)


def test_pathological_lines_stay_linear():
    import time

    hostile = "\n".join([
        "A='$B$B$B$B$B$B$B$B$B$B'", "B='$C$C$C$C$C$C$C$C$C$C'", "C='$D$D$D$D$D$D$D$D$D$D'", "D='xxxxxxxxxx'",
        "vllm serve m --hf-overrides \"$A\"", "-" * 200_000, "pip " + "x " * 50_000,
        "python3 - <<PY\n" * 2_000, "ARR=(\n--use-chat-template\n)\n" + "run_benchmark_serving \"${ARR[@]}\"\n" * 2_000,
    ])
    c = ctx(files=[changed(AGENTIC, None, hostile + "\n--speculative-algorithm EAGLE\n")])
    start = time.monotonic()
    for module in CHECKS:
        module.check(c)
    assert time.monotonic() - start < 20
