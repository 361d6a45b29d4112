"""Check 3 — the single-node recipe is linked, merged upstream, and matches on MAJOR server args.

## What it enforces

The InferenceX "recipe" of a PR is every changed launch script under
`benchmarks/single_node/**` plus its master-config entry.

(a) Link. The sign-off's "Additional detail section" links the recipe.
    Accepted: a pull request of vllm-project/recipes or sgl-project/sglang
    (`https://github.com/<repo>/pull/<n>`), a published page
    `https://recipes.vllm.ai/<org>/<model>` (read as
    `models/<org>/<model>.yaml` of vllm-project/recipes), or
    `https://docs.sglang.io/cookbook/<rest>` (read as the first of
    `docs_new/cookbook/<rest>.mdx`, `.md`, `<rest>/index.mdx`,
    `<rest>/index.md` of sgl-project/sglang). Query strings and fragments
    are ignored. Branch, commit and file links do not count.
(b) Merged. A linked PR must be merged according to the upstream
    repository (merged, with a merge date): open, draft and
    closed-unmerged PRs fail. A published page counts as merged
    documentation. Every linked recipe must be verified: a document that
    could not be read fails closed, naming it.
(c) MAJOR args. Each MAJOR arg the PR serves must be documented by the
    linked recipes for the PR's model and SKU (`serverargs.is_major`:
    model, TP/DP/PP/EP and DP-attention, quantization, dtype and KV-cache
    dtype, kernel backends (`*-backend`, `--attention-config`), speculative
    method/draft model/draft attention backend/draft sampling, the AITER and
    FlashInfer kernel switches in the environment, and a few flags that
    change the served model). Everything else (memory fraction, batch and
    sequence limits, block size, chunked prefill, cudagraph and compilation
    settings, prefix caching, offload plumbing, ports, parsers, images) is
    InferenceX tuning: listed in the PASS reason, never a failure.

## Why

The community must be able to reproduce an InferenceX single-node
vLLM/SGLang benchmark from merged, public upstream documentation.

## How it decides

The deterministic rule for (c). The linked documents are read for the
SKU (`serverargs.recipe`): each composed serve config (base args, variant,
single-node strategy, hardware overrides for the SKU's vendor, generation
and name), each guide command under a heading that applies to the SKU,
and each optional feature. Only documents that serve the PR's model
(exact, case-insensitive) count; a recipe that declares its hardware must
list the SKU. A script's arg matches when its value (after
`serverargs.canonical`) equals a value one of those configs documents for
that key, or when it equals the engine default (`serverargs.is_default`)
and some complete config leaves the key unset. The equivalence table:

  - unset == `auto` (kv-cache-dtype, dtype, every `*-backend`), `1`
    (TP/DP/PP/EP sizes), `false` (boolean MAJOR flags), `none`
    (moe-a2a-backend), VLLM_ROCM_USE_AITER=0, and
    VLLM_ROCM_USE_AITER_{MOE,MLA,MHA,LINEAR,RMSNORM}=1;
  - unset == `--quantization X` when X is a checkpoint format of the
    entry's precision (fp4: mxfp4, nvfp4, modelopt_fp4, quark,
    compressed-tensors, ...; fp8: fp8, mxfp8, modelopt, ...): the engine
    auto-detects exactly that from the checkpoint;
  - KV cache `fp8_e4m3` == `fp8`; SGLang `NEXTN` == `EAGLE`; vLLM
    `deepseek_mtp` (any `*mtp`) == `mtp`; case, number spelling (8 == 8.0)
    and JSON key order never matter.

What the PR serves. A changed script is run (`bash.Script.launches`) once
per search-space point of the master-config entry that runs it (paired by
name: model prefix, precision, SKU, engine, scenario directory), with
MODEL, TP, EP_SIZE (default 1), DP_ATTENTION, KV_OFFLOADING and
KV_OFFLOAD_BACKEND from the point; every value a branch may produce is
compared. Its model is the launch's literal model, else the entry's
`model` (the runner passes it as MODEL and stages it at MODEL_PATH). A
changed entry without a changed script is compared on model, TP, EP and
DP-attention. UNDECIDED (never PASS) where the evidence exists but cannot be
read or decided, with a reason starting "cannot decide:" and naming why (a
violation found beside it makes the row FAIL): a script
no entry runs, a script that launches nothing for its points, a MAJOR value
the script and config do not determine, an entry or recipe that does not
parse, a linked document that was not fetched or could not be read.

Applicability. Only multi-node/disaggregated changes are exempt by the
spec: a purely multi-node/disaggregated PR (`benchmarks/multi_node/**`,
`multinode: true`, `disagg: true`, dynamo-* or *-disagg frameworks) is N/A
and says so. Single-node entries of other frameworks (atom, trt, ...) are
exempt only where the base checklist (`Policy.checklist`) narrows its recipe
item to vLLM/SGLang: its first item naming a "single-node ... recipe" names
frameworks between the two words ("every single-node vLLM/SGLang recipe"),
and all of them are vLLM or SGLang. Then such a PR is N/A, naming the item;
otherwise (no checklist, no such item, or an item for every single-node
recipe) their changed entries are judged as the vLLM/SGLang ones are, on
model, TP, EP and DP-attention, and a recipe that documents only another
engine does not match. Launch scripts are read for `vllm serve` and SGLang
launches only. When a PR has both parts, only the single-node part is
judged.

    N/A:    a PR adding only a single-node `framework: atom` entry, under the
            checklist item "Verified that every single-node vLLM/SGLang recipe
            in this PR is documented ...".

## Passing example

    sign-off detail "- vLLM recipe: https://github.com/vllm-project/recipes/pull/673"
    (#673 merged; models/moonshotai/Kimi-K2.5.yaml serves amd/Kimi-K2.5-MXFP4 with
    --kv-cache-dtype fp8 for mi355x, TP8 and a TP4 reproduction command), script
    serves `vllm serve $MODEL --tensor-parallel-size=$TP --kv-cache-dtype fp8`
    with tp 4 and 8 in the master config.

## Failing example

    vllm-project/recipes#788 (merged) serves moonshotai/Kimi-K3, but its amd config leaves
    the KV cache at the default (fp8 KV is only in hardware_overrides.blackwell), while
    kimik3_fp4_mi355x_mtp.sh:204 serves `--kv-cache-dtype "fp8"` on mi355x.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checks.context import Context
from checks.evidence import Missing, UpstreamTarget
from checks.facts import hardware, markdown, masterconfig, serverargs, signoff
from checks.facts.masterconfig import EntryChange
from checks.facts.upstream_recipes import RECIPE_ROOT, targets, upstream_mentions
from checks.facts.yamlload import LineDict
from checks.result import CheckResult, Status
from checks.snapshot import ChangedFile, UpstreamDoc

NUMBER = 3
NAME = "recipe link"

SINGLE_NODE_DIR = "benchmarks/single_node/"
MULTI_NODE_DIR = "benchmarks/multi_node/"
ENGINES = ("vllm", "sglang")
MAX_LISTED = 8  # mismatching args named per config (the rest are counted)
UNDECIDED_PREFIX = "cannot decide"


# ---------------------------------------------------------------------------
# Scope: the single-node part of the PR
# ---------------------------------------------------------------------------

_SINGLE_NODE_RECIPE = re.compile(r"\bsingle[- ]node\b(.{0,80}?)\brecipes?\b", re.I)
_NAME_SEPARATORS = re.compile(r"/|,|&|\band\b|\bor\b", re.I)  # (the names are stripped: no blanks to scan twice)


@dataclass(frozen=True)
class _RecipeItem:
    """The base checklist's recipe item, and whether it covers vLLM/SGLang recipes only."""

    where: str  # "<checklist path>:<line>"
    engines_only: bool


def _recipe_item(ctx: Context) -> _RecipeItem | None:
    """The first checklist item naming a "single-node ... recipe"; None without a checklist or such an item.

    It covers vLLM/SGLang only when the words between "single-node" and "recipe" name frameworks and every
    one of them is vLLM or SGLang ("every single-node vLLM/SGLang recipe").
    """
    found = ctx.policy_file(ctx.policy.checklist)
    if found is None:
        return None
    path = found[0]
    template = signoff.checklist_template(ctx)
    for item in template.items if template is not None else ():
        m = _SINGLE_NODE_RECIPE.search(markdown.unlink(item.text))
        if m is None:
            continue
        qualifier = m.group(1).replace("*", "").replace("`", "").strip()
        names = {n.strip().lower() for n in _NAME_SEPARATORS.split(qualifier) if n.strip()}
        return _RecipeItem(f"{path}:{item.line}", bool(names) and names <= set(ENGINES))
    return None


@dataclass(frozen=True)
class _Scope:
    scripts: tuple[tuple[ChangedFile, str], ...]  # changed single-node launch scripts, with their engine
    entries: tuple[EntryChange, ...]  # changed single-node entries in scope (parsed or not)
    multinode: tuple[str, ...]  # evidence of a multi-node/disagg part
    other: tuple[str, ...]  # frameworks of single-node entries outside vLLM/SGLang that the checklist exempts
    exempting: str = ""  # "<checklist>:<line>" of the recipe item that exempts them

    @property
    def applies(self) -> bool:
        return bool(self.scripts or self.entries)


def _entry_kind(change: EntryChange, ctx: Context) -> tuple[str, str]:
    """("multi" | "single" | "other", framework) of a changed entry, read from its head text."""
    if change.head is not None:
        entry = change.head
        framework = str(entry.get("framework") or "")
        multi = entry.get("multinode") is True or entry.get("disagg") is True
    else:
        fields = ctx.head_configs[change.path].fields(change.key)
        framework = fields.get("framework", "")
        multi = fields.get("multinode") == "true" or fields.get("disagg") == "true"
    if multi or framework.startswith("dynamo") or "disagg" in framework:
        return "multi", framework
    return ("single" if framework in ENGINES else "other"), framework or "(no framework)"


def _scope(ctx: Context) -> _Scope:
    scripts = []
    multi: list[str] = []
    if any(f.path.startswith(MULTI_NODE_DIR) for f in ctx.changed_files):
        multi.append("benchmarks/multi_node/**")
    for f in ctx.changed_files:
        if f.path.startswith(SINGLE_NODE_DIR) and f.path.endswith(".sh") and f.head_text is not None:
            engines = [l.engine for l in ctx.script(f.head_text).launches()]
            if engines:
                scripts.append((f, engines[0]))
    entries, other = [], []
    item = _recipe_item(ctx)
    exempt = item is not None and item.engines_only
    for change in ctx.changed_entries:
        if change.status == "removed":
            continue
        kind, framework = _entry_kind(change, ctx)
        if kind == "single" or (kind == "other" and not exempt):
            entries.append(change)
        elif kind == "other":
            other.append(framework)
        else:
            head = change.head or LineDict()
            multi += [m for m in ("multinode: true" if head.get("multinode") is True else "",
                                  "disagg: true" if head.get("disagg") is True else "", framework)
                      if m and m not in multi]
    return _Scope(tuple(scripts), tuple(entries), tuple(multi), tuple(sorted(set(other))),
                  item.where if other and item is not None else "")


# ---------------------------------------------------------------------------
# Subjects: what the PR serves
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Subject:
    path: str  # the script, or the master config of an entry changed without its script
    engine: str
    sku: str
    precision: str
    model: str  # "" when it cannot be resolved
    model_line: int
    args: tuple[serverargs.Arg, ...]
    problem: str = ""  # why it cannot be compared (fails closed)


def _point_env(entry: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, str]:
    """The variables InferenceX's runner gives a script for one search-space point."""
    env = {"MODEL": str(entry.get("model") or "")}
    if "tp" in point:
        env["TP"] = str(point["tp"])
    env["EP_SIZE"] = str(point.get("ep") or 1)
    env["DP_ATTENTION"] = "true" if point.get("dp-attn") is True else "false"
    if "kv-offloading" in point:
        env["KV_OFFLOADING"] = str(point["kv-offloading"])
    backend = point.get("kv-offload-backend")
    if isinstance(backend, dict) and backend.get("name"):
        env["KV_OFFLOAD_BACKEND"] = str(backend["name"])
    return {k: v for k, v in env.items() if v}


def _pair(ctx: Context, path: str, engine: str) -> tuple[str, str, LineDict | None] | None:
    """(config path, key, entry) of the head master-config entry that runs script `path`.

    InferenceX names scripts `<model-prefix>_<precision>_<sku>[_<framework>][_<suffix>...].sh`
    under a scenario directory (fixed_seq_len, agentic). The entry must have
    that model prefix, precision and SKU, the script's engine as framework, a
    scenario of that directory, and every suffix among its key's words.
    Ties go to a changed entry, then the one with the fewest unmatched words.
    """
    rel = path[len(SINGLE_NODE_DIR):]
    scenario = rel.split("/")[0].replace("_", "-") if "/" in rel else ""
    words = posixpath.basename(path)[:-3].lower().split("_")
    if len(words) < 3:
        return None
    changed = {(c.path, c.key) for c in ctx.changed_entries}
    best: tuple[tuple[bool, int, str, int], str, str, LineDict | None] | None = None
    for cpath, cfg in ctx.head_configs.items():
        for key, block in cfg.blocks.items():
            if words[0] not in block.text.lower():  # its model-prefix, read from this text, cannot be the script's
                continue
            fields = cfg.fields(key)
            sku = hardware.sku(fields.get("runner", ""))
            if (fields.get("model-prefix", "").lower() != words[0] or fields.get("precision", "").lower() != words[1]
                    or not sku or sku not in words or fields.get("framework") != engine
                    or "true" in (fields.get("multinode"), fields.get("disagg"))):
                continue
            key_words = set(key.lower().split("-"))
            if any(w not in key_words for w in words[2:] if w not in (sku, engine)):
                continue
            found = masterconfig.find_entry({cpath: cfg}, key)
            entry = found[1] if found else None
            scenarios = entry.get("scenarios") if entry is not None else None
            if scenario and not (isinstance(scenarios, dict) and any(str(s).startswith(scenario) for s in scenarios)):
                continue
            unmatched = len(key_words - set(words) - {engine} - {str(s).split("-")[0] for s in scenarios or ()})
            rank = ((cpath, key) not in changed, unmatched, cpath, cfg.blocks[key].line)
            if best is None or rank < best[0]:
                best = (rank, cpath, key, entry)
    return (best[1], best[2], best[3]) if best else None


def _merge_args(args: list[serverargs.Arg]) -> tuple[serverargs.Arg, ...]:
    """One Arg per (key, flag, line) with the candidates of every point, in first-seen order."""
    merged: dict[tuple[str, str, int], serverargs.Arg] = {}
    for a in args:
        k = (a.key, a.flag, a.line)
        old = merged.get(k)
        merged[k] = a if old is None else serverargs.Arg(a.key, a.flag, tuple(dict.fromkeys(old.values + a.values)),
                                                         a.line)
    return tuple(merged.values())


def _script_subjects(ctx: Context, f: ChangedFile, engine: str,
                     paired: tuple[str, str, LineDict | None] | None) -> list[_Subject]:
    if paired is None:
        return [_problem(f.path, f"cannot decide: no {engine} master-config entry matches {f.path} by model "
                                 "prefix, precision "
                                 "and SKU, so the model and parallelism it serves cannot be resolved; add or fix "
                                 "the entry")]
    cpath, key, entry = paired
    if entry is None:
        return [_problem(f.path, f"cannot decide: the {engine} master-config entry {key} ({cpath}) that matches "
                                 f"{f.path} does not parse, so the model and parallelism it serves cannot be "
                                 "resolved; fix its YAML")]
    points = masterconfig.search_points(entry) or [{}]
    envs: list[dict[str, str]] = []
    for point in points:
        env = _point_env(entry, point)
        if env not in envs:
            envs.append(env)
    script = ctx.script(f.head_text or "")
    commands = [serverargs.server_args(l) for env in envs for l in script.launches(env)]
    commands = [c for c in commands if not c.multinode and c.engine == engine]
    if not commands:
        return [_problem(f.path, f"cannot decide: {f.path} reaches no single-node {engine} launch for any "
                                 f"search-space point of {key}; its server args cannot be compared with a recipe")]
    by_model: dict[str, list[serverargs.ServerArgs]] = {}
    entry_model = str(entry.get("model") or "")
    for cmd in commands:
        models = cmd.model.known if cmd.model is not None else ()
        for model in models or (entry_model,):
            by_model.setdefault(model, []).append(cmd)
    sku = hardware.sku(str(entry.get("runner") or ""))
    precision = str(entry.get("precision") or "")
    return [_Subject(f.path, engine, sku, precision, model, cmds[0].model.line if cmds[0].model else cmds[0].line,
                     _merge_args([a for c in cmds for a in c.args]))
            for model, cmds in by_model.items()]


def _problem(path: str, why: str) -> _Subject:
    return _Subject(path, "", "", "", "", 0, (), why)


def _entry_subject(change: EntryChange) -> _Subject:
    entry = change.head
    if entry is None:
        return _problem(change.path, f"cannot decide: {change.path}:{change.line} entry {change.key} does not parse"
                                     f"{f' ({change.error.message})' if change.error else ''}; "
                                     "it cannot be compared with a recipe")
    engine = str(entry.get("framework") or "")
    args: list[serverargs.Arg] = []
    for point in masterconfig.search_points(entry):
        line, tp, ep = point.get("line") or change.line, point.get("tp"), point.get("ep")
        if tp is None:
            continue
        if point.get("dp-attn") is True:
            if engine == "sglang":
                args += [serverargs.Arg("enable-dp-attention", "dp-attn: true", ("",), line),
                         serverargs.Arg("data-parallel-size", "dp-attn: true, tp:", (str(tp),), line),
                         serverargs.Arg("tensor-parallel-size", "tp:", (str(tp),), line)]
            else:
                args.append(serverargs.Arg("data-parallel-size", "dp-attn: true, tp:", (str(tp),), line))
        else:
            args.append(serverargs.Arg("tensor-parallel-size", "tp:", (str(tp),), line))
        if isinstance(ep, int) and ep > 1:
            args.append(serverargs.Arg("expert-parallel-size", "ep:", (str(ep),), line) if engine == "sglang"
                        else serverargs.Arg("enable-expert-parallel", f"ep: {ep}", ("",), line))
    return _Subject(change.path, engine, hardware.sku(str(entry.get("runner") or "")),
                    str(entry.get("precision") or ""), str(entry.get("model") or ""),
                    entry.line_of("model", change.line),
                    _merge_args(args))


def _subjects(ctx: Context, scope: _Scope) -> list[_Subject]:
    out: list[_Subject] = []
    paired: set[tuple[str, str]] = set()
    for f, engine in scope.scripts:
        found = _pair(ctx, f.path, engine)
        out += _script_subjects(ctx, f, engine, found)
        if found:
            paired.add(found[:2])
    out += [_entry_subject(c) for c in scope.entries if (c.path, c.key) not in paired]
    return out


# ---------------------------------------------------------------------------
# Upstream documents
# ---------------------------------------------------------------------------

def _failing(problems: list[str]) -> Status:
    """FAIL when a problem is a violation; UNDECIDED when every one says what could not be read or
    decided (its text starts "cannot decide")."""
    return Status.UNDECIDED if all(p.startswith(UNDECIDED_PREFIX) for p in problems) else Status.FAIL


def _label(doc: UpstreamDoc) -> str:
    return f"{doc.repo}#{doc.number}" if doc.kind == "pull" else doc.url


def _status_problem(t: UpstreamTarget, doc: UpstreamDoc | None) -> str | None:
    """Why the linked document does not count as merged/published upstream documentation."""
    name = f"{t.repo}#{t.number}" if t.kind == "pull" else t.url
    if doc is None:
        return f"cannot decide: {name} was not fetched, so its merge status cannot be verified"
    if doc.error and doc.missing:
        return f"{name} does not exist or is not public ({doc.error}); link a merged upstream recipe"
    if doc.error:
        what = "merge status" if t.kind == "pull" else "publication"
        return (f"cannot decide: {name} could not be read ({doc.error}), so its {what} and server args cannot be "
                "verified")
    if t.kind != "pull":
        return None
    if doc.draft:
        return f"{name} is a draft pull request, not merged ({t.url})"
    if not doc.merged and doc.state == "closed":
        return f"{name} was closed without merging ({t.url})"
    if not doc.merged:
        return f"{name} is open, not merged ({t.url})"
    if not doc.merged_at:
        return f"cannot decide: {name} reports merged without a merge date, so the merge cannot be verified ({t.url})"
    return None


def _recipe_files(doc: UpstreamDoc) -> list[tuple[str, str]]:
    root = RECIPE_ROOT.get(doc.repo, "")
    return [(p, text) for p, text in doc.files.items()
            if p.startswith(root) and p.lower().endswith((".yaml", ".yml", ".md", ".mdx"))
            and not any(part.startswith(".") for part in p.split("/"))]


@dataclass(frozen=True)
class _Linked:
    doc: UpstreamDoc
    files: tuple[tuple[str, str], ...]

    @property
    def provenance(self) -> str:
        """The document with its upstream status, for the PASS reason."""
        if self.doc.kind == "pull":
            return f"{_label(self.doc)} (merged {str(self.doc.merged_at)[:10]})"
        return f"{self.doc.url} (published)"


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Verdict:
    problem: str = ""  # a blocking finding about the subject as a whole
    mismatches: tuple[str, ...] = ()
    undetermined: tuple[str, ...] = ()  # MAJOR args whose value the script and config do not determine
    matched: tuple[str, ...] = ()  # "--tensor-parallel-size 4/8", ...
    tuning: tuple[str, ...] = ()  # flags the recipe does not document with the script's value


def _models_shown(recipes: list[serverargs.Recipe], precision: str) -> str:
    """The models the linked recipes serve, those matching the PR's precision first."""
    ids: list[str] = []
    for r in recipes:
        ids += [m for m in r.models if m not in ids]
    family = serverargs.precision_family(precision)
    preferred = [m for m in ids if family and family in m.lower()] or ids
    more = len(preferred) - 4
    return ", ".join(preferred[:4]) + (f" (+{more} more)" if more > 0 else "")


def _judge(subject: _Subject, linked: list[_Linked], labels: str) -> _Verdict:
    recipes = [serverargs.recipe(path, text, subject.sku) for item in linked for path, text in item.files]
    broken = [r.error for r in recipes if r.error]
    if broken:
        return _Verdict(problem=f"cannot decide: {broken[0]}; the recipe cannot be verified")
    model = subject.model.lower()
    where = f"{subject.path}:{subject.model_line}"
    serving = [r for r in recipes if model in (m.lower() for m in r.models)]
    if not serving:
        files = ", ".join(path for item in linked for path, _text in item.files)
        if not any(r.models for r in recipes):
            return _Verdict(problem=f"cannot decide: {labels} ({files}) has no serve command or model this bot "
                                    "can read, so it "
                                    f"cannot be verified to document {subject.model} ({where}); link the recipe "
                                    "page or PR whose file serves it")
        return _Verdict(problem=f"{labels} ({files}) documents {_models_shown(recipes, subject.precision)}, not "
                                f"{subject.model} ({where}); link the merged recipe for {subject.model}")
    sources = [s for r in serving for s in r.sources
               if s.model is None or s.model.lower() == model]
    engine_sources = [s for s in sources if s.engine == subject.engine]
    complete = [s for s in engine_sources if s.complete and s.model is not None]
    if not complete:
        declared = sorted({h for r in serving for h in r.hardware or ()})
        if sources and not engine_sources:
            why = f"only for {sources[0].engine}, while {subject.path} serves {subject.engine}"
        elif declared and subject.sku not in declared:
            why = f"only on {', '.join(declared)}, not on {subject.sku}"
        else:
            why = f"with no single-node serve config for {subject.sku or 'this SKU'}"
        return _Verdict(problem=f"{labels} documents {subject.model} {why} ({where}); "
                                f"link the merged recipe that documents it")
    mismatches: list[str] = []
    undetermined: list[str] = []
    matched: dict[str, list[str]] = {}
    tuning: list[str] = []
    for arg in subject.args:
        documented = {serverargs.canonical(arg.key, s.args[arg.key], subject.precision): s.args[arg.key]
                      for s in engine_sources if arg.key in s.args}
        if not arg.major:
            if not serverargs.is_plumbing(arg.key) and any(
                    serverargs.canonical(arg.key, v, subject.precision) not in documented for v in arg.known):
                if arg.flag not in tuning:
                    tuning.append(arg.flag)
            continue
        if not arg.known:
            undetermined.append(f"{subject.path}:{arg.line} {arg.flag}")
            continue
        unset_ok = any(arg.key not in s.args or serverargs.is_default(
            arg.key, serverargs.canonical(arg.key, s.args[arg.key], subject.precision)) for s in complete)
        for value in arg.known:
            canon = serverargs.canonical(arg.key, value, subject.precision)
            if canon in documented or (unset_ok and serverargs.is_default(arg.key, canon)):
                values = matched.setdefault(arg.label, [])
                if not arg.key.startswith("env:") and (value or "true") not in values:
                    values.append(value or "true")
                continue
            shown = sorted(set(documented.values()))
            recipe_says = f"recipe: {', '.join(shown)}" if shown else "recipe leaves it at the default"
            mismatches.append(f"{subject.path}:{arg.line} {arg.show(value)} ({recipe_says})")
    return _Verdict(mismatches=tuple(dict.fromkeys(mismatches)), undetermined=tuple(dict.fromkeys(undetermined)),
                    matched=tuple(f"{label} {'/'.join(values)}" for label, values in matched.items() if values),
                    tuning=tuple(tuning))


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------

def _placeholder(ctx: Context, detail: str) -> bool:
    """Whether the detail section is still the checklist template's placeholder text."""
    found = ctx.policy_file(ctx.policy.checklist)
    template = signoff.checklist_template(ctx) if found is not None and detail else None
    if template is None or not template.detail:
        return False

    def norm(text: str) -> str:
        return re.sub(r"\W+", " ", text).strip().lower()

    return norm(template.detail) == norm(detail)


def _result(status: Status, reason: str) -> CheckResult:
    return CheckResult(NUMBER, NAME, status, reason)


def check(ctx: Context) -> CheckResult:
    scope = _scope(ctx)
    if not scope.applies:
        if scope.multinode:
            return _result(Status.NA, f"disaggregated/multi-node submission ({', '.join(scope.multinode)}); "
                                      "the recipe-link requirement applies to single-node recipes only")
        if scope.other:
            return _result(Status.NA, f"single-node changes are {', '.join(scope.other)} only; the checklist's "
                                      f"recipe item ({scope.exempting}) covers vLLM/SGLang recipes only")
        return _result(Status.NA, "PR changes no single-node vLLM/SGLang benchmark script or master-config entry")
    suffix = " (multi-node part not assessed)" if scope.multinode else ""
    sign = ctx.signoff
    fix = ("link the merged vllm-project/recipes or sgl-project/sglang PR, or the published recipes.vllm.ai / "
           "docs.sglang.io cookbook page, in the sign-off's additional detail section")
    if sign is None:
        return _result(Status.FAIL, f"no sign-off found, so no recipe link; {fix}")
    if not sign.has_detail_section:
        return _result(Status.FAIL, f"the sign-off has no additional detail section with a recipe link; {fix}")
    links = targets(sign.detail_links)
    if not links:
        if _placeholder(ctx, sign.detail):
            why = "the additional detail section is the unfilled template placeholder and links no upstream recipe"
        elif upstream_mentions(sign.detail_links):
            why = (f"the additional detail section links {upstream_mentions(sign.detail_links)[0]}, "
                   "a branch/commit/file rather than a merged PR or published page")
        else:
            why = "the additional detail section links no upstream recipe"
        return _result(Status.FAIL, f"{why}; {fix}")
    docs = {t.url: doc for t in links if not isinstance(doc := ctx.need.upstream(t), Missing)}
    problems = [p for t in links if (p := _status_problem(t, docs.get(t.url))) is not None]
    if problems:
        return _result(_failing(problems), "; ".join(problems) + "; the recipe must be merged upstream "
                                                                 "(link the merged PR or the published page)")
    linked = [_Linked(docs[t.url], tuple(_recipe_files(docs[t.url]))) for t in links]
    empty = [item for item in linked if not item.files]
    if empty:
        return _result(Status.FAIL, f"{_label(empty[0].doc)} has no recipe file (a models/*.yaml or docs_new "
                                    f"page); link the recipe that documents this benchmark")
    labels = " + ".join(_label(item.doc) for item in linked)
    failures: list[str] = []
    summaries: list[str] = []
    for subject in _subjects(ctx, scope):
        if subject.problem:
            failures.append(subject.problem)
            continue
        verdict = _judge(subject, linked, labels)
        if verdict.problem:
            failures.append(verdict.problem)
            continue
        if verdict.undetermined:
            failures.append(f"cannot decide: the value of MAJOR arg {', '.join(verdict.undetermined)} is not "
                            "determined by the script or its master-config entry; set it explicitly")
        if verdict.mismatches:
            more = len(verdict.mismatches) - MAX_LISTED
            failures.append(f"MAJOR args missing from or contradicting {labels} for {subject.model} on "
                            f"{subject.sku}: " + "; ".join(verdict.mismatches[:MAX_LISTED])
                            + (f" (+{more} more)" if more > 0 else "")
                            + "; match the recipe or get these args into the merged upstream recipe")
        if not verdict.undetermined and not verdict.mismatches:
            more = len(verdict.tuning) - MAX_LISTED
            tuning = (f"; InferenceX-only knobs (informational): {', '.join(verdict.tuning[:MAX_LISTED])}"
                      + (f" (+{more} more)" if more > 0 else "") if verdict.tuning else "")
            summaries.append(f"{subject.model} on {subject.sku} ({subject.path}): "
                             f"{', '.join(verdict.matched) or 'model'} match{tuning}")
    if failures:
        return _result(_failing(failures), "; ".join(failures) + suffix)
    return _result(Status.PASS, f"{' + '.join(item.provenance for item in linked)} documents "
                                + "; ".join(summaries) + suffix)
