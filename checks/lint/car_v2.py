"""car-v2-multinode-decode: a decoding worker that spans nodes must turn SGLang's custom all-reduce v2 off.

## What it enforces

The only safe setting for a decoding worker whose tensor-parallel group spans
nodes is `SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"` in its environment
(`decode_environment`).

## Why

SGLang's custom all-reduce v2 (`SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2`) moves
tensors through peer-to-peer GPU memory, which exists only inside one node
(one NVLink domain as the engine sees it). When a decode worker's
tensor-parallel group spans several nodes the kernel still runs, and the
all-reduce silently returns wrong sums: the benchmark finishes and reports
throughput for a model producing garbage.

## How it decides

The decoding worker is the decode worker of a disaggregated recipe, or the
aggregated worker of an aggregated one (srt-slurm's `agg` pool: it decodes
too), read the same way with its own keys:

    decode      sglang_config.decode       gpus_per_decode  decode_nodes/decode_workers  decode_environment
    aggregated  sglang_config.aggregated   gpus_per_agg     agg_nodes/agg_workers        aggregated_environment

It spans nodes when its tensor-parallel size (`tensor-parallel-size`) or its
GPU count (`gpus_per_<pool>`, or srt-slurm's value computed from
`<pool>_nodes`/`<pool>_workers`) is above `resources.gpus_per_node` (the
SKU's GPUs per node when the recipe leaves it out).

The error sits on the worker's environment block when the variable is
missing (on `backend` when there is none), or on the variable when it is set
to anything but "0". A warning marks a comment about the worker's topology
that says the opposite of what the file declares (a single-node claim on a
multi-node worker, or a multi-node claim on a single-node one): the next
editor trusts the comment.

## Passing example

GB200, 4 GPUs per node, decode TP8 over 2 nodes:

    resources: {gpus_per_node: 4, decode_nodes: 2, decode_workers: 1, gpus_per_decode: 8}
    backend:
      type: sglang
      decode_environment:
        SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2: "0"
      sglang_config:
        decode: {tensor-parallel-size: 8}

## Failing example

The same topology, the variable left out:

    backend:
      type: sglang
      decode_environment:          # <- error here
        NCCL_MNNVL_ENABLE: "1"

Aggregated, `agg_nodes: 2, agg_workers: 1` on 4-GPU nodes, TP8:

    backend:
      type: sglang
      aggregated_environment:      # <- error here
        PYTHONUNBUFFERED: "1"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
_PREFILL_WORD = re.compile(r"\b(?:prefill|ctx|context)\b", re.I)


@dataclass(frozen=True)
class _Worker:
    """The decoding worker of a recipe: which pool it is and where its settings live."""

    kind: str  # "decode" | "aggregated": its engine-args role and its name in messages
    pool: str  # srt-slurm's resources prefix: "decode" | "agg"
    words: re.Pattern[str]  # what a comment says to be about it

    @property
    def env(self) -> str:
        return f"{self.kind}_environment"


_DECODE = _Worker("decode", "decode", re.compile(r"\b(?:decode|decoder|decoding|gen)\b", re.I))
_AGGREGATED = _Worker("aggregated", "agg", re.compile(r"\b(?:agg|aggregated|decode|decoder|decoding)\b", re.I))


def check(ctx: Context) -> Iterator[Finding]:
    for recipe in changed_recipes(ctx):
        if not recipe.flat or recipe.backend_type != "sglang":
            continue
        for worker in (_DECODE, _AGGREGATED):
            topology = _topology(recipe, worker)
            if topology is None:
                continue
            size, gpn = topology
            spans = size > gpn
            if spans:
                yield from _missing_variable(recipe, worker, size, gpn)
            yield from _contradicting_comments(recipe, worker, spans, size, gpn)


def _topology(recipe: Recipe, worker: _Worker) -> tuple[int, int] | None:
    """(GPUs of one worker's parallel group, GPUs per node); None when the recipe has no such worker."""
    gpn = recipe.gpus_per_node
    if not gpn:
        return None
    tp = option(recipe.engine_args(worker.kind), "tensor-parallel-size", "tp-size", "tp")
    sizes = [n for n in (as_int(tp[1]) if tp else None, recipe.gpus_per_worker(worker.pool)) if n]
    return (max(sizes), gpn) if sizes else None


def _where(worker: _Worker, size: int, gpn: int) -> str:
    nodes = -(-size // gpn)
    article = "an" if worker.kind[0] in "aeiou" else "a"
    return (f"{article} {worker.kind} worker uses {size} GPUs on {gpn}-GPU nodes "
            f"({nodes} node{'s' if nodes > 1 else ''})")


def _missing_variable(recipe: Recipe, worker: _Worker, size: int, gpn: int) -> Iterator[Finding]:
    env = recipe.section("backend", worker.env)
    fix = f'set {VARIABLE}: "0" in backend.{worker.env}'
    where = _where(worker, size, gpn)
    if env is None:
        yield Finding(recipe.path, recipe.line_of("backend", worker.env), ID, SEVERITY,
                      f"{where}, so custom all-reduce v2 (single-node only) corrupts its results; {fix}")
        return
    if VARIABLE not in env:
        yield Finding(recipe.path, recipe.line_of("backend", worker.env), ID, SEVERITY,
                      f"{where} and {worker.env} does not disable custom all-reduce v2 "
                      f"(single-node only, silently corrupts cross-node results); {fix}")
        return
    value = env[VARIABLE]
    if str(value).strip().lower() not in _OFF:
        yield Finding(recipe.path, env.line_of(VARIABLE), ID, SEVERITY,
                      f"{where} but {VARIABLE} is {value!r}; custom all-reduce v2 is single-node "
                      f'only and corrupts cross-node results: set it to "0"')


def _worker_lines(recipe: Recipe, worker: _Worker) -> list[tuple[int, int]]:
    """Line ranges that are about the worker: its environment and its engine arguments."""
    ranges: list[tuple[int, int]] = []
    backend = recipe.section("backend")
    if backend is None:
        return ranges
    env = recipe.section("backend", worker.env)
    if env is not None:
        ranges.append(span(env, backend.line_of(worker.env)))
    args = recipe.section("backend", "sglang_config", worker.kind)
    if args is not None:
        ranges.append(span(args, backend["sglang_config"].line_of(worker.kind)))
    return ranges


def _contradicting_comments(recipe: Recipe, worker: _Worker, spans: bool, size: int,
                            gpn: int) -> Iterator[Finding]:
    ranges = _worker_lines(recipe, worker)
    where = _where(worker, size, gpn)
    for line, text in comments(recipe.text):
        about = bool(worker.words.search(text)) or (
            any(lo <= line <= hi for lo, hi in ranges) and not _PREFILL_WORD.search(text))
        if not about:
            continue
        single, multi = bool(_SINGLE.search(text)), bool(_MULTI.search(text))
        if single == multi:
            continue  # no claim, or claims both ways: nothing to hold the file to
        if spans and single:
            yield Finding(recipe.path, line, ID, Severity.WARNING,
                          f"this comment says the {worker.kind} worker stays on one node, but {where}; "
                          f'correct the comment (a cross-node {worker.kind} worker needs {VARIABLE}: "0")')
        elif not spans and multi:
            yield Finding(recipe.path, line, ID, Severity.WARNING,
                          f"this comment says the {worker.kind} worker spans nodes, but {where}; "
                          f"correct the comment or the topology")
