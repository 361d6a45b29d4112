"""spec-decode-chat-template: speculative-decoding recipes must benchmark through the chat template."""

from __future__ import annotations

from checks.lint import spec_decode_chat_template as rule
from tests.builders import changed, ctx
from tests.test_lint_recipes import (
    L_BENCHMARK,
    L_CHAT,
    M_SPEC,
    MASTER,
    RECIPE_PATH,
    lint_ctx,
    master_yaml,
    recipe_yaml,
)


def found(c):
    return [(f.path, f.line) for f in rule.check(c)]


def test_speculative_recipe_with_chat_template_off_fails_on_the_key():
    [f] = rule.check(lint_ctx(recipe_yaml(chat="false")))
    assert (f.path, f.line, f.rule) == (RECIPE_PATH, L_CHAT, rule.ID)
    assert "decode sets speculative-algorithm" in f.message and "use_chat_template: true" in f.message


def test_missing_key_is_srt_slurms_default_the_chat_template():
    text = recipe_yaml().replace("  use_chat_template: true\n", "")
    assert found(lint_ctx(text)) == []


def test_abbreviated_sglang_flag_counts():
    text = recipe_yaml(chat="false").replace("speculative-algorithm", "speculative-algo")
    assert found(lint_ctx(text)) == [(RECIPE_PATH, L_CHAT)]


def test_master_spec_decoding_makes_a_recipe_speculative():
    text = recipe_yaml(chat="false", spec="null")
    assert found(lint_ctx(text)) == []
    [f] = rule.check(lint_ctx(text, master_yaml(spec="mtp")))
    assert (f.path, f.line) == (RECIPE_PATH, L_CHAT)
    assert "declares spec-decoding 'mtp'" in f.message


def test_changed_master_entry_naming_an_unchanged_recipe_fails_on_spec_decoding():
    c = lint_ctx(None, master_yaml(spec="mtp"), extra={RECIPE_PATH: recipe_yaml(chat="false")})
    assert found(c) == [(MASTER, M_SPEC)]


def test_passes_with_chat_template_or_without_speculation():
    assert found(lint_ctx(recipe_yaml(), master_yaml())) == []
    assert found(lint_ctx(recipe_yaml(chat="false", spec="null"), master_yaml(spec="none"))) == []
    assert found(lint_ctx(recipe_yaml(chat="false", spec='"NONE"'))) == []


def test_malformed_files_do_not_crash():
    assert found(lint_ctx("benchmark: [\n")) == []
    text = recipe_yaml().replace('  type: "sa-bench"\n  use_chat_template: true\n', "").replace(
        "benchmark:\n", "benchmark: sa-bench\n")
    assert found(lint_ctx(text)) == [(RECIPE_PATH, L_BENCHMARK)]


def test_a_custom_benchmark_command_is_not_linted_for_use_chat_template():
    text = ("backend:\n  sglang_config:\n    decode: {speculative-algorithm: EAGLE}\n"
            "benchmark:\n  type: custom\n  command: bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh\n")
    path = "benchmarks/multi_node/srt-slurm-recipes/sglang/x/agentic/agg-mtp.yaml"
    assert list(rule.check(ctx(files=[changed(path, None, text)]))) == []


def test_an_eval_twin_recipe_is_no_benchmark_config():
    """An `*-eval*` twin no master point runs as its CONFIG_FILE is run for accuracy: its acceptance is not
    measured, so the rule leaves it alone (a twin a point benchmarks is judged)."""
    twin = RECIPE_PATH.replace(".yaml", "-eval.yaml")
    assert list(rule.check(ctx(files=[changed(twin, None, recipe_yaml(chat="false"))]))) == []
    assert [f.path for f in rule.check(ctx(files=[changed(RECIPE_PATH, None, recipe_yaml(chat="false"))]))] == [
        RECIPE_PATH]
