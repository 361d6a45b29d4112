"""Launch-command parsing of benchmark scripts (checks/facts/bash) and upstream recipes (checks/facts/serverargs.py)."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts import bash, hardware
from checks.facts import serverargs as sa


def only(script: str, env: dict | None = None) -> sa.ServerArgs:
    found = bash.Script(script).launches(env or {})
    assert len(found) == 1, found
    return sa.server_args(found[0])


def args_of(cmd: sa.ServerArgs) -> dict[str, tuple]:
    return {a.key: a.values for a in cmd.args}


def lines_of(cmd: sa.ServerArgs) -> dict[str, int]:
    return {a.key: a.line for a in cmd.args}


# --- the shell subset -------------------------------------------------------

def test_line_continuations_and_both_flag_forms():
    cmd = only("vllm serve org/M \\\n  --tensor-parallel-size=4 \\\n  --kv-cache-dtype fp8 \\\n  --async-scheduling\n")
    assert cmd.engine == "vllm"
    assert cmd.model.values == ("org/M",)
    assert args_of(cmd) == {"tensor-parallel-size": ("4",), "kv-cache-dtype": ("fp8",), "async-scheduling": ("",)}
    assert lines_of(cmd) == {"tensor-parallel-size": 2, "kv-cache-dtype": 3, "async-scheduling": 4}


def test_quoted_values_and_escaped_json():
    script = 'vllm serve "org/M" --kv-cache-dtype "fp8" --speculative-config "{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":2}"\n'
    got = args_of(only(script))
    assert got["kv-cache-dtype"] == ("fp8",)
    assert got["speculative.method"] == ("mtp",)
    assert got["speculative.num_speculative_tokens"] == ("2",)


def test_single_quoted_value_keeps_dollar_literal():
    got = args_of(only("vllm serve m --hf-overrides '{\"a\": \"$X\"}'\n"))
    assert got["hf-overrides"] == ('{"a": "$X"}',)


def test_variables_from_the_master_config_and_defaults():
    script = 'TP_ARG="${TP}"\nvllm serve $MODEL --tensor-parallel-size "$TP_ARG" --max-num-seqs "${SEQS:-128}"\n'
    cmd = only(script, {"MODEL": "org/M", "TP": "8"})
    assert cmd.model.values == ("org/M",)
    got = args_of(cmd)
    assert got["tensor-parallel-size"] == ("8",)
    assert got["max-num-seqs"] == (None, "128")  # SEQS may be set by the runner, else the default


def test_unknown_variable_is_unknown_not_empty():
    assert args_of(only("vllm serve m --quantization $QUANT\n"))["quantization"] == (None,)


def test_env_exports_and_prefix_assignments():
    script = ("export VLLM_ROCM_USE_AITER=1\nLOCAL=2\nexport LATER\nLATER=3\n"
              "VLLM_ATTENTION_BACKEND=TRITON vllm serve m\n")
    cmd = only(script)
    env = {a.key: (a.values, a.line) for a in cmd.args if a.key.startswith("env:")}
    assert env == {"env:VLLM_ROCM_USE_AITER": (("1",), 1), "env:LATER": (("3",), 4),
                   "env:VLLM_ATTENTION_BACKEND": (("TRITON",), 5)}


def test_export_of_a_variable_with_unknown_value_keeps_its_name():
    cmd = only('export MODEL_PATH="$SOMEWHERE"\nvllm serve m\n')
    assert [(a.key, a.values) for a in cmd.args] == [("env:MODEL_PATH", (None,))]


def test_array_command_keeps_the_lines_of_its_elements():
    script = """EP_ARGS=()
if [ "$EP_SIZE" -gt 1 ]; then
    EP_ARGS=(--enable-expert-parallel)
fi
CMD=(
    vllm serve "$MODEL"
    # a comment inside the array
    --tensor-parallel-size "$TP"
    "${EP_ARGS[@]}"
    --kv-cache-dtype fp8
)
printf '%q ' "${CMD[@]}"
"${CMD[@]}" > server.log 2>&1 &
"""
    cmd = only(script, {"MODEL": "m", "TP": "8", "EP_SIZE": "1"})
    assert lines_of(cmd) == {"tensor-parallel-size": 8, "kv-cache-dtype": 10}
    with_ep = only(script, {"MODEL": "m", "TP": "8", "EP_SIZE": "8"})
    assert args_of(with_ep)["enable-expert-parallel"] == ("",)


def test_decided_branches_follow_the_known_values():
    script = """PARALLEL=(--tensor-parallel-size "$TP")
if [ "$DP_ATTENTION" = "true" ]; then
    PARALLEL=(--tensor-parallel-size 1 --data-parallel-size "$TP")
elif [[ "$TP" -lt 8 ]]; then
    export VLLM_ROCM_USE_AITER_RMSNORM=0
else
    :
fi
vllm serve m "${PARALLEL[@]}"
"""
    dp = args_of(only(script, {"TP": "8", "DP_ATTENTION": "true"}))
    assert dp["tensor-parallel-size"] == ("1",) and dp["data-parallel-size"] == ("8",)
    tp4 = args_of(only(script, {"TP": "4", "DP_ATTENTION": "false"}))
    assert tp4 == {"tensor-parallel-size": ("4",), "env:VLLM_ROCM_USE_AITER_RMSNORM": ("0",)}
    tp8 = args_of(only(script, {"TP": "8", "DP_ATTENTION": "false"}))
    assert tp8 == {"tensor-parallel-size": ("8",)}


def test_undecidable_branches_keep_every_candidate():
    script = """KV=auto
if some_probe; then
    KV=fp8
fi
vllm serve m --kv-cache-dtype "$KV"
"""
    assert args_of(only(script))["kv-cache-dtype"] == ("fp8", "auto")


def test_undecidable_array_branches_contribute_all_args():
    script = """if [ "$EVAL_ONLY" = "true" ]; then A=(--x 1); else A=(--y 2); fi
vllm serve m "${A[@]}"
"""
    assert args_of(only(script)) == {"x": ("1",), "y": ("2",)}


def test_case_statement_and_and_or_lists():
    script = """case "$KV_OFFLOAD_BACKEND" in
  native|simple) OFF=(--kv-offloading-backend native) ;;
  *) echo unsupported; exit 1 ;;
esac
[ "$TP" -gt 4 ] && EXTRA=--enable-expert-parallel
vllm serve m "${OFF[@]}" $EXTRA
"""
    got = args_of(only(script, {"KV_OFFLOAD_BACKEND": "simple", "TP": "8"}))
    assert got == {"kv-offloading-backend": ("native",), "enable-expert-parallel": ("",)}
    assert bash.Script(script).launches({"KV_OFFLOAD_BACKEND": "lmcache", "TP": "8"}) == ()  # exits before serving


def test_exit_in_a_decided_branch_stops_the_script():
    script = 'if [ "$TP" -ne 8 ]; then\n  echo only TP8 >&2\n  exit 1\nfi\nvllm serve m\n'
    assert bash.Script(script).launches({"TP": "4"}) == ()
    assert len(bash.Script(script).launches({"TP": "8"})) == 1


def test_functions_called_and_uncalled_with_return():
    script = """pick() {
    if [ "$TP" = 8 ]; then KV=fp8; return 0; fi
    KV=auto
}
pick
serve() { vllm serve m --kv-cache-dtype "$KV"; }
"""
    assert args_of(only(script, {"TP": "8"}))["kv-cache-dtype"] == ("fp8",)
    assert args_of(only(script, {"TP": "4"}))["kv-cache-dtype"] == ("auto",)


def test_comments_heredocs_and_echo_are_not_launches():
    script = """# vllm serve commented/out --tensor-parallel-size 2
cat > cfg.json <<EOF
vllm serve in/heredoc
EOF
echo "vllm serve quoted/text"
printf '%s\\n' vllm serve printed
python3 -m sglang.launch_server --model-path real/model --tp 2
"""
    found = bash.Script(script).launches()
    assert [(l.engine, sa.server_args(l).model.values) for l in found] == [("sglang", ("real/model",))]


def test_wrappers_and_env_command():
    cmd = only("nohup env VLLM_USE_DEEP_GEMM=0 numactl --interleave=all vllm serve m --tp 2 &\n")
    assert args_of(cmd) == {"tensor-parallel-size": ("2",), "env:VLLM_USE_DEEP_GEMM": ("0",)}


def test_arithmetic_and_patterns():
    script = ('HALF=$((TP / 2))\n[[ "$MODEL" != /* ]] && SRC=hub\n'
              'vllm serve m --data-parallel-size $HALF --x "$SRC" --y $((PORT + 1))\n')
    got = args_of(only(script, {"TP": "8", "MODEL": "org/m"}))
    assert got == {"data-parallel-size": ("4",), "x": ("hub",), "y": (None,)}


def test_unset_and_append():
    script = 'A="--a"\nunset A\nB=(--b 1)\nB+=(--c 2)\nS=x\nS+=y\nvllm serve m $A "${B[@]}" --s "$S"\n'
    assert args_of(only(script)) == {"b": ("1",), "c": ("2",), "s": ("xy",)}


def test_legacy_api_server_entrypoint_and_multinode():
    cmd = only("python -m vllm.entrypoints.openai.api_server --model org/m --tensor-parallel-size 8\n")
    assert cmd.engine == "vllm" and cmd.model.values == ("org/m",) and not cmd.multinode
    assert only("vllm serve m --data-parallel-address 10.0.0.1 --headless\n").multinode
    assert not only("vllm serve m --nnodes 1\n").multinode


_PIECES = list("ab$()[]{}\"'`\\;&|<>=-#\n \t!*:+0123456789") + [
    "vllm serve ", "if ", "then ", "fi ", "case ", "esac ", "in ", ";;", "$((", "${", "<<EOF\n", "EOF\n",
    "() {", "[[ ", " ]]", "export ", "X=(", "function ", "$TP", "${TP:-4}"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80).map("".join))
def test_never_raises_on_hostile_text(text):
    for launch in bash.Script(text).launches({"TP": "8"}):
        sa.server_args(launch)


def test_deep_nesting_is_bounded():
    deep = "${A:-" * 2000 + "x" + "}" * 2000
    bash.Script(f"vllm serve {deep}\n[ {'! ' * 5000}x ]\n[ {'( ' * 3000}x ]\n").launches()


# --- normalization ------------------------------------------------------------

def test_engine_aliases():
    sg = args_of(only("python3 -m sglang.launch_server --model-path m --tp-size 4 --dp 2 --ep 4 "
                      "--speculative-algorithm NEXTN --enable-dp-attention\n"))
    assert sg == {"tensor-parallel-size": ("4",), "data-parallel-size": ("2",), "expert-parallel-size": ("4",),
                  "speculative.method": ("NEXTN",), "enable-dp-attention": ("",)}
    vl = args_of(only("vllm serve m -tp 2 -q fp8 --kv_cache_dtype fp8 --no-enable-prefix-caching\n"))
    assert vl == {"tensor-parallel-size": ("2",), "quantization": ("fp8",), "kv-cache-dtype": ("fp8",),
                  "enable-prefix-caching": ("false",)}


def test_boolean_flags_do_not_swallow_the_model():
    cmd = only("vllm serve --trust-remote-code org/m --enforce-eager --port 8000\n")
    assert cmd.model.values == ("org/m",)


def test_dotted_and_json_attention_config():
    got = args_of(only("vllm serve m --attention-config.use_trtllm_ragged_deepseek_prefill=True "
                       "--attention-config '{\"mla_prefill_backend\": \"flashinfer\"}'\n"))
    assert got == {"attention-config.use_trtllm_ragged_deepseek_prefill": ("True",),
                   "attention-config.mla_prefill_backend": ("flashinfer",)}


def test_json_with_an_unexpanded_variable_keeps_readable_keys():
    got = args_of(only('vllm serve m --speculative-config "{\\"method\\":\\"mtp\\",\\"n\\":$N}"\n'))
    assert got["speculative.method"] == ("mtp",)


def test_show_and_label():
    spec = sa.Arg("speculative.method", "--speculative-config", ("mtp",), 3)
    assert spec.show("mtp") == "--speculative-config method=mtp"
    assert sa.Arg("kv-cache-dtype", "--kv-cache-dtype", ("fp8",), 1).show("fp8") == "--kv-cache-dtype fp8"
    assert sa.Arg("env:X", "X", ("1",), 1).show("1") == "X=1"
    assert sa.Arg("enable-expert-parallel", "--enable-expert-parallel", ("",), 1).show("") == \
        "--enable-expert-parallel"


def test_major_classification():
    for key in ("model", "tensor-parallel-size", "kv-cache-dtype", "quantization", "moe-backend",
                "attention-backend", "dsa-prefill-backend", "all2all-backend", "attention-config.x",
                "speculative.method", "speculative.attention_backend", "enable-dp-attention",
                "env:VLLM_ROCM_USE_AITER", "env:VLLM_ROCM_USE_AITER_MOE_SITUV2_A8W4", "env:VLLM_ATTENTION_BACKEND"):
        assert sa.is_major(key), key
    for key in ("gpu-memory-utilization", "max-num-seqs", "block-size", "max-num-batched-tokens",
                "async-scheduling", "chunked-prefill-size", "enable-prefix-caching", "compilation-config",
                "distributed-executor-backend", "hicache-io-backend", "kv-offloading-backend",
                "speculative.num_speculative_tokens", "speculative.rejection_sample_method",
                "env:SGLANG_RADIX_FORCE_MISS", "env:VLLM_ROCM_USE_SKINNY_GEMM", "port"):
        assert not sa.is_major(key), key


def test_canonical_equivalences_and_defaults():
    c = sa.canonical
    assert c("kv-cache-dtype", "fp8_e4m3") == c("kv-cache-dtype", "FP8") == "fp8"
    assert c("speculative.method", "NEXTN") == c("speculative.method", "EAGLE") == "eagle"
    assert c("speculative.method", "deepseek_mtp") == "mtp"
    assert c("tensor-parallel-size", "8.0") == "8"
    assert c("model", "Org/Model/") == "org/model"
    assert c("env:VLLM_ROCM_USE_AITER", "True") == "1"
    assert c("hf-overrides", '{"b": 1, "a": 2}') == c("hf-overrides", '{"a":2,"b":1}')
    assert c("enable-expert-parallel", "") == "true"
    # a checkpoint-format quantization is what auto-detection serves, for that precision only
    assert c("quantization", "mxfp4", "fp4") == "auto"
    assert c("quantization", "fp8", "bf16") == "fp8"
    assert sa.is_default("quantization", "auto")
    assert sa.is_default("moe-backend", "auto") and sa.is_default("attention-backend", "auto")
    assert sa.is_default("kv-cache-dtype", "auto") and not sa.is_default("kv-cache-dtype", "fp8")
    assert sa.is_default("env:VLLM_ROCM_USE_AITER_MOE", "1") and not sa.is_default("env:VLLM_ROCM_USE_AITER", "1")
    assert sa.is_default("tensor-parallel-size", "1") and not sa.is_default("max-num-seqs", "1")


# --- hardware -----------------------------------------------------------------

def test_sku_and_hardware_keys():
    assert hardware.sku("cluster:mi355x-amds") == "mi355x"
    assert hardware.sku("gb200-nv") == "gb200" and hardware.sku("b200-nscale-slurm") == "b200"
    assert hardware.sku("laptop") == "laptop" and hardware.known_sku("laptop") is None and hardware.sku(None) == ""
    assert sa.hardware_keys("mi355x") == ("amd", "cdna4", "gfx950", "mi355x")
    assert sa.hardware_keys("b300")[:2] == ("nvidia", "blackwell")
    assert hardware.node_gpus("gb200") == 4 and hardware.node_gpus("mi355x") == 8


def test_heading_scope():
    assert sa.heading_applies(["Launching", "AMD MI350X/MI355X"], "mi355x")
    assert not sa.heading_applies(["AMD MI300X/MI325X"], "mi355x")
    assert sa.heading_applies(["AMD ROCm", "TP8"], "mi355x")
    assert not sa.heading_applies(["NVIDIA - TP8 (8x H200 / H20)"], "mi355x")
    assert not sa.heading_applies(["Blackwell"], "mi355x")
    assert sa.heading_applies(["Launching the server"], "b200")


# --- recipes --------------------------------------------------------------------

RECIPE = """
meta:
  hardware: {mi355x: verified, b200: verified, h100: unsupported}
model:
  model_id: org/Model
  base_args: ["--trust-remote-code"]
  base_env: {BASE: "1"}
features:
  spec_decoding:
    strategies: [single_node_tp]
    args: ["--speculative-config", '{"method": "eagle3", "attention_backend": "FLASH_ATTN"}']
    hardware_overrides:
      amd:
        args: ["--speculative-config", '{"method": "eagle3", "attention_backend": "TRITON_ATTN"}']
  multinode_only:
    strategies: [multi_node_tp]
    args: ["--x", "1"]
variants:
  default:
    precision: bf16
  mxfp4:
    model_id: org/Model-MXFP4
    supported_hardware: [mi355x]
    tp: 4
    extra_args: ["--kv-cache-dtype", "fp8"]
    hardware_overrides:
      mi355x:
        extra_args: ["--moe-backend", "aiter"]
compatible_strategies: [single_node_tp, single_node_dep, multi_node_tp]
strategy_min_gpus: {single_node_dep: 16}
hardware_overrides:
  amd:
    extra_env: {VLLM_ROCM_USE_AITER: "1"}
    extra_args: ["--block-size", "64"]
  blackwell:
    extra_args: ["--attention-backend", "FLASHINFER"]
guide: |
  ## AMD MI355X
  ```bash
  export VLLM_ROCM_USE_AITER_MOE=0
  ```
  ### Throughput
  ```bash
  vllm serve org/Model-MXFP4 --tensor-parallel-size 2 --kv-cache-dtype fp8
  ```
  ## NVIDIA B200
  ```bash
  vllm serve org/Model-MXFP4 --tensor-parallel-size 1
  ```
  ```python
  vllm serve not/shell
  ```
"""


def test_yaml_recipe_composes_the_sku_config():
    r = sa.recipe("models/org/Model.yaml", RECIPE, "mi355x")
    assert r.error is None
    assert r.models == ("org/Model", "org/Model-MXFP4")
    assert r.hardware == ("mi355x", "b200")
    complete = [(s.model, dict(s.args)) for s in r.sources if s.complete]
    assert complete == [
        ("org/Model", {"trust-remote-code": "", "tensor-parallel-size": "8", "block-size": "64",
                       "env:BASE": "1", "env:VLLM_ROCM_USE_AITER": "1"}),
        ("org/Model-MXFP4", {"trust-remote-code": "", "kv-cache-dtype": "fp8", "tensor-parallel-size": "4",
                             "block-size": "64", "moe-backend": "aiter", "env:BASE": "1",
                             "env:VLLM_ROCM_USE_AITER": "1"}),
        ("org/Model-MXFP4", {"env:VLLM_ROCM_USE_AITER_MOE": "0", "tensor-parallel-size": "2",
                             "kv-cache-dtype": "fp8"}),
    ]
    features = [dict(s.args) for s in r.sources if not s.complete]
    assert features == [{"speculative.method": "eagle3", "speculative.attention_backend": "TRITON_ATTN"}]


def test_yaml_recipe_for_another_vendor():
    r = sa.recipe("models/org/Model.yaml", RECIPE, "b200")
    complete = [(s.model, dict(s.args)) for s in r.sources if s.complete]
    assert ("org/Model", {"trust-remote-code": "", "tensor-parallel-size": "8", "attention-backend": "FLASHINFER",
                          "env:BASE": "1"}) in complete
    assert all(m != "org/Model-MXFP4" or a.get("tensor-parallel-size") == "1" for m, a in complete)


def test_yaml_recipe_hardware_it_does_not_declare():
    r = sa.recipe("models/org/Model.yaml", RECIPE, "h100")
    assert r.sources == () and r.models == ("org/Model", "org/Model-MXFP4")


def test_yaml_recipe_errors():
    assert "does not parse" in sa.recipe("models/a/b.yaml", "a: [", "mi355x").error
    assert sa.recipe("models/a/b.yaml", "- a\n- b\n", "mi355x").error
    assert "not a recipe" in sa.recipe("models/a/b.json", "{}", "mi355x").error


def test_markdown_cookbook_page():
    page = """# GLM-5.2
## Launch on AMD MI355X
```bash
python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 \\
  --kv-cache-dtype fp8_e4m3
```
## Launch on NVIDIA B200
```shell
$ python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 4
```
"""
    r = sa.recipe("docs_new/cookbook/autoregressive/GLM/GLM-5.2.mdx", page, "mi355x")
    assert r.models == ("zai-org/GLM-5.2-FP8",)
    assert [(s.engine, dict(s.args)) for s in r.sources] == [
        ("sglang", {"tensor-parallel-size": "8", "kv-cache-dtype": "fp8_e4m3"})]


_KEYS = st.sampled_from(["meta", "hardware", "model", "model_id", "base_args", "variants", "extra_args", "tp",
                         "supported_hardware", "hardware_overrides", "amd", "mi355x", "features", "args",
                         "strategies", "compatible_strategies", "strategy_min_gpus", "strategy_hardware",
                         "strategy_overrides", "single_node_tp", "guide", "extra_env", "env"])
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 16), st.sampled_from(
    ["--tp", "8", "mi355x", "single_node_tp", "org/m", "vllm serve org/m --tp 2", "```bash\nvllm serve x\n```"]))
_SHAPES = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_KEYS, _SHAPES, max_size=6))
def test_recipe_reader_never_raises_on_odd_shapes(data):
    r = sa.recipe("models/org/m.yaml", yaml.safe_dump(data), "mi355x")
    assert r.error is None and r.path == "models/org/m.yaml"  # a mapping, however odd, is a recipe
