"""spec-decode-chat-template: a speculative-decoding recipe must benchmark with the chat template.

## What it enforces

A speculative-decoding recipe with a built-in benchmark type does not turn
`benchmark.use_chat_template` off (left out, it is srt-slurm's default: true).

## Why

How many draft tokens a speculative decoder (MTP, EAGLE, DSpark) gets
accepted depends on what it is asked: draft heads are trained on
chat-formatted conversations, and raw random prompts give an acceptance
rate, and so a throughput, that no real user sees. InferenceX therefore
benchmarks every speculative-decoding configuration through the model's chat
template, and the sign-off checklist asks for it (check 9). srt-slurm's
built-in benchmarks use it unless `benchmark.use_chat_template` turns it off
(srt-slurm's default is true: `checks.facts.srtslurm.uses_chat_template`).

## How it decides

A recipe is speculative when its engine arguments set a speculative
algorithm (the flags `checks.facts.engines.declaring_flags` lists: SGLang
`speculative-algorithm`, also spelled `speculative-algo`; vLLM/TRT-LLM
`speculative-config`) for any role, or when a master-config
point that runs it declares `spec-decoding` other than `none`.

An eval-only recipe (an `*-eval*` twin, or one the master configs name by
EVAL_CONFIG_FILE only, that no point runs as its CONFIG_FILE) is no benchmark
config: it is run for accuracy, and its draft acceptance is not measured.

The finding sits on the recipe's `use_chat_template` (or its `benchmark`
block when the recipe has none) when the PR changes the recipe; when only the
master entry changed, on that point's `spec-decoding` line. A custom
benchmark (`type: custom`, a `command`) is not a built-in benchmark type:
`use_chat_template` means nothing there, and check 9 judges the script it
runs instead.

## Passing example

    sglang_config:
      decode: {speculative-algorithm: EAGLE}
    benchmark:
      type: sa-bench
      use_chat_template: true

## Failing example

    sglang_config:
      decode: {speculative-algorithm: EAGLE}
    benchmark:
      type: sa-bench
      use_chat_template: false   # <- error here
"""

from __future__ import annotations

from typing import Iterator

from checks.facts import engines
from checks.facts.specdecode import benchmarked
from checks.facts.srtslurm import uses_chat_template
from checks.facts.yamlload import LineDict

from ..context import Context
from ..result import Finding, Severity
from .recipes import PointRef, Recipe, changed_recipes, linked_points, option, recipe

ID = "spec-decode-chat-template"
SEVERITY = Severity.ERROR

_ROLES = ("prefill", "decode", "aggregated", "agg")
_FIX = "set use_chat_template: true in the recipe's benchmark block"


def check(ctx: Context) -> Iterator[Finding]:
    points = linked_points(ctx)
    for rec in changed_recipes(ctx):
        if not rec.flat or not benchmarked(ctx, rec.path):
            continue
        declared = [d for p in points if p.recipe_path == rec.path and (d := _declared(p))]
        reason = _speculative(rec) or (declared[0] if declared else None)
        if reason and not _chat_template(rec):
            yield Finding(rec.path, rec.line_of("benchmark", "use_chat_template"), ID, SEVERITY,
                          f"{reason}, but the benchmark does not use the chat template, so the draft acceptance "
                          f"rate is not what chat users get; {_FIX}")
    changed = {r.path for r in changed_recipes(ctx)}
    for p in points:
        if not p.entry_changed or p.recipe_path in changed or not _declared(p):
            continue
        target = recipe(ctx, p.recipe_path)
        if target is None or not target.flat or _chat_template(target):
            continue
        yield Finding(p.config_path, p.point.line_of("spec-decoding"), ID, SEVERITY,
                      f"{_declared(p)} and runs {p.recipe_path}, whose benchmark does not use the chat template; "
                      f"{_FIX}, or set spec-decoding: none if the recipe does not decode speculatively")


def _speculative(rec: Recipe) -> str | None:
    """Why the recipe decodes speculatively, from its engine arguments; None if it does not."""
    for role in _ROLES:
        found = option(rec.engine_args(role), *engines.declaring_flags())
        if found is None:
            continue
        key, value = found
        if value in (None, "", False) or str(value).strip().lower() == "none":
            continue
        return f"{role} sets {key}"
    return None


def _declared(p: PointRef) -> str | None:
    value = p.point.get("spec-decoding")
    if value in (None, "", False) or str(value).strip().lower() == "none":
        return None
    return f"master config {p.config_path} point of {p.key} declares spec-decoding {value!r}"


def _chat_template(rec: Recipe) -> bool:
    """The benchmark uses the chat template, or is a custom command, for which `use_chat_template` means
    nothing (check 9 judges the script it runs)."""
    benchmark = rec.section("benchmark")
    if isinstance(benchmark, LineDict) and (str(benchmark.get("type") or "").lower() == "custom"
                                            or "command" in benchmark):
        return True
    return isinstance(benchmark, LineDict) and uses_chat_template(benchmark) is True
