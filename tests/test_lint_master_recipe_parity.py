"""master-recipe-parity: master-config points must describe the recipe they run."""

from __future__ import annotations

from checks.lint import master_recipe_parity as rule
from tests.builders import HEAD
from tests.test_lint_recipes import (
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


def test_image_must_equal_the_recipe_container():
    [f] = rule.check(lint_ctx(recipe_yaml(container="lmsysorg/sglang:other"), master_yaml()))
    assert (f.path, f.line) == (RECIPE_PATH, L_CONTAINER)
    assert "set the recipe's model.container to the master entry's image" in f.message


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
    assert rule.wants(lint_ctx(None, master_yaml())).files == ((HEAD, RECIPE_PATH),)


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
