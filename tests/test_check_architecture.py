"""Check 8: no architecture hacks in the added server args."""

from __future__ import annotations

import pytest

from checks import architecture
from checks.result import Status
from tests.builders import changed, ctx
from tests.conftest import assert_check_agrees, world_params

SCRIPT = "benchmarks/single_node/fixed_seq_len/dsv4_fp4_mi355x_vllm.sh"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/8k1k/disagg.yaml"
BASE = "vllm serve $MODEL \\\n  --tensor-parallel-size 8 \\\n  --kv-cache-dtype fp8\n"


def run(*files):
    return architecture.check(ctx(files=list(files)))


def test_na_without_server_args():
    r = run(changed("docs/README.md", "a\n", "b\n"))
    assert r.status is Status.NA and "no server args" in r.reason


def test_plain_tuning_passes():
    head = BASE + "  --language-model-only \\\n  --max-num-seqs 512\n"
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.PASS and r.findings == ()


def test_native_rope_override_passes():
    head = BASE + "  --hf-overrides '{\"max_position_embeddings\": 262144, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}'\n"
    assert run(changed(SCRIPT, BASE, head)).status is Status.PASS


def test_indexer_skipping_hf_override_fails_with_exact_value_and_line():
    head = BASE + "  --hf-overrides '{\"index_topk_freq\": 4, \"use_index_cache\": true}'\n"
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL
    (f,) = r.findings
    assert (f.path, f.line, f.rule, f.severity.value) == (SCRIPT, 4, "arch-override", "error")
    assert "--hf-overrides {\"index_topk_freq\": 4, \"use_index_cache\": true}" in f.message
    assert "index_topk_freq, use_index_cache" in f.message
    assert r.reason.startswith(f"{SCRIPT}:4 ")


def test_override_from_an_unresolvable_variable_fails():
    head = 'HF="$1"\n' + BASE + '  --hf-overrides "$HF"\n'
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and "cannot be shown to be a native mode" in r.findings[0].message


def test_override_resolved_from_a_variable():
    head = "OVR='{\"num_hidden_layers\": 30}'\n" + BASE + '  --hf-overrides "$OVR"\n'
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and "num_hidden_layers" in r.findings[0].message


def test_sglang_model_override_args_fail():
    head = BASE + "  --json-model-override-args '{\"num_experts_per_tok\": 4}'\n"
    assert run(changed(SCRIPT, BASE, head)).status is Status.FAIL


def test_trimmed_layers_in_a_recipe_fail():
    base = "backend:\n  vllm_config:\n    decode:\n      tensor-parallel-size: 8\n"
    head = base + "      hf-overrides: {num_hidden_layers: 12}\n"
    r = run(changed(RECIPE, base, head))
    assert r.status is Status.FAIL and r.findings[0].line == 5


def test_architecture_key_set_directly_fails():
    head = "backend:\n  model_config:\n    n_routed_experts: 64\n"
    r = run(changed(RECIPE, None, head))
    assert r.status is Status.FAIL and "n_routed_experts" in r.findings[0].message and r.findings[0].line == 3


def test_config_json_edit_fails():
    head = BASE + "sed -i 's/\"num_hidden_layers\": 61/\"num_hidden_layers\": 30/' $MODEL_PATH/config.json\n"
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and r.findings[0].line == 4


def test_python_heredoc_rewriting_config_json_fails():
    head = BASE + "python3 - <<'PY'\nimport json\nc = json.load(open(p + '/config.json'))\n" \
                  "json.dump(c, open(p + '/config.json', 'w'))\nPY\n"
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and r.findings[0].line == 6


def test_skip_switch_fails():
    head = BASE + "export SGLANG_SKIP_INDEXER_LAYERS=4\n"
    assert run(changed(SCRIPT, BASE, head)).status is Status.FAIL


def test_master_config_added_setting_fails():
    base = "x:\n  image: i\n"
    head = base + "  additional-settings:\n  - \"HF_OVERRIDES={\\\"num_hidden_layers\\\": 2}\"\n"
    r = run(changed("configs/amd-master.yaml", base, head))
    assert r.status is Status.FAIL and r.findings[0].path == "configs/amd-master.yaml"


def test_only_added_lines_count():
    base = BASE + "  --hf-overrides '{\"index_topk_freq\": 4}'\n"
    head = base + "  --max-num-seqs 512\n"
    assert run(changed(SCRIPT, base, head)).status is Status.PASS


def test_comments_and_embedded_diffs_are_ignored():
    head = BASE + "# never use --hf-overrides '{\"num_hidden_layers\": 2}'\n" \
                  "cat > /tmp/p.diff <<'EOF'\ndiff --git a/x b/x\n+    num_hidden_layers: int = 2\nEOF\n"
    assert run(changed(SCRIPT, BASE, head)).status is Status.PASS


def test_deterministic():
    head = BASE + "  --hf-overrides '{\"index_topk_freq\": 4}'\n  --json-model-override-args '{\"num_experts\": 2}'\n"
    files = [changed(SCRIPT, BASE, head), changed(RECIPE, None, "a:\n  n_group: 1\n")]
    assert run(*files) == run(*files) == run(*reversed(files))


@pytest.mark.parametrize("world", world_params())
def test_shared_world(world):
    assert_check_agrees(world, architecture)
