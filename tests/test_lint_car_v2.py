"""car-v2-multinode-decode: cross-node decode workers must disable SGLang's custom all-reduce v2."""

from __future__ import annotations

from checks.lint import car_v2
from checks.result import Severity
from tests.test_lint_recipes import (
    CAR_ABSENT,
    L_BACKEND,
    L_CAR,
    L_DECODE_ENV,
    RECIPE_PATH,
    lint_ctx,
    recipe_yaml,
)


def found(text: str):
    return [(f.line, f.severity) for f in car_v2.check(lint_ctx(text))]


def test_multinode_decode_without_the_variable_is_an_error_on_decode_environment():
    [f] = car_v2.check(lint_ctx(recipe_yaml(car=CAR_ABSENT)))
    assert (f.path, f.line, f.rule, f.severity) == (RECIPE_PATH, L_DECODE_ENV, car_v2.ID, Severity.ERROR)
    assert "8 GPUs on 4-GPU nodes (2 nodes)" in f.message
    assert 'set SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"' in f.message


def test_variable_left_on_is_an_error_on_its_line():
    text = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "1"')
    assert found(text) == [(L_CAR, Severity.ERROR)]


def test_missing_decode_environment_is_reported_on_backend():
    text = recipe_yaml(car=CAR_ABSENT).replace('  decode_environment:\n    PYTHONUNBUFFERED: "1"\n' + CAR_ABSENT + "\n", "")
    assert found(text) == [(L_BACKEND, Severity.ERROR)]


def test_span_from_tensor_parallel_size_alone():
    text = recipe_yaml(car=CAR_ABSENT, gpus_per_decode=4, decode_tp=8)
    assert found(text) == [(L_DECODE_ENV, Severity.ERROR)]


def test_span_from_computed_gpus_per_decode_and_sku_gpus_per_node():
    text = recipe_yaml(car=CAR_ABSENT, decode_tp=4, decode_nodes=4).replace("  gpus_per_decode: 8\n", "")
    text = text.replace("  gpus_per_node: 4\n", "")  # gb200: 4 GPUs per node
    # the removals shift decode_environment up by two lines
    assert found(text) == [(L_DECODE_ENV - 2, Severity.ERROR)]


def test_disabled_variable_passes():
    assert found(recipe_yaml()) == []
    assert found(recipe_yaml(car="    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: 0")) == []


def test_single_node_decode_needs_nothing():
    assert found(recipe_yaml(car=CAR_ABSENT, gpn=8, gpu_type="b200", decode_nodes=1, prefill_nodes=1)) == []


def test_other_backends_are_not_sglang_recipes():
    assert found(recipe_yaml(car=CAR_ABSENT, backend="vllm")) == []


def test_unchanged_recipes_are_not_linted():
    c = lint_ctx(None, extra={RECIPE_PATH: recipe_yaml(car=CAR_ABSENT)})
    assert list(car_v2.check(c)) == []


def test_malformed_files_do_not_crash():
    assert found("resources: {gpus_per_node: 4\nbackend:\n") == []  # yaml-syntax reports it
    assert found("resources: [1, 2]\nbackend: {type: sglang}\n") == []
    assert found(recipe_yaml(car=CAR_ABSENT, gpn='"four"', gpu_type="unknown")) == []


def test_single_node_claim_on_a_multinode_decode_is_a_warning():
    text = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # decode fits on one node')
    assert found(text) == [(L_CAR, Severity.WARNING)]


def test_multinode_claim_on_a_single_node_decode_is_a_warning():
    text = recipe_yaml(gpn=8, gpu_type="b200", decode_nodes=1, prefill_nodes=1,
                       car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # decode spans 2 nodes')
    assert found(text) == [(L_CAR, Severity.WARNING)]


def test_comments_inside_the_decode_blocks_count_without_saying_decode():
    text = recipe_yaml(car='    # TP8 stays intra-node here\n' + CAR_ABSENT)
    assert found(text) == [(L_DECODE_ENV, Severity.ERROR), (L_CAR, Severity.WARNING)]


def test_comments_that_agree_or_talk_about_the_kernel_are_fine():
    agree = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # decode spans 2 nodes')
    kernel = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # CAR v2 is single-node only')
    both = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # multi-node decode: CAR v2 is not single-node')
    prefill = "# prefill is single-node\n" + recipe_yaml()
    assert found(agree) == found(kernel) == found(both) == found(prefill) == []


def test_more_than_one_node_is_a_multinode_claim():
    spanning = recipe_yaml(car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # decode needs more than one node')
    single = recipe_yaml(gpn=8, gpu_type="b200", decode_nodes=1, prefill_nodes=1,
                         car='    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"  # decode needs more than one node')
    assert found(spanning) == []
    assert found(single) == [(L_CAR, Severity.WARNING)]


AGG = """\
resources:
  gpu_type: "gb300"
  gpus_per_node: 4
  agg_nodes: {nodes}
  agg_workers: 1
backend:
  type: sglang
  aggregated_environment:
    PYTHONUNBUFFERED: "1"{car}
  sglang_config:
    aggregated:
      tensor-parallel-size: {tp}  # {comment}
"""


def agg(nodes=2, tp=8, car="", comment="the aggregated worker"):
    return AGG.format(nodes=nodes, tp=tp, car=car, comment=comment)


def test_aggregated_worker_spanning_nodes_needs_the_variable_in_aggregated_environment():
    [f] = car_v2.check(lint_ctx(agg()))
    assert (f.line, f.severity) == (8, Severity.ERROR)
    assert f.message.startswith("an aggregated worker uses 8 GPUs on 4-GPU nodes (2 nodes) and "
                                "aggregated_environment does not disable custom all-reduce v2")
    assert 'set SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0" in backend.aggregated_environment' in f.message


def test_aggregated_worker_with_the_variable_off_or_on_one_node_passes():
    assert found(agg(car='\n    SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"')) == []
    assert found(agg(nodes=1, tp=4)) == []


def test_comment_contradicting_the_aggregated_topology_is_a_warning():
    assert found(agg(nodes=1, tp=4, comment="aggregated worker spans 2 nodes")) == [(12, Severity.WARNING)]
