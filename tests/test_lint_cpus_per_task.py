"""recipe-cpus-per-task: sbatch cpus-per-task must fit the runner SKU's cores."""

from __future__ import annotations

from checks.lint import cpus_per_task as rule
from checks.result import Severity
from tests.test_lint_recipes import L_CPUS, RECIPE_PATH, lint_ctx, master_yaml, recipe_yaml


def found(c):
    return [(f.path, f.line, f.severity) for f in rule.check(c)]


def test_grace_core_count_on_an_x86_runner_is_a_warning():
    [f] = rule.check(lint_ctx(recipe_yaml(gpu_type="b200", gpn=8), master_yaml(runner="b200-nscale")))
    assert (f.path, f.line, f.rule, f.severity) == (RECIPE_PATH, L_CPUS, rule.ID, Severity.WARNING)
    assert "exceeds the 112 cores of a b200 node (x86, runner b200-nscale" in f.message
    assert "request at most 112" in f.message


def test_the_master_runner_wins_over_the_recipe_gpu_type():
    assert found(lint_ctx(recipe_yaml(gpu_type="gb200"), master_yaml(runner="h200-cw"))) == [
        (RECIPE_PATH, L_CPUS, Severity.WARNING)]


def test_gpu_type_is_used_without_a_master_entry():
    assert found(lint_ctx(recipe_yaml(gpu_type="b300", gpn=8))) == [(RECIPE_PATH, L_CPUS, Severity.WARNING)]


def test_fits_or_unknown_sku_passes():
    assert found(lint_ctx(recipe_yaml(), master_yaml(runner="gb200"))) == []
    assert found(lint_ctx(recipe_yaml(cpus="112", gpu_type="b200", gpn=8))) == []
    assert found(lint_ctx(recipe_yaml(gpu_type="mi355x", gpn=8), master_yaml(runner="cluster:mi355x-amds"))) == []


def test_malformed_values_do_not_crash():
    assert found(lint_ctx(recipe_yaml(cpus="lots", gpu_type="b200"))) == []
    text = recipe_yaml(gpu_type="b200").replace('sbatch_directives:\n  cpus-per-task: "144"\n  mem: "0"\n',
                                                 "sbatch_directives: [144]\n\n\n")
    assert found(lint_ctx(text)) == []
    assert found(lint_ctx("sbatch_directives: {cpus-per-task: [\n")) == []
