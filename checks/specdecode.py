"""Shared facts for checks 9 and 11: which configs the PR adds or changes run speculative decoding, and how.

Checks 9 (chat template) and 11 (golden acceptance length) read the same
benchmark scripts, srt-slurm recipes and master-config entries. What a master
entry runs is `checks.runs` (the one resolver); scripts are read by
`checks.bash.Script`. This module adds what is about speculative decoding.

The configs (`inventory`), each a `SpecUnit`:
- a recipe the PR changes, or one a changed spec-decode point runs
  (`CONFIG_FILE`), read as srt-slurm reads it (`checks.srtslurm`: `base:`
  with override variants). Its speculative settings are the decode side's
  (and an aggregated worker's): in a disaggregated recipe the prefill
  worker's draft settings do not decide what is accepted.
- a per-config benchmark script the PR changes (`benchmarks/single_node/**`:
  one script per config, named after it).
- the script a changed spec-decode point runs (the launcher picks it), with
  everything it runs in turn (`runs.reach`): its `chain`. A shared script
  (a launcher helper such as `multi_node/amd_utils/server_sglang.sh`, or
  `benchmark_lib.sh`) is a config only through such a chain: speculative
  flags in it count only when a config the PR adds or changes reaches them.
  A point whose `spec-decoding` is `none` is not a spec-decode config, so
  flags behind a guard every changed config sets off are dormant.

A script is read for the variables its config gives it (`runs.point_env`;
`EVAL_ONLY=false`, as the benchmark run): vLLM / SGLang launches the
interpreter reaches give the speculative settings (`--speculative-config`
JSON candidates, the SGLang flags, the launch environment), so a value set
per branch, through `printf`, or behind a guard is read as the run reads
it. A script whose launch the interpreter does not recognise (TRT-LLM,
ATOM) is read line by line, outside `EVAL_ONLY` branches (`eval_only_lines`).

Recognised speculative-decoding knobs:
  vLLM     `--speculative-config` JSON (`method`, `num_speculative_tokens`,
           `draft_sample_method`, `rejection_sample_method`,
           `synthetic_acceptance_length`), legacy `--num-speculative-tokens`
  SGLang   `--speculative-algorithm|--speculative-algo`, `--speculative-num-steps`,
           `--speculative-num-draft-tokens`, `--speculative-draft-model-path`
           (srt-slurm recipes spell them as keys, e.g. `speculative-algo: EAGLE`)
  TRT-LLM  `speculative_config` / `decoding_type: MTP`, `num_nextn_predict_layers`,
           `max_draft_len`
  ATOM     `--method mtp`, `--num-speculative-tokens`
  env      SGLANG_SIMULATE_ACC_LEN (+ _METHOD, _TOKEN_MODE),
           TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS;
           ATOM `--spec-decode-acceptance-length <AL>`
  master   `spec-decoding:` other than none; additional-settings
           SYNTHETIC_ACCEPTANCE=true / SYNTHETIC_ACCEPTANCE_LENGTH=<AL>
  names    a script stem containing `_mtp` / `eagle`, a recipe or entry name
           containing `-mtp` / `eagle`

Agentic configs: under an `agentic/` or `agentx*` directory, a script or
recipe whose name says agentic / agentx, run by an agentic master point
(key or scenario), or replaying traces through `build_replay_cmd`.

Benchmark clients (`is_client`, what check 9 judges): `run_benchmark_serving`,
`build_replay_cmd` (the agentic aiperf replay), `benchmark_serving.py`,
`vllm bench serve`, `python -m sglang.bench_serving`, `aiperf profile`,
`genai-perf`, and a python program the script writes from a heredoc that
imports one of those clients (`cat > "$DRIVER" <<EOF ... from vllm.benchmarks.serve import ...`).
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from dataclasses import dataclass, field, replace
from typing import Iterator, Mapping

from . import runs as resolver
from .context import Context
from .masterconfig import EntryChange
from .policy import Policy
from .bash import UNKNOWN, Launch, Script, Token
from .srtslurm import variants
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


def is_config_script(path: str) -> bool:
    """A per-config benchmark script (`benchmarks/single_node/**`): one config, named after it. Other
    scripts are shared by configs and count only through the configs that run them."""
    return path.startswith("benchmarks/single_node/") and is_benchmark_script(path)


def is_recipe(policy: Policy, path: str) -> bool:
    return path.startswith(policy.recipe_root.rstrip("/") + "/") and path.endswith((".yaml", ".yml"))


_AGENTIC_WORD = re.compile(r"agentic|agentx", re.I)


def is_agentic_path(path: str) -> bool:
    """Under an `agentic/` or `agentx*` directory, or named agentic / agentx (`agentic_srt.sh`)."""
    *dirs, name = path.split("/")
    return any(d == "agentic" or d.lower().startswith("agentx") for d in dirs) or bool(_AGENTIC_WORD.search(name))


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
_ATOM_METHOD = re.compile(r"\batom\.entrypoints\b.*?--method(?:=|\s+)[\"']?(\w+)")
_ATOM_SIM = re.compile(r"--spec-decode-acceptance-length(?:=|\s+)[\"']?([^\"'\s\\]+)")
_PLACEHOLDER = re.compile(r"^%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]$")  # a printf conversion: the value is not here
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
    # | spec-decode-acceptance-length (ATOM)
    raw: str  # the value as written (variables resolved where possible)
    line: int
    path: str
    eval_only: bool = False

    @property
    def pins_length(self) -> bool:
        return self.knob in ("SGLANG_SIMULATE_ACC_LEN", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
                             "SYNTHETIC_ACCEPTANCE_LENGTH", "synthetic_acceptance_length",
                             "spec-decode-acceptance-length")

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
            fields = _json_fields(text)
            if not any(_PLACEHOLDER.match(v) for v in fields.values()):  # a printf format: read where it is used
                configs.append(_vllm_config(ln.number, fields, evals))
        for m in _SGLANG_FLAG.finditer(text):
            first, fields = flags.setdefault(evals, (ln.number, {}))
            fields.setdefault(m.group(1).replace("-", "_"), m.group(2))
        for m in _TRT_KEY.finditer(text):
            first, fields = trt.setdefault(evals, (ln.number, {}))
            fields.setdefault(m.group(1), m.group(2))
        m = _ATOM_METHOD.search(text)
        if m:
            first, fields = flags.setdefault(evals, (ln.number, {}))
            fields.setdefault("speculative_algorithm", m.group(1))
        for m in _SIM_ENV_RE.finditer(text):
            sims.append(Simulation(m.group(1), m.group(2), ln.number, path, evals))
        for m in _ATOM_SIM.finditer(text):
            sims.append(Simulation("spec-decode-acceptance-length", m.group(1), ln.number, path, evals))
        if "synthetic_acceptance_length" in text:
            value = _json_fields(text).get("synthetic_acceptance_length")
            if value is not None and not _PLACEHOLDER.match(value):
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


def _prefill_side(keys: tuple) -> bool:
    """A key under a disaggregated recipe's prefill worker (`prefill:`, `prefill_environment:`, ...)."""
    return any(isinstance(k, str) and _norm_key(k).startswith("prefill") for k in keys[:-1])


def recipe_settings(doc, path: str) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a parsed srt-slurm recipe: the decode side's
    (and an aggregated worker's), every variant of a `base:` file included."""
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    seen: set[int] = set()
    for keys, value, line, parent in _walk(doc):
        if _prefill_side(keys):
            continue
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
    if re.search(r"\batom\.entrypoints\b", text):
        return "atom"
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
# Speculative settings of the launches a trace reached
# --------------------------------------------------------------------------

_LAUNCH_SIMS = ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE",
                "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS")


def _json_or_fields(text: str) -> dict[str, str]:
    try:
        data = json.loads(text) if len(text) <= 100_000 else None
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read (hostile input)
        data = None
    if data is None:
        return _json_fields(text.replace('\\"', '"'))
    if not isinstance(data, dict):
        return {}
    return {str(k): ("true" if v is True else "false" if v is False else str(v))
            for k, v in data.items() if not isinstance(v, (dict, list))}


def launch_settings(launch: Launch, path: str) -> tuple[list[SpecConfig], list[Simulation]]:
    """The speculative configs and simulated-acceptance knobs of one server launch: one config per candidate
    of a `--speculative-config` JSON (a value set per branch stays paired with its draft length), the SGLang
    flags, and the knobs of the environment it runs with."""
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    argv = launch.argv
    flags: dict[str, Token] = {}
    for i, tok in enumerate(argv):
        name = tok.first or ""
        if not name.startswith("--"):
            continue
        flag, eq, inline = name[2:].partition("=")
        value = Token((inline,), tok.line) if eq else (argv[i + 1] if i + 1 < len(argv) else Token(("",), tok.line))
        key = flag.replace("-", "_")
        if key == "speculative_config":
            for candidate in value.values:
                fields = _json_or_fields(candidate) if candidate and UNKNOWN not in candidate else {}
                if candidate and UNKNOWN in candidate:  # partly known (a path under an unknown directory)
                    fields = {k: v.replace(UNKNOWN, "*") for k, v in _json_fields(candidate.replace('\\"', '"')).items()
                              if v.strip(UNKNOWN)}
                configs.append(_vllm_config(value.line, fields, False))
                if "synthetic_acceptance_length" in fields:
                    sims.append(Simulation("synthetic_acceptance_length", fields["synthetic_acceptance_length"],
                                           value.line, path))
        elif key.startswith("speculative_") or key == "num_speculative_tokens":
            flags.setdefault(key, value)
        elif key == "spec_decode_acceptance_length":
            sims += [Simulation("spec-decode-acceptance-length", v or "", value.line, path) for v in value.values]
    if flags:
        names = sorted(flags)
        line = min(t.line for t in flags.values())
        combos = [{}]
        for n in names:
            combos = [{**c, n: v} for c in combos for v in flags[n].values if v is not None][:8] or combos
        for combo in combos:
            configs.append(_sglang_config(line, {k: v for k, v in combo.items() if UNKNOWN not in v}, False))
    for name, tok in launch.env:
        if name in _LAUNCH_SIMS:
            sims += [Simulation(name, v if v is not None and UNKNOWN not in v else "<not fixed>", tok.line, path)
                     for v in tok.values]
    return configs, sims


# --------------------------------------------------------------------------
# Benchmark clients
# --------------------------------------------------------------------------

CLIENT_FUNCTIONS = frozenset({"run_benchmark_serving", "build_replay_cmd"})
_DIRECT_CLIENT = re.compile(r"benchmark_serving\.py|\bvllm\s+bench\s+serve\b|sglang\.bench_serving|"
                            r"vllm\.benchmarks\.serve|\baiperf\s+profile\b|\bgenai-perf\b")
_CLIENT_MODULE = re.compile(r"^\s*(?:from|import)\s+(?:vllm\.benchmarks\.serve|sglang\.bench_serving|"
                            r"benchmark_serving)\b", re.M)
_HEREDOC_TARGET = re.compile(r"(?:^|[;&|]\s*)(?:cat|tee)\b[^<>]*?>\s*([^\s<>|;&]+)[^\n]*<<")


def is_client_candidate(values: list[str | None]) -> bool:
    """The commands a trace records for check 9: client functions, python programs and client CLIs."""
    head = (values[0] or "").rsplit("/", 1)[-1] if values else ""
    return head in CLIENT_FUNCTIONS or bool(re.fullmatch(r"python[\d.]*|vllm|aiperf|genai-perf", head))


def client_programs(script: Script) -> frozenset[str]:
    """Basenames of the python programs a script writes from a heredoc that imports a benchmark client."""
    bodies: dict[int, list[str]] = {}
    for ln in script.lines:
        if ln.heredoc is not None:
            bodies.setdefault(ln.heredoc.start, []).append(ln.text)
    out = set()
    for ln in script.lines:
        if ln.number in bodies and _CLIENT_MODULE.search("\n".join(bodies[ln.number])):
            m = _HEREDOC_TARGET.search(ln.expanded)
            if m:
                out.add(posixpath.basename(m.group(1).strip("\"'")))
    return frozenset(out)


# --------------------------------------------------------------------------
# The inventory of speculative-decoding configs the PR adds or changes
# --------------------------------------------------------------------------

BASE_ENV: Mapping[str, str] = {"EVAL_ONLY": "false"}  # a benchmark run, when no config says more


@dataclass(frozen=True)
class MasterRef:
    """A master-config search point that runs a file."""

    key: str
    agentic: bool
    model_prefix: str
    simulations: tuple[Simulation, ...]  # SYNTHETIC_ACCEPTANCE_LENGTH of that point
    selector: str = ""  # the recipe variant it selects


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
    env: Mapping[str, str] = field(default_factory=lambda: dict(BASE_ENV))  # the variables it runs with
    chain: tuple[resolver.Reached, ...] = ()  # a script and what it runs (a recipe: its benchmark command's)
    declared: str = ""  # the master point declaring spec-decoding when the files show no speculative flag

    @property
    def anchor(self) -> int:
        """The line findings about the unit point at: its first throughput spec config."""
        live = [c.line for c in self.configs if not c.eval_only and c.line]
        return live[0] if live else (self.configs[0].line if self.configs and self.configs[0].line else 1)


@dataclass(frozen=True)
class Unlocated:
    """A changed spec-decode master point whose script or recipe cannot be found or read."""

    path: str
    key: str
    line: int
    agentic: bool
    candidates: tuple[str, ...]
    why: str = ""


@dataclass(frozen=True)
class Inventory:
    units: tuple[SpecUnit, ...]
    unlocated: tuple[Unlocated, ...]
    dormant: tuple[str, ...] = ()  # changed shared scripts with speculative flags no changed config reaches

    def na_reason(self, what: str) -> str:
        """Why a check finds nothing to judge, naming the dormant flags it leaves alone."""
        if not self.dormant:
            return what
        return (f"{what}: the speculative flags in {', '.join(self.dormant)} are dormant (no config the PR adds "
                "or changes turns them on)")


_SPEC_NAME = re.compile(r"-mtp\b|eagle", re.I)


def point_is_spec(key: str, point: resolver.Point) -> bool:
    """A point runs speculative decoding: its `spec-decoding:` is not none (an entry named `-mtp` whose point
    says none is not)."""
    if "spec-decoding" in point.values:
        return point.spec_decoding != "none"
    return bool(_SPEC_NAME.search(key))


def entry_is_agentic(key: str, entry: dict) -> bool:
    scenarios = entry.get("scenarios")
    return bool(_AGENTIC_WORD.search(key)) or (isinstance(scenarios, dict) and any("agentic" in str(s) for s in scenarios))


def _point_simulations(point: resolver.Point, master_path: str) -> tuple[Simulation, ...]:
    enabled = point.setting("SYNTHETIC_ACCEPTANCE")
    length = point.setting("SYNTHETIC_ACCEPTANCE_LENGTH")
    if length is not None and (enabled is None or enabled.value.lower() not in ("false", "0", "no")):
        return (Simulation("SYNTHETIC_ACCEPTANCE_LENGTH", length.value, length.line, master_path),)
    return ()


def _ref(run: resolver.PointRun, entry_agentic: bool, prefix: str, selector: str = "") -> MasterRef:
    return MasterRef(run.key, entry_agentic or "agentic" in run.point.scenario, prefix,
                     _point_simulations(run.point, run.config_path), selector)


def inventory(ctx: Context) -> Inventory:
    """Speculative-decoding configs the PR adds or changes (worked out once per Context: several checks ask)."""
    return ctx.once(_inventory)


class _Builder:
    """The units found so far, by path (a file reached twice is one unit), and the points not located."""

    def __init__(self) -> None:
        self.units: dict[str, SpecUnit] = {}
        self.unlocated: list[Unlocated] = []

    def add(self, unit: SpecUnit | None) -> None:
        if unit is None:
            return
        old = self.units.get(unit.path)
        if old is None:
            self.units[unit.path] = unit
            return
        # The same file reached again (another point): keep the first reading, widen what points say.
        self.units[unit.path] = replace(
            old, changed=old.changed or unit.changed, agentic=old.agentic or unit.agentic,
            refs=tuple(dict.fromkeys(old.refs + unit.refs)),
            simulations=tuple(dict.fromkeys(old.simulations + unit.simulations)),
            model_prefix=old.model_prefix or unit.model_prefix)


def _inventory(ctx: Context) -> Inventory:
    b = _Builder()
    for f in ctx.changed_files:
        if f.head_text is None:
            continue
        if is_recipe(ctx.policy, f.path):
            b.add(_recipe_unit(ctx, f.path, f.head_text, True, resolver.points_running(ctx, f.path)))
        elif is_config_script(f.path):
            b.add(_script_unit(ctx, f.path, f.head_text, True, dict(BASE_ENV)))
    scripts: dict[str, list] = {}
    for change, run in resolver.iter_changed_runs(ctx, lambda change, point: point_is_spec(change.key, point)):
        entry = change.head
        agentic = entry_is_agentic(change.key, entry) or "agentic" in run.point.scenario
        prefix = str(entry.get("model-prefix") or "")
        if not run.targets and run.eval_recipes:
            continue  # an eval-only point: no benchmark config
        if not run.targets:
            b.unlocated.append(Unlocated(change.path, change.key, run.point.line, agentic, run.looked_for,
                                         run.problem))
            continue
        for t in run.recipes:
            if t.path in b.units:  # a changed recipe, read already with every point that runs it
                continue
            text = ctx.snap.read(t.path, "head") if t.present else None
            if text is None:
                why = ("not known yet" if t.present is None else
                       "not in this repository (srt-slurm's own recipe, or a wrong path)")
                b.unlocated.append(Unlocated(change.path, change.key, t.line, agentic, (t.path,), why))
                continue
            # The point declares spec decoding: its recipe is a spec-decode config whatever flags it shows.
            b.add(_recipe_unit(ctx, t.path, text, ctx.snap.changed(t.path) is not None,
                               resolver.points_running(ctx, t.path), run.env, force=True))
        for t in run.scripts:
            text = ctx.snap.read(t.path, "head") if t.present else None
            if text is None:
                b.unlocated.append(Unlocated(change.path, change.key, run.point.line, agentic, (t.path,),
                                             "not known yet"))
                continue
            scripts.setdefault(t.path, []).append(_Use(text, run, agentic, prefix, change, dict(t.env or run.env)))
    for path, uses in scripts.items():
        b.add(_entry_script_unit(ctx, path, uses))
    reached = {x.path for u in b.units.values() for x in u.chain} | set(b.units)
    dormant = tuple(f.path for f in ctx.changed_files
                    if f.head_text is not None and is_benchmark_script(f.path) and not is_config_script(f.path)
                    and f.path not in reached and script_settings(ctx.script(f.head_text), f.path)[0])
    return Inventory(tuple(b.units[p] for p in sorted(b.units)), tuple(b.unlocated), dormant)


MAX_ENVS = 4  # distinct point variables a script is read with


@dataclass(frozen=True)
class _Use:
    """A changed spec-decode point running a script, with the variables it runs it with."""

    text: str
    run: resolver.PointRun
    agentic: bool
    prefix: str
    change: EntryChange
    env: Mapping[str, str]


def _entry_script_unit(ctx: Context, path: str, uses: list[_Use]) -> SpecUnit | None:
    """The unit of a script changed spec-decode points run: read with each distinct set of variables they
    give it (at most MAX_ENVS), its settings the union of what each run reaches."""
    first = uses[0]
    text, run, agentic, prefix, change = first.text, first.run, first.agentic, first.prefix, first.change
    refs = tuple(dict.fromkeys(_ref(u.run, u.agentic, u.prefix) for u in uses))
    declared = f"{change.key} (spec-decoding: {run.point.spec_decoding}, {change.path}:{run.point.line})"
    unit = None
    envs = list(dict.fromkeys(tuple(sorted(u.env.items())) for u in uses))[:MAX_ENVS]
    for env in envs:
        one = _script_unit(ctx, path, text, ctx.snap.changed(path) is not None, dict(env), refs, declared)
        if one is None:
            continue
        if unit is None:
            unit = one
        else:
            unit = replace(unit, configs=tuple(dict.fromkeys(unit.configs + one.configs)),
                           simulations=tuple(dict.fromkeys(unit.simulations + one.simulations)),
                           chain=unit.chain + tuple(x for x in one.chain if x not in unit.chain),
                           agentic=unit.agentic or one.agentic)
    if unit is not None:
        agentic = any(u.agentic for u in uses)
        unit = replace(unit, agentic=unit.agentic or agentic, model_prefix=prefix or unit.model_prefix)
    return unit


def _recipe_unit(ctx: Context, path: str, text: str, changed: bool, points: tuple[resolver.PointRun, ...],
                 env: Mapping[str, str] | None = None, force: bool = False) -> SpecUnit | None:
    """The spec unit of a recipe; None when it runs no speculative decoding."""
    name_spec = bool(re.search(r"(?:^|[_-])mtp(?:$|[_.-])|eagle", posixpath.basename(path), re.I))
    refs = []
    for run in points:
        entry_agentic = bool(_AGENTIC_WORD.search(run.key))
        for t in run.recipes:
            if t.path == path:
                refs.append(_ref(run, entry_agentic, "", t.selector))
    prefixes = [str(r.env.get("MODEL_PREFIX") or "") for r in points]
    declared = any(point_is_spec(r.key, r.point) for r in points)
    try:
        doc = ctx.yaml(text)
    except YamlProblem as exc:
        if not (name_spec or force or declared) and not re.search(r"speculative|SIMULATE_ACC", text):
            return None
        return SpecUnit(path, "recipe", text, changed, is_agentic_path(path), "", "", "thinking_on", (), (),
                        tuple(refs), exc.message, exc.line)
    configs, sims = recipe_settings(doc, path)
    sims = sims + tuple(s for r in refs for s in r.simulations)
    if not (configs or sims or name_spec or force):
        return None
    prefix = next((p for p in prefixes if p), "")
    run_env = dict(env or (points[0].env if points else BASE_ENV))
    chain = _benchmark_chain(ctx, path, doc, run_env)
    agentic = (is_agentic_path(path) or any(r.agentic for r in refs)
               or any(is_agentic_path(x.path) for x in chain[1:]) or _replays(chain))
    return SpecUnit(path, "recipe", text, changed, agentic, recipe_engine(doc), prefix, thinking_mode(text),
                    configs, sims, tuple(refs), env=run_env, chain=chain)


def benchmark_commands(doc) -> list[tuple[str, str, int, LineDict]]:
    """(variant, command, line, benchmark block) of every variant's custom `benchmark.command`."""
    out = []
    for name, config in variants(doc):
        bench = config.get("benchmark") if isinstance(config, dict) else None
        if isinstance(bench, dict) and isinstance(bench.get("command"), str):
            line = bench.line_of("command") if isinstance(bench, LineDict) else 1
            out.append((name, bench["command"], line, bench))
    return out


def _benchmark_chain(ctx: Context, path: str, doc, env: Mapping[str, str]) -> tuple[resolver.Reached, ...]:
    """What a recipe's custom benchmark command runs: the command (as a script at the recipe's path) and
    the repository scripts it runs, with the variables of its `benchmark.env`."""
    chain: list[resolver.Reached] = []
    seen: set[str] = set()
    for _name, command, line, bench in benchmark_commands(doc):
        if command in seen:
            continue
        seen.add(command)
        bench_env = bench.get("env")
        command_env = {**env, **{str(k): str(v) for k, v in bench_env.items() if not isinstance(v, (dict, list))}} \
            if isinstance(bench_env, dict) else dict(env)
        text = "\n" * (line - 1) + command  # findings on the command point at its line
        chain += [r for r in resolver.reach(ctx, path, command_env, is_client_candidate, text=text)
                  if r not in chain]
    return tuple(chain)


def _replays(chain: tuple[resolver.Reached, ...]) -> bool:
    """Some script of the chain replays agentic traces (`build_replay_cmd`)."""
    return any(x.trace is not None and any(c.words and "build_replay_cmd" in c.words[0] for c in x.trace.calls)
               for x in chain)


def _script_unit(ctx: Context, path: str, text: str, changed: bool, env: Mapping[str, str],
                 refs: tuple[MasterRef, ...] = (), declared: str = "") -> SpecUnit | None:
    """The spec unit of a benchmark script and what it runs; None when it runs no speculative decoding (and
    no master point declares it)."""
    name_spec = bool(re.search(r"(?:^|[_-])mtp(?:$|[_.-])|eagle", posixpath.basename(path), re.I))
    chain = resolver.reach(ctx, path, env, is_client_candidate)
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    engines: list[str] = []
    for x in chain:
        if x.trace is None:
            continue
        for launch in x.trace.launches:
            c, s = launch_settings(launch, x.path)
            configs += c
            sims += s
            engines.append(launch.engine)
    script = ctx.script(text)
    if not engines:  # no vLLM / SGLang launch reached: read the script's lines (TRT-LLM, ATOM, ...)
        configs, sims = map(list, script_settings(script, path))
    sims += [s for r in refs for s in r.simulations]
    if not (configs or sims or name_spec or declared):
        return None
    agentic = is_agentic_path(path) or _replays(chain)
    code = "\n".join(ln.code for ln in script.lines)
    configs = list(dict.fromkeys(configs))
    return SpecUnit(path, "script", text, changed, agentic, engines[0] if engines else script_engine(text, path),
                    script_prefix(path), thinking_mode(code), tuple(sorted(configs, key=lambda c: c.line)),
                    tuple(dict.fromkeys(sims)), refs, env=dict(env), chain=chain,
                    declared="" if configs else declared)
