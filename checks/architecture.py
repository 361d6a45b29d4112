"""Check 8 — no benchmark hacks that change the model architecture.

What it enforces: the server args a PR adds must serve the model's native
architecture. Making the same computation faster is fair game (kernels,
parallelism, lower precision that passes evals); removing model FLOPs is not
(skipping the DSA indexer every N layers, trimming layers, experts or heads,
editing the checkpoint's config.json).

How: every line the PR adds to a benchmark file (`benchmarks/**`: scripts,
srt-slurm recipes), a launcher (`runners/**`) or a master config is scanned,
comments and embedded unified diffs excluded (a diff rewrites engine source:
check 10's business). A line fails on the first of:

- `--hf-overrides` / `hf_overrides` / `--json-model-override-args` whose
  keys are not all native modes. Native-mode allow-list (deterministic, no
  judgement): long-context RoPE scaling the models document and serve in
  production — `max_position_embeddings`, `rope_scaling` / `rope_parameters`
  and their YaRN fields (`rope_type`, `type`, `factor`,
  `original_max_position_embeddings`, `beta_fast`, `beta_slow`, `mscale`,
  `mscale_all_dim`). Anything else, or a value that cannot be read (an
  unresolved shell variable), fails with the exact flag and value.
- An architecture field set directly: `num_hidden_layers`, `num_layers`,
  `n_routed_experts`, `num_experts`, `num_experts_per_tok`, `moe_topk`,
  `n_shared_experts`, `num_attention_heads`, `num_key_value_heads`,
  `first_k_dense_replace`, `index_topk`, `index_topk_freq`,
  `use_index_cache`, `index_n_heads`, `topk_group`, `n_group` (`_` or `-`).
- An edit of a model `config.json` (`sed -i`, `jq ... >`, a redirect, `cp`,
  `mv`, `tee`, or a python heredoc that writes it).
- A computation-skipping switch: a flag or env var combining SKIP with
  LAYER / INDEX / EXPERT / HEAD (e.g. `--skip-indexer-layers`).

`--language-model-only` (not loading an unused vision encoder) is not a FLOPs
reduction of the served text model and is not flagged.

N/A when the PR changes no benchmark script, recipe, launcher or master
config (it touches no server args).

    passes:  --kv-cache-dtype fp8 --language-model-only
    passes:  --hf-overrides '{"max_position_embeddings": 262144}'
    fails:   --hf-overrides '{"index_topk_freq": 4, "use_index_cache": true}'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .context import Context
from .result import CheckResult, Finding, Severity, Status
from .snapshot import ChangedFile
from .shell import ShellLine, heredoc_bodies

NUMBER = 8
NAME = "no architecture hacks"
RULE = "arch-override"

NATIVE_OVERRIDE_KEYS = frozenset({
    "max_position_embeddings", "rope_scaling", "rope_parameters", "rope_type", "type", "factor",
    "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
})

_OVERRIDE = re.compile(
    r"(--hf-overrides|hf[_-]overrides|--json-model-override-args|json[_-]model[_-]override[_-]args)"
    r"(\.[\w.]+)?[\"']?\s*[=:]?\s*(.*)$", re.I)
_KEYS = re.compile(r"[\"'](\w+)[\"']\s*:")
_ARCH_FIELDS = ("num_hidden_layers", "num_layers", "n_routed_experts", "num_experts", "num_experts_per_tok",
                "moe_topk", "n_shared_experts", "num_attention_heads", "num_key_value_heads",
                "first_k_dense_replace", "index_topk", "index_topk_freq", "use_index_cache", "index_n_heads",
                "topk_group", "n_group")
_ARCH_KEY = re.compile(r"(?<![\w-])[\"']?(" + "|".join(f.replace("_", "[_-]") for f in _ARCH_FIELDS)
                       + r")[\"']?\s*[:=]\s*([^,}\s]*)")
_CONFIG_JSON = re.compile(r"(?<![\w.-])config\.json\b")
_SHELL_WRITE = re.compile(r"\bsed\s+(?:-[a-zA-Z]*i|--in-place)|\bjq\b[^|]*>|>\s*[\"']?[^\s\"']*config\.json"
                          r"|\btee\b|(?:^|[;&|]\s*)(?:sudo\s+)?(?:cp|mv)\s")
_PY_WRITE = re.compile(r"json\.dump|\.write_text\(|\.write\(|open\([^)]*[\"'][wa]b?\+?[\"']")
_SWITCH = re.compile(r"--[\w-]+|\b[A-Z][A-Z0-9_]*(?=\s*[=:])")
_SKIPPED = ("layer", "index", "expert", "head")


@dataclass(frozen=True)
class _Hit:
    line: int
    text: str  # the offending flag/value as written
    message: str


def _in_scope(ctx: Context, f: ChangedFile) -> bool:
    return f.path.startswith(("benchmarks/", "runners/")) or ctx.policy.is_master_config(f.path)


def _lines(ctx: Context, path: str, text: str, wanted: set[int]) -> dict[int, ShellLine]:
    """The `wanted` lines; a script's are read in the context of the whole script, other files' alone."""
    if path.endswith((".sh", ".bash")):
        return {ln.number: ln for ln in ctx.script(text).lines}
    raw = text.splitlines()
    return {n: ShellLine.alone(n, raw[n - 1]) for n in wanted if n <= len(raw)}


def _override(ln: ShellLine) -> _Hit | None:
    m = _OVERRIDE.search(ln.code)
    if not m:
        return None
    flag, dotted, value = m.group(1), m.group(2), m.group(3).strip().strip("'\"")
    expanded = _OVERRIDE.search(ln.expanded)
    resolved = (expanded.group(3).strip().strip("'\"") if expanded else value).replace('\\"', '"')
    keys = ([dotted.lstrip(".").split(".")[0]] if dotted else []) + _KEYS.findall(resolved)
    shown = f"{flag}{dotted or ''} {value}".strip()
    if keys and all(k in NATIVE_OVERRIDE_KEYS for k in keys):
        return None
    if keys:
        bad = sorted({k for k in keys if k not in NATIVE_OVERRIDE_KEYS})
        why = f"overrides the model config ({', '.join(bad)}), which is not a native mode"
    else:
        why = "overrides the model config with a value that cannot be shown to be a native mode"
    return _Hit(0, shown, f"`{shown}` {why}; remove it and serve the model's native architecture "
                          f"(allowed: {', '.join(sorted(NATIVE_OVERRIDE_KEYS))})")


def _line_hit(ln: ShellLine) -> _Hit | None:
    code = ln.code
    hit = _override(ln)
    if hit is not None:
        return hit
    if _OVERRIDE.search(code):
        return None  # a native-mode override: its keys are allowed
    m = _ARCH_KEY.search(code)
    if m:
        shown = m.group(0).strip()
        return _Hit(0, shown, f"`{shown}` changes the model architecture ({m.group(1)}); "
                              "serve the checkpoint's native layers/experts/heads")
    if _CONFIG_JSON.search(code) and _SHELL_WRITE.search(code):
        return _Hit(0, code.strip(), "edits the model's config.json before serving; serve the checkpoint's native config")
    for m in _SWITCH.finditer(code):
        token = m.group(0).lower()
        if "skip" in token and any(part in token for part in _SKIPPED):
            return _Hit(0, m.group(0), f"`{m.group(0)}` skips model computation; remove it")
    return None


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
            target = next((b for b in body if _CONFIG_JSON.search(b.code)), None)
            if target is not None and any(_PY_WRITE.search(b.code) or _SHELL_WRITE.search(b.code) for b in body):
                hits.append(_Hit(target.number, target.code.strip(),
                                 "rewrites the model's config.json before serving; serve the checkpoint's native config"))
                continue
            for b in body:
                hit = _line_hit(b) if b.number in added else None
                if hit is not None:
                    hits.append(_Hit(b.number, hit.text, hit.message))
            continue
        hit = _line_hit(ln)
        if hit is not None:
            hits.append(_Hit(n, hit.text, hit.message))
    return hits


def check(ctx: Context) -> CheckResult:
    files = sorted((f for f in ctx.changed_files if _in_scope(ctx, f)), key=lambda f: f.path)
    if not files:
        return CheckResult(NUMBER, NAME, Status.NA,
                           "the PR changes no benchmark script, recipe, launcher or master config (no server args)")
    findings = tuple(sorted(Finding(f.path, h.line, RULE, Severity.ERROR, h.message) for f in files for h in _scan(ctx, f)))
    if not findings:
        return CheckResult(NUMBER, NAME, Status.PASS,
                           "no architecture overrides (--hf-overrides, --json-model-override-args, model-config "
                           "edits, trimmed layers/experts/heads, skipped computation) in the added server args")
    return CheckResult.failed(NUMBER, NAME, findings)
