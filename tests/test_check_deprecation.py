"""Check 7 (deprecated models): unit cases on small snapshots, and agreement with the shared worlds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.result import Severity, Status
from checks.rules import check07_deprecation
from checks.rules.check07_deprecation import RULE
from tests.builders import ctx, decided, sound
from tests.conftest import check_on_world, expected_check, world_params
from tests.test_models_md import MODELS

PATH = "configs/amd-master.yaml"
OTHER = """\
dsr1-fp8-mi300x-sglang:
  image: lmsysorg/sglang:v0.5
  model: deepseek-ai/DeepSeek-R1-0528
  model-prefix: dsr1
  runner: mi300x
  precision: fp8
  framework: sglang
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
"""


def entry(key="kimik2.5-fp4-mi355x-vllm", prefix="kimik2.5", precision="fp4", isl=8192, osl=1024,
          agentic=False, spec="none"):
    if agentic:
        scenarios = f"""    agentic-coding:
    - dram-utilization: 0.6
      search-space:
      - {{ tp: 8, spec-decoding: {spec}, conc-list: [1, 4] }}
"""
    else:
        scenarios = f"""    fixed-seq-len:
    - isl: {isl}
      osl: {osl}
      search-space:
      - {{ tp: 8, spec-decoding: {spec}, conc-start: 4, conc-end: 64 }}
"""
    return f"""{key}:
  image: vllm/vllm-openai-rocm:nightly
  model: some/model
  model-prefix: {prefix}
  runner: mi355x
  precision: {precision}
  framework: vllm
  multinode: false
  scenarios:
{scenarios}"""


def run(head_entry: str | None, now="2026-08-12T12:00:00Z", models: str | None = MODELS, base=OTHER):
    policy = {"MODELS.md": models} if models is not None else {}
    head = base + ("\n" + head_entry if head_entry else "")
    return check07_deprecation.check(ctx(now=now, policy=policy, master_base={PATH: base}, master_head={PATH: head}))


def test_na_without_config_changes():
    r = run(None)
    assert r.status is Status.NA and r.findings == ()


def test_na_when_the_pr_only_removes_an_entry():
    r = run(None, base=OTHER + "\n" + entry())
    assert r.status is Status.NA


def test_missing_models_md_deprecates_nothing():
    r = run(entry(), models=None)
    assert r.status is Status.NA
    assert r.reason == "MODELS.md is not on the base branch: no model or scenario is deprecated"


def test_an_unreadable_review_date_cannot_be_decided():
    r = run(entry(), now="yesterday")
    assert r.status is Status.UNDECIDED and r.reason.startswith("cannot decide: the review date")


def test_scheduled_deprecation_is_allowed_until_its_last_day():
    r = run(entry(), now="2026-08-06T23:59:59Z")
    assert r.status is Status.PASS
    assert r.reason == "MODELS.md lists kimik2.5 Single-turn 8k1k as active on 2026-08-06"


def test_the_last_day_lasts_until_it_has_ended_everywhere_on_earth():
    assert run(entry(), now="2026-08-07T11:59:59Z").status is Status.PASS  # still August 6 at UTC-12
    assert run(entry(), now="2026-08-07T07:59:59-04:00").status is Status.PASS
    assert run(entry(), now="2026-08-07T12:00:00Z").status is Status.FAIL


def test_after_the_last_day_the_scenario_fails_on_its_point_line():
    r = run(entry(), now="2026-08-07T12:00:00Z")
    # the point's line; the model is fully retired too: its model-prefix line
    decided(r, Status.FAIL, (RULE, PATH, 29), (RULE, PATH, 19), only=True)
    assert all(f.severity is Severity.ERROR for f in r.findings)
    assert "deprecated since 2026-08-07 (MODELS.md:25: " in r.reason  # the statement it breaks, and where
    assert "; remove it from this PR" in r.reason  # the fix


def test_deprecated_for_all_models_scenario():
    r = run(entry(key="dsv4-fp4-mi355x-vllm", prefix="dsv4", isl=1024, osl=1024))
    decided(r, Status.FAIL, (RULE, PATH, 29), only=True)
    assert "(MODELS.md:33:" in r.reason  # the statement it breaks


def test_precision_rule_reports_on_the_precision_line():
    r = run(entry(key="qwen3.5-bf16-mi355x-vllm", prefix="qwen3.5", precision="bf16"))
    decided(r, Status.FAIL, (RULE, PATH, 21), only=True)


def test_retired_model_reports_on_the_model_prefix_line():
    r = run(entry(key="glm5-fp8-mi355x-vllm", prefix="glm5"))
    decided(r, Status.FAIL, (RULE, PATH, 19), only=True)


def test_non_spec_arm_deprecated_from_day_zero():
    r = run(entry(key="kimik3-fp4-mi355x-vllm-agentic", prefix="kimik3", agentic=True, spec="none"))
    decided(r, Status.FAIL, (RULE, PATH, 28), only=True)
    assert "without speculative decoding, deprecated (MODELS.md:19:" in r.reason  # the arm, and the statement
    ok = run(entry(key="kimik3-fp4-mi355x-vllm-agentic-mtp", prefix="kimik3", agentic=True, spec="mtp"))
    assert ok.status is Status.PASS


def test_not_yet_enacted_arm_retirement_does_not_fail():
    r = run(entry(key="dsv4-fp4-mi355x-vllm-agentic", prefix="dsv4", agentic=True, spec="none"))
    assert r.status is Status.PASS
    assert r.reason == "MODELS.md lists dsv4 Agentic coding as active on 2026-08-12"


def test_a_modified_entry_is_checked_in_full():
    stale = entry(key="dsv4-fp4-mi355x-vllm", prefix="dsv4", isl=1024, osl=1024)
    base = OTHER + "\n" + stale
    head = OTHER + "\n" + stale.replace("vllm-openai-rocm:nightly", "vllm-openai-rocm:v0.30")
    r = check07_deprecation.check(ctx(now="2026-08-12T12:00:00Z", policy={"MODELS.md": MODELS},
                              master_base={PATH: base}, master_head={PATH: head}))
    assert r.status is Status.FAIL  # only the image changed, but the whole entry reruns, 1k1k included
    assert "dsv4 Single-turn 1k1k" in r.reason


def test_prefix_not_in_models_md_is_not_deprecated():
    r = run(entry(key="newmodel-fp4-mi355x-vllm", prefix="newmodel"))
    assert r.status is Status.PASS
    assert "(newmodel not listed in MODELS.md, so not deprecated)" in r.reason


def test_unreadable_deprecation_for_the_model_fails_closed():
    models = MODELS.replace("| Single-turn 8k1k | Agentic coding |", "| the long-context arm | Agentic coding |")
    r = run(entry(key="minimaxm3-fp4-mi355x-vllm", prefix="minimaxm3"), models=models)
    decided(r, Status.UNDECIDED, (RULE, PATH, 16), only=True)
    assert "MODELS.md:11" in r.reason  # the statement it cannot read
    other = run(entry(key="dsv4-fp4-mi355x-vllm", prefix="dsv4"), models=models)
    assert other.status is Status.PASS


def test_malformed_entry_fails_with_its_line():
    bad = "broken-key:\n  image: [unclosed\n  model-prefix: dsv4\n"
    decided(run(bad), Status.FAIL, (RULE, PATH, 18), only=True)


def test_unreadable_review_date_fails_closed():
    r = run(entry(), now="someday")
    assert r.status is Status.UNDECIDED and "review date" in r.reason


def test_deterministic():
    assert run(entry(), now="2026-08-12T00:00:00Z") == run(entry(), now="2026-08-12T00:00:00Z")


@pytest.mark.parametrize("world", world_params())
def test_agrees_with_the_shared_worlds(world):
    expected = expected_check(world, check07_deprecation.NUMBER)
    result = check_on_world(world, check07_deprecation)
    if expected is not None:
        assert result.status.value == expected, result.reason
    elif not any((world / "trees").glob("*/MODELS.md")):  # pr1676 predates MODELS.md: nothing to enforce
        assert result.status is Status.NA and "not on the base branch" in result.reason


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="- :#[]{}\n\tabc0123'\"", max_size=200), st.text(alphabet="|-`#*( )\nabc0123", max_size=300))
def test_never_raises_on_arbitrary_text(cfg_text, models_text):
    sound(check07_deprecation, ctx(policy={"MODELS.md": models_text}, master_base={PATH: OTHER},
                           master_head={PATH: OTHER + cfg_text}))
