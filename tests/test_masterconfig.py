"""checks/masterconfig.py: the textual block split and the cheap read of an entry's scalar fields."""

from __future__ import annotations

import pytest

from checks.masterconfig import MasterConfig

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
