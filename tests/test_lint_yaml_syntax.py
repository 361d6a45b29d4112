"""yaml-syntax: changed YAML files must parse; the finding sits on PyYAML's line."""

from __future__ import annotations

from checks.lint import yaml_syntax as rule
from checks.result import Severity
from tests.builders import changed, ctx
from tests.test_lint_recipes import RECIPE_PATH, lint_ctx, recipe_yaml


def found(c):
    return [(f.path, f.line) for f in rule.check(c)]


def test_broken_recipe_is_reported_on_the_parser_line():
    [f] = rule.check(lint_ctx("name: x\nresources: {gpus_per_node: 4\nbackend:\n  type: sglang\n"))
    assert (f.path, f.line, f.rule, f.severity) == (RECIPE_PATH, 3, rule.ID, Severity.ERROR)
    assert "is not valid YAML" in f.message and "fix the syntax" in f.message


def test_other_yaml_files_are_checked_with_the_event_parser():
    text = "- config-keys:\n    - a\n  description: [\n- config-keys: b\n"
    c = ctx(files=[changed("perf-changelog.yaml", "- config-keys: [a]\n", text)])
    assert found(c) == [("perf-changelog.yaml", 4)]


def test_undefined_alias_is_a_finding():
    c = ctx(files=[changed("configs/x.yml", None, "a: 1\nb: *missing\n")])
    assert found(c) == [("configs/x.yml", 2)]
    assert rule.problem_of("a: &x 1\nb: *x\n") is None
    assert rule.problem_of("a: &x 1\n---\nb: *x\n") is not None


def test_an_alias_is_found_wherever_a_node_can_start_and_a_star_in_a_scalar_is_none():
    for text in ('{"a":*m}\n', "\ufeff*m\n", "x: [1,*m]\n", "? *m\n: 1\n", "--- *m\n", "a:\r  *m\n", "- - *m\n"):
        problem = rule.problem_of(text)
        assert problem is not None and "undefined alias" in problem.message, text
    assert rule.problem_of("a: CONC * (1 + n)\nb: '*m'\nc: \"x *m\"\n# *m\n") is None


def test_valid_and_non_yaml_files_pass():
    c = ctx(files=[changed("configs/x.yaml", None, "a: [1, 2]\n"), changed("run.sh", None, "a: [\n"),
                   changed("gone.yaml", "a: [\n", None)])
    assert found(c) == []
    assert found(lint_ctx(recipe_yaml())) == []


def test_oversized_file_is_refused_not_parsed():
    problem = rule.problem_of("a: 1\n" * 1_100_000)
    assert problem is not None and problem.line == 1
