"""The speculative-decoding settings of a script, a server launch or an srt-slurm recipe (`checks.specdecode`
finds the configs; this module reads what each one sets).

A script is read line by line (`script_settings`), outside `EVAL_ONLY`
branches (`eval_only_lines`): eval-only runs measure accuracy, not
throughput. A launch the interpreter recognises (vLLM / SGLang) is read from
its arguments and environment (`launch_settings`); a recipe from its parsed
document, decode side only (`recipe_settings`).

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
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from dataclasses import dataclass

from .bash import UNKNOWN, Launch, Script, Token
from .yamlload import LineDict, LineList

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


_KEYWORD = re.compile(r"(if|elif|else|fi)\b")  # what a command opens or closes (`_Branches.track`)
_ENDS_IF = re.compile(r"\bfi\s*;?\s*$")


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
        found = _KEYWORD.match(s)
        keyword = found.group(1) if found else ""
        if keyword == "if":
            if not _ENDS_IF.search(s):
                self._push(s, False)
        elif keyword == "elif" and self.frames:
            self._pop()
            self._push(s, False)
        elif keyword == "else" and self.frames:
            self._push(self._pop(), True)
        elif keyword == "fi" and self.frames:
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
# (`_TRT_KEY`, `_ATOM_METHOD` and `_SIM_ENV_RE` start at `\b`, so re tries them at every character: a line is
# searched only when it holds one of their words)
_TRT_WORDS = ("decoding_type", "num_nextn_predict_layers", "max_draft_len", "speculative_model_dir")
_TRT_KEY = re.compile(rf"\b({'|'.join(_TRT_WORDS)})\s*:\s*[\"']?([\w./-]+)")
# (`enable_thinking: false`, `default_thinking=off`: a match from the word on, which re finds fast; a pattern
# that may start before the word is tried at every character)
_THINKING_OFF = re.compile(r"thinking(?:_mode)?[\"']?\s*[:=]\s*[\"']?(?:false|0|off|disabled|no)\b", re.I)


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
        for m in _TRT_KEY.finditer(text) if any(word in text for word in _TRT_WORDS) else ():
            first, fields = trt.setdefault(evals, (ln.number, {}))
            fields.setdefault(m.group(1), m.group(2))
        m = _ATOM_METHOD.search(text) if "atom.entrypoints" in text else None
        if m:
            first, fields = flags.setdefault(evals, (ln.number, {}))
            fields.setdefault("speculative_algorithm", m.group(1))
        for m in _SIM_ENV_RE.finditer(text) if "SGLANG_SIMULATE_ACC_" in text or "TLLM_SPEC" in text else ():
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


def _walk(node, out: list | None = None) -> list[tuple[str, object, int, object]]:
    """(key as `_norm_key` gives it, value, line, parent) of every mapping entry of a parsed YAML document whose
    key may be a speculative setting's (`_may_be_spec`), in document order, but what is under a disaggregated
    recipe's prefill worker (`prefill:`, `prefill_environment:`, ...): its speculative settings are the
    prefill side's, not the decode side's that serve the tokens. (Recursive: `yamlload` builds no document
    nested deeper than 2 x MAX_DEPTH, far below Python's recursion limit.)"""
    out = [] if out is None else out
    if isinstance(node, dict):
        lined = isinstance(node, LineDict)
        for key, value in node.items():
            named = isinstance(key, str)
            if named and _may_be_spec(key):
                out.append((_norm_key(key), value, node.line_of(key) if lined else 0, node))
            if isinstance(value, (dict, list)) and not (named and _norm_key(key).startswith("prefill")):
                _walk(value, out)
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, (dict, list)):
                _walk(value, out)
    return out


def _may_be_spec(key: str) -> bool:
    """Whether `key` may name what `recipe_settings` reads: every such name holds "spec" or "simulate" (an
    ASCII key is cased as ASCII; any other is read in full)."""
    if not key.isascii():
        return True
    low = key.lower()
    return "spec" in low or "simulate" in low


def recipe_settings(doc, path: str) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a parsed srt-slurm recipe: the decode side's
    (and an aggregated worker's), every variant of a `base:` file included."""
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    seen: set[int] = set()
    for key, value, line, parent in _walk(doc):
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
    if text.isascii() and "thinking" not in text.lower():
        return "thinking_on"  # the pattern needs the word (outside ASCII, re.I also reads "ı" as "i")
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
