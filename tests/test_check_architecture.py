"""Check 8: no architecture hacks in the added server args."""

from __future__ import annotations

import pytest

from checks.result import Status
from checks.rules import check08_architecture
from checks.rules.check08_architecture import RULE
from tests.builders import changed, ctx, decided
from tests.conftest import assert_check_agrees, world_params

SCRIPT = "benchmarks/single_node/fixed_seq_len/dsv4_fp4_mi355x_vllm.sh"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/8k1k/disagg.yaml"
BASE = "vllm serve $MODEL \\\n  --tensor-parallel-size 8 \\\n  --kv-cache-dtype fp8\n"


def run(*files):
    return check08_architecture.check(ctx(files=list(files)))


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
    decided(r, Status.FAIL, (RULE, SCRIPT, 4), only=True)
    (f,) = r.findings
    assert f.severity.value == "error"
    assert "--hf-overrides {\"index_topk_freq\": 4, \"use_index_cache\": true}" in f.message
    assert "index_topk_freq, use_index_cache" in f.message


def test_override_from_an_unresolvable_variable_cannot_be_decided():
    head = 'HF="$1"\n' + BASE + '  --hf-overrides "$HF"\n'
    r = run(changed(SCRIPT, BASE, head))
    decided(r, Status.UNDECIDED, (RULE, SCRIPT, 5), only=True)
    assert "`--hf-overrides $HF`" in r.reason  # what it could not read


def test_override_resolved_from_a_variable():
    head = "OVR='{\"num_hidden_layers\": 30}'\n" + BASE + '  --hf-overrides "$OVR"\n'
    r = run(changed(SCRIPT, BASE, head))
    decided(r, Status.FAIL, (RULE, SCRIPT, 1), (RULE, SCRIPT, 5), only=True)  # where it is set, where it is used
    assert all("num_hidden_layers" in f.message for f in r.findings)  # the key, as resolved


def test_sglang_model_override_args_fail():
    head = BASE + "  --json-model-override-args '{\"num_experts_per_tok\": 4}'\n"
    decided(run(changed(SCRIPT, BASE, head)), Status.FAIL, (RULE, SCRIPT, 4), only=True)


def test_trimmed_layers_in_a_recipe_fail():
    base = "backend:\n  vllm_config:\n    decode:\n      tensor-parallel-size: 8\n"
    head = base + "      hf-overrides: {num_hidden_layers: 12}\n"
    decided(run(changed(RECIPE, base, head)), Status.FAIL, (RULE, RECIPE, 5), only=True)


def test_architecture_key_set_directly_fails():
    head = "backend:\n  model_config:\n    n_routed_experts: 64\n"
    r = run(changed(RECIPE, None, head))
    decided(r, Status.FAIL, (RULE, RECIPE, 3), only=True)
    assert "n_routed_experts" in r.findings[0].message


def test_config_json_edit_fails():
    head = BASE + "sed -i 's/\"num_hidden_layers\": 61/\"num_hidden_layers\": 30/' $MODEL_PATH/config.json\n"
    decided(run(changed(SCRIPT, BASE, head)), Status.FAIL, (RULE, SCRIPT, 4), only=True)


def rewrite(*body: str) -> str:
    """BASE plus a python heredoc that loads config.json, runs `body` and writes it back (loaded on line 6)."""
    return BASE + "python3 - <<'PY'\nimport json\nc = json.load(open(p + '/config.json'))\n" + "".join(
        f"{line}\n" for line in body) + "json.dump(c, open(p + '/config.json', 'w'))\nPY\n"


def test_python_heredoc_trimming_layers_in_config_json_fails():
    r = run(changed(SCRIPT, BASE, rewrite("c['num_hidden_layers'] = 30")))
    decided(r, Status.FAIL, (RULE, SCRIPT, 6), only=True)
    assert "changing its architecture (num_hidden_layers)" in r.findings[0].message


@pytest.mark.parametrize("body, key", [
    ("c.update({'n_routed_experts': 64})", "n_routed_experts"),
    ("c.update(num_attention_heads=32)", "num_attention_heads"),
    ("c['rope_scaling']['factor'] = 2\nc.setdefault('index_topk', 512)", "index_topk"),
    ("del c['first_k_dense_replace']", "first_k_dense_replace"),
    ("d = c\nd['num_experts_per_tok'] = 4", "num_experts_per_tok"),
    ("c.pop('moe_intermediate_size')", "moe_intermediate_size"),
])
def test_every_way_of_changing_an_architecture_key_is_read(body, key):
    r = run(changed(SCRIPT, BASE, rewrite(body)))
    decided(r, Status.FAIL, (RULE, SCRIPT, 6), only=True)
    assert f"({key})" in r.findings[0].message


@pytest.mark.parametrize("body", [
    "",  # read and written back unchanged
    "c['architectures'] = ['DeepseekV3ForCausalLM']\nc['model_type'] = 'deepseek_v3'",
    "c['pard_token'] = c.get('mask_token_id')\nc.update({'eos_token_id': 2})",
    "c['rope_scaling'] = {'rope_type': 'yarn', 'factor': 4}\nc['max_position_embeddings'] = 262144",
    "if 'auto_map' in c:\n    print(len(c), sorted(c.keys()))",
])
def test_config_json_edits_of_metadata_pass(body):
    r = run(changed(SCRIPT, BASE, rewrite(body)))
    assert r.status is Status.PASS, r.reason


def test_transformers_config_objects_are_read_too():
    head = BASE + ("python3 - <<'PY'\nfrom transformers import AutoConfig\nc = AutoConfig.from_pretrained(p)\n"
                   "c.n_layer = 30\nc.save_pretrained(p)\nPY\n")
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and "rewrites the model's config.json, changing its architecture (n_layer)" in r.reason
    assert run(changed(SCRIPT, BASE, head.replace("n_layer", "model_type"))).status is Status.PASS
    r = run(changed(SCRIPT, BASE, head.replace("c.n_layer = 30", "setattr(c, 'n_layer', 30)")))
    assert r.status is Status.UNDECIDED and r.reason.startswith("cannot decide: ") and "passes c to setattr" in r.reason


def test_other_loads_in_the_program_are_not_configs():
    r = run(changed(SCRIPT, BASE, rewrite("w = torch.load('x.pt')\nw['layers.0'] = 1\nprune(w)",
                                          "c['architectures'] = ['X']")))
    assert r.status is Status.PASS, r.reason


def test_draft_checkpoint_view_adding_a_token_alias_passes():
    """A real shape (kimik3-dspark-config-compat.sh): a view of a draft checkpoint whose config.json gains the
    `pard_token` alias of its `mask_token_id`, written through a temporary file."""
    head = """#!/usr/bin/env bash
python3 - <<'PY'
import json, os
from pathlib import Path
snapshot = Path(download())
target = Path("/tmp/draft")
for source in snapshot.iterdir():
    if source.name == "config.json":
        continue
    (target / source.name).symlink_to(source)
config = json.loads((snapshot / "config.json").read_text())
mask_token_id = config.get("mask_token_id")
if config.get("pard_token") not in (None, mask_token_id):
    raise RuntimeError("pard_token disagrees")
config["pard_token"] = mask_token_id
temporary = target / "config.json.tmp"
temporary.write_text(json.dumps(config, indent=2) + "\\n")
os.replace(temporary, target / "config.json")
PY
"""
    r = run(changed("benchmarks/multi_node/srt-slurm-recipes/configs/draft-config-compat.sh", None, head))
    assert r.status is Status.PASS, r.reason


@pytest.mark.parametrize("body, why", [
    ("for k in ('num_hidden_layers',):\n    c[k] = 1", "at a key computed at run time"),
    ("c.update(other)", "from a mapping computed at run time"),
    ("trim(c)", "it passes c to trim(...)"),
    ("c['quantization_config'] = {}", "changing quantization_config, which is neither"),
    ("c = {'a': 1}", "it rebinds c"),
])
def test_config_json_edits_that_cannot_be_read_fail_as_cannot_decide(body, why):
    r = run(changed(SCRIPT, BASE, rewrite(body)))
    assert r.status is Status.UNDECIDED and r.reason.startswith(f"cannot decide: {SCRIPT}:6 rewrites the model's "
                                                           "config.json and " if "neither" not in why else
                                                           f"cannot decide: {SCRIPT}:6 rewrites")
    assert why in r.reason and r.findings[0].message.startswith("cannot decide: ")


def test_config_json_written_from_scratch_cannot_be_decided():
    head = BASE + "python3 - <<'PY'\nimport json\njson.dump({'num_layers': 2}, open(p + '/config.json', 'w'))\nPY\n"
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.UNDECIDED and "not a config read from the checkpoint" in r.reason


@pytest.mark.parametrize("line, status, text", [
    ("jq '.architectures = [\"X\"]' $MODEL_PATH/config.json > /tmp/c && mv /tmp/c $MODEL_PATH/config.json",
     Status.PASS, ""),
    ("jq '.n_group |= 1' $MODEL_PATH/config.json > /tmp/c", Status.FAIL, "changing its architecture (n_group)"),
    ("jq 'del(.quantization_config)' $MODEL_PATH/config.json > /tmp/c", Status.UNDECIDED,
     "cannot decide: "),
    ("sed -i 's/\"model_type\": \"a\"/\"model_type\": \"b\"/' $MODEL_PATH/config.json", Status.PASS, ""),
    ("cp /tmp/my_config.json $MODEL_PATH/config.json", Status.UNDECIDED, "replaces the file wholesale"),
])
def test_shell_config_json_edits_are_judged_by_their_keys(line, status, text):
    r = run(changed(SCRIPT, BASE, BASE + line + "\n"))
    assert r.status is status and text in r.reason


def test_a_violation_is_named_before_what_cannot_be_decided():
    head = 'HF="$1"\n' + BASE + '  --hf-overrides "$HF"\n  --hf-overrides \'{"num_layers": 3}\'\n'
    r = run(changed(SCRIPT, BASE, head))
    assert r.status is Status.FAIL and r.reason.startswith(f"{SCRIPT}:6 ") and r.reason.endswith("(+1 more)")


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
    assert_check_agrees(world, check08_architecture)
