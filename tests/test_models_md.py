"""checks.facts.models_md: deprecations read from MODELS.md's tables and dated notices."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts import models_md
from tests.conftest import SHARED_WORLDS

# A condensed MODELS.md in the shape of InferenceX's (August 2026).
MODELS = """\
# Models

## Deprecation Notice

### Monday, August 3, 2026

**Monday, August 3, 2026** is the last day for the scenarios, precisions, and recipe variants listed below.

| Model | Deprecated | Remains |
|---|---|---|
| MiniMax-M3 (`minimaxm3`) | Single-turn 8k1k | Agentic coding |
| Qwen3.5-397B-A17B (`qwen3.5`) | All **bf16** recipes, in every scenario, on NVIDIA and AMD | fp8 and fp4 recipes |

Speculative-decoding A/B retirements:

| Model | Deprecated arm | Published arm |
|---|---|---|
| DeepSeek-V4-Pro 1.6T (`dsv4`) | Agentic coding, non-MTP | Agentic coding, MTP |
| Kimi-K3 (`kimik3`) | Agentic coding, non-DSpark (deprecated from day 0) | Agentic coding, DSpark |

**Status: not yet enacted.** Every non-spec-decode agentic arm above still runs.

### Thursday, August 6, 2026

**Thursday, August 6, 2026** is the last day for the **Single-turn 8k1k** scenario on **Kimi-K2.5** (`kimik2.5`). The scenario is deprecated after that date. Combined with the Agentic coding deprecation above, the model is **fully retired after August 6, 2026**.

## Scenarios

| Scenario | ISL/OSL | Status |
|---|---|---|
| Agentic coding | Long Context | Active. |
| Single-turn 8k1k | 8192 / 1024 | Active. This is the primary fixed-sequence-length scenario. |
| Single-turn 1k1k | 1024 / 1024 | **Deprecated for all models** since 2026-07-17 ([#2263](https://github.com/x/y/pull/2263)). |

## Model support matrix

| Model architecture class | Prefix | Date added | Active scenarios | Deprecated scenarios |
|---|---|---|---|---|
| Kimi-K3 | `kimik3` | 2026-07-27 | Agentic coding (DSpark only) | Agentic coding non-DSpark arm (deprecated from day 0) |
| GLM-5 / GLM-5.1 | `glm5`, `glm5.1` | 2026-03-06 | None (retired 2026-07-18, [#2276](https://x/2276)) | Single-turn 1k1k, Single-turn 1k8k (GLM-5 only) |
| DeepSeek-V4-Pro | `dsv4` | 2026-04-24 | Single-turn 8k1k, Agentic coding | Single-turn 1k1k |
| Qwen3.5-397B-A17B | `qwen3.5` | 2026-02-16 | Single-turn 8k1k | all bf16 recipes (removed 2026-08-04, [#2493](https://x/2493)) |
"""

AUG_12 = date(2026, 8, 12)


def deprecated(md, prefix, scenario, precision="fp4", spec=False, on=AUG_12):
    return [d.line for d in md.deprecations if d.applies(prefix, scenario, precision, spec, on)]


@pytest.fixture(scope="module")
def md():
    return models_md.parse(MODELS)


def test_prefixes_and_fixed_length_scenarios(md):
    assert md.prefixes == {"kimik3", "glm5", "glm5.1", "dsv4", "qwen3.5", "minimaxm3", "kimik2.5"}
    assert md.scenario_name("fixed-seq-len", 8192, 1024) == "Single-turn 8k1k"
    assert md.scenario_name("fixed-seq-len", 1024, 1024) == "Single-turn 1k1k"
    assert md.scenario_name("fixed-seq-len", 1024, 8192) == "Single-turn 1k8k"  # by the k-suffix rule
    assert md.scenario_name("fixed-seq-len", 1000, 200) == "Single-turn 1000/200"
    assert md.scenario_name("agentic-coding", None, None) == "Agentic coding"
    assert md.unreadable == ()


def test_notice_table_applies_from_the_day_after_the_last_day(md):
    assert deprecated(md, "minimaxm3", "Single-turn 8k1k", on=date(2026, 8, 3)) == []
    assert deprecated(md, "minimaxm3", "Single-turn 8k1k", on=date(2026, 8, 4)) == [11]
    assert deprecated(md, "minimaxm3", "Agentic coding") == []


def test_precision_rule_covers_every_scenario(md):
    assert deprecated(md, "qwen3.5", "Single-turn 8k1k", precision="bf16") == [12, 42]
    assert deprecated(md, "qwen3.5", "Agentic coding", precision="bf16") == [12, 42]
    assert deprecated(md, "qwen3.5", "Single-turn 8k1k", precision="fp8") == []


def test_not_yet_enacted_table_is_pending_but_day_zero_rows_are_in_force(md):
    assert deprecated(md, "dsv4", "Agentic coding", spec=False) == []
    assert deprecated(md, "kimik3", "Agentic coding", spec=False) == [19, 39]
    assert deprecated(md, "kimik3", "Agentic coding", spec=True) == []
    assert any(d.pending and d.prefixes == ("dsv4",) for d in md.deprecations)


def test_dated_prose_notice_and_full_retirement(md):
    assert deprecated(md, "kimik2.5", "Single-turn 8k1k", on=date(2026, 8, 6)) == []
    assert deprecated(md, "kimik2.5", "Single-turn 8k1k", on=date(2026, 8, 7)) == [25, 25]
    assert deprecated(md, "kimik2.5", "Agentic coding", on=date(2026, 8, 7)) == [25]
    assert deprecated(md, "kimik2.5", None, on=date(2026, 8, 7)) == [25]  # the retirement covers a point-less entry


def test_scenarios_table_deprecates_for_all_models_since_its_date(md):
    assert deprecated(md, "dsv4", "Single-turn 1k1k", on=date(2026, 7, 16)) == [41]  # the matrix row has no date
    assert deprecated(md, "dsv4", "Single-turn 1k1k", on=date(2026, 7, 17)) == [33, 41]
    assert deprecated(md, "brandnew", "Single-turn 1k1k") == [33]


def test_matrix_retirement_and_items(md):
    assert deprecated(md, "glm5.1", "Single-turn 8k1k", on=date(2026, 7, 17)) == []
    assert deprecated(md, "glm5.1", "Single-turn 8k1k", on=date(2026, 7, 18)) == [40]
    assert 40 in deprecated(md, "glm5", "Single-turn 1k8k", on=date(2026, 1, 1))
    assert deprecated(md, "dsv4", "Single-turn 8k1k") == []


def test_scenario_names_compare_loosely(md):
    assert deprecated(md, "dsv4", "single-turn 1K1K") == [33, 41]


def test_unreadable_rows_are_kept_with_their_prefixes():
    text = MODELS.replace("| Single-turn 8k1k | Agentic coding |", "| the long-context arm | Agentic coding |")
    md = models_md.parse(text)
    assert [(u.line, u.prefixes) for u in md.unreadable] == [(11, ("minimaxm3",))]


def test_fully_retired_without_a_named_model_is_unreadable():
    text = "### Monday, August 3, 2026\n\nEverything here is **fully retired after August 3, 2026**.\n"
    md = models_md.parse(text)
    assert md.deprecations == ()
    assert [u.line for u in md.unreadable] == [3]


def test_garbage_never_raises():
    for text in ("", "|", "| a |\n|", "### May 40, 2026\nis the last day\n", "| Prefix |\n|---|\n| `x` |"):
        models_md.parse(text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="|-`#*( ),.\nabcdeklnoprstuy0123456789ADJMSTU", max_size=400))
def test_never_raises_on_arbitrary_text(text):
    md = models_md.parse(text)
    assert all(d.line >= 1 for d in md.deprecations)


def test_deterministic():
    assert models_md.parse(MODELS) == models_md.parse(MODELS)


@pytest.mark.skipif(not SHARED_WORLDS.is_dir(), reason="../shared/fixtures/worlds not present")
def test_every_world_models_md_is_read_completely():
    files = sorted(SHARED_WORLDS.glob("*/trees/*/MODELS.md"))
    assert files
    for path in files:
        md = models_md.parse(path.read_text())
        assert md.unreadable == (), path
        assert {"dsv4", "kimik2.5", "kimik3", "glm5.2"} <= md.prefixes


@pytest.mark.skipif(not SHARED_WORLDS.is_dir(), reason="../shared/fixtures/worlds not present")
def test_kimik25_8k1k_was_active_on_july_27_under_either_models_md():
    july = SHARED_WORLDS / "pr2213-kimik25-mi355x-vllm-recipe-pass" / "trees" / "main" / "MODELS.md"
    august = SHARED_WORLDS / "pr2554-dsv4-b200-sglang-mtp" / "trees" / "base" / "MODELS.md"
    for path in (july, august):
        assert deprecated(models_md.parse(path.read_text()), "kimik2.5", "Single-turn 8k1k", on=date(2026, 7, 27)) == []
    assert deprecated(models_md.parse(august.read_text()), "kimik2.5", "Single-turn 8k1k") != []
