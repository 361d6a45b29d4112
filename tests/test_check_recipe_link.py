"""Check 3: recipe linked, merged upstream, and matching on MAJOR server args (checks/rules/check03_recipe_link.py)."""

from __future__ import annotations

import pytest
import yaml

from checks.context import Context
from checks.evidence import UpstreamTarget
from checks.facts import upstream_recipes
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check03_recipe_link as recipe_link
from checks.snapshot import UpstreamDoc, frozen_map
from tests import builders
from tests.conftest import world_params

CONFIG = "configs/amd-master.yaml"
SCRIPT_PATH = "benchmarks/single_node/fixed_seq_len/kimi_fp4_mi355x.sh"
ENTRY = """kimi-fp4-mi355x-vllm:
  image: vllm/vllm-openai-rocm:v1
  model: org/Model-MXFP4
  model-prefix: kimi
  runner: mi355x
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
"""
SCRIPT = """#!/usr/bin/env bash
export VLLM_ROCM_USE_AITER=1
vllm serve $MODEL --port $PORT \\
  --tensor-parallel-size=$TP \\
  --kv-cache-dtype fp8 \\
  --max-num-seqs 256
"""
RECIPE_PATH = "models/org/Model.yaml"
RECIPE = """
meta:
  hardware: {mi355x: verified, b200: verified}
model:
  model_id: org/Model
  base_args: ["--trust-remote-code"]
variants:
  default: {precision: bf16}
  mxfp4:
    model_id: org/Model-MXFP4
    supported_hardware: [mi355x]
    tp: 8
    extra_args: ["--kv-cache-dtype", "fp8"]
compatible_strategies: [single_node_tp]
hardware_overrides:
  amd:
    extra_env: {VLLM_ROCM_USE_AITER: "1"}
  blackwell:
    extra_args: ["--attention-backend", "FLASHINFER"]
"""
PR_URL = "https://github.com/vllm-project/recipes/pull/7"
PAGE_URL = "https://recipes.vllm.ai/org/Model"
TEMPLATE = """# PR Review Checklist
## Template
```
As a PR reviewer and CODEOWNER, I have reviewed this and have:
- [ ] Verified things

### Additional detail section:
- insert any additional info here

Signed: `FILL_IN_GITHUB_USERNAME`
```
"""


def signoff(detail: str | None) -> str:
    body = builders.SIGNOFF_HEAD + "\n- [x] Verified things\n"
    if detail is not None:
        body += "\n### Additional detail section:\n" + detail + "\n"
    return body + "\nSigned: `reviewer`"


def pull(number: int = 7, files: dict | None = None, **kw) -> UpstreamDoc:
    fields = dict(state="closed", merged=True, merged_at="2026-07-01T00:00:00Z", title="Add recipe",
                  files=frozen_map(files if files is not None else {RECIPE_PATH: RECIPE}))
    fields.update(kw)
    return UpstreamDoc(f"https://github.com/vllm-project/recipes/pull/{number}", "pull", "vllm-project/recipes",
                       number, **fields)


def page(url: str = PAGE_URL, path: str = RECIPE_PATH, text: str = RECIPE, **kw) -> UpstreamDoc:
    return UpstreamDoc(url, "page", "vllm-project/recipes", files=frozen_map({path: text}), **kw)


def make(detail: str | None = f"- vLLM recipe (merged): {PR_URL}", upstream=(pull(),), script: str | None = SCRIPT,
         entry: str | None = ENTRY, base_entry: str = "", files=(), comments=None, policy=None,
         script_path: str = SCRIPT_PATH) -> Context:
    changed = list(files)
    if script is not None:
        changed.append(builders.changed(script_path, None, script))
    head = entry or ""
    return builders.ctx(
        files=changed,
        comments=comments if comments is not None else [builders.comment(signoff(detail))],
        master_base={CONFIG: base_entry},
        master_head={CONFIG: head},
        upstream=upstream,
        policy=policy or {},
    )


def run(ctx: Context):
    result = recipe_link.check(ctx)
    assert result.number == 3 and result.name == "recipe link"
    assert "\n" not in result.reason
    return result


# --- links ----------------------------------------------------------------------

@pytest.mark.parametrize("url, expected", [
    (PR_URL, UpstreamTarget(PR_URL, "pull", "vllm-project/recipes", 7)),
    ("https://github.com/vllm-project/recipes/pull/7/files#diff-1", UpstreamTarget(PR_URL, "pull",
                                                                                    "vllm-project/recipes", 7)),
    ("https://github.com/VLLM-Project/Recipes/pull/7?w=1", UpstreamTarget(PR_URL, "pull", "vllm-project/recipes", 7)),
    ("https://github.com/sgl-project/sglang/pull/123", UpstreamTarget(
        "https://github.com/sgl-project/sglang/pull/123", "pull", "sgl-project/sglang", 123)),
    ("https://recipes.vllm.ai/moonshotai/Kimi-K2.5?hardware=mi355x#top", UpstreamTarget(
        "https://recipes.vllm.ai/moonshotai/Kimi-K2.5", "page", "vllm-project/recipes",
        paths=("models/moonshotai/Kimi-K2.5.yaml",))),
    ("https://recipes.vllm.ai/moonshotai/Kimi-K2.5/", UpstreamTarget(
        "https://recipes.vllm.ai/moonshotai/Kimi-K2.5", "page", "vllm-project/recipes",
        paths=("models/moonshotai/Kimi-K2.5.yaml",))),
    ("https://docs.sglang.io/cookbook/autoregressive/GLM/GLM-5.2?quant=fp8", UpstreamTarget(
        "https://docs.sglang.io/cookbook/autoregressive/GLM/GLM-5.2", "page", "sgl-project/sglang",
        paths=("docs_new/cookbook/autoregressive/GLM/GLM-5.2.mdx", "docs_new/cookbook/autoregressive/GLM/GLM-5.2.md",
               "docs_new/cookbook/autoregressive/GLM/GLM-5.2/index.mdx",
               "docs_new/cookbook/autoregressive/GLM/GLM-5.2/index.md"))),
    ("https://docs.sglang.io/cookbook/intro.html", UpstreamTarget(
        "https://docs.sglang.io/cookbook/intro", "page", "sgl-project/sglang",
        paths=("docs_new/cookbook/intro.mdx", "docs_new/cookbook/intro.md", "docs_new/cookbook/intro/index.mdx",
               "docs_new/cookbook/intro/index.md"))),
])
def test_accepted_links(url, expected):
    assert upstream_recipes.target(url) == expected


@pytest.mark.parametrize("url", [
    "https://github.com/vllm-project/recipes/blob/main/models/org/Model.yaml",
    "https://github.com/vllm-project/recipes/commit/abc123",
    "https://github.com/vllm-project/recipes/tree/my-branch",
    "https://github.com/vllm-project/vllm/pull/5",
    "https://github.com/SemiAnalysisAI/InferenceX/pull/2213",
    "https://recipes.vllm.ai/",
    "https://recipes.vllm.ai/moonshotai",
    "https://docs.sglang.io/other/page",
    "https://docs.sglang.io/cookbook/../../etc/passwd",
    "ftp://recipes.vllm.ai/a/b",
    "https://evil.example/recipes.vllm.ai/a/b",
])
def test_rejected_links(url):
    assert upstream_recipes.target(url) is None


def test_links_are_read_from_the_detail_section_with_trailing_punctuation():
    detail = (f"Recipe: {PR_URL}. Also ({PAGE_URL}), and again {PR_URL}; "
              "waiver https://github.com/SemiAnalysisAI/InferenceX/blob/main/docs/waiver/1.md")
    ctx = make(detail=detail)
    assert [t.url for t in upstream_recipes.targets(ctx.signoff.detail_links)] == [PR_URL, PAGE_URL]


def test_links_outside_the_detail_section_do_not_count():
    body = builders.SIGNOFF_HEAD + f"\n- [x] Recipe {PR_URL}\n\n### Additional detail section:\n- none\n"
    result = run(make(comments=[builders.comment(body)]))
    assert result.status is Status.FAIL and "links no upstream recipe" in result.reason


def test_wants_asks_for_the_linked_recipes():
    ctx = make(detail=f"{PR_URL} and {PAGE_URL}", upstream=())
    wanted = builders.needs(recipe_link, ctx)
    assert sorted(t.url for t in wanted.upstream) == sorted([PR_URL, PAGE_URL])
    assert not builders.needs(recipe_link, make(script=None, entry=None))
    assert not builders.needs(recipe_link, make(comments=[]))


# --- applicability -----------------------------------------------------------------

MULTI_ENTRY = """dsv4-fp4-b200-dynamo-sglang:
  image: lmsysorg/sglang:v1
  model: deepseek-ai/DeepSeek-V4-Pro
  model-prefix: dsv4
  runner: b200
  precision: fp4
  framework: dynamo-sglang
  multinode: true
  disagg: true
  scenarios: {}
"""


def test_multi_node_only_is_na():
    multi_file = builders.changed("benchmarks/multi_node/srt-slurm-recipes/x/disagg.yaml", None, "a: 1\n")
    result = run(make(script=None, entry=MULTI_ENTRY, files=[multi_file], detail="disagg submission, no recipe"))
    assert result.status is Status.NA
    assert result.reason == ("disaggregated/multi-node submission (benchmarks/multi_node/**, multinode: true, "
                             "disagg: true, dynamo-sglang); the recipe-link requirement applies to single-node "
                             "recipes only")


def test_no_benchmark_change_is_na():
    result = run(make(script=None, entry=None, files=[builders.changed("README.md", "a", "b")]))
    assert result.status is Status.NA
    assert "no single-node vLLM/SGLang benchmark script or master-config entry" in result.reason


def test_helper_script_without_a_launch_is_not_a_recipe():
    helper = "#!/bin/bash\n# patches before vllm serve\nsed -i s/a/b/ /opt/x.py\n"
    result = run(make(script=helper, entry=None, script_path="benchmarks/single_node/agentic/apply_patches.sh"))
    assert result.status is Status.NA


ATOM = ENTRY.replace("kimi-fp4-mi355x-vllm", "kimi-fp4-mi355x-atom").replace("framework: vllm", "framework: atom")


def checklist_with(recipe_item: str) -> dict[str, str]:
    template = TEMPLATE.replace("- [ ] Verified things\n", f"- [ ] Verified things\n- [ ] {recipe_item}\n"
                                "  - [ ] I linked the corresponding upstream PR.\n")
    return {"docs/PR_REVIEW_CHECKLIST.md": template}


REAL_RECIPE_ITEM = ("Verified that every single-node vLLM/SGLang recipe in this PR is documented in the official "
                    "[vLLM recipes](https://recipes.vllm.ai/) and/or the [SGLang cookbook](https://docs.sglang.io/):")


def test_other_single_node_frameworks_are_na_where_the_checklist_names_vllm_sglang_only():
    result = run(make(script=None, entry=ATOM, policy=checklist_with(REAL_RECIPE_ITEM)))
    assert result.status is Status.NA
    assert result.reason == ("single-node changes are atom only; the checklist's recipe item "
                             "(docs/PR_REVIEW_CHECKLIST.md:6) covers vLLM/SGLang recipes only")


@pytest.mark.parametrize("policy", [
    {},  # no checklist: the spec's rule, every single-node recipe
    checklist_with("Verified that every single-node recipe in this PR is documented in the official vLLM recipes"),
    checklist_with("Verified that every single-node vLLM/SGLang/ATOM recipe in this PR is documented upstream"),
    checklist_with("Verified the images are upstream"),  # no recipe item
])
def test_other_single_node_frameworks_are_judged_unless_the_checklist_exempts_them(policy):
    result = run(make(script=None, entry=ATOM, policy=policy))
    assert result.status is Status.FAIL
    assert result.reason.startswith(f"vllm-project/recipes#7 documents org/Model-MXFP4 only for vllm, while {CONFIG} "
                                    "serves atom")


def test_other_single_node_framework_without_a_link_fails_when_in_scope():
    result = run(make(script=None, entry=ATOM, detail="- ATOM recipe: internal", upstream=()))
    assert result.status is Status.FAIL and "links no upstream recipe" in result.reason


def test_mixed_pr_judges_the_single_node_part():
    multi_file = builders.changed("benchmarks/multi_node/srt-slurm-recipes/x/disagg.yaml", None, "a: 1\n")
    result = run(make(files=[multi_file]))
    assert result.status is Status.PASS
    assert result.reason.endswith("(multi-node part not assessed)")


# --- the link and its merge status ------------------------------------------------------

def test_pass():
    result = run(make())
    assert result.status is Status.PASS
    assert result.reason == ("vllm-project/recipes#7 (merged 2026-07-01) documents org/Model-MXFP4 on mi355x "
                             f"({SCRIPT_PATH}): --tensor-parallel-size 8, --kv-cache-dtype fp8 match; "
                             "InferenceX-only knobs (informational): --max-num-seqs")


def test_published_page_counts_as_merged_documentation():
    result = run(make(detail=f"published: {PAGE_URL}", upstream=(page(),)))
    assert result.status is Status.PASS
    assert result.reason.startswith(f"{PAGE_URL} (published) documents org/Model-MXFP4")


def test_no_signoff_fails():
    result = run(make(comments=[]))
    assert result.status is Status.FAIL and result.reason.startswith("no sign-off found")


def test_signoff_without_a_detail_section_fails():
    result = run(make(detail=None))
    assert result.status is Status.FAIL and "no additional detail section" in result.reason


def test_no_link_fails():
    result = run(make(detail="recipes are already similar to the official ones"))
    assert result.status is Status.FAIL
    assert result.reason.startswith("the additional detail section links no upstream recipe; link the merged")


def test_placeholder_detail_fails_naming_it():
    result = run(make(detail="- insert any additional info here",
                      policy={"docs/PR_REVIEW_CHECKLIST.md": TEMPLATE}))
    assert result.status is Status.FAIL
    assert result.reason.startswith("the additional detail section is the unfilled template placeholder")


def test_branch_or_commit_link_fails_naming_it():
    url = "https://github.com/vllm-project/recipes/tree/add-model"
    result = run(make(detail=f"recipe branch: {url}"))
    assert result.status is Status.FAIL and url in result.reason and "branch/commit/file" in result.reason


@pytest.mark.parametrize("doc, message", [
    (pull(state="open", merged=False, merged_at=None), "vllm-project/recipes#7 is open, not merged"),
    (pull(state="open", merged=False, merged_at=None, draft=True), "vllm-project/recipes#7 is a draft pull request"),
    (pull(state="closed", merged=False, merged_at=None), "vllm-project/recipes#7 was closed without merging"),
    (pull(merged_at=None), "cannot decide: vllm-project/recipes#7 reports merged without a merge date"),
    (pull(error="vllm-project/recipes is not reachable", files={}),
     "cannot decide: vllm-project/recipes#7 could not be read (vllm-project/recipes is not reachable)"),
])
def test_unmerged_or_unreadable_pull_fails(doc, message):
    result = run(make(upstream=(doc,)))
    undecided = message.startswith("cannot decide")
    assert result.status is (Status.UNDECIDED if undecided else Status.FAIL) and result.reason.startswith(message)


def test_unfetched_link_fails_closed():
    result = run(make(upstream=()))
    assert result.status is Status.UNDECIDED
    assert result.reason.startswith("cannot decide: vllm-project/recipes#7 was not fetched, so its merge status "
                                    "cannot be verified")


def test_unreadable_page_fails_closed():
    doc = UpstreamDoc(PAGE_URL, "page", "vllm-project/recipes", error="no models/org/Model.yaml on main")
    result = run(make(detail=PAGE_URL, upstream=(doc,)))
    assert result.status is Status.UNDECIDED
    assert result.reason.startswith(f"cannot decide: {PAGE_URL} could not be read (no models/org/Model.yaml on main)")


def test_every_linked_recipe_must_verify():
    result = run(make(detail=f"{PR_URL} {PAGE_URL}", upstream=(pull(),)))
    assert result.status is Status.UNDECIDED and f"{PAGE_URL} was not fetched" in result.reason


def test_pull_without_a_recipe_file_fails():
    result = run(make(upstream=(pull(files={".github/workflows/ci.yml": "on: push\n"}),)))
    assert result.status is Status.FAIL and result.reason.startswith("vllm-project/recipes#7 has no recipe file")


def test_unparseable_recipe_fails_closed():
    result = run(make(upstream=(pull(files={RECIPE_PATH: "model: [\n"}),)))
    assert result.status is Status.UNDECIDED and f"{RECIPE_PATH}:" in result.reason and "does not parse" in result.reason


# --- MAJOR args ----------------------------------------------------------------------------

def test_wrong_model_fails():
    other = RECIPE.replace("org/Model-MXFP4", "org/Other-MXFP4")
    result = run(make(upstream=(pull(files={"models/org/Other.yaml": other}),)))
    assert result.status is Status.FAIL
    assert result.reason == ("vllm-project/recipes#7 (models/org/Other.yaml) documents org/Other-MXFP4, not "
                             f"org/Model-MXFP4 ({SCRIPT_PATH}:3); link the merged recipe for org/Model-MXFP4")


def test_model_match_is_case_insensitive():
    result = run(make(entry=ENTRY.replace("org/Model-MXFP4", "ORG/model-mxfp4")))
    assert result.status is Status.PASS


def test_contradicting_major_arg_fails_with_line():
    result = run(make(script=SCRIPT.replace("--kv-cache-dtype fp8", "--kv-cache-dtype fp8_e5m2")))
    assert result.status is Status.FAIL
    assert result.reason == ("MAJOR args missing from or contradicting vllm-project/recipes#7 for org/Model-MXFP4 "
                             f"on mi355x: {SCRIPT_PATH}:5 --kv-cache-dtype fp8_e5m2 (recipe: fp8); match the recipe "
                             "or get these args into the merged upstream recipe")


def test_major_arg_the_recipe_leaves_at_default_fails():
    recipe = RECIPE.replace('extra_args: ["--kv-cache-dtype", "fp8"]', "extra_args: []")
    result = run(make(upstream=(pull(files={RECIPE_PATH: recipe}),)))
    assert result.status is Status.FAIL
    assert f"{SCRIPT_PATH}:5 --kv-cache-dtype fp8 (recipe leaves it at the default)" in result.reason


def test_fp8_e4m3_equals_fp8():
    result = run(make(script=SCRIPT.replace("--kv-cache-dtype fp8", "--kv-cache-dtype fp8_e4m3")))
    assert result.status is Status.PASS


def test_explicit_default_counts_as_unset():
    script = SCRIPT.replace("--max-num-seqs 256", "--moe-backend auto --quantization mxfp4 --dtype auto")
    assert run(make(script=script)).status is Status.PASS


def test_quantization_of_another_precision_is_not_the_default():
    result = run(make(script=SCRIPT.replace("--max-num-seqs 256", "--quantization fp8")))
    assert result.status is Status.FAIL and "--quantization fp8 (recipe leaves it at the default)" in result.reason


def test_tp_from_the_master_config_must_be_documented():
    entry = ENTRY.replace("{ tp: 8, conc-start: 4, conc-end: 64 }",
                          "{ tp: 8, conc-start: 4, conc-end: 64 }\n      - { tp: 4, conc-start: 4, conc-end: 64 }")
    result = run(make(entry=entry))
    assert result.status is Status.FAIL
    assert f"{SCRIPT_PATH}:4 --tensor-parallel-size 4 (recipe: 8)" in result.reason


def test_guide_command_documents_another_tp():
    recipe = RECIPE + """guide: |
  ## MI355X throughput reproduction
  ```bash
  export VLLM_ROCM_USE_AITER=1
  vllm serve org/Model-MXFP4 --tensor-parallel-size 4 --kv-cache-dtype fp8 --max-num-seqs 256
  ```
  ## B200
  ```bash
  vllm serve org/Model-MXFP4 --tensor-parallel-size 2
  ```
"""
    entry = ENTRY.replace("{ tp: 8, conc-start: 4, conc-end: 64 }",
                          "{ tp: 8, conc-start: 4, conc-end: 64 }\n      - { tp: 4, conc-start: 4, conc-end: 64 }")
    result = run(make(entry=entry, upstream=(pull(files={RECIPE_PATH: recipe}),)))
    assert result.status is Status.PASS
    assert "--tensor-parallel-size 8/4" in result.reason and "InferenceX-only" not in result.reason
    two = entry.replace("tp: 4", "tp: 2")
    assert run(make(entry=two, upstream=(pull(files={RECIPE_PATH: recipe}),))).status is Status.FAIL


def test_kernel_env_must_be_documented():
    result = run(make(script=SCRIPT.replace("export VLLM_ROCM_USE_AITER=1",
                                            "export VLLM_ROCM_USE_AITER=1\nexport VLLM_ROCM_USE_AITER_MLA=0")))
    assert result.status is Status.FAIL
    assert f"{SCRIPT_PATH}:3 VLLM_ROCM_USE_AITER_MLA=0 (recipe leaves it at the default)" in result.reason
    tuning_env = SCRIPT.replace("export VLLM_ROCM_USE_AITER=1", "export VLLM_ROCM_USE_AITER=1\nexport OMP_NUM_THREADS=1")
    assert run(make(script=tuning_env)).status is Status.PASS


def test_sku_the_recipe_does_not_declare_fails():
    entry = ENTRY.replace("runner: mi355x", "runner: mi300x").replace("kimi-fp4-mi355x-vllm", "kimi-fp4-mi300x-vllm")
    path = SCRIPT_PATH.replace("mi355x", "mi300x")
    result = run(make(entry=entry, script_path=path))
    assert result.status is Status.FAIL
    assert result.reason.startswith("vllm-project/recipes#7 documents org/Model-MXFP4 only on b200, mi355x, "
                                    "not on mi300x")


def test_engine_mismatch_fails():
    sglang = ENTRY.replace("framework: vllm", "framework: sglang").replace("mi355x-vllm", "mi355x-sglang")
    script = "python3 -m sglang.launch_server --model-path $MODEL --tp $TP\n"
    result = run(make(entry=sglang, script=script, script_path=SCRIPT_PATH.replace(".sh", "_sglang.sh")))
    assert result.status is Status.FAIL and "only for vllm" in result.reason


def test_speculative_config_is_compared_by_key():
    recipe = RECIPE + """features:
  spec_decoding:
    args: ["--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3}']
"""
    spec = SCRIPT.replace("--max-num-seqs 256",
                          "--speculative-config '{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 1}'")
    assert run(make(script=spec, upstream=(pull(files={RECIPE_PATH: recipe}),))).status is Status.PASS
    eagle = spec.replace("deepseek_mtp", "eagle3")
    result = run(make(script=eagle, upstream=(pull(files={RECIPE_PATH: recipe}),)))
    assert result.status is Status.FAIL and "--speculative-config method=eagle3 (recipe: mtp)" in result.reason


def test_unresolvable_major_arg_fails_closed():
    result = run(make(script=SCRIPT.replace("--kv-cache-dtype fp8", "--kv-cache-dtype $KV_DTYPE")))
    assert result.status is Status.UNDECIDED
    assert result.reason == (f"cannot decide: the value of MAJOR arg {SCRIPT_PATH}:5 --kv-cache-dtype is not "
                             "determined by the script or its master-config entry; set it explicitly")


def test_partly_determined_major_arg_fails_closed():
    result = run(make(script=SCRIPT.replace("--kv-cache-dtype fp8", '--kv-cache-dtype "${KV_PREFIX}fp8"')))
    assert result.status is Status.UNDECIDED and "--kv-cache-dtype is not determined" in result.reason


def test_script_without_a_master_config_entry_fails_closed():
    result = run(make(entry=None))
    assert result.status is Status.UNDECIDED
    assert result.reason.startswith(f"cannot decide: no vllm master-config entry matches {SCRIPT_PATH} by model "
                                    "prefix, precision and SKU")


def test_script_that_never_launches_for_its_points_fails_closed():
    script = 'if [ "$TP" -ne 4 ]; then exit 1; fi\n' + SCRIPT
    result = run(make(script=script))
    assert result.status is Status.UNDECIDED
    assert result.reason.startswith(f"cannot decide: {SCRIPT_PATH} reaches no single-node vllm launch for any "
                                    "search-space point")


AGENTIC = """kimi-fp4-mi355x-vllm-agentic:
  image: vllm/vllm-openai-rocm:v1
  model: org/Model-MXFP4
  model-prefix: kimi
  runner: cluster:mi355x-amds
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 8, kv-offloading: none, conc-list: [1] }
kimi-fp4-mi355x-vllm-agentic-mtp:
  image: vllm/vllm-openai-rocm:v1
  model: org/Model-MXFP4
  model-prefix: kimi
  runner: cluster:mi355x-amds
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - { tp: 4, kv-offloading: none, conc-list: [1] }
"""


@pytest.mark.parametrize("script_path, key", [
    ("benchmarks/single_node/fixed_seq_len/kimi_fp4_mi355x.sh", "kimi-fp4-mi355x-vllm"),
    ("benchmarks/single_node/agentic/kimi_fp4_mi355x.sh", "kimi-fp4-mi355x-vllm-agentic"),
    ("benchmarks/single_node/agentic/kimi_fp4_mi355x_mtp.sh", "kimi-fp4-mi355x-vllm-agentic-mtp"),
    ("benchmarks/single_node/agentic/kimi_fp4_mi355x_vllm_mtp.sh", "kimi-fp4-mi355x-vllm-agentic-mtp"),
    ("benchmarks/single_node/agentic/kimi_fp4_mi355x_eagle.sh", None),
    ("benchmarks/single_node/agentic/kimi_fp8_mi355x.sh", None),
])
def test_scripts_pair_with_their_entry_by_name_and_scenario(script_path, key):
    found = recipe_link._pair(make(entry=ENTRY + AGENTIC), script_path, "vllm")
    assert (found[1] if found else None) == key


def test_an_entry_pairs_by_its_model_prefix_field_however_written():
    quoted = ENTRY.replace("model-prefix: kimi", 'model-prefix: "KIMI"  # the prefix').replace(
        "kimi-fp4-mi355x-vllm:", "k-fp4-mi355x-vllm:")
    other = ENTRY.replace("model-prefix: kimi", "model-prefix: kimik3").replace("kimi-fp4", "kimi-x-fp4")
    found = recipe_link._pair(make(entry=other + quoted), "benchmarks/single_node/fixed_seq_len/kimi_fp4_mi355x.sh",
                              "vllm")
    assert found is not None and found[1] == "k-fp4-mi355x-vllm"


def test_sglang_cookbook_page():
    entry = (ENTRY.replace("framework: vllm", "framework: sglang").replace("mi355x-vllm", "mi355x-sglang"))
    script = ("export SGLANG_USE_AITER=1\npython3 -m sglang.launch_server --model-path $MODEL --tp $TP "
              "--kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.8\n")
    cookbook = """# Model
## AMD MI355X
```bash
SGLANG_USE_AITER=1 python3 -m sglang.launch_server --model-path org/Model-MXFP4 --tp 8 --kv-cache-dtype fp8_e4m3
```
"""
    url = "https://docs.sglang.io/cookbook/autoregressive/Org/Model"
    doc = UpstreamDoc(url, "page", "sgl-project/sglang",
                      files=frozen_map({"docs_new/cookbook/autoregressive/Org/Model.mdx": cookbook}))
    result = run(make(detail=f"cookbook: {url}", upstream=(doc,), entry=entry, script=script,
                      script_path=SCRIPT_PATH.replace(".sh", "_sglang.sh")))
    assert result.status is Status.PASS
    assert result.reason == (f"{url} (published) documents org/Model-MXFP4 on mi355x "
                             f"({SCRIPT_PATH.replace('.sh', '_sglang.sh')}): --tp 8, --kv-cache-dtype fp8_e4m3 "
                             "match; InferenceX-only knobs (informational): --mem-fraction-static")


def test_document_without_a_readable_serve_command_fails_closed():
    result = run(make(upstream=(pull(files={"models/org/Model.md": "# Model\nSee the interactive builder.\n"}),)))
    assert result.status is Status.UNDECIDED
    assert result.reason.startswith("cannot decide: vllm-project/recipes#7 (models/org/Model.md) has no serve "
                                    "command or model this bot can read, so it cannot be verified to document "
                                    "org/Model-MXFP4")


def test_only_the_recipe_for_the_model_counts():
    other = RECIPE.replace("org/Model-MXFP4", "org/Other-MXFP4")
    files = {"models/org/Other.yaml": other, RECIPE_PATH: RECIPE, "README.md": "# Recipes\n"}
    assert run(make(upstream=(pull(files=files),))).status is Status.PASS


def test_changed_entry_without_its_script_is_compared():
    base = ENTRY
    head = ENTRY.replace("conc-end: 64", "conc-end: 128")
    assert run(make(script=None, entry=head, base_entry=base)).status is Status.PASS
    head_tp4 = ENTRY.replace("tp: 8", "tp: 4")
    result = run(make(script=None, entry=head_tp4, base_entry=base))
    assert result.status is Status.FAIL and f"{CONFIG}:14 tp: 4 (recipe: 8)" in result.reason


def test_unparseable_entry_fails_closed():
    result = run(make(script=None, entry=ENTRY.replace("  model: org/Model-MXFP4", "  model: [org")))
    assert result.status is Status.UNDECIDED and "kimi-fp4-mi355x-vllm does not parse" in result.reason


def test_deterministic():
    ctx = make(detail=f"{PR_URL} {PAGE_URL}", upstream=(pull(), page()))
    assert run(ctx) == run(make(detail=f"{PR_URL} {PAGE_URL}", upstream=(pull(), page())))


# --- the shared worlds ------------------------------------------------------------------------

@pytest.mark.parametrize("world", world_params())
def test_world_agrees_with_expected(world):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World

    expected = (yaml.safe_load((world / "expected.yaml").read_text()) or {}).get("checks", {})
    if 3 not in expected:
        pytest.skip("expected.yaml does not assert check 3")
    snap = snapshot_from_world(World.load(world), rules=rules_of(recipe_link))
    result = recipe_link.check(Context(snap))
    assert result.status.value == expected[3], result.reason


def test_a_matching_entry_that_does_not_parse_is_undecided_not_an_internal_error():
    """The entry a script pairs with is read by its fields alone (model prefix, precision, SKU): when its YAML
    does not parse, what the script serves cannot be resolved (it once raised on the missing entry)."""
    bad = ENTRY.replace("  multinode: false\n", "  multinode: false\n  extra: [unclosed\n")
    result = run(make(entry=bad, script_path="benchmarks/single_node/kimi_fp4_mi355x.sh"))
    assert result.status is Status.UNDECIDED
    assert "internal error" not in result.reason
    assert "configs/amd-master.yaml" in result.reason and "does not parse" in result.reason  # what was not read
