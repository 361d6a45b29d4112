"""Hostile PR content (issue 28): every reader bounded in time and memory, nothing unread passes, no internal
error from input. Each case ends within a generous CPU bound (the budget the App enforces is 10 s) with a
reasoned row."""

from __future__ import annotations

import time

import pytest

from checks.bash import MAX_SCRIPT, Script
from checks.bash.tree import MAX_NESTING, nesting
from checks.engine import evaluate
from checks.masterconfig import MasterConfig
from checks.registry import CHECKS
from checks.result import Status

from .builders import changed, snapshot

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
