"""checks/facts/masterconfig.py: the textual block split, the cheap read of an entry's scalar fields and of lines."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from checks.facts.masterconfig import MasterConfig

TEXT = """\
# header comment
dsv4-fp4-b200-sglang:
  image: "lmsysorg/sglang:v1"   # pinned
  model: deepseek-ai/DeepSeek-V4
  model-prefix: dsv4
  runner :  b200  \t
  precision:\u00a0fp4\u00a0
  framework: sglang
  image: later-duplicate
  tag: a#b
  note: '#not a comment'
  empty:
   deeper: not a field
  scenarios:
    fixed-seq-len: []
glm5-fp8-mi355x-vllm:
  model-prefix: glm5
  runner: mi355x"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_fields_are_the_first_value_of_each_two_space_key_comments_and_quotes_removed(newline):
    cfg = MasterConfig("configs/nvidia-master.yaml", TEXT.replace("\n", newline))
    assert cfg.keys() == ["dsv4-fp4-b200-sglang", "glm5-fp8-mi355x-vllm"]
    assert cfg.fields("dsv4-fp4-b200-sglang") == {
        "image": "lmsysorg/sglang:v1", "model": "deepseek-ai/DeepSeek-V4", "model-prefix": "dsv4",
        "runner": "b200", "precision": "fp4", "framework": "sglang", "tag": "a#b", "note": "#not a comment",
        "empty": "", "scenarios": ""}
    assert cfg.fields("glm5-fp8-mi355x-vllm") == {"model-prefix": "glm5", "runner": "mi355x"}
    assert cfg.fields("absent") == {}


_ENTRY = "k{n}:\n  model-prefix: m{n}\n  scenarios:\n    fixed-seq-len: []\n"
_BASE = "# header\n" + "".join(_ENTRY.format(n=n) for n in range(6))


@pytest.mark.parametrize("head", [
    _BASE.replace("m2\n", "m2x\n"),  # an entry changed
    _BASE.replace(_ENTRY.format(n=3), ""),  # an entry removed
    _BASE.replace("k4:", "new:\n  a: 1\nk4:"),  # an entry added
    _BASE.replace("# header\n", "") + "k1:\n  again: 1\n",  # the start changed, a key repeated at the end
    _BASE.replace("k0:", "k0 :").replace("k5:", "k5:  # note"),  # the first and the last key lines changed
    _BASE + _BASE[9:],  # the whole file repeated
    "",
])
def test_a_head_split_where_it_differs_from_base_has_the_blocks_of_a_whole_split(head):
    base = MasterConfig("configs/nvidia-master.yaml", _BASE)
    for twin, text in ((base, head), (MasterConfig("configs/nvidia-master.yaml", head), _BASE)):
        assert MasterConfig(twin.path, text, twin).blocks == MasterConfig(twin.path, text).blocks


_PIECES = ["k:\n", "  a: 1\n", "\n", "# c\n", "- x\n", "k: v", "'q': 1\n", " ", "\r\n", "\x85", "\u2028", "\t", "x"]
_texts = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(_texts, _texts)
@example(_BASE, _BASE.replace("m2\n", "m2x\n"))
@example("", "")
def test_lines_are_those_of_splitlines(base, head):
    raw = head.splitlines()
    numbers = set(range(1, len(raw) + 3))
    for cfg in (MasterConfig("c.yaml", head), MasterConfig("c.yaml", head, MasterConfig("c.yaml", base))):
        assert cfg.lines(numbers) == {n: raw[n - 1] for n in numbers if n <= len(raw)}
