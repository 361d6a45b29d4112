"""Check 9 — speculative-decoding configs benchmark through the chat template.

## What it enforces

A speculative-decoding config the PR adds or changes must drive the model
through its chat template (chat-completions style).

## Why

The measured acceptance-length distribution must match real traffic; raw
random completions accept draft tokens at an unrealistic rate.

## How it decides

Which configs: the model of `checks.facts.specmodel` (what it reads of the scripts: the
clients a trace reaches, the replay function a library defines, the command
lines a benchmark run reaches; this module reads no script itself) — recipes and
per-config scripts the PR changes with speculative knobs (or `-mtp` /
`eagle` in their name), and what changed master points with `spec-decoding:`
other than none run (`checks.facts.runs`: their CONFIG_FILE recipe, else the
script their launcher picks, with what it runs in turn). A shared script
(a launcher helper, the benchmark library) counts only through those points:
its speculative flags are dormant unless a config the PR adds or changes
reaches them. Eval-only recipes (EVAL_CONFIG_FILE) are not benchmark configs.

Deterministic rule per config:

- srt-slurm recipe, read as srt-slurm reads it (a `base:` file is each
  variant the master points select, `override_*` / `zip_override_*[i]`
  merged onto the base; every variant when the PR changes the file):
  - a built-in benchmark type (`sa-bench`, ...): the `benchmark:` block does
    not turn `use_chat_template` off. A block without the key runs with
    srt-slurm's default, which is true (`checks.facts.srtslurm.uses_chat_template`);
    `false` (or `no`, `0`: srt-slurm's booleans) fails; a value srt-slurm does
    not read as a boolean cannot be decided;
  - `type: custom`: `use_chat_template` means nothing there; the `command`
    is judged as a script, with the variables of the block's `env:`
    (`bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh` is the
    repository's `benchmarks/multi_node/agentic_srt.sh`, and the library it
    sources is followed).
- benchmark script: it and the scripts it runs (`bash X.sh`, `source`,
  `eval "$CMD"`, `srun ... bash -c "..."`) are run by the interpreter with
  the config's variables (`EVAL_ONLY=false`: eval-only branches do not
  count); every benchmark client call it reaches must use the chat template:
  - `run_benchmark_serving`, `benchmark_serving.py`, `vllm bench serve`,
    `sglang.bench_serving`, `aiperf profile`, `genai-perf`, or a python
    program the script writes from a heredoc importing such a client, pass a
    chat flag (`--use-chat-template`, `--apply-chat-template`, `--dsv4`,
    which implies it, a chat backend `--backend openai-chat|vllm-chat|
    sglang-oai-chat`, `--endpoint-type chat`, `/v1/chat/completions`) or a
    dataset that renders the chat template itself (SpeedBench's
    `--dataset-name speed_bench`). A flag a branch decides is read for the
    config's variables (`extra_flags=--use-chat-template` when IS_MTP is
    true); a call that is chat on some branches and not on others the
    variables do not decide cannot be decided, and fails closed;
  - `build_replay_cmd` (the agentic aiperf replay) is defined in a library
    the script sources (`benchmark_lib.sh`); its body must target
    `/v1/chat/completions` or `--endpoint-type chat`, and no script of the
    chain may switch `REPLAY_CMD` to `/v1/completions`. A library the
    snapshot lacks is evidence it asks for (`ctx.need`); unavailable, the check
    fails closed and names it.
  A config whose scripts reach no recognisable client fails closed.
- A changed spec-decode point whose recipe or script cannot be found fails
  closed, naming what was looked for; a CONFIG_FILE recipe the repository
  does not hold (srt-slurm's own) cannot be read, and fails closed too.

What cannot be decided is an UNDECIDED finding ("cannot decide: ..."), never
a FAIL: a library or script the repository does not hold, a flag a branch
the variables do not decide sets, a script reaching no recognisable client.

N/A when the PR adds or changes no speculative-decoding config.

## Passing example

    benchmark: {type: sa-bench, use_chat_template: true}   (an -mtp recipe)
    benchmark: {type: sa-bench}   (srt-slurm's default: the chat template)
    benchmark: {type: custom, command: bash /infmax-workspace/benchmarks/multi_node/agentic_srt.sh}
    (agentic_srt.sh -> build_replay_cmd -> /v1/chat/completions)

## Failing example

    benchmark: {type: sa-bench, use_chat_template: false}
    run_benchmark_serving --backend vllm ... (no --use-chat-template)  in dsv4_fp4_b200_mtp.sh
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from checks.context import Context
from checks.facts.bash import UNKNOWN, Call
from checks.facts.specdecode import CLIENT_FUNCTIONS, SpecUnit
from checks.facts.specmodel import commands, function_body, model, programs, throughput_commands
from checks.facts.srtslurm import uses_chat_template, variants
from checks.facts.tracing import Reached
from checks.facts.yamlload import LineDict
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 9
NAME = "spec-decode chat template"
RULE = "spec-decode-no-chat-template"
DEFAULT_LIB = "benchmarks/benchmark_lib.sh"

_CHAT = re.compile(r"--use-chat-template\b|--apply-chat-template\b|--dsv4\b|--endpoint-type[=\s]+[\"']?chat\b"
                   r"|/v1/chat/completions|--backend[=\s]+[\"']?(?:openai-chat|vllm-chat|sglang-oai-chat)\b"
                   r"|--dataset-name[=\s]+[\"']?speed_bench\b")
_RAW = re.compile(r"--endpoint-type[=\s]+[\"']?completions\b|/v1/completions\b")
_DIRECT = re.compile(r"benchmark_serving\.py|\bvllm\s+bench\s+serve\b|sglang\.bench_serving|vllm\.benchmarks\.serve"
                     r"|\baiperf\s+profile\b|\bgenai-perf\b")
_SERVING = re.compile(r"^\s*run_benchmark_serving\b(?!\s*\(\))")
_REPLAY = re.compile(r"(?:^|[;&|]\s*|\b(?:then|else|do)\s+)build_replay_cmd\b(?!\s*\(\))")


# --------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------


def _recipe_problems(ctx: Context, unit: SpecUnit) -> tuple[list[Finding], list[str]]:
    if unit.error is not None:
        return [Finding(unit.path, unit.error_line, RULE, Severity.ERROR,
                        f"recipe does not parse ({unit.error}); cannot verify use_chat_template")], []
    doc = ctx.yaml(unit.text)  # parsed already: unit.error is None
    selectors = sorted({r.selector for r in unit.refs}) if unit.refs and not unit.changed else [""]
    out: list[Finding] = []
    how: list[str] = []
    custom_done = False
    for selector in selectors:
        for name, config in variants(doc, selector) or [("", None)]:
            label = f" ({name})" if name else ""
            bench = config.get("benchmark") if isinstance(config, dict) else None
            if config is None:
                out.append(Finding(unit.path, 1, RULE, Severity.ERROR,
                                   f"cannot decide: the master config selects variant {selector!r}, which the recipe "
                                   "does not define"))
            elif not isinstance(bench, dict):
                out.append(Finding(unit.path, 1, RULE, Severity.ERROR,
                                   f"spec-decode recipe{label} has no `benchmark:` block; add one with "
                                   "`use_chat_template: true`"))
            elif str(bench.get("type") or "").lower() == "custom" or "command" in bench:
                if not custom_done:
                    custom_done = True
                    problems, used = _chain_problems(ctx, unit, unit.chain)
                    out += problems
                    how += used
            elif (chat := uses_chat_template(bench)) is not True:
                line = bench.line_of("use_chat_template") if isinstance(bench, LineDict) else 1
                out.append(Finding(unit.path, line, RULE, Severity.ERROR,
                                   f"spec-decode recipe{label} benchmarks raw completions: set "
                                   "`use_chat_template: true` in its `benchmark:` block" if chat is False else
                                   f"cannot decide: spec-decode recipe{label} sets use_chat_template to "
                                   f"{bench['use_chat_template']!r}, which srt-slurm does not read as true or false"))
            else:
                how.append("use_chat_template: true")  # written, or srt-slurm's default
    for nested in _nested_benchmarks(doc):
        if ("use_chat_template" in nested and uses_chat_template(nested) is False
                and isinstance(nested, LineDict)):
            finding = Finding(unit.path, nested.line_of("use_chat_template"), RULE, Severity.ERROR,
                              "an override `benchmark:` block turns use_chat_template off; keep it true")
            if finding not in out and not any(f.line == finding.line for f in out):
                out.append(finding)
    return list(dict.fromkeys(out)), how


def _nested_benchmarks(node: object, depth: int = 0) -> Iterator[dict[Any, Any]]:
    if depth > 32:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "benchmark" and isinstance(value, dict):
                yield value
            yield from _nested_benchmarks(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _nested_benchmarks(value, depth + 1)


# --------------------------------------------------------------------------
# Scripts: the clients a chain reaches
# --------------------------------------------------------------------------


def _name(call: Call) -> str:
    head = call.words[0][0] if call.words and call.words[0] else None
    return (head or "").rsplit("/", 1)[-1]


def _program(call: Call) -> str:
    """What a `python ...` call runs: `-m module`, or the script file's path as written."""
    words = [w[0] or "" for w in call.words[1:]]
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words):
            return words[i + 1]
        if w == "-c":
            return ""
        if not w.startswith("-"):
            return w
    return ""


def _client_kind(call: Call, programs: frozenset[str]) -> str:
    """"serving" (flags judged at the call), "replay" (build_replay_cmd) or "" (not a benchmark client)."""
    name = _name(call)
    if name == "build_replay_cmd":
        return "replay"
    if name in CLIENT_FUNCTIONS:
        return "serving"
    text = " ".join(w[0] or "" for w in call.words[:3])
    if re.fullmatch(r"python[\d.]*", name):
        program = _program(call)
        if _DIRECT.search(program) or posixpath.basename(program.replace("\x00", "/")) in programs:
            return "serving"
        return ""
    return "serving" if _DIRECT.search(text) else ""


def _flags_verdict(call: Call) -> tuple[str, str]:
    """("chat" | "raw" | "mixed" | "unknown", what decided it) for a client call's words: chat when the
    words every branch passes carry a chat flag, or a word does on every branch it can take."""
    fixed = " ".join(w[0] for w in call.words[1:] if len(w) == 1 and w[0] is not None)
    m = _CHAT.search(fixed)
    if m:
        return "chat", m.group(0).strip()
    chat_all = None
    mixed = None
    unknown = None
    words = call.words[1:]
    for i, word in enumerate(words):
        hits = [bool(v is not None and _CHAT.search(v)) for v in word]
        if word and all(hits) and (found := _CHAT.search(word[0] or "")):  # (`hits`: every candidate matches)
            chat_all = found.group(0).strip()
            break
        if any(hits):
            mixed = mixed or word
        elif any(v is None for v in word) and not _option_value(words, i):
            unknown = unknown or word
    if chat_all:
        return "chat", chat_all
    if mixed:
        shown = " or ".join(repr((v or "").replace(UNKNOWN, "…")) for v in mixed[:3])
        return "mixed", f"its arguments are {shown} on branches the config's variables do not decide"
    if unknown:
        return "unknown", "its arguments include values the script does not fix"
    return "raw", ""


def _option_value(words: Sequence[tuple[str | None, ...]], i: int) -> bool:
    """Word i is the value of the option before it (`--model "$MODEL"`), so it carries no flag of its own."""
    before: tuple[str | None, ...] = words[i - 1] if i > 0 else ()
    return len(before) == 1 and (before[0] or "").startswith("--") and "=" not in (before[0] or "")


def _replay_problem(ctx: Context, chain: tuple[Reached, ...], path: str, line: int) -> Finding | None:
    sourced = [x.path for x in chain if x.how == "source"]
    missing = [x.path for x in chain if x.how == "source" and x.text is None]
    found = function_body(ctx, chain, "build_replay_cmd")
    if found is None:
        lib = missing[0] if missing else (sourced[0] if sourced else DEFAULT_LIB)
        if missing or not sourced:
            return Finding(path, line, RULE, Severity.ERROR,
                           f"cannot decide: the agentic replay client build_replay_cmd lives in {lib}, which is not "
                           "available at the PR head; cannot verify that it benchmarks through the chat template")
        return Finding(path, line, RULE, Severity.ERROR,
                       f"build_replay_cmd is not defined in {', '.join(sourced)}")
    lib, code = found
    if not _CHAT.search(code) or _RAW.search(code):
        return Finding(path, line, RULE, Severity.ERROR,
                       f"build_replay_cmd in {lib} does not target the chat-completions endpoint; replay through "
                       "/v1/chat/completions (--endpoint-type chat)")
    return None


def _chain_problems(ctx: Context, unit: SpecUnit,
                    chain: tuple[Reached, ...]) -> tuple[list[Finding], list[str]]:
    """Findings for the clients a script (or a recipe's benchmark command) reaches, and how it passes."""
    out: list[Finding] = []
    how: list[str] = []
    clients = 0
    for x in chain:
        if x.trace is None or x.text is None:
            continue
        written = programs(ctx, x)
        for call in x.trace.calls:
            kind = _client_kind(call, written)
            if not kind or any(w[:1] in (("--help",), ("-h",)) or (w[0] or "").startswith("--help=")
                               for w in call.words[1:] if w):
                continue  # not a client, or asked for its usage only
            clients += 1
            if kind == "replay":
                finding = _replay_problem(ctx, chain, x.path, call.line)
                if finding is None:
                    lib = function_body(ctx, chain, "build_replay_cmd")
                    how.append(f"chat-completions replay ({lib[0] if lib else DEFAULT_LIB})")
                else:
                    out.append(finding)
                continue
            verdict, what = _flags_verdict(call)
            client = _name(call) if _name(call) in CLIENT_FUNCTIONS else (
                " ".join(w[0] or "…" for w in call.words[:2]).replace(UNKNOWN, "…").strip())
            if verdict == "chat":
                how.append(what)
            elif verdict == "raw":
                out.append(Finding(x.path, call.line, RULE, Severity.ERROR,
                                   f"`{client}` drives raw completions with no chat template; pass "
                                   "--use-chat-template (or a chat-completions backend)"))
            else:
                out.append(Finding(x.path, call.line, RULE, Severity.ERROR,
                                   f"cannot decide whether `{client}` uses the chat template: {what}; pass "
                                   "--use-chat-template on every speculative-decoding path"))
        for cmd in commands(ctx, x):  # a library defines, scripts switch
            if "REPLAY_CMD" in cmd.text and _RAW.search(cmd.text):
                out.append(Finding(cmd.path, cmd.line, RULE, Severity.ERROR,
                                   "switches the agentic replay to raw /v1/completions; keep the chat endpoint"))
    if clients == 0 and unit.kind == "script":
        return _line_problems(ctx, unit)
    if clients == 0:
        names = ", ".join(x.path for x in chain[1:]) or "its benchmark command"
        missing = [x.path for x in chain if x.text is None]
        why = f" ({', '.join(missing)} not available at the PR head)" if missing else ""
        out.append(Finding(unit.path, unit.anchor, RULE, Severity.ERROR,
                           f"cannot decide: the benchmark command reaches no recognisable benchmark client in "
                           f"{names}{why}"))
    return out, how


def _line_problems(ctx: Context, unit: SpecUnit) -> tuple[list[Finding], list[str]]:
    """A script whose interpreted run reaches no client: its client calls read line by line (outside
    eval-only branches), as a last resort before failing closed."""
    out: list[Finding] = []
    how: list[str] = []
    clients = 0
    for cmd in throughput_commands(ctx, unit):
        text, arrays = cmd.text, cmd.arrays
        serving, direct = _SERVING.search(text), _DIRECT.search(text)
        if serving or direct:
            clients += 1
            chat = _CHAT.search(text) or _CHAT.search(arrays)
            if chat:
                how.append(chat.group(0).strip())
            else:
                client = "run_benchmark_serving" if serving or direct is None else direct.group(0)
                out.append(Finding(unit.path, cmd.line, RULE, Severity.ERROR,
                                   f"`{client}` drives raw completions with no chat template; pass "
                                   "--use-chat-template (or a chat-completions backend)"))
        elif _REPLAY.search(text):
            clients += 1
            finding = _replay_problem(ctx, unit.chain, unit.path, cmd.line)
            if finding is None:
                how.append("chat-completions replay")
            else:
                out.append(finding)
    if clients == 0:
        reached = ", ".join(x.path for x in unit.chain[1:])
        missing = [x.path for x in unit.chain if x.text is None]
        tail = f" or the scripts it runs ({reached})" if reached else ""
        why = f"; {', '.join(missing)} not available at the PR head" if missing else ""
        what = f"{unit.declared} runs {unit.path}" if unit.declared else "spec-decode script"
        out.append(Finding(unit.path, unit.anchor, RULE, Severity.ERROR,
                           f"cannot decide: {what}, which reaches no recognisable benchmark client{tail}{why}; "
                           "cannot verify that it benchmarks through the chat template"))
    return out, how


def check(ctx: Context) -> CheckResult:
    inv = model(ctx).inventory
    if not inv.units and not inv.unlocated:
        return CheckResult(NUMBER, NAME, Status.NA, inv.na_reason("the PR adds or changes no speculative-decoding config"))
    findings: list[Finding] = []
    recipes: list[str] = []
    scripts: list[str] = []
    for unit in inv.units:
        if unit.kind == "recipe":
            problems, how = _recipe_problems(ctx, unit)
            if not problems:
                recipes.append(f"{posixpath.basename(unit.path)} ({', '.join(dict.fromkeys(how))})")
        else:
            problems, how = _chain_problems(ctx, unit, unit.chain)
            if not problems:
                scripts.append(f"{posixpath.basename(unit.path)} ({', '.join(dict.fromkeys(how))})")
        findings.extend(problems)
    for u in inv.unlocated:
        looked = " or ".join(u.candidates) if u.candidates else "nothing to look for"
        why = f": {u.why}" if u.why and u.why != "not known yet" else ""
        findings.append(Finding(u.path, u.line, RULE, Severity.ERROR,
                                f"cannot decide: spec-decode config {u.key}: its benchmark script/recipe is not "
                                f"available ({looked}{why}); cannot verify chat-template use"))
    if findings:
        return CheckResult.failed(NUMBER, NAME, [replace(f, undecided=True) if f.message.startswith("cannot decide")
                                                 else f for f in dict.fromkeys(findings)])
    parts = []
    if recipes:
        parts.append(("spec-decode recipes benchmark through the chat template: " if len(recipes) > 1 else
                      "spec-decode recipe benchmarks through the chat template: ") + "; ".join(recipes[:8])
                     + (f"; and {len(recipes) - 8} more" if len(recipes) > 8 else ""))
    if scripts:
        parts.append("spec-decode scripts use the chat template: " + "; ".join(scripts))
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(parts))
