"""Shared facts for checks 9 and 11: which changed configs run speculative decoding, and how.

Checks 9 (chat template) and 11 (golden acceptance length) read the same
benchmark scripts, srt-slurm recipes and master-config entries. Scripts are
read by `checks.shell.Script` (comments, heredocs, logical lines, variables
expanded where the script fixes them), as checks 8 and 10 read them; this
module adds only what is about speculative decoding:

- Which lines of a script run only in eval-only mode (`eval_only_lines`):
  the then-branch of `if [ "$EVAL_ONLY" = "true" ]` (or the else-branch of
  `!=`). Eval-only runs measure accuracy, not throughput, so their settings
  do not count.
- The speculative-decoding inventory (`inventory`): every benchmark script
  or recipe the PR changes that is speculative-decoding, plus the scripts and
  recipes that a changed spec-decode master entry runs. For each: the engine,
  whether it is agentic, its model prefix, its speculative configs (draft
  method, draft length, sampling knobs) and its simulated-acceptance knobs.

Recognised speculative-decoding knobs:
  vLLM     `--speculative-config` JSON (`method`, `num_speculative_tokens`,
           `draft_sample_method`, `rejection_sample_method`,
           `synthetic_acceptance_length`), legacy `--num-speculative-tokens`
  SGLang   `--speculative-algorithm|--speculative-algo`, `--speculative-num-steps`,
           `--speculative-num-draft-tokens`, `--speculative-draft-model-path`
           (srt-slurm recipes spell them as keys, e.g. `speculative-algo: EAGLE`)
  TRT-LLM  `speculative_config` / `decoding_type: MTP`, `num_nextn_predict_layers`,
           `max_draft_len`
  env      SGLANG_SIMULATE_ACC_LEN (+ _METHOD, _TOKEN_MODE),
           TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS
  master   `spec-decoding:` other than none; additional-settings
           SYNTHETIC_ACCEPTANCE=true / SYNTHETIC_ACCEPTANCE_LENGTH=<AL>
  names    a script stem containing `_mtp` / `eagle`, a recipe or entry name
           containing `-mtp` / `eagle`

Where a master entry's script is found: InferenceX launchers run
`benchmarks/single_node/<scenario dir>/<model-prefix>_<precision>_<sku>_<framework>[_mtp].sh`
and fall back to the name without the framework (`_trt` / `_atom` kept), with
scenario dir `fixed_seq_len` / `agentic`; multi-node entries run the recipes
their `CONFIG_FILE=recipes/<rel>` settings name, i.e. `<recipe_root>/<rel>`.
"""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass, replace
from typing import Iterator

from .context import Context
from .evidence import Wanted
from .masterconfig import search_points
from .policy import Policy
from .shell import Script
from .yamlload import LineDict, LineList, YamlProblem

# --------------------------------------------------------------------------
# Eval-only branches
# --------------------------------------------------------------------------


def eval_only_lines(script: Script) -> frozenset[int]:
    """The lines in the then-branch of `if [ "$EVAL_ONLY" = "true" ]` (or the else-branch of `!=`): eval-only
    runs measure accuracy, not throughput, so their settings do not count."""
    branches = _Branches()
    marked: list[range] = []
    last = 0
    for cmd in script.commands:
        if branches.eval_only:
            marked.append(range(last + 1, cmd.end + 1))
        branches.track(cmd.text)
        last = cmd.end
    if branches.eval_only:
        marked.append(range(last + 1, len(script.raw) + 1))
    return frozenset(n for lines in marked for n in lines)


class _Branches:
    """The open if/elif branches at a command, and how many of them run only in eval-only mode.

    The count is kept as frames open and close: recomputing it from every open frame on every line
    was quadratic, and a script of 20,000 unclosed `if` lines took minutes.
    """

    def __init__(self) -> None:
        self.frames: list[tuple[str, bool, bool]] = []  # (if/elif condition, in its else-branch, eval-only)
        self.marked = 0

    @property
    def eval_only(self) -> bool:
        return self.marked > 0

    def track(self, code: str) -> None:
        s = code.strip()
        if re.match(r"^if\b", s):
            if not re.search(r"\bfi\s*;?\s*$", s):
                self._push(s, False)
        elif re.match(r"^elif\b", s) and self.frames:
            self._pop()
            self._push(s, False)
        elif re.match(r"^else\b", s) and self.frames:
            self._push(self._pop(), True)
        elif re.match(r"^fi\b", s) and self.frames:
            self._pop()

    def _push(self, cond: str, in_else: bool) -> None:
        mark = _eval_only_branch(cond, in_else)
        self.frames.append((cond, in_else, mark))
        self.marked += mark

    def _pop(self) -> str:
        cond, _in_else, mark = self.frames.pop()
        self.marked -= mark
        return cond


def _eval_only_branch(cond: str, in_else: bool) -> bool:
    """Whether the branch of `if cond` (its else-branch when `in_else`) runs only when EVAL_ONLY is true."""
    if "EVAL_ONLY" not in cond:
        return False
    if re.search(r"!=\s*[\"']?true\b", cond):
        tests_true = False
    elif re.search(r"==?\s*[\"']?true\b", cond):
        tests_true = True
    else:
        return False
    return tests_true != in_else


# --------------------------------------------------------------------------
# Which files are which
# --------------------------------------------------------------------------


def is_benchmark_script(path: str) -> bool:
    return path.startswith("benchmarks/") and path.endswith(".sh") and posixpath.basename(path) != "benchmark_lib.sh"


def is_recipe(policy: Policy, path: str) -> bool:
    return path.startswith(policy.recipe_root.rstrip("/") + "/") and path.endswith((".yaml", ".yml"))


def is_agentic_path(path: str) -> bool:
    return "agentic" in path.split("/")[:-1]


def script_prefix(path: str) -> str:
    """The model prefix a benchmark script is named after (`glm5.2_fp4_mi355x_mtp.sh` -> `glm5.2`)."""
    return posixpath.basename(path).split("_", 1)[0]


# --------------------------------------------------------------------------
# Speculative-decoding settings
# --------------------------------------------------------------------------

_SIM_ENV_RE = re.compile(
    r"\b(SGLANG_SIMULATE_ACC_LEN|SGLANG_SIMULATE_ACC_METHOD|SGLANG_SIMULATE_ACC_TOKEN_MODE|"
    r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)\b[\"']?\s*[=:]\s*[\"']?([^\"'\s;,}]+)")
_JSON_FIELD = re.compile(r"\"(\w+)\"\s*:\s*(?:\"([^\"]*)\"|([^,}\s\"]+))")
_SPEC_JSON = re.compile(r"\"num_speculative_tokens\"\s*:|\"(?:rejection_sample_method|synthetic_acceptance_length)\"\s*:")
_SPEC_METHOD_JSON = re.compile(r"\"method\"\s*:\s*\"(\w*(?:mtp|eagle|dspark|medusa|ngram|draft)\w*)\"", re.I)
_SGLANG_FLAG = re.compile(
    r"--(speculative-algorithm|speculative-algo|speculative-num-steps|speculative-num-draft-tokens|"
    r"speculative-eagle-topk|speculative-draft-model-path|num-speculative-tokens|speculative-model)"
    r"(?:=|\s+)[\"']?([^\"'\s\\]+)")
_TRT_KEY = re.compile(r"\b(decoding_type|num_nextn_predict_layers|max_draft_len|speculative_model_dir)\s*:\s*[\"']?([\w./-]+)")
_THINKING_OFF = re.compile(
    r"(?:enable_|default_)?thinking(?:_mode)?[\"']?\s*[:=]\s*[\"']?(?:false|0|off|disabled|no)\b", re.I)


@dataclass(frozen=True)
class SpecConfig:
    """One speculative-decoding configuration: a `--speculative-config`, a set of flags or a recipe block."""

    line: int
    engine: str  # vllm | sglang | trtllm
    method: str  # normalised draft method: mtp | eagle3 | eagle | dspark | ... ("" unknown)
    num_tokens: int | None  # draft length: num_speculative_tokens / MTP steps
    fields: tuple[tuple[str, str], ...]  # the raw settings, sorted
    eval_only: bool = False

    def get(self, key: str) -> str | None:
        return dict(self.fields).get(key)

    @property
    def synthetic(self) -> bool:
        return (self.get("rejection_sample_method") or "").lower() == "synthetic"


@dataclass(frozen=True)
class Simulation:
    """A simulated/synthetic acceptance knob and the acceptance length it pins."""

    knob: str  # SGLANG_SIMULATE_ACC_LEN | TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS | SYNTHETIC_ACCEPTANCE_LENGTH | ...
    raw: str  # the value as written (variables resolved where possible)
    line: int
    path: str
    eval_only: bool = False

    @property
    def pins_length(self) -> bool:
        return self.knob in ("SGLANG_SIMULATE_ACC_LEN", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
                             "SYNTHETIC_ACCEPTANCE_LENGTH", "synthetic_acceptance_length")

    @property
    def length(self) -> float | None:
        """The acceptance length pinned: TRT-LLM counts accepted draft tokens only, so its value + 1."""
        try:
            value = float(self.raw)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        return value + 1 if self.knob == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" else value


def normalise_method(value: str, draft: str = "") -> str:
    """The golden-curve name of a draft method (`draft`: the separate draft model, "" for none).

    SGLang's EAGLE / NEXTN without a separate draft model runs the model's own
    MTP head, which is what the `*_mtp.yaml` curves measure.
    """
    v = value.lower().replace("-", "_")
    if "mtp" in v or v == "nextn":
        return "mtp"
    if "eagle" in v:
        if "eagle3" in v or "eagle3" in draft.lower():
            return "eagle3"
        return "eagle" if draft else "mtp"
    return v


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except (ValueError, OverflowError):
        return None


def _vllm_config(line: int, fields: dict[str, str], eval_only: bool) -> SpecConfig:
    # vLLM's eagle/eagle3 always name a draft model; only "mtp"-style methods use the model's own head.
    method = normalise_method(fields.get("method", ""), fields.get("model", "") or "draft")
    return SpecConfig(line, "vllm", method, _int(fields.get("num_speculative_tokens")),
                      tuple(sorted(fields.items())), eval_only)


def _sglang_config(line: int, fields: dict[str, str], eval_only: bool) -> SpecConfig:
    algo = fields.get("speculative_algorithm") or fields.get("speculative_algo") or ""
    draft = fields.get("speculative_draft_model_path") or fields.get("speculative_model") or ""
    method = normalise_method(algo, draft)
    steps = _int(fields.get("speculative_num_steps"))
    if steps is None and _int(fields.get("speculative_num_draft_tokens")) is not None:
        steps = _int(fields["speculative_num_draft_tokens"]) - 1
    if steps is None:
        steps = _int(fields.get("num_speculative_tokens"))
    engine = "vllm" if "num_speculative_tokens" in fields and not algo else "sglang"
    return SpecConfig(line, engine, method, steps, tuple(sorted(fields.items())), eval_only)


def _trt_config(line: int, fields: dict[str, str], eval_only: bool) -> SpecConfig:
    method = normalise_method(fields.get("decoding_type", ""), fields.get("speculative_model_dir", "") or "draft")
    tokens = _int(fields.get("num_nextn_predict_layers")) or _int(fields.get("max_draft_len"))
    return SpecConfig(line, "trtllm", method, tokens, tuple(sorted(fields.items())), eval_only)


def _json_fields(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _JSON_FIELD.finditer(text)}


def script_settings(script: Script, path: str) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a bash script, line by line (variables
    the script fixes expanded; embedded diffs skipped: they are data)."""
    eval_only = eval_only_lines(script)
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    flags: dict[bool, tuple[int, dict[str, str]]] = {}
    trt: dict[bool, tuple[int, dict[str, str]]] = {}
    for ln in script.lines:
        if not ln.code or (ln.heredoc is not None and ln.heredoc.diff):
            continue
        text = ln.expanded.replace('\\"', '"')
        evals = ln.number in eval_only
        if _SPEC_JSON.search(text) or _SPEC_METHOD_JSON.search(text):
            configs.append(_vllm_config(ln.number, _json_fields(text), evals))
        for m in _SGLANG_FLAG.finditer(text):
            first, fields = flags.setdefault(evals, (ln.number, {}))
            fields.setdefault(m.group(1).replace("-", "_"), m.group(2))
        for m in _TRT_KEY.finditer(text):
            first, fields = trt.setdefault(evals, (ln.number, {}))
            fields.setdefault(m.group(1), m.group(2))
        for m in _SIM_ENV_RE.finditer(text):
            sims.append(Simulation(m.group(1), m.group(2), ln.number, path, evals))
        if "synthetic_acceptance_length" in text:
            value = _json_fields(text).get("synthetic_acceptance_length")
            if value is not None:
                sims.append(Simulation("synthetic_acceptance_length", value, ln.number, path, evals))
    for eval_only, (line, fields) in sorted(flags.items()):
        configs.append(_sglang_config(line, fields, eval_only))
    for eval_only, (line, fields) in sorted(trt.items()):
        if "decoding_type" in fields:
            configs.append(_trt_config(line, fields, eval_only))
    configs.sort(key=lambda c: c.line)
    return tuple(configs), tuple(sims)


def _norm_key(key) -> str:
    return str(key).strip().lower().lstrip("-").replace("-", "_")


def _walk(node, path: tuple = ()) -> Iterator[tuple[tuple, object, int, object]]:
    """(key path, value, line, parent) of every mapping entry and list item of a parsed YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            line = node.line_of(key) if isinstance(node, LineDict) else 0
            yield path + (key,), value, line, node
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            line = node.line_of(i) if isinstance(node, LineList) else 0
            yield path + (i,), value, line, node
            yield from _walk(value, path + (i,))


def recipe_settings(doc, path: str) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a parsed srt-slurm recipe."""
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    seen: set[int] = set()
    for keys, value, line, parent in _walk(doc):
        key = _norm_key(keys[-1]) if isinstance(keys[-1], str) else ""
        if key.upper() in ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE",
                           "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"):
            sims.append(Simulation(key.upper(), str(value), line, path))
        elif key == "speculative_config":
            fields = ({_norm_key(k): str(v) for k, v in value.items() if not isinstance(v, (dict, list))}
                      if isinstance(value, dict) else _json_fields(str(value)) if isinstance(value, str) else {})
            if "decoding_type" in fields:
                configs.append(_trt_config(line, fields, False))
            else:
                configs.append(_vllm_config(line, fields, False))
            if "synthetic_acceptance_length" in fields:
                sims.append(Simulation("synthetic_acceptance_length", fields["synthetic_acceptance_length"], line, path))
        elif key in ("speculative_algorithm", "speculative_algo", "speculative_num_steps") and id(parent) not in seen:
            seen.add(id(parent))
            fields = {_norm_key(k): str(v) for k, v in parent.items() if not isinstance(v, (dict, list))}
            first = min(parent.line_of(k) for k in parent if _norm_key(k).startswith("speculative"))
            configs.append(_sglang_config(first, {k: v for k, v in fields.items() if k.startswith("speculative")}, False))
    configs.sort(key=lambda c: c.line)
    return tuple(configs), tuple(sims)


def thinking_mode(text: str) -> str:
    """`thinking_off` when the config explicitly disables thinking, else `thinking_on` (agentic coding thinks)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return "thinking_off" if _THINKING_OFF.search(code.replace('\\"', '"')) else "thinking_on"


def script_engine(text: str, path: str) -> str:
    if re.search(r"\bvllm\s+serve\b|vllm\.entrypoints", text):
        return "vllm"
    if re.search(r"sglang\.launch_server|\bsglang\s+serve\b", text):
        return "sglang"
    if re.search(r"\btrtllm-serve\b|\btensorrt_llm\b", text):
        return "trtllm"
    parts = posixpath.basename(path).lower().split("_")
    for engine, names in (("vllm", ("vllm",)), ("sglang", ("sglang",)), ("trtllm", ("trt", "trtllm"))):
        if any(n in parts for n in names):
            return engine
    return ""


def recipe_engine(doc) -> str:
    if isinstance(doc, dict):
        backend = doc.get("backend")
        if isinstance(backend, dict) and isinstance(backend.get("type"), str):
            kind = backend["type"].lower()
            return "trtllm" if "trt" in kind else kind
        for key, engine in (("sglang_config", "sglang"), ("vllm_config", "vllm"), ("trtllm_config", "trtllm")):
            if isinstance(backend, dict) and key in backend:
                return engine
    return ""


# --------------------------------------------------------------------------
# The inventory of speculative-decoding configs the PR adds or changes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class MasterRef:
    """A master-config search point that runs a file."""

    key: str
    agentic: bool
    model_prefix: str
    simulations: tuple[Simulation, ...]  # SYNTHETIC_ACCEPTANCE_LENGTH of that point


@dataclass(frozen=True)
class SpecUnit:
    """A benchmark script or recipe that runs speculative decoding, with everything checks 9 and 11 need."""

    path: str
    kind: str  # script | recipe
    text: str
    changed: bool  # False when only a changed master entry runs it
    agentic: bool
    engine: str
    model_prefix: str
    thinking: str
    configs: tuple[SpecConfig, ...]
    simulations: tuple[Simulation, ...]  # including SYNTHETIC_ACCEPTANCE_LENGTH of master points that run it
    refs: tuple[MasterRef, ...] = ()
    error: str | None = None  # a recipe that does not parse: "line N: message"
    error_line: int = 0

    @property
    def anchor(self) -> int:
        """The line findings about the unit point at: its first throughput spec config."""
        live = [c.line for c in self.configs if not c.eval_only]
        return live[0] if live else (self.configs[0].line if self.configs else 1)


@dataclass(frozen=True)
class Unlocated:
    """A changed spec-decode master entry whose script or recipe is not in the snapshot."""

    path: str
    key: str
    line: int
    agentic: bool
    candidates: tuple[str, ...]


@dataclass(frozen=True)
class Inventory:
    units: tuple[SpecUnit, ...]
    unlocated: tuple[Unlocated, ...]
    wanted: tuple[str, ...]  # paths at head the checks need and the snapshot does not know


def _is_spec_value(value) -> bool:
    return value not in (None, False, "", "none", "None", "null", "false")


def entry_is_spec(key: str, entry: dict) -> bool:
    """A master entry runs speculative decoding: a point's `spec-decoding:` or its name says so."""
    if re.search(r"-mtp\b|eagle", key, re.I):
        return True
    return any(_is_spec_value(p.get("spec-decoding")) for p in search_points(entry))


def entry_is_agentic(key: str, entry: dict) -> bool:
    scenarios = entry.get("scenarios")
    return "agentic" in key or (isinstance(scenarios, dict) and any("agentic" in str(s) for s in scenarios))


def settings_strings(node) -> Iterator[tuple[str, int]]:
    """Every `NAME=value` string item of the lists under a search point, with its line."""
    for _keys, value, line, parent in _walk(node):
        if isinstance(value, str) and isinstance(parent, list) and "=" in value:
            yield value, line


def _point_simulations(point, master_path: str) -> tuple[Simulation, ...]:
    settings = dict((s.split("=", 1)[0].strip(), (s.split("=", 1)[1].strip(), line))
                    for s, line in settings_strings(point))
    enabled = settings.get("SYNTHETIC_ACCEPTANCE", ("true", 0))[0].lower() not in ("false", "0", "no")
    if "SYNTHETIC_ACCEPTANCE_LENGTH" in settings and enabled:
        raw, line = settings["SYNTHETIC_ACCEPTANCE_LENGTH"]
        return (Simulation("SYNTHETIC_ACCEPTANCE_LENGTH", raw, line, master_path),)
    return ()


def _config_files(point) -> tuple[str, ...]:
    out = []
    for s, _line in settings_strings(point):
        if s.startswith("CONFIG_FILE="):
            out.append(s.split("=", 1)[1].strip().split(":", 1)[0])
    return tuple(out)


def _recipe_path(policy: Policy, config_file: str) -> str:
    rel = config_file[len("recipes/"):] if config_file.startswith("recipes/") else config_file
    return f"{policy.recipe_root.rstrip('/')}/{rel}"


def _script_candidates(key: str, entry: dict, scenario: str, spec_value) -> tuple[str, ...]:
    prefix = str(entry.get("model-prefix") or key.split("-", 1)[0])
    precision = str(entry.get("precision") or "")
    runner = str(entry.get("runner") or "").split(":", 1)[-1]
    sku = runner.split("-", 1)[0]
    framework = str(entry.get("framework") or "")
    subdir = {"fixed-seq-len": "fixed_seq_len", "agentic-coding": "agentic"}.get(scenario, scenario.replace("-", "_"))
    suffix = "_mtp" if str(spec_value).lower() == "mtp" else ""
    legacy = {"trt": "_trt", "trtllm": "_trt", "atom": "_atom"}.get(framework, "")
    base = f"benchmarks/single_node/{subdir}/{prefix}_{precision}_{sku}"
    return tuple(dict.fromkeys((f"{base}_{framework}{suffix}.sh", f"{base}{legacy}{suffix}.sh")))


def _refs_to(ctx: Context, recipe: str) -> tuple[MasterRef, ...]:
    """Master-config points at head that run `recipe` through CONFIG_FILE (only the blocks naming it are parsed)."""
    root = ctx.policy.recipe_root.rstrip("/") + "/"
    needle = "recipes/" + recipe[len(root):]
    refs: list[MasterRef] = []
    for mpath, cfg in sorted(ctx.head_configs.items()):
        if needle not in cfg.text:
            continue
        for key, block in cfg.blocks.items():
            if needle not in block.text:
                continue
            try:
                entry = cfg.entry(key)
            except YamlProblem:
                continue
            if entry is None:
                continue
            for point in search_points(entry):
                if needle in _config_files(point):
                    refs.append(MasterRef(key, entry_is_agentic(key, entry) or
                                          "agentic" in str(point.get("scenario")),
                                          str(entry.get("model-prefix") or ""), _point_simulations(point, mpath)))
    return tuple(refs)


def _unit(ctx: Context, path: str, text: str, changed: bool) -> SpecUnit | None:
    """The spec unit of a script or recipe; None when it runs no speculative decoding."""
    name_spec = bool(re.search(r"(?:^|[_-])mtp(?:$|[_.-])|eagle", posixpath.basename(path), re.I))
    if is_recipe(ctx.policy, path):
        refs = _refs_to(ctx, path)
        try:
            doc = ctx.yaml(text)
        except YamlProblem as exc:
            if not name_spec and not re.search(r"speculative|SIMULATE_ACC", text):
                return None
            return SpecUnit(path, "recipe", text, changed, is_agentic_path(path), "", "", "thinking_on", (), (),
                            refs, exc.message, exc.line)
        configs, sims = recipe_settings(doc, path)
        sims = sims + tuple(s for r in refs for s in r.simulations)
        if not (configs or sims or name_spec):
            return None
        prefix = next((r.model_prefix for r in refs if r.model_prefix), "")
        agentic = is_agentic_path(path) or any(r.agentic for r in refs)
        return SpecUnit(path, "recipe", text, changed, agentic, recipe_engine(doc), prefix, thinking_mode(text),
                        configs, sims, refs)
    script = ctx.script(text)
    configs, sims = script_settings(script, path)
    if not (configs or sims or name_spec):
        return None
    return SpecUnit(path, "script", text, changed, is_agentic_path(path), script_engine(text, path),
                    script_prefix(path), thinking_mode("\n".join(ln.code for ln in script.lines)), configs, sims)


def inventory(ctx: Context) -> Inventory:
    """Speculative-decoding scripts and recipes the PR changes, and those its changed master entries run
    (worked out once per Context: several checks ask)."""
    return ctx.once(_inventory)


def _inventory(ctx: Context) -> Inventory:
    snap = ctx.snap
    units: dict[str, SpecUnit] = {}
    for f in ctx.changed_files:
        if f.head_text is None or not (is_benchmark_script(f.path) or is_recipe(ctx.policy, f.path)):
            continue
        unit = _unit(ctx, f.path, f.head_text, True)
        if unit is not None:
            units[f.path] = unit
    unlocated: list[Unlocated] = []
    wanted: list[str] = []
    for change in ctx.changed_entries:
        entry = change.head
        if entry is None or change.error is not None or not entry_is_spec(change.key, entry):
            continue
        agentic = entry_is_agentic(change.key, entry)
        for candidates in _entry_targets(ctx.policy, change.key, entry):
            if any(c in units or snap.changed(c) is not None for c in candidates):
                continue
            found = None
            for c in candidates:
                if not snap.knows(c, "head"):
                    wanted.extend(x for x in candidates if not snap.knows(x, "head"))
                    break
                text = snap.read(c, "head")
                if text is not None:
                    found = (c, text)
                    break
            if found is not None:
                unit = _unit(ctx, found[0], found[1], False)
                if unit is not None:
                    if agentic and not unit.agentic:
                        unit = replace(unit, agentic=True)
                    units[found[0]] = unit
                continue
            unlocated.append(Unlocated(change.path, change.key, change.line, agentic, candidates))
    return Inventory(tuple(units[p] for p in sorted(units)), tuple(unlocated), tuple(dict.fromkeys(wanted)))


def _entry_targets(policy: Policy, key: str, entry: dict) -> list[tuple[str, ...]]:
    """For each spec-decode point group of an entry: the file(s) it runs, in the launcher's order of preference."""
    targets: list[tuple[str, ...]] = []
    for point in search_points(entry):
        if not _is_spec_value(point.get("spec-decoding")) and not re.search(r"-mtp\b|eagle", key, re.I):
            continue
        files = _config_files(point)
        if files:
            targets.extend((_recipe_path(policy, f),) for f in files)
        elif not entry.get("multinode"):
            targets.append(_script_candidates(key, entry, str(point.get("scenario")), point.get("spec-decoding")))
        else:
            targets.append(())
    return list(dict.fromkeys(targets))


def wants_files(ctx: Context, extra: tuple[str, ...] = ()) -> Wanted:
    """The scripts/recipes of changed spec-decode master entries (and `extra` paths) not yet in the snapshot."""
    paths = tuple(dict.fromkeys(inventory(ctx).wanted + extra))
    head = ctx.snap.pr.head_sha
    return Wanted(files=tuple((head, p) for p in paths if not ctx.snap.knows(p, "head")))
