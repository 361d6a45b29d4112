"""master-recipe-parity: master-config points must describe the recipe they run."""

from __future__ import annotations

import pytest

from checks.lint import master_recipe_parity as rule
from checks.result import Severity
from tests.builders import HEAD, needs
from tests.test_lint_recipes import (
    IMAGE,
    L_CONTAINER,
    L_DECODE_ARGS,
    L_DECODE_DPA,
    L_DECODE_TP,
    L_DECODE_WORKERS,
    L_GPUS_PER_DECODE,
    M_DECODE_DPA,
    M_DECODE_TP,
    M_DECODE_WORKERS,
    M_IMAGE,
    MASTER,
    RECIPE_PATH,
    RECIPE_REL,
    lint_ctx,
    master_yaml,
    recipe_yaml,
)


def found(c):
    return sorted((f.path, f.line) for f in rule.check(c))


def test_matching_point_and_recipe_pass():
    assert found(lint_ctx(recipe_yaml(), master_yaml())) == []


def test_worker_count_mismatch_is_reported_on_the_changed_recipe():
    [f] = rule.check(lint_ctx(recipe_yaml(), master_yaml(dw=2)))
    assert (f.path, f.line, f.rule) == (RECIPE_PATH, L_DECODE_WORKERS, rule.ID)
    assert f"{MASTER}:{M_DECODE_WORKERS}" in f.message and "make the worker counts agree" in f.message


RUNNERS = "configs/runners.yaml"
LAUNCHER = "runners/launch_gb200-nv.sh"
RUNNERS_YAML = "labels:\n  gb200:\n  - gb200-nv_0\n  - gb200-nv_1\n  h100:\n  - h100-cw_0\n"
LAUNCHER_SH = """#!/bin/bash
SQUASH_FILE="/squash/$(echo "$IMAGE" | sed 's/[\\/:@#]/_/g').sqsh"
NGINX_SQUASH_FILE="/squash/nginx.sqsh"
if [[ $FRAMEWORK == "dynamo-trt" ]]; then
    CONTAINER_KEY="nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8"
else
    CONTAINER_KEY="$IMAGE"
fi
cat > srtslurm.yaml <<EOF
default_account: "${SLURM_ACCOUNT}"
containers:
  dynamo-sglang: ${SQUASH_FILE}
  "${CONTAINER_KEY}": "${SQUASH_FILE}"
  "${IMAGE}": ${SQUASH_FILE}
  # the reverse proxy in front of the frontends
  nginx-sqsh: ${NGINX_SQUASH_FILE}
use_segment_sbatch_directive: false
EOF
"""
L_CONTAINERS = 11  # line of `containers:` in LAUNCHER_SH


def with_launcher(launcher: str | None = LAUNCHER_SH, runners: str | None = RUNNERS_YAML) -> dict:
    return {RUNNERS: runners, ".github/configs/runners.yaml": None, LAUNCHER: launcher}


def test_image_must_equal_the_recipe_container():
    [f] = rule.check(lint_ctx(recipe_yaml(container="lmsysorg/sglang:other"), master_yaml(), extra=with_launcher()))
    assert (f.path, f.line, f.severity) == (RECIPE_PATH, L_CONTAINER, Severity.ERROR)
    assert f.message.startswith(f"recipe model.container 'lmsysorg/sglang:other' is not the master image {IMAGE!r}, "
                                f"and {LAUNCHER}:{L_CONTAINERS} does not map that name")
    assert "set the recipe's model.container to the master entry's image" in f.message


@pytest.mark.parametrize("container", [
    "dynamo-sglang",  # an alias the launcher maps to the master image's squash file
    "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8",  # a value the launcher assigns the key variable
    IMAGE.replace("/", "#", 1),  # the image itself, with `#` as the registry separator
])
def test_container_aliases_the_launcher_maps_to_the_master_image_pass(container):
    assert found(lint_ctx(recipe_yaml(container=container), master_yaml(), extra=with_launcher())) == []


def test_alias_mapped_to_another_container_is_an_error_naming_the_launcher():
    [f] = rule.check(lint_ctx(recipe_yaml(container="nginx-sqsh"), master_yaml(), extra=with_launcher()))
    assert f.severity is Severity.ERROR
    assert f"{LAUNCHER}:{L_CONTAINERS} maps it to ${{NGINX_SQUASH_FILE}}, not to the master image's" in f.message


def test_hard_coded_squash_file_is_not_the_master_image():
    launcher = LAUNCHER_SH.replace("""SQUASH_FILE="/squash/$(echo "$IMAGE" | sed 's/[\\/:@#]/_/g').sqsh\"""",
                                   'SQUASH_FILE="/squash/sglang-v0.5.8.sqsh"')
    launcher = launcher.replace('  "${IMAGE}": ${SQUASH_FILE}\n', "").replace('"$IMAGE"', '"lmsysorg/sglang:v0.5.8"')
    [f] = rule.check(lint_ctx(recipe_yaml(container="dynamo-sglang"), master_yaml(), extra=with_launcher(launcher)))
    assert "maps it to ${SQUASH_FILE}, not to the master image's container" in f.message


@pytest.mark.parametrize("extra", [
    with_launcher(runners=None),  # no runners file
    with_launcher(runners="labels:\n  h100: [h100-cw_0]\n"),  # the entry's label is not in it
    with_launcher(launcher=None),  # the launcher is not in the repository
    with_launcher(launcher='#!/bin/bash\ndocker run "$IMAGE"\n'),  # a launcher that writes no container map
    {},  # not fetched
])
def test_alias_no_launcher_explains_is_a_warning_that_cannot_decide(extra):
    [f] = rule.check(lint_ctx(recipe_yaml(container="dynamo-sglang"), master_yaml(), extra=extra))
    assert (f.line, f.severity) == (L_CONTAINER, Severity.WARNING)
    assert f.message.startswith("cannot decide: recipe model.container 'dynamo-sglang' is not the master image")
    assert "no launcher of runner 'gb200' could be read" in f.message


def test_wants_the_runners_file_then_the_launchers_of_an_aliased_container():
    c = lint_ctx(recipe_yaml(container="dynamo-sglang"), master_yaml())
    # the runners files, and the launcher named after the label, which runs when the files do not list it
    assert needs(rule, c).files == ((HEAD, ".github/configs/runners.yaml"), (HEAD, RUNNERS),
                                   (HEAD, "runners/launch_gb200.sh"))
    c = lint_ctx(recipe_yaml(container="dynamo-sglang"), master_yaml(), extra={RUNNERS: RUNNERS_YAML})
    assert needs(rule, c).files == ((HEAD, LAUNCHER),)  # the first runners file decides: the other is not read
    assert needs(rule, lint_ctx(recipe_yaml(), master_yaml(), extra=with_launcher(None))).files == ()


# --- aggregated recipes -----------------------------------------------------------

AGG_RECIPE = """\
name: "agg"
model:
  path: "deepseek-v4-pro"
  container: "{image}"
resources:
  gpu_type: "gb200"
  gpus_per_node: {gpn}
  agg_nodes: {nodes}
  agg_workers: {workers}
  gpus_per_agg: {gpus}
backend:
  type: sglang
  aggregated_environment:
    PYTHONUNBUFFERED: "1"
  sglang_config:
    aggregated:
      tensor-parallel-size: {tp}
      data-parallel-size: {dp}
"""
L_AGG_WORKERS, L_AGG_GPUS, L_AGG_TP = 9, 10, 17


def agg_recipe(nodes=1, workers=1, gpus=4, tp=4, dp=1, gpn=4, image=IMAGE) -> str:
    return AGG_RECIPE.format(nodes=nodes, workers=workers, gpus=gpus, tp=tp, dp=dp, gpn=gpn, image=image)


def agg_master(pw=1, ptp=4, dw=0) -> str:
    return master_yaml(pw=pw, ptp=ptp, dw=dw, dtp=ptp)


def test_aggregated_recipe_is_described_by_the_prefill_block_and_an_empty_decode():
    assert found(lint_ctx(agg_recipe(), agg_master())) == []


def test_aggregated_worker_count_mismatch_names_agg_workers():
    [f] = rule.check(lint_ctx(agg_recipe(), agg_master(pw=2)))
    assert (f.line, f.severity) == (L_AGG_WORKERS, Severity.ERROR)
    assert f.message.startswith("prefill num-worker 2 in the master config but agg_workers 1 in the recipe")


def test_aggregated_worker_count_may_count_data_parallel_replicas():
    text = agg_recipe(nodes=4, gpus=32, tp=16, dp=2, gpn=8)
    assert found(lint_ctx(text, agg_master(pw=2, ptp=16))) == []
    assert found(lint_ctx(text, agg_master(pw=1, ptp=16))) == []
    [f] = rule.check(lint_ctx(text, agg_master(pw=3, ptp=16)))
    assert "agg_workers 1 (or 2 data-parallel replicas)" in f.message


def test_aggregated_recipe_with_master_decode_workers_is_an_error():
    [f] = rule.check(lint_ctx(agg_recipe(), agg_master(dw=1)))
    assert f.line == L_AGG_WORKERS
    assert f.message.startswith("decode num-worker 1 in the master config, but the recipe is aggregated")


def test_aggregated_pool_must_fill_its_nodes_and_match_the_engine_tp():
    [f] = rule.check(lint_ctx(agg_recipe(nodes=2), agg_master()))
    assert f.line == L_AGG_GPUS and "recipe agg: 1 workers x 4 GPUs != 2 nodes x 4 GPUs per node" in f.message
    [f] = rule.check(lint_ctx(agg_recipe(tp=2), agg_master()))
    assert f.line == L_AGG_TP
    assert f.message.startswith("prefill (the aggregated workers) tp 4 in the master config but "
                                "tensor-parallel-size 2 in the recipe")


def test_unchanged_recipe_puts_the_finding_on_the_master_line():
    c = lint_ctx(None, master_yaml(dtp=16, ddpa="true", image="lmsysorg/sglang:new"),
                 extra={RECIPE_PATH: recipe_yaml()})
    assert found(c) == [(MASTER, M_IMAGE), (MASTER, M_DECODE_TP), (MASTER, M_DECODE_DPA)]
    messages = " ".join(f.message for f in rule.check(c))
    assert f"{RECIPE_PATH}:{L_DECODE_TP}" in messages and f"{RECIPE_PATH}:{L_DECODE_DPA}" in messages


def test_recipe_must_fill_its_nodes():
    text = recipe_yaml(decode_nodes=3)  # 1 worker x 8 GPUs on 3 x 4-GPU nodes
    [f] = rule.check(lint_ctx(text, master_yaml()))
    assert (f.path, f.line) == (RECIPE_PATH, L_GPUS_PER_DECODE)
    assert "1 workers x 8 GPUs != 3 nodes x 4 GPUs per node" in f.message


def test_expert_parallel_only_compared_when_the_recipe_sets_it():
    assert found(lint_ctx(recipe_yaml(decode_ep=8), master_yaml())) == [(RECIPE_PATH, L_DECODE_TP + 1)]
    text = recipe_yaml().replace("      expert-parallel-size: 1\n      enable-dp", "      enable-dp")
    assert found(lint_ctx(text, master_yaml(dep=8))) == []


def test_one_finding_per_recipe_line_across_points():
    master = master_yaml(dw=2) + master_yaml(dw=2).replace("dsv4-fp4-gb200-dynamo-sglang-mtp:", "second-entry:")
    [f] = rule.check(lint_ctx(recipe_yaml(), master))
    assert f.message.count(MASTER) == 2


def test_selectors_missing_recipes_and_unchanged_entries_are_skipped():
    assert found(lint_ctx(None, master_yaml(dw=2, rel=RECIPE_REL + ":override_x"),
                          extra={RECIPE_PATH: recipe_yaml()})) == []
    assert found(lint_ctx(None, master_yaml(dw=2), extra={RECIPE_PATH: None})) == []
    master = master_yaml(dw=2)
    assert found(lint_ctx(None, master, master_base=master, extra={RECIPE_PATH: recipe_yaml()})) == []


def test_wants_the_recipe_a_changed_entry_names():
    assert needs(rule, lint_ctx(None, master_yaml())).files == (
        (HEAD, ".github/configs/runners.yaml"), (HEAD, RECIPE_PATH), (HEAD, RUNNERS))


def test_malformed_files_do_not_crash():
    assert found(lint_ctx("model: [\n", master_yaml())) == []
    assert found(lint_ctx("resources: 3\nbackend: {type: sglang, sglang_config: []}\n", master_yaml())) == [
        (RECIPE_PATH, 1)]  # only the container: the recipe has no model block
    point_as_list = master_yaml().replace("        decode:\n", "        decode: [1]\n        unused:\n")
    assert found(lint_ctx(recipe_yaml(), point_as_list)) == []


def test_missing_engine_flag_takes_the_sglang_default_and_the_role_line():
    text = recipe_yaml().replace("      enable-dp-attention: false\n", "")
    [f] = rule.check(lint_ctx(text, master_yaml(ddpa="true")))
    assert (f.path, f.line) == (RECIPE_PATH, L_DECODE_ARGS)
    assert "enable-dp-attention False in the recipe" in f.message
