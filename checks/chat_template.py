"""Check 9 — speculative-decoding configs benchmark through the chat template.

What it enforces: a speculative-decoding config the PR adds or changes must
drive the model through its chat template (chat-completions style), so the
measured acceptance-length distribution matches real traffic; raw random
completions accept draft tokens at an unrealistic rate.

Which configs: the spec-decode inventory of `checks.specdecode` — changed
benchmark scripts and srt-slurm recipes with speculative knobs (or `-mtp` /
`eagle` in their name), and the scripts/recipes that changed master entries
with `spec-decoding:` other than none run.

Deterministic rule per config:
- srt-slurm recipe: the top-level `benchmark:` block sets
  `use_chat_template: true` explicitly (srt-slurm's default may change between
  versions, so it is not relied on), and no nested `benchmark:` block sets it
  to anything else.
- benchmark script: every benchmark-client call outside an EVAL_ONLY branch
  must use the chat template:
  - `run_benchmark_serving ...` passes `--use-chat-template` (or `--dsv4`,
    which implies it, or a chat backend `--backend openai-chat|vllm-chat|
    sglang-oai-chat`), directly or through an argument array;
  - `build_replay_cmd` (the agentic aiperf replay) is defined in the library
    the script sources (`source "$(dirname "$0")/../../benchmark_lib.sh"`,
    default `benchmarks/benchmark_lib.sh`); its body must target
    `/v1/chat/completions` or `--endpoint-type chat`, and the script must not
    switch it to `/v1/completions`. The library is requested as evidence
    (`wants`); when the snapshot does not hold it the check fails closed and
    names it;
  - a direct client (`benchmark_serving.py`, `vllm bench serve`,
    `sglang.bench_serving`, `aiperf profile`, `genai-perf`) passes a chat flag
    (`--use-chat-template`, `--apply-chat-template`, a chat backend,
    `--endpoint-type chat` or `/v1/chat/completions`).
  A spec-decode script with no recognisable client call fails closed.
- A changed spec-decode master entry whose script or recipe is not in the
  snapshot fails closed, naming the paths looked for.

N/A when the PR adds or changes no speculative-decoding config.

    passes:  benchmark: {type: sa-bench, use_chat_template: true}   (an -mtp recipe)
    fails:   run_benchmark_serving --backend vllm ... (no --use-chat-template)  in dsv4_fp4_b200_mtp.sh
"""

from __future__ import annotations

import posixpath
import re

from .context import Context
from .evidence import Wanted
from .result import CheckResult, Finding, Severity, Status
from .specdecode import SpecUnit, eval_only_lines, inventory, wants_files

NUMBER = 9
NAME = "spec-decode chat template"
RULE = "spec-decode-no-chat-template"
DEFAULT_LIB = "benchmarks/benchmark_lib.sh"

_CHAT = re.compile(r"--use-chat-template\b|--apply-chat-template\b|--dsv4\b|--endpoint-type[=\s]+[\"']?chat\b"
                   r"|/v1/chat/completions|--backend[=\s]+[\"']?(?:openai-chat|vllm-chat|sglang-oai-chat)\b")
_RAW = re.compile(r"--endpoint-type[=\s]+[\"']?completions\b|/v1/completions\b")
_SERVING = re.compile(r"^\s*run_benchmark_serving\b(?!\s*\(\))")
_REPLAY = re.compile(r"(?:^|[;&|]\s*|\b(?:then|else|do)\s+)build_replay_cmd\b(?!\s*\(\))")
_DIRECT = re.compile(r"benchmark_serving\.py|\bvllm\s+bench\s+serve\b|sglang\.bench_serving|\baiperf\s+profile\b"
                     r"|\bgenai-perf\b")
_SOURCE = re.compile(r"(?:^|\s)(?:source|\.)\s+[\"']?\$\(dirname\s+[\"']?\$\{?(?:0|BASH_SOURCE\[0\])\}?[\"']?\)"
                     r"[\"']?/([^\"'\s]+)")
_ARRAY_USE = re.compile(r"\$\{([A-Za-z_]\w*)\[@\]\}")


def _lib_path(ctx: Context, unit: SpecUnit) -> str:
    for ln in ctx.script(unit.text).lines:
        m = _SOURCE.search(ln.code) if ln.heredoc is None else None
        if m:
            return posixpath.normpath(posixpath.join(posixpath.dirname(unit.path), m.group(1)))
    return DEFAULT_LIB


def _calls_replay(ctx: Context, unit: SpecUnit) -> bool:
    if unit.kind != "script":
        return False
    script = ctx.script(unit.text)
    eval_only = eval_only_lines(script)
    return any(_REPLAY.search(c.text) and c.line not in eval_only for c in script.commands)


def wants(ctx: Context) -> Wanted:
    libs = tuple(_lib_path(ctx, u) for u in inventory(ctx).units if _calls_replay(ctx, u))
    return wants_files(ctx, libs)


def _recipe_problems(ctx: Context, unit: SpecUnit) -> list[Finding]:
    if unit.error is not None:
        return [Finding(unit.path, unit.error_line, RULE, Severity.ERROR,
                        f"recipe does not parse ({unit.error}); cannot verify use_chat_template")]
    doc = ctx.yaml(unit.text)  # parsed already: unit.error is None
    bench = doc.get("benchmark") if isinstance(doc, dict) else None
    if not isinstance(bench, dict):
        return [Finding(unit.path, 1, RULE, Severity.ERROR,
                        "spec-decode recipe has no `benchmark:` block; add one with `use_chat_template: true`")]
    out: list[Finding] = []
    if bench.get("use_chat_template") is not True:
        line = bench.line_of("use_chat_template") if "use_chat_template" in bench else doc.line_of("benchmark")
        out.append(Finding(unit.path, line, RULE, Severity.ERROR,
                           "spec-decode recipe benchmarks raw completions: set `use_chat_template: true` "
                           "in its `benchmark:` block"))
    for nested in _nested_benchmarks(doc):
        if nested is not bench and "use_chat_template" in nested and nested["use_chat_template"] is not True:
            out.append(Finding(unit.path, nested.line_of("use_chat_template"), RULE, Severity.ERROR,
                               "an override `benchmark:` block turns use_chat_template off; keep it true"))
    return out


def _nested_benchmarks(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "benchmark" and isinstance(value, dict):
                yield value
            yield from _nested_benchmarks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nested_benchmarks(value)


def _script_problems(ctx: Context, unit: SpecUnit) -> tuple[list[Finding], str]:
    """Findings for a spec-decode script, and how it reaches the chat template when it passes."""
    script = ctx.script(unit.text)
    eval_only = eval_only_lines(script)
    commands = [c for c in script.commands if c.line not in eval_only]
    out: list[Finding] = []
    how: list[str] = []
    clients = 0
    for cmd in commands:
        text = cmd.expanded
        arrays = " ".join(item for name in dict.fromkeys(_ARRAY_USE.findall(text))
                          for item in script.array_items(name))
        if _SERVING.search(text) or _DIRECT.search(text):
            clients += 1
            chat = _CHAT.search(text) or _CHAT.search(arrays)
            if chat:
                how.append(chat.group(0).strip())
            else:
                client = "run_benchmark_serving" if _SERVING.search(text) else _DIRECT.search(text).group(0)
                out.append(Finding(unit.path, cmd.line, RULE, Severity.ERROR,
                                   f"`{client}` drives raw completions with no chat template; pass "
                                   "--use-chat-template (or a chat-completions backend)"))
        elif _REPLAY.search(text):
            clients += 1
            finding = _replay_problem(ctx, unit, cmd.line)
            if finding is None:
                how.append(f"chat-completions replay ({_lib_path(ctx, unit)})")
            else:
                out.append(finding)
    for cmd in commands:
        if "REPLAY_CMD" in cmd.text and _RAW.search(cmd.text):
            out.append(Finding(unit.path, cmd.line, RULE, Severity.ERROR,
                               "switches the agentic replay to raw /v1/completions; keep the chat endpoint"))
    if clients == 0:
        out.append(Finding(unit.path, unit.anchor, RULE, Severity.ERROR,
                           "spec-decode script has no recognisable benchmark client call; cannot verify "
                           "that it benchmarks through the chat template"))
    return out, ", ".join(dict.fromkeys(how))


def _replay_problem(ctx: Context, unit: SpecUnit, line: int) -> Finding | None:
    lib = _lib_path(ctx, unit)
    text = ctx.snap.read(lib, "head")
    if text is None:
        return Finding(unit.path, line, RULE, Severity.ERROR,
                       f"the agentic replay client build_replay_cmd lives in {lib}, which is not available at the "
                       "PR head; cannot verify that it benchmarks through the chat template")
    body = ctx.script(text).functions.get("build_replay_cmd")
    if body is None:
        return Finding(unit.path, line, RULE, Severity.ERROR, f"build_replay_cmd is not defined in {lib}")
    code = "\n".join(ln.code for ln in body)
    if not _CHAT.search(code) or _RAW.search(code):
        return Finding(unit.path, line, RULE, Severity.ERROR,
                       f"build_replay_cmd in {lib} does not target the chat-completions endpoint; replay through "
                       "/v1/chat/completions (--endpoint-type chat)")
    return None


def check(ctx: Context) -> CheckResult:
    inv = inventory(ctx)
    if not inv.units and not inv.unlocated:
        return CheckResult(NUMBER, NAME, Status.NA, "the PR adds or changes no speculative-decoding config")
    findings: list[Finding] = []
    recipes: list[str] = []
    scripts: list[str] = []
    for unit in inv.units:
        if unit.kind == "recipe":
            problems = _recipe_problems(ctx, unit)
            if not problems:
                recipes.append(unit.path)
        else:
            problems, how = _script_problems(ctx, unit)
            if not problems:
                scripts.append(f"{posixpath.basename(unit.path)} ({how})")
        findings.extend(problems)
    for u in inv.unlocated:
        looked = " or ".join(u.candidates) if u.candidates else "no CONFIG_FILE recipe named"
        findings.append(Finding(u.path, u.line, RULE, Severity.ERROR,
                                f"spec-decode config {u.key}: its benchmark script/recipe is not available "
                                f"({looked}); cannot verify chat-template use"))
    if findings:
        return CheckResult.failed(NUMBER, NAME, findings)
    parts = []
    if recipes:
        n = len(recipes)
        parts.append(f"all {n} spec-decode recipes set use_chat_template: true in their benchmark block" if n > 1
                     else f"spec-decode recipe {posixpath.basename(recipes[0])} sets use_chat_template: true")
    if scripts:
        parts.append("spec-decode scripts use the chat template: " + "; ".join(scripts))
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(parts))
