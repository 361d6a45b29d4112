"""Hostile PR content (issue 28): every reader bounded in time and memory, nothing unread passes, no internal
error from input. Each case ends within a generous CPU bound (the budget the App enforces is 10 s) with a
reasoned row."""

from __future__ import annotations

import re
import time

import pytest

from checks.engine import evaluate
from checks.facts.bash import MAX_SCRIPT, Script
from checks.facts.bash.tree import MAX_NESTING, nesting
from checks.facts.commands import parse_run_id
from checks.facts.masterconfig import MasterConfig
from checks.facts.yamlload import YamlProblem, load
from checks.registry import CHECKS, RULES
from checks.result import Status

from .builders import changed, comment, snapshot

CPU_BOUND = 10.0  # seconds: each case, far above what it takes (the App's budget)
SCRIPT = "benchmarks/single_node/dsr1_fp8_h200.sh"
PATCH = "sed -i 's/x/y/' /usr/lib/python3/dist-packages/vllm/envs.py\n"


def _row(number: int, snap):
    start = time.process_time()
    verdict = evaluate(snap, [r for r in CHECKS if r.row == number])
    assert time.process_time() - start < CPU_BOUND
    return verdict.results[0]


# --- check 10 on what was not read ---------------------------------------------------------------------

@pytest.mark.parametrize("padding", [
    "# padding\n" * (MAX_SCRIPT // 10 + 1),  # many lines before the patch
    "# " + "x" * MAX_SCRIPT + "\n",  # one long line
], ids=["lines", "long-line"])
def test_an_engine_patch_past_the_read_cut_is_never_a_pass(padding):
    result = _row(10, snapshot(files=[changed(SCRIPT, None, "#!/bin/bash\n" + padding + PATCH + "vllm serve m\n")]))
    assert result.status is Status.UNDECIDED
    assert "could not be read" in result.reason and result.reason.startswith(f"{SCRIPT}:")
    assert all(f.undecided for f in result.findings)


@pytest.mark.parametrize("nested", ["echo " + "(" * 399_000, "echo " + "(" * 300 + ")" * 300, "{ " * 100_000],
                         ids=["open", "closed", "braces"])
def test_a_line_nested_too_deep_is_not_read_and_the_lines_around_it_are(nested):
    """Not parsed as a whole (queries over a deep tree are quadratic): each line alone, the deep one not."""
    text = "#!/bin/bash\n" + nested + "\n" + PATCH + "vllm serve m\n"
    assert Script(text).unread == ((2, 2),)
    result = _row(10, snapshot(files=[changed(SCRIPT, None, text)]))
    assert result.status is Status.FAIL and "rewrites files of the installed engine" in result.reason
    assert [(f.line, f.undecided) for f in result.findings] == [(2, True), (3, False)]


def test_an_engine_patch_read_is_still_a_failure_beside_unread_lines():
    text = "#!/bin/bash\n" + PATCH + "# padding\n" * (MAX_SCRIPT // 10 + 1) + "vllm serve m\n"
    result = _row(10, snapshot(files=[changed(SCRIPT, None, text)]))
    assert result.status is Status.FAIL and "rewrites files of the installed engine" in result.reason
    assert any(f.undecided for f in result.findings)


def test_a_script_read_whole_has_no_unread_lines():
    assert Script("#!/bin/bash\n" + PATCH + "vllm serve m\n").unread == ()
    assert _row(10, snapshot(files=[changed(SCRIPT, None, "#!/bin/bash\nvllm serve m\n")])).status is Status.PASS


# --- nesting --------------------------------------------------------------------------------------------

def test_nesting_is_counted_as_brackets_open_at_once():
    assert nesting(b"") == 0 and nesting(b"()" * 10_000) == 1
    assert nesting(b"(" * 300 + b")" * 300) == 300
    assert nesting(b")" * 1000 + b"({[" * 100) == 300  # closers with nothing open do not hide what follows
    assert nesting(b"$(" * (MAX_NESTING + 1)) == MAX_NESTING + 1


# --- check 6 on a master config that defines a key twice --------------------------------------------------

def _master_entry(key: str, image: str) -> str:
    return (f"{key}:\n  image: {image}\n  model: some/model\n  model-prefix: dsr1\n  runner: b200-nv\n"
            "  precision: fp8\n  framework: vllm\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n"
            "    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 8, conc-list: [4, 8] }\n")


@pytest.mark.parametrize("line_break", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_second_definition_of_a_master_entry_is_read_as_yaml_reads_it_and_never_passes(line_break):
    nv = "configs/nvidia-master.yaml"
    first = _master_entry("dsr1-fp8-b200-vllm", "vllm/vllm-openai:v0.11.0")
    second = _master_entry("dsr1-fp8-b200-vllm", "evil.example/vllm-patched:1")
    base, head = first, first + second
    if line_break != "\n":
        base, head = base.replace("\n", line_break), head.replace("\n", line_break)
    snap = snapshot(master_base={nv: base}, master_head={nv: head})
    result = _row(6, snap)
    assert result.status is Status.FAIL
    assert result.reason.startswith(f"{nv}:15 does not parse (config 'dsr1-fp8-b200-vllm' is defined 2 times "
                                    "(lines 1, 15); YAML keeps the last")
    config = MasterConfig(nv, head)
    assert config.duplicates == {"dsr1-fp8-b200-vllm": (1, 15)}
    assert config.entry("dsr1-fp8-b200-vllm")["image"] == "evil.example/vllm-patched:1"  # PyYAML's reading


# --- no internal error from input -------------------------------------------------------------------------

NV = "configs/nvidia-master.yaml"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-gb300-1p1d.yaml"


def _verdict(snap):
    """The whole verdict, within the CPU bound, every row and finding a reasoned one (no internal error)."""
    start = time.process_time()
    verdict = evaluate(snap, RULES)
    assert time.process_time() - start < CPU_BOUND
    said = [r.reason for r in verdict.rows] + [f.message for f in verdict.findings]
    assert not [s for s in said if "internal error" in s]
    return verdict


def _reasons(verdict) -> str:
    return "\n".join([r.reason for r in verdict.rows] + [f.message for f in verdict.findings])


def test_a_reuse_command_with_a_superscript_digit_from_anyone_is_no_run_id():
    assert parse_run_id("²") is None and parse_run_id("31451666262") == 31451666262
    assert parse_run_id("9" * 5000) is None  # (int would refuse it past 4,300 digits)
    snap = snapshot(files=[changed(NV, "", _master_entry("k", "vllm/vllm-openai:v1"))],
                    comments=[comment("/reuse-sweep-run ²", author="drive-by", association="NONE")])
    _verdict(snap)


@pytest.mark.parametrize("line, said", [
    ("x: !!timestamp x", "bad scalar for timestamp: 'x'"),
    ("tp: 0x" + "f" * 5000, "5,002 characters for one int (at most 100); not read"),
    ("conc-end: 0x" + "f" * 1_000_000, "1,000,002 characters for one int (at most 100); not read"),
    ("tp: " + "1:" * 20_000 + "0", "40,001 characters for one int (at most 100); not read"),  # sexagesimal
])
def test_a_value_yaml_cannot_read_within_bounds_is_a_reasoned_problem(line, said):
    with pytest.raises(YamlProblem, match=re.escape(said)):
        load(f"a: 1\n{line}\n")
    recipe = f"name: r\nmodel:\n  path: m\nbackend:\n  type: sglang\n{line}\n"
    entry = _master_entry("dsr1-fp8-b200-vllm", "vllm/vllm-openai:v0.11.0").replace("tp: 8", line)
    verdict = _verdict(snapshot(files=[changed(RECIPE, None, recipe), changed(NV, "", entry)],
                                master_base={NV: ""}, master_head={NV: entry}))
    assert said.split(";")[0][:20] in _reasons(verdict)
    assert not verdict.passed


def test_a_huge_concurrency_range_in_a_master_entry_is_bounded():
    entry = _master_entry("dsr1-fp8-b200-vllm", "vllm/vllm-openai:v0.11.0").replace(
        "tp: 8, conc-list: [4, 8]", "tp: 8, conc-start: 1, conc-end: 0x" + "f" * 98)
    base = _master_entry("dsr1-fp8-b200-vllm", "vllm/vllm-openai:v0.11.0")
    _verdict(snapshot(files=[changed(NV, base, entry)], master_base={NV: base}, master_head={NV: entry}))
