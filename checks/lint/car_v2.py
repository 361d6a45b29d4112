"""car-v2-multinode-decode: a decode worker that spans nodes must turn SGLang's custom all-reduce v2 off.

SGLang's custom all-reduce v2 (`SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2`) moves
tensors through peer-to-peer GPU memory, which exists only inside one node
(one NVLink domain as the engine sees it). When a decode worker's
tensor-parallel group spans several nodes the kernel still runs, and the
all-reduce silently returns wrong sums: the benchmark finishes and reports
throughput for a model producing garbage. The only safe setting for such a
worker is `SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"` in `decode_environment`.

A decode worker spans nodes when its tensor-parallel size
(`sglang_config.decode.tensor-parallel-size`) or its GPU count
(`resources.gpus_per_decode`, or srt-slurm's value computed from
`decode_nodes`/`decode_workers`) is above `resources.gpus_per_node` (the SKU's
GPUs per node when the recipe leaves it out).

The error sits on `decode_environment` when the variable is missing (on
`backend` when there is no `decode_environment`), or on the variable when it
is set to anything but "0". A warning marks a comment about the decode
topology that says the opposite of what the file declares (a single-node
claim on a multi-node decode, or a multi-node claim on a single-node one):
the next editor trusts the comment.

Passes (GB200, 4 GPUs per node, decode TP8 over 2 nodes):

    resources: {gpus_per_node: 4, decode_nodes: 2, decode_workers: 1, gpus_per_decode: 8}
    backend:
      type: sglang
      decode_environment:
        SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"
      sglang_config:
        decode: {tensor-parallel-size: 8}

Fails (the same topology, the variable left out):

    backend:
      type: sglang
      decode_environment:          # <- error here
        NCCL_MNNVL_ENABLE: "1"
"""

from __future__ import annotations

import re
from typing import Iterator

from ..context import Context
from ..result import Finding, Severity
from .recipes import Recipe, as_int, changed_recipes, comments, option, span

ID = "car-v2-multinode-decode"
SEVERITY = Severity.ERROR

VARIABLE = "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2"
_OFF = {"0", "false"}

_SINGLE = re.compile(
    r"(?<!not )(?<!non-)(?<!than )\b(?:single[- ]node|intra[- ]node|one node|1 node|same node|"
    r"within (?:a|one|the same) node|fits (?:in|on|within) (?:a|one) node|"
    r"does(?:n't| not) span)\b(?!\s*only)", re.I)
_MULTI = re.compile(
    r"\b(?:multi[- ]?node|cross[- ]node|inter[- ]node|not single[- ]node|non-single[- ]node|"
    r"spans? (?:\d+|two|three|four|multiple|several) nodes|more than one node|"
    r"across (?:\d+ |two |multiple |several )?nodes)\b", re.I)
_DECODE_WORD = re.compile(r"\b(?:decode|decoder|decoding|gen)\b", re.I)
_PREFILL_WORD = re.compile(r"\b(?:prefill|ctx|context)\b", re.I)


def check(ctx: Context) -> Iterator[Finding]:
    for recipe in changed_recipes(ctx):
        if not recipe.flat or recipe.backend_type != "sglang":
            continue
        topology = _decode_topology(recipe)
        if topology is None:
            continue
        size, gpn = topology
        spans = size > gpn
        if spans:
            yield from _missing_variable(recipe, size, gpn)
        yield from _contradicting_comments(recipe, spans, size, gpn)


def _decode_topology(recipe: Recipe) -> tuple[int, int] | None:
    """(GPUs of one decode worker's parallel group, GPUs per node); None when there is no decode role."""
    gpn = recipe.gpus_per_node
    if not gpn:
        return None
    tp = option(recipe.engine_args("decode"), "tensor-parallel-size", "tp-size", "tp")
    sizes = [n for n in (as_int(tp[1]) if tp else None, recipe.gpus_per_worker("decode")) if n]
    return (max(sizes), gpn) if sizes else None


def _where(size: int, gpn: int) -> str:
    nodes = -(-size // gpn)
    return f"a decode worker uses {size} GPUs on {gpn}-GPU nodes ({nodes} node{'s' if nodes > 1 else ''})"


def _missing_variable(recipe: Recipe, size: int, gpn: int) -> Iterator[Finding]:
    env = recipe.section("backend", "decode_environment")
    fix = f'set {VARIABLE}: "0" in backend.decode_environment'
    if env is None:
        yield Finding(recipe.path, recipe.line_of("backend", "decode_environment"), ID, SEVERITY,
                      f"{_where(size, gpn)}, so custom all-reduce v2 (single-node only) corrupts its results; {fix}")
        return
    if VARIABLE not in env:
        yield Finding(recipe.path, recipe.line_of("backend", "decode_environment"), ID, SEVERITY,
                      f"{_where(size, gpn)} and decode_environment does not disable custom all-reduce v2 "
                      f"(single-node only, silently corrupts cross-node results); {fix}")
        return
    value = env[VARIABLE]
    if str(value).strip().lower() not in _OFF:
        yield Finding(recipe.path, env.line_of(VARIABLE), ID, SEVERITY,
                      f"{_where(size, gpn)} but {VARIABLE} is {value!r}; custom all-reduce v2 is single-node "
                      f'only and corrupts cross-node results: set it to "0"')


def _decode_lines(recipe: Recipe) -> list[tuple[int, int]]:
    """Line ranges that are about the decode worker: its environment and its engine arguments."""
    ranges = []
    backend = recipe.section("backend")
    env = recipe.section("backend", "decode_environment")
    if env is not None:
        ranges.append(span(env, backend.line_of("decode_environment")))
    args = recipe.section("backend", "sglang_config", "decode")
    if args is not None:
        ranges.append(span(args, backend["sglang_config"].line_of("decode")))
    return ranges


def _contradicting_comments(recipe: Recipe, spans: bool, size: int, gpn: int) -> Iterator[Finding]:
    ranges = _decode_lines(recipe)
    for line, text in comments(recipe.text):
        about_decode = bool(_DECODE_WORD.search(text)) or (
            any(lo <= line <= hi for lo, hi in ranges) and not _PREFILL_WORD.search(text))
        if not about_decode:
            continue
        single, multi = bool(_SINGLE.search(text)), bool(_MULTI.search(text))
        if single == multi:
            continue  # no claim, or claims both ways: nothing to hold the file to
        if spans and single:
            yield Finding(recipe.path, line, ID, Severity.WARNING,
                          f"this comment says the decode worker stays on one node, but {_where(size, gpn)}; "
                          f'correct the comment (a cross-node decode needs {VARIABLE}: "0")')
        elif not spans and multi:
            yield Finding(recipe.path, line, ID, Severity.WARNING,
                          f"this comment says the decode worker spans nodes, but {_where(size, gpn)}; "
                          f"correct the comment or the topology")
