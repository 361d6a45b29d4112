"""The perf-changelog.yaml rules: pr-link, append-only file, known config keys."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts.changelog import expand_keys
from checks.facts.masterconfig import MasterConfig
from checks.lint import changelog_append_only, changelog_pr_link, changelog_unknown_key
from checks.result import Severity
from tests.builders import changed, ctx
from tests.test_lint_recipes import MASTER, OTHER, master_yaml

PATH = "perf-changelog.yaml"
REPO_PULL = "https://github.com/SemiAnalysisAI/InferenceX/pull"  # builders: repo SemiAnalysisAI/InferenceX, PR 100


def entry(keys: str, pr: int | None, text: str = "Change") -> str:
    link = f"  pr-link: {REPO_PULL}/{pr}\n" if pr is not None else ""
    return f"- config-keys:\n    - {keys}\n  description:\n    - \"{text}\"\n{link}\n"


A = entry("other-config", 1, "first")  # lines 1-6
B = entry("other-config", 2, "second")  # lines 7-12
BASE = A + B
L_THIRD = 13  # first line of an entry appended after A and B


def changelog_ctx(head: str, base: str = BASE):
    return ctx(files=[changed(PATH, base, head)],
               master_head={MASTER: master_yaml() + OTHER}, master_base={MASTER: master_yaml() + OTHER})


def found(rule, c):
    return [(f.path, f.line, f.severity) for f in rule.check(c)]


# --- changelog-pr-link --------------------------------------------------------------


def test_appended_entry_linking_this_pr_passes():
    c = changelog_ctx(BASE + entry("dsv4-fp4-gb200-dynamo-sglang-mtp", 100))
    assert found(changelog_pr_link, c) == []


def test_missing_pr_link_is_a_warning_on_the_entry():
    [f] = changelog_pr_link.check(changelog_ctx(BASE + entry("other-config", None)))
    assert (f.path, f.line, f.rule, f.severity) == (PATH, L_THIRD, changelog_pr_link.ID, Severity.WARNING)
    assert f"add `pr-link: {REPO_PULL}/100`" in f.message


def test_link_to_another_pr_or_repository_is_a_warning_on_the_key():
    [f] = changelog_pr_link.check(changelog_ctx(BASE + entry("other-config", 2, "copied")))
    assert (f.line, f.severity) == (L_THIRD + 4, Severity.WARNING)
    assert "names SemiAnalysisAI/InferenceX#2" in f.message and f"set it to {REPO_PULL}/100" in f.message
    fork = BASE + entry("other-config", 100).replace("SemiAnalysisAI/InferenceX", "someone/fork")
    assert found(changelog_pr_link, changelog_ctx(fork)) == [(PATH, L_THIRD + 4, Severity.WARNING)]
    not_a_pull = BASE + entry("other-config", 100).replace(f"{REPO_PULL}/100", "see slack")
    assert "is not a pull request link" in next(changelog_pr_link.check(changelog_ctx(not_a_pull))).message


def test_pr_link_malformed_changelog_does_not_crash():
    assert found(changelog_pr_link, changelog_ctx(BASE + "- config-keys: [\n")) == []
    assert found(changelog_pr_link, ctx(files=[changed("other.yaml", None, "a: 1\n")])) == []


# --- changelog-append-only-file -------------------------------------------------------


def test_appending_at_the_end_passes():
    assert found(changelog_append_only, changelog_ctx(BASE + entry("other-config", 100))) == []
    assert found(changelog_append_only, changelog_ctx(entry("other-config", 100), base=None)) == []


def test_entry_inserted_between_historical_ones_is_a_warning_on_it():
    [f] = changelog_append_only.check(changelog_ctx(A + entry("other-config", 100) + B))
    assert (f.path, f.line, f.rule, f.severity) == (PATH, 7, changelog_append_only.ID, Severity.WARNING)
    assert "move it to the end of the file" in f.message


def test_editing_a_historical_entry_is_an_error_on_the_edit():
    [f] = changelog_append_only.check(changelog_ctx(entry("other-config", 1, "rewritten") + B))
    assert (f.line, f.severity) == (1, Severity.ERROR)
    assert "edits the historical entry at base line 1 (other-config;" in f.message


def test_deleting_a_historical_entry_is_an_error_where_it_was():
    [f] = changelog_append_only.check(changelog_ctx(B))
    assert (f.line, f.severity) == (1, Severity.ERROR) and "is deleted here" in f.message


def test_moving_a_historical_entry_is_an_error_on_its_new_place():
    [f] = changelog_append_only.check(changelog_ctx(B + A))
    assert (f.line, f.severity) == (1, Severity.ERROR)
    assert "moves the historical entry at base line 7" in f.message


def test_append_only_malformed_changelog_does_not_crash():
    assert found(changelog_append_only, changelog_ctx("key: value\n" + BASE)) == []


# --- changelog-unknown-config-key -----------------------------------------------------


def test_known_keys_and_globs_pass():
    c = changelog_ctx(BASE + entry("dsv4-fp4-gb200-*", 100))
    assert found(changelog_unknown_key, c) == []


def test_unknown_key_is_an_error_on_its_line():
    [f] = changelog_unknown_key.check(changelog_ctx(BASE + entry("dsv4-fp4-gb200-dynamo-sglang-mpt", 100)))
    assert (f.path, f.line, f.rule, f.severity) == (PATH, L_THIRD + 1, changelog_unknown_key.ID, Severity.ERROR)
    assert f"matches no config defined at head in {MASTER}" in f.message


def test_unknown_key_ignores_history_and_malformed_entries():
    history = entry("retired-config", 1) + B
    assert found(changelog_unknown_key, changelog_ctx(history + entry("other-config", 100), base=history)) == []
    assert found(changelog_unknown_key, changelog_ctx(BASE + "- config-keys: [\n")) == []
    no_masters = ctx(files=[changed(PATH, BASE, BASE + entry("nothing", 100))])
    assert found(changelog_unknown_key, no_masters) == []


_KEY_PIECES = ["k", "k1", "a-b", "*", "?", "[", "]", "[k", "1]", "-", "x"]
_keys = st.lists(st.sampled_from(_KEY_PIECES), min_size=1, max_size=4).map("".join)


@settings(max_examples=500, deadline=None)
@given(_keys, st.lists(st.lists(_keys, max_size=4), min_size=1, max_size=3))
def test_a_key_is_defined_exactly_when_it_matches_a_config_key(key, files):
    configs = {f"c{n}.yaml": MasterConfig(f"c{n}.yaml", "".join(f"{k}:\n  a: 1\n# {key}\n" for k in keys))
               for n, keys in enumerate(files)}
    keys = [k for cfg in configs.values() for k in cfg.keys()]
    assert changelog_unknown_key._defined(key, configs) == bool(expand_keys([key], keys))
