"""Check 12 (append-only): unit cases on small snapshots, a real-sized case, and agreement with the shared worlds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.result import Status
from checks.rules import check12_append_only
from checks.rules.check12_append_only import RULE
from tests.builders import changed, ctx, decided, sound
from tests.conftest import SHARED_WORLDS, check_on_world, expected_check, world_params

LOG = "perf-changelog.yaml"
CFG = "configs/amd-master.yaml"
KEY = "dsv4-fp4-mi355x-vllm"

HISTORY = """\
- config-keys:
    - dsv4-fp4-mi355x-vllm
  description:
    - "Initial submission"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1
"""


def log_entry(keys=(KEY,), pr=100, flag: str | None = "true") -> str:
    lines = ["- config-keys:", *[f"    - {k}" for k in keys], "  description:", '    - "More points"',
             f"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/{pr}"]
    if flag is not None:
        lines.append(f"  append-only: {flag}")
    return "\n".join(lines) + "\n"


def config(space: str = "{ tp: 8, conc-list: [4, 8] }", image: str = "vllm/vllm-openai-rocm:v1",
           scenarios: str | None = None, key: str = KEY) -> str:
    if scenarios is None:
        scenarios = f"""    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - {space}
"""
    return f"""{key}:
  image: {image}
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: dsv4
  runner: mi355x
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
{scenarios}"""


BASE_CFG = config()


def run(head_cfg: str, new_entries: str | None = None, base_cfg: str = BASE_CFG, extra_files=()):
    head_log = HISTORY + "\n" + (new_entries if new_entries is not None else log_entry())
    files = [changed(LOG, HISTORY, head_log)]
    if head_cfg != base_cfg:
        files.append(changed(CFG, base_cfg, head_cfg))
    files += list(extra_files)
    return check12_append_only.check(ctx(files=files, master_base={CFG: base_cfg}, master_head={CFG: head_cfg}))


# --- N/A -------------------------------------------------------------------

def test_na_when_the_changelog_is_unchanged():
    r = check12_append_only.check(ctx(master_base={CFG: BASE_CFG}, master_head={CFG: BASE_CFG}))
    assert r.status is Status.NA
    assert r.reason == "no new perf-changelog.yaml entry sets append-only: true"


@pytest.mark.parametrize("flag", [None, "false"])
def test_na_when_the_new_entry_is_regular(flag):
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), log_entry(flag=flag))
    assert r.status is Status.NA


# --- PASS ------------------------------------------------------------------

def test_appending_a_concurrency_point_passes():
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"))
    assert r.status is Status.PASS
    assert r.reason.startswith(f"append-only for {KEY}: every base point is unchanged")
    assert r.findings == ()


def test_range_rewritten_as_a_list_with_the_same_points_passes():
    base = config("{ tp: 8, conc-start: 4, conc-end: 48 }")  # 4, 8, 16, 32, 48
    head = config("{ tp: 8, conc-list: [4, 8, 16, 32, 48, 64] }")
    assert run(head, base_cfg=base).status is Status.PASS


def test_new_recipe_variant_in_the_same_scenario_passes():
    head = config("{ tp: 8, conc-list: [4, 8] }\n      - { tp: 4, conc-list: [4] }")
    assert run(head).status is Status.PASS


def test_glob_config_keys_select_the_config():
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), log_entry(keys=("dsv4-fp4-*",)))
    assert r.status is Status.PASS


def test_string_true_counts_as_append_only():
    r = run(config("{ tp: 8, conc-list: [4] }"), log_entry(flag='"true"'))
    assert r.status is Status.FAIL  # conc 8 is dropped: the check applied


# --- FAIL ------------------------------------------------------------------

def test_mixed_regular_and_append_only_entries_fail_on_the_regular_entry():
    entries = log_entry(pr=100) + "\n" + log_entry(pr=101, flag=None)
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), entries)
    regular_line = HISTORY.count("\n") + 1 + log_entry().count("\n") + 2
    decided(r, Status.FAIL, (RULE, LOG, regular_line))
    assert r.reason.startswith(f"{LOG}:{regular_line} ")  # the first problem is the row's reason


def test_changing_the_image_fails_on_the_image_line():
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }", image="vllm/vllm-openai-rocm:v2"))
    decided(r, Status.FAIL, (RULE, CFG, 2), only=True)
    assert "(vllm/vllm-openai-rocm:v1 -> vllm/vllm-openai-rocm:v2)" in r.reason  # what changed, for the fix


def test_dropping_a_base_point_fails_naming_it():
    r = run(config("{ tp: 8, conc-list: [4, 16] }"))
    decided(r, Status.FAIL, (RULE, CFG, 14), only=True)
    assert "base point fixed-seq-len 8192/1024 tp=8 conc=8 (base line 14)" in r.reason  # the point it names


def test_changing_a_point_field_fails():
    r = run(config("{ tp: 8, ep: 8, conc-list: [4, 8, 16] }"))
    decided(r, Status.FAIL)
    assert r.reason.endswith("(+1 more)")  # conc 4 and conc 8 both changed


def test_changing_a_scenario_group_field_fails():
    base = config(scenarios="""    agentic-coding:
    - dram-utilization: 0.6
      search-space:
      - { tp: 8, spec-decoding: mtp, conc-list: [1, 4] }
""")
    head = base.replace("0.6", "0.8").replace("[1, 4]", "[1, 4, 8]")
    r = run(head, base_cfg=base)
    assert r.status is Status.FAIL
    assert "no longer has base point agentic-coding tp=8 spec-decoding=mtp conc=1" in r.reason


def test_points_in_a_new_scenario_fail():
    head = BASE_CFG + """    - isl: 1024
      osl: 8192
      search-space:
      - { tp: 8, conc-list: [4] }
"""
    r = run(head)
    decided(r, Status.FAIL, (RULE, CFG, 18), only=True)
    assert "scenario fixed-seq-len 1024/8192" in r.reason  # the scenario it names


def test_a_shared_script_change_fails_closed_naming_the_file():
    script = changed("benchmarks/single_node/dsv4_fp4_mi355x_vllm.sh", "#!/bin/bash\nvllm serve\n",
                     "#!/bin/bash\nexport X=1\nvllm serve\n")
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), extra_files=[script])
    decided(r, Status.FAIL, (RULE, "benchmarks/single_node/dsv4_fp4_mi355x_vllm.sh", 2), only=True)


def test_a_removed_file_is_reported_on_the_append_only_line():
    gone = changed("utils/helper.py", "x = 1\n", None)
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), extra_files=[gone])
    flag_line = HISTORY.count("\n") + 1 + log_entry().count("\n")
    decided(r, Status.FAIL, (RULE, LOG, flag_line), only=True)
    assert r.findings[0].message.startswith("utils/helper.py: ")  # the file it has no line of is named


def test_changing_another_config_fails():
    other = config(key="dsv4-fp4-b200-vllm")
    base = BASE_CFG + "\n" + other
    head = config("{ tp: 8, conc-list: [4, 8, 16] }") + "\n" + other.replace("v1", "v2")
    r = run(head, base_cfg=base)
    assert r.status is Status.FAIL
    assert "also changes config dsv4-fp4-b200-vllm (modified), which no append-only entry selects" in r.reason


def test_a_config_key_that_matches_nothing_fails():
    r = run(config("{ tp: 8, conc-list: [4, 8, 16] }"), log_entry(keys=(KEY, "nope-*")))
    assert r.status is Status.FAIL
    assert "config key 'nope-*' matches no master-config entry" in r.reason


def test_a_new_config_cannot_be_append_only():
    new = config(key="dsv4-fp4-mi355x-vllm-mtp")
    r = run(BASE_CFG + "\n" + new, log_entry(keys=("dsv4-fp4-mi355x-vllm-mtp",)))
    assert r.status is Status.FAIL
    assert "dsv4-fp4-mi355x-vllm-mtp is a new config; append-only can only add points to an existing config" in r.reason


def test_a_malformed_new_entry_that_mentions_append_only_fails():
    r = run(BASE_CFG, "- config-keys: [unclosed\n  append-only: true\n")
    assert r.status is Status.FAIL
    assert r.reason.startswith(f"{LOG}:") and "does not parse" in r.reason


def test_a_changelog_that_is_not_a_list_fails_closed_when_it_mentions_append_only():
    files = [changed(LOG, HISTORY, HISTORY + "oops: 1\n" + log_entry())]
    r = check12_append_only.check(ctx(files=files, master_base={CFG: BASE_CFG}, master_head={CFG: BASE_CFG}))
    assert r.status is Status.FAIL
    assert "is not a plain list of entries at head" in r.reason


def test_unreadable_changelog_fails_closed():
    from checks.snapshot import ChangedFile
    f = ChangedFile(LOG, "modified", None, None, HISTORY, None, "too large")
    r = check12_append_only.check(ctx(files=[f], master_base={CFG: BASE_CFG}, master_head={CFG: BASE_CFG}))
    assert r.status is Status.FAIL and "could not be read (too large)" in r.reason


def test_odd_yaml_values_never_raise():
    head = config("{ tp: 8, 1: one, extra: {2: two, b: [x, {3: y}]}, conc-list: [4, 8, {c: 1}] }")
    assert run(head).status is Status.FAIL  # the points changed; no exception on mixed key types
    assert run(config("{ tp: 8, conc-start: 0, conc-end: -4 }")).status is Status.FAIL


def test_deterministic():
    head = config("{ tp: 8, ep: 8, conc-list: [4, 16] }", image="x/y:1")
    assert run(head) == run(head)


@pytest.mark.skipif(not SHARED_WORLDS.is_dir(), reason="../shared/fixtures/worlds not present")
def test_real_sized_master_config_and_changelog():
    """An append-only PR on top of pr2590's real 12k-line configs and 6k-line changelog."""
    trees = SHARED_WORLDS / "pr2590-dsv4-mi355x-vllm-agentic-mtp" / "trees" / "head"
    amd = (trees / "configs" / "amd-master.yaml").read_text()
    nvidia = (trees / "configs" / "nvidia-master.yaml").read_text()
    log = (trees / "perf-changelog.yaml").read_text()
    before = "conc-list: [1, 4, 8, 16, 32, 40, 48, 56, 64] }"
    assert amd.count(before) == 1
    amd_head = amd.replace(before, "conc-list: [1, 4, 8, 16, 32, 40, 48, 56, 64, 72] }")
    entry = log_entry(keys=("dsv4-fp4-mi355x-vllm-agentic-mtp",), pr=2600)
    files = [changed(LOG, log, log + "\n" + entry), changed("configs/amd-master.yaml", amd, amd_head)]
    c = ctx(files=files, master_base={"configs/amd-master.yaml": amd, "configs/nvidia-master.yaml": nvidia},
            master_head={"configs/amd-master.yaml": amd_head, "configs/nvidia-master.yaml": nvidia})
    r = check12_append_only.check(c)
    assert r.status is Status.PASS, r.reason


@pytest.mark.parametrize("world", world_params())
def test_agrees_with_the_shared_worlds(world):
    expected = expected_check(world, check12_append_only.NUMBER)
    result = check_on_world(world, check12_append_only)
    if expected is not None:
        assert result.status.value == expected, result.reason
    else:
        assert result.status is Status.NA  # no world has an append-only entry


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="- :#[]{}\n\tabc0123'\"", max_size=200), st.text(alphabet="- :#[]{}\nabc01'", max_size=200))
def test_never_raises_on_arbitrary_text(cfg_text, log_text):
    files = [changed(LOG, HISTORY, HISTORY + log_text + "\n" + log_entry()), changed(CFG, BASE_CFG, cfg_text)]
    sound(check12_append_only, ctx(files=files, master_base={CFG: BASE_CFG}, master_head={CFG: cfg_text}))
