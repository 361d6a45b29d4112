"""Check 6 (upstream image / ordering): unit cases on small snapshots, and agreement with the shared worlds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts import hardware
from checks.result import Severity, Status
from checks.rules import check06_images
from checks.rules.check06_images import RULE_IMAGE, RULE_ORDER
from tests.builders import SIGNOFF_HEAD, comment, ctx, decided, sound
from tests.conftest import assert_check_agrees, world_params

NV = "configs/nvidia-master.yaml"
AMD = "configs/amd-master.yaml"


def entry(key: str, image: str, framework: str, runner: str, prefix: str = "dsr1") -> str:
    return f"""{key}:
  image: {image}
  model: some/model
  model-prefix: {prefix}
  runner: {runner}
  precision: fp8
  framework: {framework}
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - {{ tp: 8, conc-list: [4, 8] }}
"""


EXISTING = entry("dsr1-fp8-b200-sglang", "lmsysorg/sglang:v0.5.7", "sglang", "b200-multinode")


def run(added: str, path: str = NV, base: str = EXISTING, detail: str | None = None, head_base: str | None = None):
    comments = []
    if detail is not None:
        comments = [comment(f"{SIGNOFF_HEAD}\n- [x] item\n\n### Additional detail section:\n{detail}\n\nSigned: `r`")]
    head = (head_base if head_base is not None else base) + "\n" + added
    master_base = {NV: base} if path == NV else {NV: base, AMD: ""}
    master_head = {NV: head} if path == NV else {NV: base, AMD: added}
    return check06_images.check(ctx(master_base=master_base, master_head=master_head, comments=comments))


@pytest.mark.parametrize("image, org", [
    ("vllm/vllm-openai:v0.11.0", "vllm"),
    ("vllm/vllm-openai-rocm:nightly-387189c4", "vllm"),
    ("lmsysorg/sglang:v0.5.14-cu130@sha256:0123abcd", "lmsysorg"),
    ("docker.io/lmsysorg/sglang-rocm:v0.5.16", "lmsysorg"),
    ("docker.io#vllm/vllm-openai:latest", "vllm"),
    ("'vllm/vllm-openai:v1'", "vllm"),
    ("rocm/sgl-dev:v0.5.16", "rocm"),
    ("ghcr.io#semianalysisai/trtllm-deepseek-v4:1", None),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.2", None),
    ("quay.io/rh-ee-imarkov/llm-d-nokube-vllm:vllm0.26@sha256:ab", None),
    ("localhost:5000/vllm/vllm-openai:x", None),
    ("ubuntu:22.04", "library"),
    ("", None),
])
def test_image_org(image, org):
    assert check06_images.image_org(image) == org


@pytest.mark.parametrize("runner, sku", [
    ("b200-nscale", "b200"), ("cluster:mi355x-amds", "mi355x"), ("gb200", "gb200"),
    ("b200-multinode", "b200"), ("mi355x-disagg", "mi355x"), ("Cluster:GB300-NV", "gb300"), ("", ""),
])
def test_sku_family(runner, sku):
    assert hardware.sku(runner) == sku


@pytest.mark.parametrize("framework, upstream", [
    ("vllm", True), ("sglang", True), ("vllm-disagg", True), ("sglang-disagg", True), ("dynamo-vllm", True),
    ("dynamo-sglang", True), ("llmd-vllm", True), ("trt", False), ("dynamo-trt", False), ("atom", False),
    ("atom-disagg", False), ("tilert", False), ("", False),
])
def test_framework_family(framework, upstream):
    assert check06_images.is_upstream_framework(framework) is upstream


def test_na_when_no_entry_is_added_or_changed():
    r = check06_images.check(ctx(master_base={NV: EXISTING}, master_head={NV: EXISTING}))
    assert r.status is Status.NA
    assert r.reason == "the PR adds or changes no master-config entries"


def test_na_when_the_pr_only_removes_entries():
    r = check06_images.check(ctx(master_base={NV: EXISTING}, master_head={NV: ""}))
    assert r.status is Status.NA


def test_upstream_images_pass():
    r = run(entry("dsr1-fp8-b200-vllm", "vllm/vllm-openai:v0.11.0@sha256:00ff", "vllm", "b200"))
    assert r.status is Status.PASS
    assert r.reason == "dsr1-fp8-b200-vllm runs upstream vllm/vllm-openai:v0.11.0@sha256:00ff"


def test_dynamo_sglang_on_upstream_image_passes_like_pr2554():
    added = entry("dsv4-fp4-b200-dynamo-sglang-mtp", "lmsysorg/sglang:nightly-dev-cu13-20260710-cfc66e05",
                  "dynamo-sglang", "b200-nscale", prefix="dsv4")
    assert run(added).status is Status.PASS


def test_vendor_fork_on_established_sku_fails_on_the_image_line():
    added = entry("dsr1-fp8-mi355x-sglang", "rocm/sgl-dev:v0.5.16", "sglang", "cluster:mi355x-amds")
    r = run(added, path=AMD)
    decided(r, Status.FAIL, (RULE_IMAGE, AMD, 2), only=True)
    assert r.findings[0].severity is Severity.ERROR
    assert "; use an image from vllm/... or lmsysorg/..." in r.reason  # the fix


@pytest.mark.parametrize("image, framework", [
    ("ghcr.io#semianalysisai/vllm:1", "vllm-disagg"),
    ("docker.io/rocm/vllm-dev:0.23", "vllm"),
    ("nvcr.io#nvidia/ai-dynamo/vllm-runtime:0.9", "dynamo-vllm"),
    ("", "sglang"),
])
def test_non_upstream_images_fail(image, framework):
    r = run(entry("dsr1-fp8-b200-x", image or '""', framework, "b200"))
    decided(r, Status.FAIL, (RULE_IMAGE, NV, EXISTING.count("\n") + 3), only=True)  # the added entry's image line


def test_new_hardware_may_run_a_vendor_image():
    r = run(entry("dsr1-fp8-mi455x-sglang", "rocm/sgl-dev:mi455x", "sglang", "mi455x-ualoe72"))
    assert r.status is Status.PASS
    assert "not an established SKU" in r.reason


def test_policy_upstream_orgs_are_configurable():
    c = ctx(master_base={NV: ""}, master_head={NV: entry("k", "myorg/vllm:1", "vllm", "b200")},
            policy={".github/signoff-bot.yml": "upstream_image_orgs: [myorg]"})
    assert check06_images.check(c).status is Status.PASS


def test_documented_exception_waives_the_image_rule():
    added = entry("dsr1-fp8-b300-sglang", "rocm/sgl-dev:v1", "sglang", "b300")
    detail = "- `dsr1-fp8-b300-sglang`: exception, new model architecture not yet supported upstream (per SGLang maintainers)"
    r = run(added, detail=detail)
    assert r.status is Status.PASS
    assert "exception documented in the sign-off" in r.reason


@pytest.mark.parametrize("detail", [
    "- dsr1-fp8-b300-sglang: no exception needed",
    "- this is an exception for new hardware",  # names neither the key nor the image
    "- dsr1-fp8-b300-sglang uses the rocm image\n- exception: new hardware",  # in a different item
])
def test_exception_must_name_the_entry_and_not_be_negated(detail):
    added = entry("dsr1-fp8-b300-sglang", "rocm/sgl-dev:v1", "sglang", "b300")
    assert run(added, detail=detail).status is Status.FAIL


def test_exception_may_name_the_image_with_hash_separator():
    added = entry("dsr1-fp8-b300-sglang", "ghcr.io#org/sglang:v1", "sglang", "b300")
    detail = "Paragraph: ghcr.io/org/sglang:v1 is an exception:\nnew hardware bring-up."
    assert run(added, detail=detail).status is Status.PASS


def test_engine_first_ordering_satisfied_by_same_model_and_sku_family():
    added = entry("dsr1-fp8-b200-trt", "nvcr.io#nvidia/tensorrt-llm/release:1.2", "trt", "b200")
    r = run(added)
    assert r.status is Status.PASS
    assert r.reason == "dsr1-fp8-b200-trt: engine-first ordering satisfied by dsr1-fp8-b200-sglang"


def test_engine_first_ordering_counts_entries_in_any_master_config():
    added = entry("dsr1-fp8-mi355x-atom", "rocm/atom:v1", "atom", "cluster:mi355x-amds")
    amd_vllm = entry("dsr1-fp8-mi355x-vllm", "vllm/vllm-openai-rocm:v1", "vllm", "mi355x")
    c = ctx(master_base={NV: amd_vllm, AMD: ""}, master_head={NV: amd_vllm, AMD: added})
    assert check06_images.check(c).status is Status.PASS


def test_engine_first_ordering_fails_on_the_key_line_without_upstream_entry():
    added = entry("dsr1-fp8-gb300-dynamo-trt", "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.5", "dynamo-trt", "gb300")
    r = run(added)
    line = EXISTING.count("\n") + 2
    decided(r, Status.FAIL, (RULE_ORDER, NV, line), only=True)
    assert "no vLLM/SGLang entry for dsr1 on gb300 exists" in r.reason  # what is missing, for the fix


def test_engine_first_ordering_exception():
    added = entry("dsr1-fp8-gb300-dynamo-trt", "nvcr.io#nvidia/x:1", "dynamo-trt", "gb300")
    detail = "- dsr1-fp8-gb300-dynamo-trt is a new hardware exception (Vera Rubin bring-up)"
    assert run(added, detail=detail).status is Status.PASS


def test_changing_an_existing_vendor_engine_entry_is_not_a_new_submission():
    trt = entry("dsr1-fp8-gb300-trt", "nvcr.io#nvidia/tensorrt-llm/release:1.1", "trt", "gb300")
    base = EXISTING + "\n" + trt
    head = EXISTING + "\n" + trt.replace("release:1.1", "release:1.2")
    r = check06_images.check(ctx(master_base={NV: base}, master_head={NV: head}))
    assert r.status is Status.PASS
    assert "not a new submission" in r.reason


def test_moving_a_vendor_engine_entry_to_another_sku_is_a_new_submission():
    trt = entry("dsr1-fp8-gb300-trt", "nvcr.io#nvidia/tensorrt-llm/release:1.1", "trt", "gb300")
    base = EXISTING + "\n" + trt
    head = EXISTING + "\n" + trt.replace("runner: gb300", "runner: h100")
    r = check06_images.check(ctx(master_base={NV: base}, master_head={NV: head}))
    decided(r, Status.FAIL, (RULE_ORDER, NV, EXISTING.count("\n") + 2), only=True)


def test_every_problem_is_a_finding_and_the_reason_counts_the_rest():
    added = (entry("a-fp8-b200-sglang", "rocm/sgl-dev:1", "sglang", "b200", prefix="a") + "\n"
             + entry("b-fp8-b200-trt", "nvcr.io#nvidia/trt:1", "trt", "b200", prefix="b"))
    r = run(added)
    assert r.status is Status.FAIL
    assert r.reason.endswith("(+1 more)")
    assert sorted(f.rule for f in r.findings) == ["engine-first-ordering", "upstream-image"]


def test_malformed_entry_fails_with_its_line():
    r = run("broken:\n  image: [unclosed\n  framework: vllm\n")
    assert r.status is Status.FAIL
    assert r.reason.startswith(f"{NV}:") and "does not parse" in r.reason
    assert r.findings


def test_deterministic():
    added = entry("dsr1-fp8-mi355x-sglang", "rocm/sgl-dev:v0.5.16", "sglang", "mi355x")
    assert run(added) == run(added)


@pytest.mark.parametrize("world", world_params())
def test_agrees_with_the_shared_worlds(world):
    assert_check_agrees(world, check06_images)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="- :#[]{}\n\tabcimgrunfw0123'\"", max_size=200))
def test_never_raises_on_arbitrary_text(text):
    sound(check06_images, ctx(master_base={NV: EXISTING}, master_head={NV: EXISTING + text}))
