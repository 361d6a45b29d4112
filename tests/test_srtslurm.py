"""checks/facts/srtslurm.py: recipes read as srt-slurm reads them (base + override variants)."""

from __future__ import annotations

from checks.facts.srtslurm import variants
from checks.facts.yamlload import load

LAYERED = """\
base:
  name: glm5-mtp
  backend:
    sglang_config:
      decode:
        speculative-algorithm: EAGLE
        cuda-graph-max-bs: 28
  benchmark:
    type: sa-bench
    use_chat_template: true
override_off:
  benchmark:
    use_chat_template: false
zip_override_sweep:
  name: [a, b]
  backend:
    sglang_config:
      decode:
        cuda-graph-max-bs: [111, 234]
"""


def test_flat_recipe_is_one_job():
    doc = load("benchmark:\n  type: sa-bench\n")
    assert variants(doc) == [("", doc)] and variants(doc, "override_x") == []


def test_overrides_merge_onto_the_base_and_zips_make_one_job_per_item():
    doc = load(LAYERED)
    names = [n for n, _ in variants(doc)]
    assert names == ["base", "override_off", "zip_override_sweep[0]", "zip_override_sweep[1]"]
    (_, off), = variants(doc, "override_off")
    assert off["benchmark"] == {"type": "sa-bench", "use_chat_template": False}
    assert off["benchmark"].line_of("use_chat_template") == 13  # the override's line
    (_, second), = variants(doc, "zip_override_sweep[1]")
    assert second["name"] == "b" and second["backend"]["sglang_config"]["decode"] == {
        "speculative-algorithm": "EAGLE", "cuda-graph-max-bs": 234}
    assert second["benchmark"]["use_chat_template"] is True
    assert variants(doc, "override_missing") == []


def test_a_huge_zip_is_read_as_at_most_max_variants_jobs():
    from checks.facts.srtslurm import MAX_VARIANTS
    doc = load("base:\n  benchmark: {type: sa-bench}\nzip_override_x:\n  name: [" + ", ".join(["a"] * 5000) + "]\n")
    assert len(variants(doc)) == MAX_VARIANTS and len(variants(doc, "zip_override_x")) == MAX_VARIANTS
