"""The one rule registry: checks and lint rules alike; deterministic, deduplicated lint findings; merged
evidence; fail closed."""

from __future__ import annotations

from dataclasses import replace

from checks.engine import evaluate
from checks.lint import car_v2, master_recipe_parity
from checks.registry import CHECKS, LINT, RULES
from checks.result import Finding, Severity, Status, Verdict
from checks.rule import Rule
from tests.builders import HEAD
from tests.test_lint_recipes import CAR_ABSENT, RECIPE_PATH, lint_ctx, master_yaml, recipe_yaml


def lint_findings(c) -> list[Finding]:
    return list(evaluate(c, LINT).lint_findings)


def test_every_rule_has_an_id_a_row_a_severity_a_check_function_and_documentation():
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert [r.row for r in CHECKS] == list(range(13)) and {r.row for r in LINT} == {13}
    for rule in RULES:
        assert isinstance(rule.severity, Severity) and callable(rule.check) and rule.module.__doc__
    for rule in LINT:
        doc = rule.module.__doc__
        assert rule.id in doc.splitlines()[0] and "Passes" in doc and "Fails" in doc


def test_run_is_sorted_and_deduplicated():
    c = lint_ctx(recipe_yaml(car=CAR_ABSENT, chat="false", container="other"), master_yaml())
    findings = lint_findings(c)
    assert findings == sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.severity.value, f.message))
    assert {f.rule for f in findings} == {car_v2.ID, master_recipe_parity.ID, "spec-decode-chat-template"}
    assert lint_findings(c) == findings


def test_the_rules_ask_for_the_evidence_they_need():
    c = lint_ctx(None, master_yaml())
    evaluate(c, LINT)
    assert c.missing.files == (
        (HEAD, ".github/configs/runners.yaml"), (HEAD, RECIPE_PATH), (HEAD, "configs/runners.yaml"))
    c = lint_ctx(recipe_yaml(), master_yaml())
    evaluate(c, LINT)
    assert not c.missing


def _broken(ctx):
    raise RuntimeError("bug")


def test_a_lint_rule_that_raises_fails_closed_on_a_changed_file():
    rules = (replace(LINT[0], id="broken-rule", check=_broken),)
    [f] = lint_findings_of(lint_ctx(recipe_yaml()), rules)
    assert f == Finding(RECIPE_PATH, 1, "broken-rule", Severity.ERROR, f.message)
    assert "RuntimeError: bug" in f.message
    assert lint_findings_of(lint_ctx(None), rules) == []


def test_a_check_that_raises_fails_closed_on_its_row():
    v = evaluate(lint_ctx(recipe_yaml()), (replace(CHECKS[4], check=_broken),))
    [row] = v.results
    assert (row.number, row.status) == (4, Status.FAIL)
    assert row.reason == "internal error while checking (RuntimeError: bug); fails closed"


def lint_findings_of(c, rules: tuple[Rule, ...]) -> list[Finding]:
    return list(evaluate(c, rules).lint_findings)


def test_the_lint_check_run_is_advice_unless_the_repository_makes_it_blocking():
    from checks.policy import Policy

    error = Finding("r.yaml", 3, car_v2.ID, Severity.ERROR, "m")
    warning = Finding("r.yaml", 4, car_v2.ID, Severity.WARNING, "m")

    def conclusion(findings, policy) -> str:
        return Verdict("h", None, None, (), lint_findings=tuple(findings),
                       lint_blocking=policy.lint == "blocking").lint_conclusion

    assert conclusion([warning], Policy()) == "success"
    assert conclusion([error, warning], Policy()) == "neutral"
    assert conclusion([error], Policy(lint="blocking")) == "failure"
    assert Policy.from_yaml("lint: maybe\n")[1] == (
        ".github/signoff-bot.yml:1: lint must be one of advice, blocking; ignored, the default applies",)
