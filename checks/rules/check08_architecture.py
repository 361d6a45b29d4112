"""Check 8 — no benchmark hacks that change the model architecture.

## What it enforces

The server args a PR adds must serve the model's native architecture.

## Why

Making the same computation faster is fair game (kernels, parallelism, lower
precision that passes evals); removing model FLOPs is not (skipping the DSA
indexer every N layers, trimming layers, experts or heads, editing the
checkpoint's config.json).

## How it decides

Every line the PR adds to a benchmark file (`benchmarks/**`: scripts,
srt-slurm recipes), a launcher (`runners/**`) or a master config is scanned,
comments and embedded unified diffs excluded (a diff rewrites engine source:
check 10's business). A line fails on the first of:

- `--hf-overrides` / `hf_overrides` / `--json-model-override-args` whose
  keys are not all native modes. Native-mode allow-list (deterministic, no
  judgement): long-context RoPE scaling the models document and serve in
  production — `max_position_embeddings`, `rope_scaling` / `rope_parameters`
  and their YaRN fields (`rope_type`, `type`, `factor`,
  `original_max_position_embeddings`, `beta_fast`, `beta_slow`, `mscale`,
  `mscale_all_dim`). Anything else fails with the exact flag and value.
- An architecture field set directly: `num_hidden_layers`, `num_layers`,
  `n_routed_experts`, `num_experts`, `num_experts_per_tok`, `moe_topk`,
  `n_shared_experts`, `num_attention_heads`, `num_key_value_heads`,
  `first_k_dense_replace`, `index_topk`, `index_topk_freq`,
  `use_index_cache`, `index_n_heads`, `topk_group`, `n_group` (`_` or `-`).
- An edit of a model `config.json` (`sed -i`, `jq ... >`, a redirect, `cp`,
  `mv`, `tee`, or a python heredoc that writes it, also through
  `save_pretrained` / `to_json_file`), judged by the keys it
  changes: an architecture field (`ARCH_CONFIG_KEYS`: the fields above plus
  widths, head dims, LoRA ranks, MTP layers, sliding window, vocabulary)
  fails; metadata (`METADATA_CONFIG_KEYS`: `architectures`, `model_type`,
  `auto_map`, provenance; special-token ids `*_token`, `*_token_id(s)`) and
  the native RoPE modes above pass, as the same model under another name
  computes the same FLOPs. The keys are read from the program: a Python
  heredoc's syntax tree (`python_config_edits`: constant-key assignments,
  `update`, `setdefault`, `pop`, `del` on a config it loaded and writes
  back), a `jq` filter's assigned/deleted paths, a `sed` expression's quoted
  JSON keys. An edit whose keys cannot be read (a key computed at run time,
  a config handed to another function, a file copied over config.json) or
  that changes a key that is neither fails as "cannot decide: ...".
- A computation-skipping switch: a flag or env var combining SKIP with
  LAYER / INDEX / EXPERT / HEAD (e.g. `--skip-indexer-layers`).

An override or edit whose value cannot be read (an unresolved variable) fails
closed with a reason starting "cannot decide:"; a violation found in the same
PR is named first.

`--language-model-only` (not loading an unused vision encoder) is not a FLOPs
reduction of the served text model and is not flagged.

N/A when the PR changes no benchmark script, recipe, launcher or master
config (it touches no server args).

## Passing example

    --kv-cache-dtype fp8 --language-model-only
    --hf-overrides '{"max_position_embeddings": 262144}'
    a python heredoc writing a draft checkpoint's config.json with
    `config["pard_token"] = config["mask_token_id"]` (a token-id alias)

## Failing example

    --hf-overrides '{"index_topk_freq": 4, "use_index_cache": true}'
    a python heredoc writing config.json with `c["num_hidden_layers"] = 30`
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.context import Context
from checks.facts.bash import ShellLine, heredoc_bodies
from checks.facts.model_config import (
    ARCH_FIELDS,
    NATIVE_MODE_KEYS,
    ConfigEdits,
    classify_keys,
    python_config_edits,
    shell_config_edits,
)
from checks.result import CheckResult, Finding, Severity, Status
from checks.snapshot import ChangedFile

NUMBER = 8
NAME = "no architecture hacks"
RULE = "arch-override"

_OVERRIDE = re.compile(
    r"(--hf-overrides|hf[_-]overrides|--json-model-override-args|json[_-]model[_-]override[_-]args)"
    r"(\.[\w.]+)?[\"']?\s*[=:]?\s*(.*)$", re.I)
# A key of the override's mapping: quoted (JSON), or bare after `{` or `,` (a YAML flow mapping).
_KEYS = re.compile(r"[\"'](\w+)[\"']\s*:|[{,]\s*(\w+)\s*:")

_ARCH_KEY = re.compile(r"(?<![\w-])[\"']?(" + "|".join(f.replace("_", "[_-]") for f in ARCH_FIELDS)
                       + r")[\"']?\s*[:=]\s*([^,}\s]*)")
_CONFIG_JSON = re.compile(r"(?<![\w.-])config\.json\b")
# Shell commands that write a file (`_shell_write`): the parts a regular expression takes in one pass, and
# `jq ... >` and `> ...config.json`, which are read token by token (as one pattern, they scanned the rest of
# the line from every `jq` and every `>`).
_SHELL_WRITE = re.compile(r"\bsed\s++(?:-[a-hj-zA-Z]*+i|--in-place)|\btee\b|(?:^|[;&|]\s*+)(?:sudo\s++)?(?:cp|mv)\s")
_JQ = re.compile(r"\bjq\b")
_TOKEN = re.compile(r"[^\s\"']+")
_PY_WRITE = re.compile(r"json\.dump|\.write_text\(|\.write\(|open\([^)]*[\"'][wa]b?\+?[\"']")
_CONFIG_SAVE = re.compile(r"\.(?:save_pretrained|to_json_file)\(")  # writes config.json without naming it
_SWITCH = re.compile(r"--[\w-]+|\b[A-Z][A-Z0-9_]*(?=\s*[=:])")
# Literal parts every match of a pattern holds, tested first: most lines hold none (a master config's).
_ARCH_PARTS = tuple({max(f.split("_"), key=len) for f in ARCH_FIELDS})
_SKIPPED = ("layer", "index", "expert", "head")
# What `_line_hit` looks for first, lower case: an ASCII line holding none of these cannot hit.
_TRIGGERS = ("override", "config.json", "skip") + _ARCH_PARTS


@dataclass(frozen=True)
class _Hit:
    line: int
    text: str  # the offending flag/value as written
    message: str
    undecided: bool = False  # evidence that cannot be read or decided (the message starts "cannot decide:")


def _undecided(text: str, why: str) -> _Hit:
    return _Hit(0, text, f"cannot decide: {why}", True)


def _config_edit(text: str, edits: ConfigEdits, what: str) -> _Hit | None:
    """The finding for a config.json edit, judged by the keys it changes (None: metadata only)."""
    if edits.undecided:
        return _undecided(text, f"{what} the model's config.json and {edits.undecided}; serve the checkpoint's "
                                "native config, or change only metadata keys in a form this check reads")
    arch, unknown = classify_keys(edits.keys)
    if arch:
        return _Hit(0, text, f"{what} the model's config.json, changing its architecture ({', '.join(arch)}); "
                             "serve the checkpoint's native config")
    if unknown:
        return _undecided(text, f"{what} the model's config.json, changing {', '.join(unknown)}, which is neither "
                                "a known architecture field nor metadata; serve the checkpoint's native config")
    return None


def _in_scope(ctx: Context, f: ChangedFile) -> bool:
    return f.path.startswith(("benchmarks/", "runners/")) or ctx.policy.is_master_config(f.path)


def _lines(ctx: Context, path: str, text: str, wanted: set[int]) -> dict[int, ShellLine]:
    """The `wanted` lines; a script's are read in the context of the whole script, other files' alone (only
    those that `_may_hit`)."""
    if path.endswith((".sh", ".bash")):
        return {ln.number: ln for ln in ctx.script(text).lines}
    alone = list(_texts(ctx, path, text, wanted).items())
    return {n: ShellLine.alone(n, line) for (n, line), hit in zip(alone, _may_hit([t for _, t in alone])) if hit}


def _texts(ctx: Context, path: str, text: str, wanted: set[int]) -> dict[int, str]:
    """The `wanted` lines of `text` that it has (as `str.splitlines` cuts them, numbered from 1); a master
    config's are cut from the split that the master-config checks make of it anyway, not from a split of its
    12,000 lines."""
    cfg = ctx.head_configs.get(path) if ctx.policy.is_master_config(path) else None
    if cfg is not None and cfg.text == text and min(wanted) > 0:
        return cfg.lines(wanted)
    raw = text.splitlines()
    return {n: raw[n - 1] for n in wanted if n <= len(raw)}


def _may_hit(lines: list[str]) -> list[bool]:
    """Whether `_line_hit` can find anything in each of `lines` read alone (its code is part of it): an ASCII
    line must hold one of `_TRIGGERS`, and only those the lines hold at all are looked for in each (most lines
    of a recipe or master config hold none, and are then not read at all). A non-ASCII line is always read:
    lowering it may make ASCII letters (the Kelvin sign lowers to "k")."""
    held = [word for word in _TRIGGERS if word in "\n".join(lines).lower()]  # (no word holds a "\n")
    return [not line.isascii() or any(word in line.lower() for word in held) for line in lines]


def _overrides(code: str) -> re.Match[str] | None:
    """`_OVERRIDE.search(code)`; an ASCII line without "override" in any case cannot match."""
    if code.isascii() and "override" not in code.lower():
        return None
    return _OVERRIDE.search(code)


def _override(ln: ShellLine) -> _Hit | None:
    m = _overrides(ln.code)
    if not m:
        return None
    flag, dotted, value = m.group(1), m.group(2), m.group(3).strip().strip("'\"")
    expanded = _OVERRIDE.search(ln.expanded)
    resolved = (expanded.group(3).strip().strip("'\"") if expanded else value).replace('\\"', '"')
    keys = ([dotted.lstrip(".").split(".")[0]] if dotted else []) + [a or b for a, b in _KEYS.findall(resolved)]
    shown = f"{flag}{dotted or ''} {value}".strip()
    if keys and all(k in NATIVE_MODE_KEYS for k in keys):
        return None
    if keys:
        bad = sorted({k for k in keys if k not in NATIVE_MODE_KEYS})
        why = f"overrides the model config ({', '.join(bad)}), which is not a native mode"
    else:
        return _undecided(shown, f"`{shown}` overrides the model config with a value this check cannot read (an "
                                 "unresolved variable?), so it cannot be shown to be a native mode; write the "
                                 f"override literally (allowed: {', '.join(sorted(NATIVE_MODE_KEYS))})")
    return _Hit(0, shown, f"`{shown}` {why}; remove it and serve the model's native architecture "
                          f"(allowed: {', '.join(sorted(NATIVE_MODE_KEYS))})")


def _line_hit(ln: ShellLine) -> _Hit | None:
    code = ln.code
    hit = _override(ln)
    if hit is not None:
        return hit
    if _overrides(code):
        return None  # a native-mode override: its keys are allowed
    m = _ARCH_KEY.search(code) if any(part in code for part in _ARCH_PARTS) else None
    if m:
        shown = m.group(0).strip()
        return _Hit(0, shown, f"`{shown}` changes the model architecture ({m.group(1)}); "
                              "serve the checkpoint's native layers/experts/heads")
    if "config.json" in code and _CONFIG_JSON.search(code) and _shell_write(code):
        return _config_edit(code.strip(), shell_config_edits(code), "edits")
    for m in _SWITCH.finditer(code) if "skip" in code.lower() else ():
        token = m.group(0).lower()
        if "skip" in token and any(part in token for part in _SKIPPED):
            return _Hit(0, m.group(0), f"`{m.group(0)}` skips model computation; remove it")
    return None


def _shell_write(code: str) -> bool:
    """Whether shell `code` writes a file: `sed -i`, `tee`, `cp`/`mv` as a command, `jq` with a `>` after it on
    its line, a redirection into a path ending in config.json. Linear in `code`."""
    if _SHELL_WRITE.search(code):
        return True
    done = -1
    for m in _JQ.finditer(code):
        if m.start() < done:
            continue  # a later jq on a line whose first had no `>` after it
        done = code.find("\n", m.end()) % (len(code) + 1)
        if ">" in code[m.end():done]:
            return True
    if "config.json" not in code:
        return False
    for m in _TOKEN.finditer(code):
        word = m.group()
        at = word.rfind("config.json")
        if at < 0:
            continue
        if ">" in word[:at]:  # `>path/config.json` inside the word
            return True
        before = m.start()
        if before and code[before - 1] in "\"'":  # `> "config.json"`: one quote may open the path
            before -= 1
        while before and code[before - 1].isspace():  # (the blanks between two words: linear in all)
            before -= 1
        if before and code[before - 1] == ">":
            return True
    return False


def _scan(ctx: Context, f: ChangedFile) -> list[_Hit]:
    added = {n for n, _text in ctx.added_lines(f)}
    if not added:
        return []
    lines = _lines(ctx, f.path, f.head_text or "", added)
    hits: list[_Hit] = []
    bodies = heredoc_bodies(tuple(lines.values()))
    heredocs_done: set[int] = set()
    for n in sorted(added):
        ln = lines.get(n)
        if ln is None or not ln.code.strip():
            continue
        doc = ln.heredoc
        if doc is not None:
            if doc.diff or doc.start in heredocs_done:
                continue
            heredocs_done.add(doc.start)
            body = bodies[doc.start]
            target = next((b for b in body if _CONFIG_JSON.search(b.code) or _CONFIG_SAVE.search(b.code)), None)
            if target is not None and any(_PY_WRITE.search(b.code) or _shell_write(b.code)
                                          or _CONFIG_SAVE.search(b.code) for b in body):
                edits = (python_config_edits("\n".join(b.code if doc.quoted else b.expanded for b in body))
                         if doc.python else ConfigEdits(set(), "the heredoc is not a Python program this check reads"))
                hit = _config_edit(target.code.strip(), edits, "rewrites")
                if hit is not None:
                    hits.append(_Hit(target.number, hit.text, hit.message, hit.undecided))
                    continue
            for b in body:
                hit = _line_hit(b) if b.number in added else None
                if hit is not None:
                    hits.append(_Hit(b.number, hit.text, hit.message, hit.undecided))
            continue
        hit = _line_hit(ln)
        if hit is not None:
            hits.append(_Hit(n, hit.text, hit.message, hit.undecided))
    return hits


def check(ctx: Context) -> CheckResult:
    files = sorted((f for f in ctx.changed_files if _in_scope(ctx, f)), key=lambda f: f.path)
    if not files:
        return CheckResult(NUMBER, NAME, Status.NA,
                           "the PR changes no benchmark script, recipe, launcher or master config (no server args)")
    hits = sorted(((f.path, h) for f in files for h in _scan(ctx, f)),
                  key=lambda fh: (fh[1].undecided, fh[0], fh[1].line, fh[1].message))
    findings = tuple(sorted({Finding(path, h.line, RULE, Severity.ERROR, h.message, h.undecided) for path, h in hits}))
    if not findings:
        return CheckResult(NUMBER, NAME, Status.PASS,
                           "no architecture overrides (--hf-overrides, --json-model-override-args, config.json "
                           "edits of architecture fields, trimmed layers/experts/heads, skipped computation) in "
                           "the added server args")
    path, first = hits[0]  # a violation before what cannot be decided
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    where = f"{path}:{first.line}"
    reason = (f"cannot decide: {where} {first.message.removeprefix('cannot decide: ')}" if first.undecided
              else f"{where} {first.message}")
    return CheckResult(NUMBER, NAME, Status.UNDECIDED if first.undecided else Status.FAIL, reason + more, findings)
