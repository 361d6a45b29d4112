"""Server launch commands of benchmark scripts and upstream recipes, as normalized args.

Check 3 compares the MAJOR server args an InferenceX single-node script
serves with the args an upstream recipe documents. Both sides are parsed
here into one vocabulary:

- `checks.facts.bash.Script(text).launches(env)` (a small bash interpreter) finds
  the `vllm serve` / `python -m sglang.launch_server` commands a script
  reaches.
- `server_args(launch)` turns a launch into normalized `Arg`s: aliases
  folded (`--tp`, `--tp-size` -> tensor-parallel-size; `--model-path` ->
  model), `--flag=value` and `--flag value` alike, `--no-x` -> x=false,
  JSON configs split into sub-keys (speculative.method, ...), exported
  environment variables as `env:NAME`.
- `recipe(path, text, sku)` reads a vllm-project/recipes model YAML or a
  markdown page (SGLang cookbook) into `Source`s: the configurations the
  recipe documents for one SKU.

MAJOR (deployment-defining) keys are a closed list (`is_major`); every
other flag is an InferenceX tuning knob, reported for information only.
`canonical()` and `is_default()` hold the documented equivalence table.
Nothing here raises on hostile input: what cannot be parsed is unknown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import hardware
from .bash import UNKNOWN, Launch, Script, Token
from .yamlload import YamlProblem, load

# ---------------------------------------------------------------------------
# Hardware vocabulary
# ---------------------------------------------------------------------------

# SKU -> recipe hardware keys, most general first (vendor, generation, ISA).
_HARDWARE: dict[str, tuple[str, ...]] = {
    "h100": ("nvidia", "hopper"), "h200": ("nvidia", "hopper"), "h20": ("nvidia", "hopper"),
    "b200": ("nvidia", "blackwell"), "b300": ("nvidia", "blackwell"),
    "gb200": ("nvidia", "blackwell"), "gb300": ("nvidia", "blackwell"),
    "mi300x": ("amd", "cdna3", "gfx942"), "mi325x": ("amd", "cdna3", "gfx942"),
    "mi350x": ("amd", "cdna4", "gfx950"), "mi355x": ("amd", "cdna4", "gfx950"),
}
_SKU = re.compile(r"(?<![a-z0-9])(gb\d{3}|b\d{3}|h\d{2,3}|mi\d{3}x?)(?![0-9])")
_FAMILY_WORDS = {"nvidia": "nvidia", "cuda": "nvidia", "hopper": "hopper", "blackwell": "blackwell",
                 "amd": "amd", "rocm": "amd", "cdna3": "cdna3", "cdna4": "cdna4",
                 "gfx942": "gfx942", "gfx950": "gfx950"}


def hardware_keys(sku: str) -> tuple[str, ...]:
    """Recipe `hardware_overrides` keys that apply to `sku`, most general first, the SKU last."""
    return (*_HARDWARE.get(sku, ()), sku)


def heading_applies(headings: Sequence[str], sku: str) -> bool:
    """Whether a guide section under `headings` applies to `sku`.

    A section that names SKUs (e.g. "AMD MI300X/MI325X") applies only to
    those; one that names only vendors or generations ("AMD ROCm",
    "Blackwell") applies to their SKUs; one that names no hardware applies
    to all.
    """
    text = " ".join(headings).lower()
    skus = set(_SKU.findall(text))
    if skus:
        return sku in skus
    families = {_FAMILY_WORDS[w] for w in re.findall(r"[a-z0-9]+", text) if w in _FAMILY_WORDS}
    if families:
        return bool(families & set(hardware_keys(sku)))
    return True


# ---------------------------------------------------------------------------
# Server args: normalization and classification
# ---------------------------------------------------------------------------

# Flags written differently by the two engines (after `--` is stripped and `_` -> `-`).
_ALIASES = {
    "vllm": {"tp": "tensor-parallel-size", "dp": "data-parallel-size", "pp": "pipeline-parallel-size",
             "q": "quantization", "ep": "enable-expert-parallel", "dcp": "decode-context-parallel-size"},
    "sglang": {"tp": "tensor-parallel-size", "tp-size": "tensor-parallel-size",
               "dp": "data-parallel-size", "dp-size": "data-parallel-size",
               "ep": "expert-parallel-size", "ep-size": "expert-parallel-size",
               "pp": "pipeline-parallel-size", "pp-size": "pipeline-parallel-size",
               "model-path": "model", "speculative-algorithm": "speculative.method",
               "speculative-draft-model-path": "speculative.model", "speculative-draft": "speculative.model",
               "speculative-draft-attention-backend": "speculative.attention_backend"},
}
_BOOL_PREFIXES = ("enable-", "disable-", "no-")
_BOOL_FLAGS = {"trust-remote-code", "async-scheduling", "language-model-only", "enforce-eager", "headless",
               "skip-server-warmup", "data-parallel-hybrid-lb", "dp-aware"}
_ENGINE_BOOL_FLAGS = {"vllm": {"ep"}}  # vLLM's `-ep` is --enable-expert-parallel; SGLang's `--ep` takes a size

# MAJOR: deployment-defining args (model, parallelism, precision, kernels, served model).
_MAJOR = {
    "model", "revision", "model-impl", "hf-overrides", "json-model-override-args", "language-model-only",
    "tensor-parallel-size", "data-parallel-size", "pipeline-parallel-size", "expert-parallel-size",
    "decode-context-parallel-size", "context-parallel-size", "enable-expert-parallel", "enable-eplb",
    "enable-dp-attention", "enable-dp-lm-head", "enable-two-batch-overlap",
    "enable-flashinfer-allreduce-fusion", "enable-aiter-allreduce-fusion",
    "quantization", "kv-cache-dtype", "dtype",
    "speculative.method", "speculative.model", "speculative.attention_backend",
    "speculative.draft_sample_method", "speculative.quantization", "speculative.kv_cache_dtype",
}
# `*-backend` flags select kernels and are MAJOR, except these, which select plumbing.
_PLUMBING_BACKENDS = {"distributed-executor-backend", "kv-offloading-backend", "hicache-io-backend",
                      "hicache-storage-backend", "grammar-backend", "guided-decoding-backend",
                      "disaggregation-transfer-backend", "tokenizer-backend"}
_MAJOR_ENV = re.compile(r"VLLM_ATTENTION_BACKEND|VLLM_ROCM_USE_AITER(?:_[A-Z0-9_]+)?|VLLM_USE_FLASHINFER_[A-Z0-9_]+"
                        r"|VLLM_FLASHINFER_MOE_BACKEND|VLLM_USE_DEEP_GEMM|VLLM_ALL2ALL_BACKEND"
                        r"|SGLANG_USE_AITER|SGLANG_ATTENTION_BACKEND")
# Flags that are harness plumbing, never worth listing as a tuning difference.
_PLUMBING = {"host", "port", "served-model-name", "api-key", "uvicorn-log-level", "disable-log-requests",
             "disable-log-stats", "enable-log-requests", "enable-metrics", "watchdog-timeout",
             "tool-call-parser", "reasoning-parser", "enable-auto-tool-choice", "chat-template",
             "trust-remote-code", "tokenizer-mode", "download-dir", "distributed-executor-backend"}
_MULTINODE = {"nnodes", "node-rank", "headless", "data-parallel-address", "dist-init-addr",
              "data-parallel-start-rank"}

# The engine default of MAJOR keys: a value equal to it is what leaving the flag unset serves.
_DEFAULTS = {
    "tensor-parallel-size": "1", "data-parallel-size": "1", "pipeline-parallel-size": "1",
    "expert-parallel-size": "1", "decode-context-parallel-size": "1", "context-parallel-size": "1",
    "enable-expert-parallel": "false", "enable-eplb": "false", "enable-dp-attention": "false",
    "enable-dp-lm-head": "false", "enable-two-batch-overlap": "false", "language-model-only": "false",
    "enable-flashinfer-allreduce-fusion": "false", "enable-aiter-allreduce-fusion": "false",
    "quantization": "auto", "kv-cache-dtype": "auto", "dtype": "auto", "speculative.kv_cache_dtype": "auto",
    "moe-a2a-backend": "none",
    "env:VLLM_ROCM_USE_AITER": "0", "env:VLLM_ROCM_USE_AITER_MOE": "1", "env:VLLM_ROCM_USE_AITER_MLA": "1",
    "env:VLLM_ROCM_USE_AITER_MHA": "1", "env:VLLM_ROCM_USE_AITER_LINEAR": "1",
    "env:VLLM_ROCM_USE_AITER_RMSNORM": "1",
}
# `--quantization` values the engines read from the checkpoint's own quantization_config: passing one
# for a checkpoint of that precision serves what leaving the flag unset (auto-detection) serves.
_CHECKPOINT_QUANT = {
    "fp4": {"mxfp4", "nvfp4", "modelopt_fp4", "fp4", "quark", "compressed-tensors", "modelopt", "w4a4_mxfp4"},
    "fp8": {"fp8", "mxfp8", "modelopt", "modelopt_fp8", "fbgemm_fp8", "ptpc_fp8", "quark", "compressed-tensors"},
    "int4": {"awq", "awq_marlin", "gptq", "gptq_marlin", "compressed-tensors", "quark"},
}
_EQUIVALENT = {
    ("kv-cache-dtype", "fp8_e4m3"): "fp8",  # vLLM's and SGLang's `fp8` KV cache is e4m3
    ("speculative.kv_cache_dtype", "fp8_e4m3"): "fp8",
    ("speculative.method", "nextn"): "eagle",  # SGLang runs NEXTN as EAGLE
}


def is_major(key: str) -> bool:
    """Whether `key` is a deployment-defining (MAJOR) arg; every other arg is InferenceX tuning."""
    if key.startswith("env:"):
        return bool(_MAJOR_ENV.fullmatch(key[4:]))
    if key.startswith("attention-config."):
        return True
    if key.endswith("-backend") and not key.startswith("speculative."):
        return key not in _PLUMBING_BACKENDS
    return key in _MAJOR


def is_plumbing(key: str) -> bool:
    """Harness plumbing (ports, parsers, logging) and the environment: not worth listing as tuning."""
    return key in _PLUMBING or key.startswith("env:")


def canonical(key: str, value: str, precision: str = "") -> str:
    """`value` of `key` in comparable form, with the documented equivalences applied.

    Case and surrounding space are ignored; numbers compare by value; JSON
    by content; a bare flag is "true". `precision` is the master config's
    (fp4, fp8, ...): a `--quantization` naming that checkpoint's own format
    is "auto".
    """
    v = value.strip()
    if key == "model":
        return v.rstrip("/").lower()
    low = v.lower()
    if low == "":
        return "true"
    if key.startswith("env:") and low in ("true", "yes", "on", "false", "no", "off"):
        return "1" if low in ("true", "yes", "on") else "0"
    if re.fullmatch(r"[+-]?\d+(?:\.\d+)?", low):
        number = float(low)
        return str(int(number)) if number.is_integer() else repr(number)
    if low[:1] in "{[":
        try:
            return json.dumps(json.loads(v), sort_keys=True, separators=(",", ":")).lower()
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
            return low
    if key == "speculative.method" and low.endswith("mtp"):
        return "mtp"  # deepseek_mtp, qwen3_next_mtp, ... are vLLM's names for its MTP method
    if key == "quantization" and low in _CHECKPOINT_QUANT.get(precision_family(precision), ()):
        return "auto"
    return _EQUIVALENT.get((key, low), low)


def precision_family(precision: str) -> str:
    """fp4 / fp8 / int4 for a master-config precision (or a model name) that mentions it."""
    p = precision.lower()
    return "fp4" if "fp4" in p else "fp8" if "fp8" in p else "int4" if "int4" in p else p


def is_default(key: str, canon: str) -> bool:
    """Whether canonical value `canon` is what the engine serves when `key` is left unset."""
    if key in _DEFAULTS:
        return canon == _DEFAULTS[key]
    return key.endswith("-backend") and canon == "auto"


@dataclass(frozen=True)
class Arg:
    """One server arg: a normalized key with its candidate values, where it was written."""

    key: str  # e.g. "tensor-parallel-size", "speculative.method", "env:VLLM_ROCM_USE_AITER"
    flag: str  # as written: "--tp", "--speculative-config", "VLLM_ROCM_USE_AITER"
    values: tuple[str | None, ...]  # candidates; None: not determined; "" for a bare flag
    line: int

    @property
    def major(self) -> bool:
        return is_major(self.key)

    @property
    def known(self) -> tuple[str, ...]:
        """The candidates the script fully determines."""
        return tuple(v for v in self.values if v is not None and UNKNOWN not in v)

    @property
    def label(self) -> str:
        """How messages name the arg: `--kv-cache-dtype`, `--speculative-config method`, `VAR`."""
        sub = self.key.split(".", 1)[1] if "." in self.key and not self.key.startswith("env:") else ""
        return f"{self.flag} {sub}" if sub and not self.flag.endswith(sub) else self.flag

    def show(self, value: str | None) -> str:
        """The arg with one value, as a reader would write it: `--tp 4`, `VAR=1`, `--speculative-config method=mtp`."""
        text = "?" if value is None else value
        if self.key.startswith("env:"):
            return f"{self.flag}={text}"
        if value == "":
            return self.label
        return f"{self.label}{'=' if ' ' in self.label else ' '}{text}"


@dataclass(frozen=True)
class ServerArgs:
    """A launch command, normalized."""

    engine: str
    model: Token | None  # vLLM's positional model / --model, SGLang's --model-path
    args: tuple[Arg, ...]  # every other flag, then the environment (`env:` keys)
    line: int
    multinode: bool  # --nnodes > 1, --headless, a data-parallel address, ...


def _is_flag(text: str) -> bool:
    return len(text) > 1 and text.startswith("-") and not re.fullmatch(r"-[\d.]+", text)


def _takes_value(engine: str, name: str) -> bool:
    return not (name.startswith(_BOOL_PREFIXES) or name in _BOOL_FLAGS or name in _ENGINE_BOOL_FLAGS.get(engine, ()))


def split_argv(engine: str, argv: Sequence[Token]) -> tuple[list[Token], list[Arg]]:
    """(positional tokens, normalized flags) of a launch's args."""
    positional: list[Token] = []
    args: list[Arg] = []
    i = 0
    while i < len(argv):
        t = argv[i]
        text = t.first
        if text is None or not _is_flag(text):
            positional.append(t)
            i += 1
            continue
        flag, eq, _ = text.partition("=")
        name = _flag_name(flag)
        if eq:
            values = tuple(v.partition("=")[2] if v is not None and v.startswith(flag + "=") else None
                           for v in t.values)
        elif _takes_value(engine, name) and i + 1 < len(argv) and ((after := argv[i + 1].first) is None
                                                            or not _is_flag(after)):
            i += 1
            values = argv[i].values
        else:
            values = ("",)
        args.extend(_normalize(engine, flag, values, t.line))
        i += 1
    return positional, args


def _flag_name(flag: str) -> str:
    name = flag.lstrip("-")
    base, dot, sub = name.partition(".")
    return base.replace("_", "-").lower() + dot + sub.lower()


def _normalize(engine: str, flag: str, values: tuple[str | None, ...], line: int) -> list[Arg]:
    name = _flag_name(flag)
    base, _dot, sub = name.partition(".")
    if engine == "vllm" and base.startswith("no-") and values == ("",):
        base, values = base[3:], ("false",)
    base = _ALIASES.get(engine, {}).get(base, base)
    if sub:
        return [Arg(f"{base}.{sub}", flag, values, line)]
    if base in ("speculative-config", "attention-config"):
        prefix = "speculative" if base == "speculative-config" else base
        split = _json_keys(values)
        if split is not None:
            return [Arg(f"{prefix}.{k}", flag, vals, line) for k, vals in split.items()]
    return [Arg(base, flag, values, line)]


def _json_keys(values: tuple[str | None, ...]) -> dict[str, tuple[str | None, ...]] | None:
    """Sub-keys of a JSON-valued flag across its candidates; None when no candidate is readable.

    A sub-key whose value the script does not determine gets the candidate None.
    """
    out: dict[str, list[str | None]] = {}
    readable = False
    for value in values:
        obj = _json_object(value) if value is not None else None
        if obj is None:
            continue
        readable = True
        for k, v in obj.items():
            written = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
            text = None if UNKNOWN in written else written
            out.setdefault(str(k), [])
            if text not in out[str(k)]:
                out[str(k)].append(text)
    return {k: tuple(v) for k, v in out.items()} if readable else None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
        # A config with an unexpanded variable: keep its readable "key": value pairs.
        pairs = re.findall(r'"([\w.-]+)"\s*:\s*("(?:[^"\\]|\\.)*"|[^,{}\s]+)', text)
        return {k: v[1:-1] if v.startswith('"') else v for k, v in pairs} or None
    return obj if isinstance(obj, dict) else None


def server_args(launch: Launch) -> ServerArgs:
    positional, args = split_argv(launch.engine, launch.argv)
    model = next((Token(a.values, a.line) for a in args if a.key == "model"), None)
    if launch.engine == "vllm" and positional:
        model = positional[0]
    args = [a for a in args if a.key != "model"]
    env = [Arg(f"env:{name}", name, token.values, token.line) for name, token in launch.env]
    multinode = any(a.key in _MULTINODE and not (a.key == "nnodes" and a.known == ("1",)) for a in args)
    return ServerArgs(launch.engine, model, tuple(args + env), launch.line, multinode)


# ---------------------------------------------------------------------------
# Upstream recipes
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """One configuration a recipe documents for one SKU.

    `complete` sources are whole serve configurations: a MAJOR key they do
    not set is served at the engine default. Partial sources (a recipe
    feature) only add optional args, for any model of their recipe
    (`model` None).
    """

    engine: str
    model: str | None
    complete: bool
    args: Mapping[str, str] = field(default_factory=dict)  # key -> value as written (last one wins)


@dataclass(frozen=True)
class Recipe:
    path: str
    models: tuple[str, ...]  # every model the document serves, on any hardware
    sources: tuple[Source, ...]  # what it documents for the SKU it was read for
    hardware: tuple[str, ...] | None = None  # the SKUs the recipe declares (meta.hardware); None: it declares none
    error: str | None = None


_SHELL_LANGS = {"", "bash", "sh", "shell", "console", "zsh", "shellsession"}
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def recipe(path: str, text: str, sku: str) -> Recipe:
    """What the upstream document at `path` documents for `sku`; never raises."""
    lower = path.lower()
    if lower.endswith((".yaml", ".yml")):
        return _yaml_recipe(path, text, sku)
    if lower.endswith((".md", ".mdx", ".markdown")):
        models, sources = _guide(text, sku)
        return Recipe(path, models, sources)
    return Recipe(path, (), (), error=f"{path} is not a recipe (YAML or markdown)")


def _map(value: object) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _strs(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    return []


def _env(value: object) -> list[tuple[str, str]]:
    return [(str(k), "" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in _map(value).items()]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _yaml_recipe(path: str, text: str, sku: str) -> Recipe:
    try:
        data = load(text)
    except YamlProblem as exc:
        return Recipe(path, (), (), error=f"{path}:{exc.line} does not parse ({exc.message})")
    if not isinstance(data, dict):
        return Recipe(path, (), (), error=f"{path} is not a recipe mapping")
    model = _map(data.get("model"))
    base_id = str(model.get("model_id") or "")
    declared = _map(_map(data.get("meta")).get("hardware"))
    hardware = tuple(str(k).lower() for k, v in declared.items() if str(v).lower() != "unsupported") or None
    keys = hardware_keys(sku)
    strategies = _strategies(data, sku)
    variants = _map(data.get("variants")) or {"default": {}}
    models: list[str] = [base_id] if base_id else []
    sources: list[Source] = []
    for variant in variants.values():
        variant = _map(variant)
        model_id = str(variant.get("model_id") or base_id)
        if model_id and model_id not in models:
            models.append(model_id)
        supported = [s.lower() for s in _strs(variant.get("supported_hardware"))]
        if not model_id or (supported and sku not in supported):
            continue
        for strategy in strategies:
            sources.append(Source("vllm", model_id, True, _composed(data, model, variant, strategy, keys, sku)))
    for feature in _map(data.get("features")).values():
        feature = _map(feature)
        gated = _strs(feature.get("strategies"))
        if gated and not set(gated) & set(strategies):
            continue
        argv, env = _strs(feature.get("args")), _env(feature.get("env"))
        for key in keys:  # a hardware override replaces the feature's args
            override = _map(_map(feature.get("hardware_overrides")).get(key))
            if "args" in override:
                argv = _strs(override.get("args"))
        sources.append(Source("vllm", None, False, _as_args("vllm", argv, env)))
    guide_models, guide_sources = _guide(str(data.get("guide") or ""), sku)
    models.extend(m for m in guide_models if m not in models)
    if hardware is not None and sku not in hardware:  # the recipe declares its hardware, and not this SKU
        return Recipe(path, tuple(models), (), hardware)
    return Recipe(path, tuple(models), tuple(sources) + guide_sources, hardware)


def _strategies(data: Mapping[str, Any], sku: str) -> list[str]:
    """The single-node strategies the recipe offers on `sku` (one node of `hardware.node_gpus(sku)` GPUs)."""
    grants = _map(data.get("strategy_hardware"))
    listed = _strs(data.get("compatible_strategies"))
    names = [s for s in listed if s.startswith("single_node")]
    names += [s for s, m in grants.items() if str(s).startswith("single_node") and s not in names
              and str(_map(m).get(sku, "")).lower() == "supported"]
    if not listed and not names:
        names = ["single_node_tp"]
    minimum = _map(data.get("strategy_min_gpus"))
    gpus = hardware.node_gpus(sku)
    if _int(minimum.get(sku)) > gpus:
        return []
    return [s for s in names if _int(minimum.get(s)) <= gpus
            and str(_map(grants.get(s)).get(sku, "")).lower() != "unsupported"]


def _composed(data: Mapping[str, Any], model: Mapping[str, Any], variant: Mapping[str, Any], strategy: str,
              keys: tuple[str, ...], sku: str) -> dict[str, Any]:
    """The serve config recipes.vllm.ai composes: base, variant, strategy, then hardware overrides."""
    gpus = hardware.node_gpus(sku)
    tp = _int(variant.get("tp")) or _int(model.get("tp")) or gpus
    parallel = {"single_node_tp": ["--tensor-parallel-size", str(tp)],
                "single_node_tep": ["--tensor-parallel-size", str(tp), "--enable-expert-parallel"],
                "single_node_dep": ["--data-parallel-size", str(gpus), "--enable-expert-parallel"]}
    argv = _strs(model.get("base_args")) + _strs(variant.get("extra_args")) + parallel.get(strategy, [])
    env = _env(model.get("base_env")) + _env(variant.get("extra_env"))
    override = _map(_map(data.get("strategy_overrides")).get(strategy))
    layers = [override] + [_map(_map(override.get("hardware_overrides")).get(k)) for k in keys]
    layers += [_map(_map(data.get("hardware_overrides")).get(k)) for k in keys]
    layers += [_map(_map(variant.get("hardware_overrides")).get(k)) for k in keys]
    for layer in layers:
        argv += _strs(layer.get("extra_args"))
        env += _env(layer.get("extra_env")) + _env(layer.get("env"))
    return _as_args("vllm", argv, env)


def _as_args(engine: str, argv: list[str], env: list[tuple[str, str]]) -> dict[str, str]:
    _positional, args = split_argv(engine, [Token((a,), 0) for a in argv])
    out = {a.key: a.known[0] for a in args if a.known}
    out.update((f"env:{k}", v) for k, v in env)
    return out


@dataclass(frozen=True)
class _Block:
    headings: tuple[tuple[int, str], ...]  # (index of the heading in the document, its text), outermost first
    code: str


def _blocks(text: str) -> list[_Block]:
    """Fenced shell code blocks of a markdown document, with the headings they sit under."""
    blocks: list[_Block] = []
    stack: list[tuple[int, int, str]] = []  # (level, index, text)
    fence: str | None = None
    lang = ""
    code: list[str] = []
    for n, line in enumerate(text.splitlines()):
        if fence is None:
            m = _FENCE.match(line)
            if m:
                fence, lang, code = m.group(1), m.group(2).lower(), []
                continue
            h = _HEADING.match(line)
            if h:
                level = len(h.group(1))
                stack = [s for s in stack if s[0] < level] + [(level, n, h.group(2))]
        elif line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            if lang in _SHELL_LANGS:
                blocks.append(_Block(tuple((i, t) for _lvl, i, t in stack),
                                     "\n".join(re.sub(r"^\s*\$ ", "", c) for c in code)))
            fence = None
        else:
            code.append(line)
    return blocks


def _guide(text: str, sku: str) -> tuple[tuple[str, ...], tuple[Source, ...]]:
    """(models served anywhere in the guide, complete sources for `sku`) from its shell blocks.

    A block applies to `sku` by the headings it sits under
    (`heading_applies`). `export`s in a block apply to the serve commands
    of its section and of the sections nested in it.
    """
    blocks = [(b, Script(b.code)) for b in _blocks(text)]
    exports = [(b, script.exports()) for b, script in blocks]
    models: list[str] = []
    sources: list[Source] = []
    for block, script in blocks:
        for launch in script.launches():
            cmd = server_args(launch)
            model = cmd.model.known[0] if cmd.model is not None and cmd.model.known else ""
            if model and model not in models:
                models.append(model)
            if not model or cmd.multinode or not heading_applies([t for _i, t in block.headings], sku):
                continue
            args: dict[str, str] = {}
            for other, pairs in exports:
                if block.headings[:len(other.headings)] == other.headings:
                    args.update((f"env:{name}", t.known[0]) for name, t in pairs if t.known)
            args.update((a.key, a.known[0]) for a in cmd.args if a.known)
            sources.append(Source(launch.engine, model, True, args))
    return tuple(models), tuple(sources)
