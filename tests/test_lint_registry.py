"""The lint registry: deterministic, deduplicated findings; check mapping; merged evidence; fail closed."""

from __future__ import annotations

from types import SimpleNamespace

from checks import lint
from checks.lint import car_v2, master_recipe_parity
from checks.result import Finding, Severity
from tests.builders import HEAD
from tests.test_lint_recipes import CAR_ABSENT, RECIPE_PATH, lint_ctx, master_yaml, recipe_yaml


def test_every_rule_has_an_id_a_severity_a_check_function_and_documentation():
    ids = [rule.ID for rule in lint.RULES]
    assert len(ids) == len(set(ids))
    for rule in lint.RULES:
        assert isinstance(rule.SEVERITY, Severity) and callable(rule.check)
        assert rule.__doc__ and rule.ID in rule.__doc__.splitlines()[0]
        assert "Passes" in rule.__doc__ and "Fails" in rule.__doc__


def test_run_is_sorted_and_deduplicated():
    c = lint_ctx(recipe_yaml(car=CAR_ABSENT, chat="false", container="other"), master_yaml())
    findings = lint.run(c)
    assert findings == sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.severity.value, f.message))
    assert {f.rule for f in findings} == {car_v2.ID, master_recipe_parity.ID, "spec-decode-chat-template"}
    assert lint.run(c) == findings


def test_wants_merges_the_rules_requests():
    assert lint.wants(lint_ctx(None, master_yaml())).files == (
        (HEAD, ".github/configs/runners.yaml"), (HEAD, RECIPE_PATH), (HEAD, "configs/runners.yaml"))
    assert not lint.wants(lint_ctx(recipe_yaml(), master_yaml()))


def test_a_rule_that_raises_fails_closed_on_a_changed_file(monkeypatch):
    def boom(ctx):
        raise RuntimeError("bug")

    monkeypatch.setattr(lint, "RULES", (SimpleNamespace(ID="broken-rule", check=boom),))
    [f] = lint.run(lint_ctx(recipe_yaml()))
    assert f == Finding(RECIPE_PATH, 1, "broken-rule", Severity.ERROR, f.message)
    assert "RuntimeError: bug" in f.message
    assert lint.run(lint_ctx(None)) == []


def test_the_lint_check_run_is_advice_unless_the_repository_makes_it_blocking():
    from checks.policy import Policy

    error = Finding("r.yaml", 3, car_v2.ID, Severity.ERROR, "m")
    warning = Finding("r.yaml", 4, car_v2.ID, Severity.WARNING, "m")
    assert lint.conclusion([warning], Policy()) == "success"
    assert lint.conclusion([error, warning], Policy()) == "neutral"
    assert lint.conclusion([error], Policy(lint="blocking")) == "failure"
    assert Policy.from_yaml("lint: maybe\n")[1] == (
        ".github/signoff-bot.yml:1: lint must be one of advice, blocking; ignored, the default applies",)
