"""The speculative-decoding settings of a server launch, a script or an srt-slurm recipe, read through the one
table of engine knowledge (`checks.facts.engines`); `checks.facts.specdecode` finds the configs and `checks.facts.specmodel`
derives the model of each one checks 9 and 11 read.

A launch the interpreter reaches (`bash.Script.run_every_engine`: vLLM, SGLang,
TRT-LLM, ATOM) is read from its arguments and environment (`launch_settings`);
a script whose launch it does not reach is read line by line
(`script_settings`), outside the lines only an eval-only run reaches
(`eval_only_lines`, decided by the interpreter: one bash reader decides
branches); a recipe from its parsed document, decode side only
(`recipe_settings`). Which knob means what, in which spelling, is
`checks.facts.engines`: nothing here names a knob.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, replace
from typing import Any, Callable

from . import engines
from .bash import UNKNOWN, Launch, Script, Token
from .engines import normalise_method
from .yamlload import LineDict

# --------------------------------------------------------------------------
# Eval-only lines, as the interpreter runs the script
# --------------------------------------------------------------------------

EVAL_ENV = {"EVAL_ONLY": "true", "RUN_EVAL": "true"}
THROUGHPUT_ENV = {"EVAL_ONLY": "false", "RUN_EVAL": "false", "EVAL_CONFIG_FILE": ""}


def eval_only_lines(script: Script, env: dict[str, str] | None = None) -> frozenset[int]:
    """The lines a run reaches only as an eval-only run (EVAL_ONLY=true), not as the benchmark run: the
    interpreter runs the script both ways with the config's variables and keeps the difference, a heredoc's
    body going with the command that opens it. Eval-only runs measure accuracy, not throughput."""
    if not any(name in line for line in script.raw for name in (*EVAL_ENV, *THROUGHPUT_ENV)):
        return frozenset()  # (nothing the run reads tells the two apart)
    base = dict(env or {})
    throughput = script.run_every_engine({**base, **THROUGHPUT_ENV}, "", None, None).visited
    evals = script.run_every_engine({**base, **EVAL_ENV}, "", None, None).visited
    only = evals - throughput
    bodies = {ln.number for ln in script.lines if ln.heredoc is not None and ln.heredoc.start in only}
    return frozenset(only | bodies)


# --------------------------------------------------------------------------
# Speculative-decoding settings
# --------------------------------------------------------------------------

_JSON_FIELD = re.compile(r"\"(\w+)\"\s*:\s*(?:\"([^\"]*)\"|(\[[^\]\[]*\])|([^,}\s\"]+))")
NOT_FIXED = "<not fixed>"  # a value the script does not fix
_PLACEHOLDER = re.compile(r"^%[-+ #0]*+\d*+(?:\.\d++)?+[a-zA-Z]$")  # a printf conversion: the value is not here
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?:=|[ \t]+)[\"']?([^\"'\s\\]+)")
_YAML_KEY = re.compile(r"([a-z_]+)[ \t]*:[ \t]*[\"']?([\w./-]+)")


@dataclass(frozen=True)
class SpecConfig:
    """One speculative-decoding configuration: a `--speculative-config`, a set of flags or a recipe block."""

    line: int
    engine: str  # vllm | sglang | trtllm | atom
    method: str  # normalised draft method: mtp | eagle3 | eagle | dspark | ... ("" unknown)
    num_tokens: int | None  # draft length k
    fields: tuple[tuple[str, str], ...]  # the raw settings, sorted
    eval_only: bool = False
    path: str = ""  # where it is written ("" : the unit's own file)
    unread: str = ""  # what of it the reader could not read ("" : all of it)
    documented: tuple[tuple[str, str], ...] = ()  # (key, meaning) of targets only the golden README documents

    def get(self, key: str) -> str | None:
        return dict(self.fields).get(key)

    @property
    def draft_model(self) -> str:
        return next((v for k, v in self.fields if engines.meaning(self.engine, "json", k) == "draft_model"
                     or engines.meaning(self.engine, "flag", k.replace("_", "-")) == "draft_model"), "")

    @property
    def synthetic(self) -> bool:
        """The config's own sampler is switched to synthetic acceptance (vLLM's `rejection_sample_method`)."""
        return any(engines.meaning(self.engine, "json", k) == "switch" and v.lower() == "synthetic"
                   for k, v in self.fields)

    @property
    def targets(self) -> tuple[tuple[str, str], ...]:
        """(key, value) of the acceptance targets the config itself sets (vLLM's `synthetic_acceptance_*`, and
        those the golden README documents)."""
        documented = dict(self.documented)
        return tuple((k, v) for k, v in self.fields if k in documented or (
            (found := engines.knob("json", k, self.engine)) is not None and found.pins))

    @property
    def unknown_knobs(self) -> tuple[str, ...]:
        """Keys that look like acceptance knobs but are in no engine's table (nor documented)."""
        documented = dict(self.documented)
        return tuple(k for k, _v in self.fields if engines.unknown_acceptance_knob(k) and k not in documented)


@dataclass(frozen=True)
class Simulation:
    """A simulated/synthetic acceptance knob: the target it pins, in the engine's spelling."""

    knob: str  # as written: SGLANG_SIMULATE_ACC_LEN, synthetic_acceptance_rate, spec-decode-acceptance-length, ...
    raw: str  # the value as written (variables resolved where possible)
    line: int
    path: str
    eval_only: bool = False
    means: str = ""  # `engines.Knob.means` ("" for a knob the table does not hold)

    @property
    def pins_length(self) -> bool:
        return self.means in engines.TARGETS

    @property
    def length(self) -> float | None:
        """The acceptance length pinned, when it does not depend on the draft length."""
        return engines.to_length(self.means, self.raw, None)

    def length_at(self, k: int | None) -> float | None:
        """The acceptance length pinned for draft length `k` (a rate depends on it)."""
        return engines.to_length(self.means, self.raw, k)


def _sim(name: str, form: str, raw: str, line: int, path: str, engine: str = "", eval_only: bool = False
         ) -> Simulation | None:
    found = engines.knob(form, name, engine)
    if found is None:
        return Simulation(name, raw, line, path, eval_only) if engines.unknown_acceptance_knob(name) else None
    if found.means not in engines.TARGETS and found.means not in ("switch", "companion"):
        return None
    return Simulation(name, raw, line, path, eval_only, found.means)


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except (ValueError, OverflowError):
        return None


def _by_meaning(engine: str, form: str, fields: dict[str, str]) -> dict[str, str]:
    """The first value of each meaning `engine`'s knobs of `form` give among `fields` (a recipe spells flags
    as keys, with underscores or dashes)."""
    out: dict[str, str] = {}
    for key, value in fields.items():
        for name in (key, key.replace("_", "-")) if form == "flag" else (key,):
            found = engines.knob(form, name, engine)
            if found is not None and found.engine == engine:
                out.setdefault(found.means, value)
                break
    return out


def _config(engine: str, line: int, fields: dict[str, str], eval_only: bool = False, path: str = "") -> SpecConfig:
    """A config of `engine` from its settings (JSON keys for vLLM / TRT-LLM, flags for SGLang / ATOM)."""
    meant = {**_by_meaning(engine, "flag", fields), **_by_meaning(engine, "json", fields)}
    draft = meant.get("draft_model", "")
    if engine in ("vllm", "trtllm"):  # their EAGLE methods always name a draft model
        draft = draft or "draft"
    method = normalise_method(meant.get("method", ""), draft)
    k = _int(meant.get("draft_length"))
    if k is None and (tokens := _int(meant.get("draft_tokens"))) is not None:
        k = tokens - 1
    return SpecConfig(line, engine, method, k, tuple(sorted(fields.items())), eval_only, path)


def _json_fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _JSON_FIELD.finditer(text):
        value = next(g for g in m.groups()[1:] if g is not None) if any(g is not None for g in m.groups()[1:]) else ""
        out.setdefault(m.group(1), value)
    return out


def _json_or_fields(text: str) -> dict[str, str]:
    try:
        data = json.loads(text) if len(text) <= 100_000 else None
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read (hostile input)
        data = None
    if data is None:
        return _json_fields(text.replace('\\"', '"'))
    if not isinstance(data, dict):
        return {}
    return {str(k): (json.dumps(v) if isinstance(v, list) else "true" if v is True else "false" if v is False
                     else str(v)) for k, v in data.items() if not isinstance(v, dict)}


# --------------------------------------------------------------------------
# A launch the interpreter reached
# --------------------------------------------------------------------------


Where = "Callable[[int], tuple[str, int]]"  # a line of the run -> (file, line): sourced files have lines of their own


def launch_settings(launch: Launch, path: str, where: Callable[[int], tuple[str, int]] | None = None,
                    options: tuple[str, int, dict[str, str]] | None = None) -> tuple[list[SpecConfig], list[Simulation]]:
    """The speculative configs and simulated-acceptance knobs of one server launch: one config per candidate
    of a `--speculative-config` JSON (a value set per branch stays paired with its draft length), the flags
    (every combination of their candidates, up to 8), the knobs of the environment it runs with, and the
    settings of an options file it reads (`options`: (file, line, settings): TRT-LLM's `speculative_config`,
    vLLM's `speculative-config`, SGLang's flags; `options_settings` reads them)."""
    at = where or (lambda line: (path, line))
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    argv = launch.argv
    flags: dict[str, Token] = {}
    dotted: dict[str, Token] = {}
    engine = launch.engine
    for i, tok in enumerate(argv):
        name = tok.first or ""
        if not name.startswith("--"):
            continue
        flag, eq, inline = name[2:].partition("=")
        value: Token = Token((inline,), tok.line) if eq else (argv[i + 1] if i + 1 < len(argv) else Token(("",), tok.line))
        flag = flag.replace("_", "-") if engine in ("vllm", "sglang") else flag  # (argparse takes both spellings)
        if flag == "speculative-config" and engine == "vllm":
            file, line = at(value.line)
            for candidate in value.values:
                fields = _json_or_fields(candidate) if candidate and UNKNOWN not in candidate else {}
                if candidate and UNKNOWN in candidate:  # partly known: a value the script does not fix is not read
                    fields = {k: v.replace(UNKNOWN, "*") if v.strip(UNKNOWN) else NOT_FIXED
                              for k, v in _json_fields(candidate.replace('\\"', '"')).items()}
                unread = "" if fields else (f"its --speculative-config ({file}:{line}) is built where the reader "
                                            "cannot follow")
                configs.append(replace(_config("vllm", line, fields, path=file), unread=unread))
            continue
        if flag.startswith("speculative-config.") and engine == "vllm":  # `--speculative-config.method mtp`
            dotted.setdefault(flag.split(".", 1)[1].replace("-", "_"), value)
            continue
        found = engines.knob("flag", flag, engine)
        if found is not None and found.means == "options_file":
            continue
        if found is not None and found.pins:
            file, line = at(value.line)
            sims += [Simulation(flag, v or "", line, file, means=found.means) for v in value.values]
        elif found is not None or engines.unknown_acceptance_knob(flag):
            if found is None:
                file, line = at(value.line)
                sims += [Simulation(flag, v or "", line, file) for v in value.values]
            else:
                flags.setdefault(flag.replace("-", "_"), value)
    if dotted:
        file, line = at(min(t.line for t in dotted.values()))
        fields = {k: (t.values[0] if len(t.values) == 1 and t.values[0] and UNKNOWN not in t.values[0] else NOT_FIXED)
                  for k, t in dotted.items()}
        config = _config("vllm", line, fields, path=file)
        configs.append(config)
        sims += [Simulation(k, v, line, file, means=engines.meaning("vllm", "json", k)) for k, v in config.targets]
    if options is not None:
        file, line, fields = options
        if engine == "sglang":
            for key, setting in fields.items():
                flags.setdefault(key.replace("-", "_"), Token((setting,), line))
        else:
            config = _config(engine, line, fields, path=file)
            configs.append(config)
            sims += [Simulation(k, v, line, file, means=engines.meaning(engine, "json", k))
                     for k, v in config.targets]
    if engine == "trtllm":
        pass
    elif flags and any(engines.meaning(engine, "flag", k.replace("_", "-")) == "method" for k in flags) or (
            flags and engine != "atom"):
        names = sorted(flags)
        line = min(t.line for t in flags.values())
        file, line = at(line)
        combos: list[dict[str, str]] = [{}]
        for n in names:
            combos = [{**c, n: v} for c in combos for v in flags[n].values if v is not None][:8] or combos
        for combo in combos:
            configs.append(_config(engine, line, {k: v for k, v in combo.items() if UNKNOWN not in v}, path=file))
    for name, tok in launch.env:
        sim = _sim(name, "env", "", 0, "")
        if sim is None:
            continue
        file, line = at(tok.line)
        sims += [Simulation(name, v if v is not None and UNKNOWN not in v else NOT_FIXED, line, file,
                            means=sim.means) for v in tok.values]
    return configs, sims


def options_file(launch: Launch) -> Token | None:
    """The options file a launch reads (`--extra_llm_api_options FILE`, `--config FILE`), as written."""
    argv = launch.argv
    for i, tok in enumerate(argv):
        flag, eq, inline = (tok.first or "").removeprefix("--").partition("=")
        if (tok.first or "").startswith("--") and engines.meaning(launch.engine, "flag", flag) == "options_file":
            return Token((inline,), tok.line) if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def options_settings(engine: str, doc: object) -> tuple[int, dict[str, str]] | None:
    """(line, settings) of the speculative settings in an options file's parsed YAML: TRT-LLM's
    `speculative_config:` mapping, vLLM's `speculative-config` (mapping or JSON), SGLang's flags as keys."""
    if not isinstance(doc, dict):
        return None
    if engine == "sglang":
        fields = {str(k): str(v) for k, v in doc.items()
                  if isinstance(k, str) and not isinstance(v, (dict, list)) and (
                      engines.knob("flag", k.replace("_", "-"), "sglang") is not None)}
        lines = [doc.line_of(k) for k in fields] if isinstance(doc, LineDict) else [0]
        return (min(lines), fields) if fields else None
    for key in ("speculative_config", "speculative-config"):
        value = doc.get(key)
        if isinstance(value, dict):
            fields = {str(k): json.dumps(v) if isinstance(v, list) else str(v) for k, v in value.items()
                      if not isinstance(v, dict)}
        elif isinstance(value, str):
            fields = _json_or_fields(value)
        else:
            continue
        return (doc.line_of(key) if isinstance(doc, LineDict) else 0), fields
    return None


# --------------------------------------------------------------------------
# A script read line by line (what no launch shows)
# --------------------------------------------------------------------------


def trt_options(script: Script, skip: frozenset[int] = frozenset()) -> tuple[int, dict[str, str]] | None:
    """(first line, settings) of the `speculative_config:` a script writes to a TRT-LLM options file from a
    heredoc (outside the lines in `skip`), its keys as the table knows them."""
    fields: dict[str, str] = {}
    first = 0
    for ln in script.lines:
        if ln.heredoc is None or ln.heredoc.diff or ln.number in skip:
            continue
        m = _YAML_KEY.match(ln.expanded.strip())
        if m and (known := engines.knob("json", m.group(1), "trtllm")) is not None and known.engine == "trtllm":
            first = first or ln.number
            fields.setdefault(m.group(1), m.group(2))
    return (first, fields) if any(engines.meaning("trtllm", "json", k) == "method" for k in fields) else None


def script_settings(script: Script, path: str, env: dict[str, str] | None = None, evals: bool = True
                    ) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a bash script whose launch the interpreter does
    not reach, line by line (variables the script fixes expanded; embedded diffs skipped: they are data; with
    `evals`, the lines only an eval-only run reaches marked)."""
    eval_only = eval_only_lines(script, env) if evals else frozenset()
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    flags: dict[bool, tuple[int, str, dict[str, str]]] = {}
    for ln in script.lines:
        if not ln.code or (ln.heredoc is not None and ln.heredoc.diff):
            continue
        text = ln.expanded.replace('\\"', '"')
        evals = ln.number in eval_only
        if '"' in text and ":" in text:
            fields = _json_fields(text)
            vllm = [k for k in fields if (known := engines.knob("json", k, "vllm")) is not None
                    and known.engine == "vllm" and k not in ("model",)]
            if vllm and any(engines.meaning("vllm", "json", k) in ("draft_length", "switch", "length", "rate", "rates")
                            or k == "method" for k in vllm) and not any(_PLACEHOLDER.match(v) for v in fields.values()):
                config = _config("vllm", ln.number, fields, evals)
                if config.method or config.num_tokens is not None or config.targets:
                    configs.append(config)
                    sims += [Simulation(k, v, ln.number, path, evals, engines.meaning("vllm", "json", k))
                             for k, v in config.targets]
        if "--" in text:
            for m in _FLAG.finditer(text):
                flag, value = m.groups()
                found = engines.knob("flag", flag)
                if found is None:
                    continue
                engine = "atom" if found.engine == "atom" or "atom." in text else found.engine
                found = engines.knob("flag", flag, engine) or found
                if found.pins:
                    sims.append(Simulation(flag, value, ln.number, path, evals, found.means))
                else:
                    first, eng, fields = flags.setdefault(evals, (ln.number, engine, {}))
                    fields.setdefault(flag.replace("-", "_"), value)
        for name in engines.ENV:
            if name in text:
                setting = re.search(rf"(?<![A-Za-z0-9_]){name}[\"']?[ \t]*[=:][ \t]*[\"']?([^\"'\s;,}}]+)", text)
                sim = _sim(name, "env", setting.group(1), ln.number, path, eval_only=evals) if setting else None
                if sim is not None:
                    sims.append(sim)
    for evals, (line, engine, fields) in sorted(flags.items()):
        if any(engines.meaning(engine, "flag", k.replace("_", "-")) in ("method", "draft_length", "draft_tokens")
               for k in fields):
            configs.append(_config(engine, line, fields, evals))
    for evals in (False, True):
        options = trt_options(script, eval_only if not evals else frozenset(n for n in range(1, len(script.lines) + 1)
                                                                            if n not in eval_only))
        if options is not None:
            configs.append(_config("trtllm", options[0], options[1], evals))
    configs.sort(key=lambda c: c.line)
    return tuple(configs), tuple(sims)


def _norm_key(key: object) -> str:
    return str(key).strip().lower().lstrip("-").replace("-", "_")


def _walk(node: object, out: list[tuple[str, Any, int, Any]] | None = None) -> list[tuple[str, Any, int, Any]]:
    """(key as `_norm_key` gives it, value, line, parent) of every mapping entry of a parsed YAML document whose
    key may be a speculative setting's (`_may_be_spec`), in document order, but what is under a disaggregated
    recipe's prefill worker (`prefill:`, `prefill_environment:`, ...): its speculative settings are the
    prefill side's, not the decode side's that serve the tokens. (Recursive: `yamlload` builds no document
    nested deeper than 2 x MAX_DEPTH, far below Python's recursion limit.)"""
    out = [] if out is None else out
    if isinstance(node, dict):
        for key, value in node.items():
            named = isinstance(key, str)
            if named and _may_be_spec(key):
                out.append((_norm_key(key), value, node.line_of(key) if isinstance(node, LineDict) else 0, node))
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
    return "spec" in low or "simulat" in low or "accept" in low or "synthetic" in low


def recipe_settings(doc: object, path: str) -> tuple[tuple[SpecConfig, ...], tuple[Simulation, ...]]:
    """The speculative configs and simulated-acceptance knobs of a parsed srt-slurm recipe: the decode side's
    (and an aggregated worker's), every variant of a `base:` file included."""
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    seen: set[int] = set()
    engine = recipe_engine(doc)
    for key, value, line, parent in _walk(doc):
        upper = key.upper()
        if upper in engines.ENV or engines.unknown_acceptance_knob(upper) and not isinstance(value, (dict, list)):
            sim = _sim(upper, "env", str(value), line, path)
            if sim is not None:
                sims.append(sim)
        elif key == "speculative_config":
            fields = ({_norm_key(k): (json.dumps(v) if isinstance(v, list) else str(v)) for k, v in value.items()
                       if not isinstance(v, dict)}
                      if isinstance(value, dict) else _json_or_fields(value) if isinstance(value, str) else {})
            kind = "trtllm" if any(engines.meaning("trtllm", "json", k) == "method" for k in fields) else "vllm"
            config = _config(kind, line, fields)
            configs.append(config)
            sims += [Simulation(k, v, line, path, means=engines.meaning(kind, "json", k)) for k, v in config.targets]
            sims += [Simulation(k, v, line, path) for k, v in fields.items() if engines.unknown_acceptance_knob(k)]
        elif id(parent) not in seen and engines.meaning(engine or "sglang", "flag", key.replace("_", "-")) in (
                "method", "draft_length", "draft_tokens"):
            seen.add(id(parent))
            fields = {_norm_key(k): str(v) for k, v in parent.items() if not isinstance(v, (dict, list))}
            first = min(parent.line_of(k) for k in parent if _norm_key(k).startswith("speculative"))
            configs.append(_config(engine if engine in ("sglang", "atom") else "sglang", first,
                                   {k: v for k, v in fields.items() if k.startswith("speculative")}))
    configs.sort(key=lambda c: c.line)
    return tuple(configs), tuple(sims)


def thinking_mode(text: str) -> str:
    """`thinking_off` when the config explicitly disables thinking, else `thinking_on` (agentic coding thinks)."""
    return thinking(text)[0]


def thinking(text: str) -> tuple[str, str]:
    """(mode, why): `thinking_off` where the config explicitly disables thinking; `thinking_on` where it enables
    it; else `thinking_on`, assumed: AgentX replays agentic coding traces, which think."""
    if text.isascii() and "thinking" not in text.lower():
        return "thinking_on", "assumed thinking_on: the config does not set a thinking mode (agentic coding thinks)"
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).replace('\\"', '"')
    for mode, pattern in (("thinking_off", engines.THINKING_OFF), ("thinking_on", engines.THINKING_ON)):
        found = pattern.search(code)
        if found:
            start = found.start()
            while start > 0 and (code[start - 1].isalnum() or code[start - 1] == "_"):
                start -= 1  # the whole name: `enable_thinking`, `SGLANG_DEFAULT_THINKING`
            setting = code[start:found.end()].replace('"', "").replace("'", "")
            return mode, f"{mode}: the config sets `{setting}`"
    return "thinking_on", "assumed thinking_on: the config does not set a thinking mode (agentic coding thinks)"


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


def recipe_engine(doc: object) -> str:
    if isinstance(doc, dict):
        backend = doc.get("backend")
        if isinstance(backend, dict) and isinstance(backend.get("type"), str):
            kind = backend["type"].lower()
            return "trtllm" if "trt" in kind else kind
        for key, engine in (("sglang_config", "sglang"), ("vllm_config", "vllm"), ("trtllm_config", "trtllm")):
            if isinstance(backend, dict) and key in backend:
                return engine
    return ""


