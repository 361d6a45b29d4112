"""The one rule registry: checks and lint rules alike; deterministic, deduplicated lint findings; merged
evidence; fail closed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.rule_docs import parse
from checks.engine import evaluate
from checks.lint import car_v2, master_recipe_parity
from checks.registry import CHECKS, LINT, RULES
from checks.result import Finding, Severity, Status
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
        doc = parse(rule)  # what it enforces, why, how it decides, a passing and a failing example
        assert doc.summary.startswith(f"{rule.id}: ")


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
    assert row.internal_error.startswith("RuntimeError\n") and "in _broken" in row.internal_error  # for the log


def lint_findings_of(c, rules: tuple[Rule, ...]) -> list[Finding]:
    return list(evaluate(c, rules).lint_findings)


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("changed", [Severity.ERROR, Severity.WARNING, None])
@pytest.mark.parametrize("unchanged", [Severity.ERROR, Severity.WARNING, None])
def test_the_lint_row_and_the_lint_check_run_make_one_decision(blocking, changed, unchanged):
    """Every combination of blocking or advice, and an error, a warning or nothing on a file the PR changes
    and on one it does not: an error on a changed file FAILs the row; the check run concludes from that row
    (failure where lint blocks, neutral where it is advice); an error on an unchanged file or a warning
    changes neither."""
    from checks.policy import CONFIG_PATH
    from tests.builders import ctx as make_ctx

    findings = tuple(Finding(path, 3, car_v2.ID, severity, "m")
                     for path, severity in ((RECIPE_PATH, changed), ("other.yaml", unchanged)) if severity)
    rule = Rule(car_v2.ID, 13, "Recipe lint", Severity.ERROR, lambda c: findings, "lint")
    c = lint_ctx(recipe_yaml())
    if blocking:
        c = make_ctx(**{**{f: getattr(c.snap, f) for f in ("files", "master_base", "master_head")},
                        "policy": {**c.snap.policy, CONFIG_PATH: "lint: blocking\n"}})
    v = evaluate(c, (rule,))
    fails = changed is Severity.ERROR
    assert (v.lint.status is Status.FAIL) is fails
    assert v.lint_conclusion == ("success" if not fails else "failure" if blocking else "neutral")
    assert (v.lint_conclusion == "success") is (v.lint.status is not Status.FAIL)  # the row and the run agree
    assert (v.lint in v.rows) is blocking and v.passed is False  # no sign-off here: never PASS


def test_the_lint_setting_takes_advice_or_blocking():
    from checks.policy import Policy

    assert Policy.from_yaml("lint: maybe\n")[1] == (
        ".github/signoff-bot.yml:1: lint must be one of advice, blocking; ignored, the default applies",)
