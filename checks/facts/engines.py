"""What each serving engine calls its speculative-decoding settings: the one table of that knowledge.

Checks 9 and 11 and the recipe lint read speculative configs through
`checks.facts.specmodel`, which reads every setting through this table: a knob an
engine adds is one `Knob` line here, with a docstring saying what it means
and how its value relates to the acceptance length (AL) the golden curves
hold (`golden_al_distribution/README.md`).

Where a knob is written (`form`):
  json     a key of vLLM's `--speculative-config` JSON (also srt-slurm's
           `speculative_config:` mapping) or of TRT-LLM's options file
           (`--extra_llm_api_options` / `--config` YAML, `speculative_config:`)
  flag     a command-line flag of the server (`--speculative-algorithm`); a
           srt-slurm recipe spells it as a key of the worker's config
  env      a variable of the server's environment (exported, set on the
           command, a recipe's `*_environment:` block)
  setting  a master-config `additional-settings` item (the launcher exports
           it; `runners/inject_synthetic_acceptance.py` writes the engine's
           own knob from it)

What a knob means (`means`):
  method       the draft method (normalised by `normalise_method`)
  draft_model  the separate draft model (its name picks a curve variant)
  draft_length the draft length k the curves are keyed by
  draft_tokens k + 1 (SGLang's `--speculative-num-draft-tokens` with top-k 1)
  switch       turns simulated (synthetic) acceptance on
  companion    goes with a simulated target (its method, token mode)
  sampler      a sampling setting a curve variant may be measured with
  length       the target as an acceptance length, counting the target's own token: AL
  rate         the target as a mean acceptance rate over the k draft tokens: (AL - 1) / k
  rates        per-position unconditional acceptance rates, one per draft token: AL = 1 + sum
  accepted     accepted draft tokens only, excluding the bonus token: AL - 1
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

TARGETS = frozenset({"length", "rate", "rates", "accepted"})  # what pins the acceptance target


@dataclass(frozen=True)
class Knob:
    engine: str  # vllm | sglang | trtllm | atom | master
    form: str  # json | flag | env | setting
    name: str  # as written (flags without their dashes)
    means: str
    doc: str

    @property
    def pins(self) -> bool:
        """Whether the knob pins the acceptance target."""
        return self.means in TARGETS


KNOBS: tuple[Knob, ...] = (
    # vLLM: `--speculative-config '{...}'` (JSON); srt-slurm recipes spell it as a `speculative_config:` mapping
    Knob("vllm", "flag", "speculative-config", "config",
         "vLLM speculative settings as one JSON object (recipes: a `speculative-config:` mapping); TRT-LLM's "
         "options file holds the same key"),
    Knob("vllm", "json", "method", "method", "vLLM draft method: mtp, eagle, eagle3, dspark, ngram, draft_model"),
    Knob("vllm", "json", "model", "draft_model", "vLLM draft model (EAGLE/EAGLE3/DSpark heads name one)"),
    Knob("vllm", "json", "num_speculative_tokens", "draft_length", "vLLM draft length k"),
    Knob("vllm", "json", "draft_sample_method", "sampler", "vLLM draft sampler (a curve variant's setting)"),
    Knob("vllm", "json", "rejection_sample_method", "switch",
         "vLLM verification: `synthetic` replaces the target's check by synthetic acceptance"),
    Knob("vllm", "json", "synthetic_acceptance_length", "length",
         "vLLM synthetic target as a mean AL (vllm-project/vllm#40662)"),
    Knob("vllm", "json", "synthetic_acceptance_rate", "rate",
         "vLLM synthetic target as a mean acceptance rate in [0, 1]: (AL - 1) / k"),
    Knob("vllm", "json", "synthetic_acceptance_rates", "rates",
         "vLLM synthetic target per draft position (unconditional marginals): AL = 1 + their sum"),
    Knob("vllm", "flag", "num-speculative-tokens", "draft_length", "legacy vLLM flag for the draft length"),
    Knob("vllm", "flag", "speculative-model", "draft_model", "legacy vLLM flag for the draft model"),
    # SGLang: server flags (recipes: keys of the worker's `sglang_config`) and environment
    Knob("sglang", "flag", "speculative-algorithm", "method", "SGLang draft method: EAGLE, EAGLE3, NEXTN, MTP, ..."),
    Knob("sglang", "flag", "speculative-algo", "method", "srt-slurm's spelling of --speculative-algorithm"),
    Knob("sglang", "flag", "speculative-draft-model-path", "draft_model", "SGLang draft model"),
    Knob("sglang", "flag", "speculative-draft-model", "draft_model", "SGLang draft model (short spelling)"),
    Knob("sglang", "flag", "speculative-num-steps", "draft_length", "SGLang draft steps: the draft length k"),
    Knob("sglang", "flag", "speculative-num-draft-tokens", "draft_tokens",
         "SGLang draft tokens verified per step: k + 1 with --speculative-eagle-topk 1"),
    Knob("sglang", "flag", "speculative-eagle-topk", "sampler", "SGLang draft tree width"),
    Knob("sglang", "env", "SGLANG_SIMULATE_ACC_LEN", "length", "SGLang simulated acceptance length (AL)"),
    Knob("sglang", "env", "SGLANG_SIMULATE_ACC_METHOD", "companion", "SGLang simulation method (match-expected)"),
    Knob("sglang", "env", "SGLANG_SIMULATE_ACC_TOKEN_MODE", "companion", "SGLang simulated tokens (real-draft-token)"),
    # TRT-LLM: the options file's `speculative_config:` and environment
    Knob("trtllm", "json", "decoding_type", "method", "TRT-LLM draft method: MTP, Eagle, Eagle3, ..."),
    Knob("trtllm", "json", "num_nextn_predict_layers", "draft_length", "TRT-LLM MTP draft length k"),
    Knob("trtllm", "json", "max_draft_len", "draft_length", "TRT-LLM draft length k (Eagle, newer MTP)"),
    Knob("trtllm", "json", "speculative_model_dir", "draft_model", "TRT-LLM draft model"),
    Knob("trtllm", "json", "speculative_model", "draft_model", "TRT-LLM draft model (newer spelling)"),
    Knob("trtllm", "env", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "accepted",
         "TRT-LLM forced accepted draft tokens, the bonus token excluded: AL - 1 (README's off-by-one)"),
    # ATOM: server flags
    Knob("atom", "flag", "method", "method", "ATOM draft method (mtp)"),
    Knob("atom", "flag", "num-speculative-tokens", "draft_length", "ATOM draft length k"),
    Knob("atom", "flag", "spec-decode-acceptance-length", "length", "ATOM forced acceptance length (AL)"),
    Knob("atom", "flag", "spec-decode-acceptance-rate", "rate", "ATOM forced acceptance as a rate: (AL - 1) / k"),
    # options files: a YAML of settings the server reads (the script often writes it from a heredoc)
    Knob("trtllm", "flag", "extra_llm_api_options", "options_file",
         "TRT-LLM options YAML; its `speculative_config:` holds the draft settings"),
    Knob("trtllm", "flag", "extra-llm-api-options", "options_file", "TRT-LLM options YAML (dashed spelling)"),
    Knob("trtllm", "flag", "config", "options_file", "TRT-LLM options YAML (trtllm-serve --config)"),
    Knob("vllm", "flag", "config", "options_file", "vLLM YAML of server flags (`speculative-config:` among them)"),
    Knob("sglang", "flag", "config", "options_file", "SGLang YAML of server flags"),
    # master-config additional-settings, exported by the launcher
    Knob("master", "setting", "SYNTHETIC_ACCEPTANCE", "switch", "turns synthetic acceptance on (true)"),
    Knob("master", "setting", "SYNTHETIC_ACCEPTANCE_LENGTH", "length",
         "the synthetic target as an AL; unset, the injector reads the golden curve itself"),
    Knob("master", "setting", "THINKING_MODE", "thinking", "thinking_on / thinking_off: the curve's mode"),
)

_BY_KEY = {(k.engine, k.form, k.name): k for k in KNOBS}
_BY_NAME: dict[tuple[str, str], Knob] = {}
for _k in KNOBS:
    _BY_NAME.setdefault((_k.form, _k.name), _k)

JSON_KEYS = frozenset(k.name for k in KNOBS if k.form == "json")
FLAGS = frozenset(k.name for k in KNOBS if k.form == "flag")
ENV = frozenset(k.name for k in KNOBS if k.form in ("env", "setting"))
ENGINES = ("vllm", "sglang", "trtllm", "atom")


def knob(form: str, name: str, engine: str = "") -> Knob | None:
    """The knob `name` written as `form`: `engine`'s when given, else the first engine's spelling it."""
    if engine:
        return _BY_KEY.get((engine, form, name))
    return _BY_NAME.get((form, name))


def names(engine: str, form: str, *meanings: str) -> tuple[str, ...]:
    """The names `engine` spells its knobs of `form` that mean one of `meanings`, in table order."""
    return tuple(k.name for k in KNOBS if k.engine == engine and k.form == form and k.means in meanings)


def declaring_flags() -> tuple[str, ...]:
    """The server flags (recipe keys, as flags) whose presence says a worker decodes speculatively: a draft
    method or a speculative-config object, of the engines srt-slurm recipes run (ATOM's bare `--method` says
    nothing outside an ATOM launch)."""
    return tuple(dict.fromkeys(k.name for k in KNOBS if k.form == "flag" and k.means in ("method", "config")
                               and k.engine != "atom"))


def meaning(engine: str, form: str, name: str) -> str:
    found = knob(form, name, engine)
    return found.means if found is not None else ""


# A name that speaks of acceptance, simulation or synthetic drafts, in any spelling. A setting so named that
# the table does not hold is not evidence of real acceptance: what it pins cannot be read (undecided).
_ACCEPTANCE_WORDS = re.compile(r"accept|simulat|synthetic", re.I)
_NOT_ACCEPTANCE = frozenset({"trust_remote_code", "accept_license"})


def unknown_acceptance_knob(name: str) -> bool:
    """Whether `name` (a JSON key, flag, variable or setting) looks like an acceptance knob the table lacks."""
    bare = name.strip().lstrip("-")
    norm = bare.lower().replace("-", "_")
    if not _ACCEPTANCE_WORDS.search(norm) or norm in _NOT_ACCEPTANCE:
        return False
    return not any(k.name.lower().replace("-", "_") == norm for k in KNOBS)


# --------------------------------------------------------------------------
# Targets: between an engine's spelling and the acceptance length
# --------------------------------------------------------------------------


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def to_length(means: str, raw: str, k: int | None) -> float | None:
    """The acceptance length a target pins (`means` as in `Knob.means`); None when it cannot be read (a rate
    without a known draft length, a value that is no number)."""
    if means == "rates":
        try:
            values = json.loads(raw.replace("'", '"')) if raw.strip().startswith("[") else None
        except ValueError:
            values = None
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return None
        return 1 + float(sum(values))
    value = _number(raw)
    if value is None:
        return None
    if means == "length":
        return value
    if means == "accepted":
        return value + 1
    if means == "rate":
        return None if k is None else 1 + value * k
    return None


def spelled(means: str, length: float, k: int | None) -> str:
    """The value a target knob takes to pin `length` (for a fix), two decimals as the curves hold them."""
    if means == "accepted":
        return fmt(length - 1)
    if means == "rate":
        return fmt((length - 1) / k, 4) if k else "(AL - 1) / k"
    return fmt(length)


def fmt(value: float, places: int = 2) -> str:
    return f"{value:.{places}f}".rstrip("0").rstrip(".")


def fix(engine: str, length: float | None, k: int | None = None) -> str:
    """How `engine` pins a simulated acceptance length (None: not known)."""
    al = fmt(length) if length is not None else "<golden AL>"
    if engine == "sglang":
        return (f"export SGLANG_SIMULATE_ACC_LEN={al} (with SGLANG_SIMULATE_ACC_METHOD=match-expected and "
                "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token)")
    if engine == "vllm":
        return (f'add "rejection_sample_method": "synthetic", "synthetic_acceptance_length": {al} '
                "to --speculative-config")
    if engine == "trtllm":
        value = spelled("accepted", length, k) if length is not None else "<AL - 1>"
        return f"set TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={value}"
    if engine == "atom":
        return f"pass --spec-decode-acceptance-length {al}"
    return f"pin a simulated acceptance length of {al}"


# --------------------------------------------------------------------------
# Draft methods and curve names
# --------------------------------------------------------------------------


def normalise_method(value: str, draft: str = "") -> str:
    """The golden-curve name of a draft method (`draft`: the separate draft model, "" for none).

    SGLang's EAGLE / NEXTN without a separate draft model runs the model's own MTP head, which is what the
    `*_mtp.yaml` curves measure; a draft model named EAGLE3 runs EAGLE3 whatever the flag says.
    """
    v = value.lower().replace("-", "_")
    if "mtp" in v or v == "nextn":
        return "mtp"
    if "eagle" in v:
        if "eagle3" in v or "eagle3" in draft.lower():
            return "eagle3"
        return "eagle" if draft else "mtp"
    return v


def curve_stem(model_prefix: str, method: str) -> str:
    """`golden_al_distribution/<model-prefix>_<method>[_<variant>].yaml`: the stem every variant shares."""
    return f"{model_prefix}_{method}"


# Names that say a config decodes speculatively: a script stem with `_mtp` / `-mtp`, a recipe or entry name with
# `-mtp`, any with `eagle` (the master entries' `-mtp`; `mtp` as a word of a file name).
_SPEC_FILE_NAME = re.compile(r"(?:^|[_-])mtp(?:$|[_.-])|eagle", re.I)
_SPEC_ENTRY_NAME = re.compile(r"-mtp\b|eagle", re.I)


def spec_file_name(basename: str) -> bool:
    return _SPEC_FILE_NAME.search(basename) is not None


def spec_entry_name(key: str) -> bool:
    return _SPEC_ENTRY_NAME.search(key) is not None


# Where the config disables thinking (`enable_thinking: false`, `"thinking_mode": "disabled"`,
# `default_thinking=off`): a match from the word on.
THINKING_OFF = re.compile(r"thinking(?:_mode)?[\"']?\s*[:=]\s*[\"']?(?:false|0|off|disabled|no)\b", re.I)
THINKING_ON = re.compile(r"thinking(?:_mode)?[\"']?\s*[:=]\s*[\"']?(?:true|1|on|enabled|yes)\b", re.I)


# --------------------------------------------------------------------------
# Knobs the table lacks that golden_al_distribution/README.md documents
# --------------------------------------------------------------------------

_RATE_WORDS = re.compile(r"\brate\b|\(\s*(?:AL|length)\s*[-−]\s*1\s*\)\s*/", re.I)
_ACCEPTED_WORDS = re.compile(r"minus\s+1|[-−]\s*1\b|off-by-one|excludes? the bonus|accepted \*?draft\*? tokens only", re.I)
_LENGTH_WORDS = re.compile(r"acceptance[ _-]length|\bAL\b", re.I)


def documented_meaning(readme: str, name: str) -> str:
    """What the base branch's golden-curve README says a knob the table lacks pins: "rate", "accepted" or
    "length" (read from the paragraph naming it, as the README documents a new spelling when one appears);
    "" when it does not name it, or says nothing this can read."""
    if not name or name not in readme:
        return ""
    for paragraph in readme.split("\n\n"):
        if name not in paragraph:
            continue
        if _RATE_WORDS.search(paragraph):
            return "rate"
        if _ACCEPTED_WORDS.search(paragraph):
            return "accepted"
        if _LENGTH_WORDS.search(paragraph):
            return "length"
    return ""
