"""Shared recipe facts (checks/lint/recipes.py), and the recipe/master builders the lint tests use."""

from __future__ import annotations

from checks.facts import hardware, runs
from checks.lint import recipes
from tests.builders import HEAD, changed, ctx

RECIPE_PATH = "benchmarks/multi_node/srt-slurm-recipes/sglang/dsv4/low-latency.yaml"
RECIPE_REL = "sglang/dsv4/low-latency.yaml"
MASTER = "configs/nvidia-master.yaml"
IMAGE = "lmsysorg/sglang:nightly-dev-cu13-20260528-0abe6a85"

CAR_OFF = '    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"'
CAR_ABSENT = '    NCCL_CUMEM_ENABLE: "1"'

# Line numbers of the template below, for assertions.
L_CONTAINER, L_CPUS, L_DECODE_WORKERS, L_GPUS_PER_DECODE = 5, 9, 19, 20
L_BACKEND, L_DECODE_ENV, L_CAR, L_DECODE_ARGS, L_DECODE_TP, L_DECODE_DPA = 22, 24, 26, 32, 33, 35
L_BENCHMARK, L_CHAT = 38, 40

_RECIPE = """\
name: "dsv4-low-latency"

model:
  path: "deepseek-v4-pro"
  container: "{container}"
  precision: "fp4"

sbatch_directives:
  cpus-per-task: "{cpus}"
  mem: "0"

resources:
  gpu_type: "{gpu_type}"
  gpus_per_node: {gpn}
  prefill_nodes: {prefill_nodes}
  prefill_workers: {prefill_workers}
  gpus_per_prefill: {gpus_per_prefill}
  decode_nodes: {decode_nodes}
  decode_workers: {decode_workers}
  gpus_per_decode: {gpus_per_decode}

backend:
  type: {backend}
  decode_environment:
    PYTHONUNBUFFERED: "1"
{car}
  sglang_config:
    prefill:
      tensor-parallel-size: {prefill_tp}
      data-parallel-size: 1
      expert-parallel-size: {prefill_ep}
    decode:
      tensor-parallel-size: {decode_tp}
      expert-parallel-size: {decode_ep}
      enable-dp-attention: {decode_dpa}
      speculative-algorithm: {spec}

benchmark:
  type: "sa-bench"
  use_chat_template: {chat}
"""

_RECIPE_DEFAULTS = dict(
    container=IMAGE, cpus="144", gpu_type="gb200", gpn=4, prefill_nodes=2, prefill_workers=1, gpus_per_prefill=8,
    decode_nodes=2, decode_workers=1, gpus_per_decode=8, backend="sglang", car=CAR_OFF, prefill_tp=8, prefill_ep=1,
    decode_tp=8, decode_ep=1, decode_dpa="false", spec='"EAGLE"', chat="true",
)

_MASTER = """\
dsv4-fp4-gb200-dynamo-sglang-mtp:
  image: {image}
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: dsv4
  runner: {runner}
  precision: fp4
  framework: dynamo-sglang
  multinode: true
  disagg: true
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - spec-decoding: "{spec}"
        conc-list: [1]
        prefill:
          num-worker: {pw}
          tp: {ptp}
          ep: {pep}
          dp-attn: {pdpa}
          additional-settings:
          - "CONFIG_FILE=recipes/{rel}"
        decode:
          num-worker: {dw}
          tp: {dtp}
          ep: {dep}
          dp-attn: {ddpa}
"""

_MASTER_DEFAULTS = dict(image=IMAGE, runner="gb200", spec="mtp", pw=1, ptp=8, pep=1, pdpa="false",
                        rel=RECIPE_REL, dw=1, dtp=8, dep=1, ddpa="false")

# Line numbers of the master template.
M_IMAGE, M_SPEC, M_SETTING, M_DECODE_WORKERS, M_DECODE_TP, M_DECODE_DPA = 2, 15, 23, 25, 26, 28

OTHER = """\
other-config:
  image: x
  runner: h100
"""


def recipe_yaml(**kw) -> str:
    """A GB200 low-latency recipe (1 prefill TP8, 1 decode TP8 on 4-GPU nodes, MTP, chat template)."""
    return _RECIPE.format(**{**_RECIPE_DEFAULTS, **kw})


def master_yaml(**kw) -> str:
    """A master entry with one point naming RECIPE_REL (1P TP8 + 1D TP8, mtp)."""
    return _MASTER.format(**{**_MASTER_DEFAULTS, **kw})


def lint_ctx(recipe: str | None = None, master: str | None = None, master_base: str | None = None,
             extra: dict[str, str | None] | None = None, **kw):
    """A Context whose PR adds `recipe` at RECIPE_PATH and changes MASTER from `master_base` to `master`."""
    files = list(kw.pop("files", ()))
    if recipe is not None:
        files.append(changed(RECIPE_PATH, None, recipe))
    head_master = {MASTER: master} if master is not None else {}
    base_master = {MASTER: master_base} if master_base is not None else {}
    if master is not None and master != master_base:
        files.append(changed(MASTER, master_base, master))
    return ctx(files=files, master_head=head_master, master_base=base_master,
               extra_files={HEAD: extra} if extra else {}, **kw)


# --- the helpers themselves ---------------------------------------------------


def test_sku_of_runner_labels_and_gpu_types():
    assert hardware.known_sku("b200-nscale") == "b200"
    assert hardware.known_sku("cluster:mi355x-amds") == "mi355x"
    assert hardware.known_sku("GB200") == "gb200"
    assert hardware.known_sku("tpu-v5") is None
    assert hardware.known_sku(None) is None


def test_as_int_accepts_ints_and_digit_strings_only():
    assert recipes.as_int("144") == 144
    assert recipes.as_int(8) == 8
    assert recipes.as_int(True) is None
    assert recipes.as_int("lots") is None


def test_comments_skip_hashes_in_quotes_and_words():
    text = 'a: "x # not"  # yes one\nb: c#d\n# full line\nurl: \'http://x/#frag\'\n'
    assert list(recipes.comments(text)) == [(1, "yes one"), (3, "full line")]


def test_recipe_reads_gpus_per_worker_like_srt_slurm():
    c = lint_ctx(recipe_yaml())
    rec = recipes.changed_recipes(c)[0]
    assert rec.flat and rec.backend_type == "sglang"
    assert rec.gpus_per_node == 4
    assert rec.gpus_per_worker("decode") == 8
    computed = recipe_yaml().replace("  gpus_per_decode: 8\n", "").replace("decode_nodes: 2", "decode_nodes: 4")
    rec = recipes.changed_recipes(lint_ctx(computed))[0]
    assert rec.gpus_per_worker("decode") == 16  # decode_nodes x gpus_per_node / decode_workers


def test_gpus_per_node_falls_back_to_the_sku():
    text = recipe_yaml().replace("  gpus_per_node: 4\n", "")
    assert recipes.changed_recipes(lint_ctx(text))[0].gpus_per_node == 4


def test_line_of_is_the_key_or_its_parent_block():
    rec = recipes.changed_recipes(lint_ctx(recipe_yaml()))[0]
    assert rec.line_of("benchmark", "use_chat_template") == L_CHAT
    assert rec.line_of("backend", "decode_environment", "MISSING") == L_DECODE_ENV


def test_linked_points_resolve_config_file_under_the_recipe_root():
    c = lint_ctx(recipe_yaml(), master_yaml())
    [p] = recipes.linked_points(c)
    assert (p.config_path, p.key, p.recipe_path, p.selector, p.line, p.entry_changed) == (
        MASTER, "dsv4-fp4-gb200-dynamo-sglang-mtp", RECIPE_PATH, "", M_SETTING, True)


def test_unchanged_master_entries_are_linked_only_through_changed_recipes():
    master = master_yaml()
    assert recipes.linked_points(lint_ctx(None, master, master_base=master)) == ()
    [p] = recipes.linked_points(lint_ctx(recipe_yaml(), master, master_base=master))
    assert not p.entry_changed


def test_recipes_outside_the_repository_link_no_points():
    assert recipes.linked_points(lint_ctx(None, master_yaml(), extra={RECIPE_PATH: None})) == ()


def test_comment_only_edits_do_not_change_an_entry():
    master = master_yaml()
    edited = master.replace("  image:", "  # a note\n  image:")
    assert recipes.linked_points(lint_ctx(None, edited, master_base=master, extra={RECIPE_PATH: recipe_yaml()})) == ()


def test_linked_points_ask_for_the_recipes_the_snapshot_lacks():
    c = lint_ctx(None, master_yaml())
    recipes.linked_points(c)
    assert c.missing.files == ((HEAD, RECIPE_PATH),)
    c = lint_ctx(None, master_yaml(), extra={RECIPE_PATH: None})
    recipes.linked_points(c)
    assert not c.missing


def test_selector_and_foreign_paths():
    c = lint_ctx(None, master_yaml(rel=RECIPE_REL + ":override_mtp[0]"), extra={RECIPE_PATH: recipe_yaml()})
    [p] = recipes.linked_points(c)
    assert (p.recipe_path, p.selector) == (RECIPE_PATH, "override_mtp[0]")
    assert runs.recipe_target(c, "/abs/path.yaml") is None


def test_malformed_master_entry_links_nothing():
    broken = master_yaml().replace("        prefill:\n", "        prefill: [\n", 1)
    assert recipes.linked_points(lint_ctx(None, broken)) == ()
