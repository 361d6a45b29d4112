"""Check 11 — agentic spec-decode configs simulate acceptance at the golden acceptance length.

## What it enforces

Per the AgentX fairness guidelines (`golden_al_distribution/README.md`), an
agentic speculative-decoding config must simulate acceptance at the committed
golden AL for its model, thinking mode and draft length; a non-agentic config
must not simulate it (real-traffic acceptance applies there, check 9).

## Why

Agentic replay does not reproduce token-by-token real traffic, so measured
acceptance there is not representative.

## How it decides

Which configs are agentic (`checks.facts.specdecode`): scripts and recipes under an
`agentic/` or `agentx*` directory or named agentic / agentx, recipes whose
custom benchmark runs such a script or replays traces (`build_replay_cmd`),
and what a changed agentic master point (key or scenario `agentic`) runs.
Each config is read once, as its engine reads it (`checks.facts.specmodel`, with
the knob table of `checks.facts.engines`): the launch the interpreter reaches with
the config's variables (a master point's settings, what its launcher
exports; EVAL_ONLY=false), defaults, `case`/`if` arms, sourced libraries,
tables and arithmetic (`$(( ))`, printf, awk, bc, `python3 -c`) followed as
bash follows them, an options file the script writes read with the values
of that moment. A target set per draft length stays paired with the draft
length it goes with. Eval-only runs (an `EVAL_ONLY` arm, an `*-eval*` twin
recipe: real verification, for accuracy) are not throughput configs. In a
disaggregated recipe the decode side's settings are the config's.

Deterministic rule, for every throughput speculative config of an agentic
unit:

- (a) simulated: vLLM's `--speculative-config` has
  `"rejection_sample_method": "synthetic"` and a synthetic target;
  otherwise the unit pins SGLANG_SIMULATE_ACC_LEN, TLLM_SPEC_DECODE_FORCE_NUM_
  ACCEPTED_TOKENS, ATOM's `--spec-decode-acceptance-length|rate`, or (master
  additional-settings) SYNTHETIC_ACCEPTANCE=true, with
  SYNTHETIC_ACCEPTANCE_LENGTH or alone (the injector then writes the golden
  value itself). None of these: FAIL (real acceptance). A knob that speaks of
  acceptance but no engine's table holds: UNDECIDED (what it pins cannot be
  read), never "real acceptance".
- (b) the pinned target, in the engine's spelling, means the golden AL to two
  decimals: a length as it is; TRT-LLM's accepted draft tokens + 1; a mean
  rate r over k draft tokens 1 + r*k (vLLM `synthetic_acceptance_rate`, ATOM
  `--spec-decode-acceptance-rate`); per-position rates 1 + their sum. Targets
  a branch the variables do not decide sets per draft length pass when each
  is the golden AL of one candidate draft length and each candidate's golden
  AL is pinned.
  Golden curve: `golden_al_distribution/<model-prefix>_<method>[_<variant>].yaml`
  from the base branch (the PR cannot change it), where the method is the
  normalised draft method actually configured (SGLang EAGLE/NEXTN without a
  draft model is `mtp`).
  A variant whose header declares `# speculative-config: k=v | ...` applies
  when the config sets every declared key to that value (the
  `rejection_sample_method` it was measured with is replaced by the synthetic
  sampler, so it is not compared); the most specific applicable curve wins,
  ties go to a variant whose name suffix appears in the config (its draft
  model: `Inferact/MiniMax-M3-EAGLE3-GQA` runs `minimaxm3_eagle3_gqa.yaml`, not
  `minimaxm3_eagle3.yaml`), then to the plain curve. So a Kimi-K3 DSpark config with
  `"draft_sample_method": "probabilistic"` uses
  `kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml`.
  Thinking mode: `thinking_off` when the config explicitly disables thinking,
  `thinking_on` when it enables it, else `thinking_on` assumed (agentic coding
  thinks), which the reason says. Draft length: `num_speculative_tokens`, SGLang
  `--speculative-num-steps`, TRT-LLM `num_nextn_predict_layers`/`max_draft_len`.
  No committed curve: PASS only if a line of the sign-off's additional detail
  section states the source — it names the pinned value and links the source
  (a collection run, a PR); else FAIL.
- Simulated-acceptance knobs the PR adds to a NON-agentic spec-decode config
  (including master additional-settings SYNTHETIC_ACCEPTANCE* of a
  fixed-sequence spec-decode point) FAIL, unless a line of the sign-off's
  detail section names that config and the word "exception".

What cannot be read (a script or recipe not in the repository, a recipe that
does not parse, a pinned value that is no number, no speculative settings
found) is an UNDECIDED finding naming what and where, never a FAIL.

N/A when the PR adds or changes no agentic speculative-decoding config (and
adds no synthetic acceptance elsewhere).

## Passing example

    agentic vLLM dspark, num_speculative_tokens 2, draft_sample_method probabilistic,
    "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.51

    SYNTHETIC_ACCEPT_LEN=2.78; SPEC=$(printf '{"method":"eagle3","model":"%s",...,
    "synthetic_acceptance_length":%.2f}' "$DRAFT" "$SYNTHETIC_ACCEPT_LEN") with an EAGLE3-GQA draft
    (minimaxm3_eagle3_gqa.yaml thinking_on 3 -> 2.78)

## Failing example

    agentic SGLang --speculative-algorithm EAGLE --speculative-num-steps 5, no SGLANG_SIMULATE_ACC_LEN
    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=3.61 where the golden AL is 3.61 (must be 2.61)
"""

from __future__ import annotations

import posixpath
import re

from checks.context import Context
from checks.facts import engines
from checks.facts.runs import head_points
from checks.facts.signoff import links
from checks.facts.spec_settings import Simulation, SpecConfig
from checks.facts.specdecode import SpecUnit, entry_is_agentic, point_is_spec
from checks.facts.specmodel import SpecRead, model
from checks.facts.yamlload import YamlProblem, load
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 11
NAME = "agentic golden AL"
RULE_UNSIMULATED = "golden-al-not-simulated"
RULE_MISMATCH = "golden-al-mismatch"
RULE_NO_CURVE = "golden-al-no-curve"
RULE_NON_AGENTIC = "synthetic-acceptance-non-agentic"
TOLERANCE = 0.005
_SIMULATING = engines.TARGETS | {"switch"}  # what a master setting that simulates acceptance means

_REQUIREMENT = re.compile(r"^#\s*speculative-config:\s*(.*)$", re.MULTILINE)


_fmt = engines.fmt


class _Golden:
    """The golden AL lookup for one config: a value, or why there is none."""

    def __init__(self, ctx: Context, read: SpecRead):
        unit, config = read.unit, read.config
        self.value: float | None = None
        self.source = ""
        self.problem = ""
        self.no_curve = False
        directory = ctx.policy.golden_al_dir.rstrip("/") + "/"
        stem = engines.curve_stem(unit.model_prefix, config.method)
        if not unit.model_prefix or not config.method:
            missing = "the model (no master entry runs it, and its script or directory does not say)" \
                if not unit.model_prefix else "the draft method"
            self.problem = f"cannot read {missing}, so which golden curve applies"
            return
        curves = list(ctx.need.golden(stem))
        if not curves:
            self.no_curve = True
            self.problem = (f"no committed golden curve for {unit.model_prefix or 'an unknown model'} "
                            f"{config.method or 'unknown draft method'} in {directory}")
            return
        path, text = self._select(curves, stem, directory, config)
        self.source = f"{posixpath.basename(path)} {read.thinking}/{config.num_tokens}"
        self.assumed = f"; {read.thinking_why}" if read.thinking_why.startswith("assumed") else ""
        try:
            doc = load(text)
        except YamlProblem as exc:
            self.problem = f"golden curve {path} does not parse (line {exc.line}: {exc.message})"
            return
        models = [v for v in doc.values() if isinstance(v, dict)] if isinstance(doc, dict) else []
        if len(models) != 1:
            self.problem = f"golden curve {path} does not hold exactly one model"
            return
        mode = models[0].get(read.thinking)
        if not isinstance(mode, dict):
            self.problem = f"golden curve {path} has no {read.thinking} values ({read.thinking_why})"
            return
        if config.num_tokens is None:
            self.problem = "cannot read the config's draft length (num_speculative_tokens / MTP steps)"
            return
        value = mode.get(config.num_tokens, mode.get(str(config.num_tokens)))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.problem = f"golden curve {path} has no {read.thinking} value for {config.num_tokens} draft tokens"
            return
        self.value = float(value)

    @staticmethod
    def _select(curves: list[tuple[str, str]], stem: str, directory: str, config: SpecConfig) -> tuple[str, str]:
        settings = dict(config.fields)
        applicable: list[tuple[int, str, str, str]] = []
        for path, text in curves:
            m = _REQUIREMENT.search(text)
            required = {}
            if m:
                for pair in m.group(1).split("|"):
                    if "=" in pair:
                        key, value = (x.strip() for x in pair.split("=", 1))
                        if key != "rejection_sample_method":
                            required[key] = value
            if all(settings.get(k) == v for k, v in required.items()):
                suffix = path[len(directory) + len(stem):-len(".yaml")].strip("_")
                applicable.append((len(required), suffix, path, text))
        if not applicable:
            return curves[0]
        best = max(a[0] for a in applicable)
        tied = [a for a in applicable if a[0] == best]
        values = " ".join(settings.values()).lower()
        named = [a for a in tied if a[1] and all(t in values for t in a[1].lower().split("_"))]
        plain = [a for a in tied if not a[1]]
        chosen = (named or plain or tied)[0]
        return chosen[2], chosen[3]


def _source_stated(ctx: Context, raw: str) -> bool:
    """A detail-section line names the pinned value and links its source."""
    if ctx.signoff is None:
        return False
    return any(raw in line and links(line) for line in ctx.signoff.detail.splitlines())


def _shown(pin: Simulation) -> str:
    return f"{pin.knob}={pin.raw}"


def _agentic_unit(ctx: Context, unit: SpecUnit, reads: tuple[SpecRead, ...]) -> tuple[list[Finding], list[str]]:
    """Findings and passes for one agentic unit: each throughput config's pinned target against its golden AL.
    A target set per draft length that the config's variables do not decide pairs up with the draft length
    it goes with: every pinned value must be the golden AL of one candidate, every candidate's golden AL
    pinned."""
    name = posixpath.basename(unit.path)
    if unit.error is not None:
        return [Finding(unit.path, unit.error_line, RULE_UNSIMULATED, Severity.ERROR,
                        f"cannot decide: recipe does not parse ({unit.error}); cannot verify simulated acceptance",
                        undecided=True)], []
    live = [r for r in reads if r.throughput]
    if not live:
        if reads:
            return [], [f"{name}: eval-only (not a throughput config)"]
        where = f"{unit.declared}; " if unit.declared else ""
        return [Finding(unit.path, unit.anchor, RULE_UNSIMULATED, Severity.ERROR,
                        f"cannot decide: agentic spec-decode config {where}cannot find its speculative settings "
                        f"(draft method and length) in {unit.path} or the scripts it runs "
                        f"({', '.join(x.path for x in unit.chain[1:]) or 'none'}) to check against the golden AL",
                        undecided=True)], []
    findings: list[Finding] = []
    passes: list[str] = []
    shared: dict[tuple[Simulation, ...], list[tuple[SpecRead, _Golden]]] = {}  # unit-level pins: judged over every config
    for read in live:
        golden = _Golden(ctx, read)
        if read.acceptance == "unknown":
            findings.append(Finding(read.path, read.line, RULE_UNSIMULATED, Severity.ERROR,
                                    f"cannot decide: agentic {read.method or 'speculative'} config {read.why}; "
                                    "cannot read the acceptance it pins", undecided=True))
            continue
        if read.acceptance == "real":
            hint = f" (golden {golden.source}{golden.assumed})" if golden.value is not None else ""
            findings.append(Finding(read.path, read.line, RULE_UNSIMULATED, Severity.ERROR,
                                    f"agentic {read.method or 'speculative'} config ({read.draft_length} draft "
                                    f"tokens) {read.why}; {engines.fix(read.engine, golden.value, read.draft_length)}"
                                    f"{hint}"))
            continue
        if not read.pins:  # the master point's injector reads the golden curve itself
            passes.append(f"{name}: SYNTHETIC_ACCEPTANCE=true ({read.auto}): the golden AL is injected from "
                          f"{golden.source or 'the golden curve'}")
            continue
        if read.pins[0].path == read.path and read.pins[0].line == read.line and read.config.targets:
            findings_, passes_ = _judge(ctx, [(read, golden)], list(read.pins), name)
            findings += findings_
            passes += passes_
        else:
            shared.setdefault(tuple(read.pins), []).append((read, golden))
    for pins, configs in shared.items():
        findings_, passes_ = _judge(ctx, configs, list(pins), name)
        findings += findings_
        passes += passes_
    return findings, passes


def _judge(ctx: Context, configs: list[tuple[SpecRead, _Golden]], pins: list[Simulation], name: str
           ) -> tuple[list[Finding], list[str]]:
    """Pinned targets against the golden ALs of the configs they apply to: each pin must be one config's golden
    AL (read at that config's draft length: a rate depends on it), and each config's golden AL pinned."""
    findings: list[Finding] = []
    passes: list[str] = []
    matched: set[int] = set()
    for pin in pins:
        shown = _shown(pin)
        lengths = [(pin.length_at(r.draft_length), r, g) for r, g in configs]
        if all(length is None for length, _r, _g in lengths):
            why = " (a rate needs the draft length, which is not known)" if pin.means == "rate" else ""
            findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR,
                                    f"cannot decide: {shown}: cannot read the pinned acceptance length{why}",
                                    undecided=True))
            continue
        hit = next(((length, r, g) for length, r, g in lengths
                    if length is not None and g.value is not None and abs(length - g.value) <= TOLERANCE), None)
        if hit is not None:
            length, r, g = hit
            matched.add(id(r))
            plus = {"accepted": " (+1 bonus token)", "rate": f" (AL {_fmt(length)})",
                    "rates": f" (AL {_fmt(length)})"}.get(pin.means, "")
            passes.append(f"{name}: {shown}{plus} = golden {g.source}{g.assumed}")
            continue
        length, r, g = next(((length, r, g) for length, r, g in lengths if length is not None))
        if g.no_curve:
            matched.add(id(r))
            if _source_stated(ctx, pin.raw):
                passes.append(f"{name}: {shown} (no committed curve; source stated in the sign-off)")
            else:
                findings.append(Finding(pin.path, pin.line, RULE_NO_CURVE, Severity.ERROR,
                                        f"{shown}: {g.problem}, and the sign-off's additional detail section does "
                                        "not state the AL source (a line naming the value and linking its source)"))
        elif g.value is None:
            matched.add(id(r))
            undecided = "cannot read" in g.problem
            findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR,
                                    f"{'cannot decide: ' if undecided else ''}{shown}: {g.problem}",
                                    undecided=undecided))
        else:
            matched.add(id(r))
            expected = engines.spelled(pin.means, g.value, r.draft_length)
            findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR,
                                    f"{name}: {shown} pins AL {_fmt(length)}, but the golden AL is "
                                    f"{_fmt(g.value)} ({g.source}{g.assumed}); set {pin.knob}={expected}"))
    for r, g in configs:
        if id(r) not in matched and g.value is not None and not findings:
            findings.append(Finding(r.path, r.line, RULE_MISMATCH, Severity.ERROR,
                                    f"{name}: {r.draft_length} draft tokens, but no pinned target is its golden AL "
                                    f"{_fmt(g.value)} ({g.source}{g.assumed}); pinned: "
                                    f"{', '.join(_shown(p) for p in pins)}"))
    return findings, passes


def _added(ctx: Context, path: str) -> frozenset[int]:
    """The lines the PR adds to `path` (worked out once per path: a master config is asked once per entry)."""
    return ctx.once(_added_lines, path)


def _added_lines(ctx: Context, path: str) -> frozenset[int]:
    f = ctx.snap.changed(path)
    return frozenset(n for n, _ in ctx.added_lines(f)) if f is not None else frozenset()


def _exception(ctx: Context, name: str) -> bool:
    if ctx.signoff is None:
        return False
    return any(name.lower() in line.lower() and re.search(r"\bexception\b", line, re.I)
               for line in ctx.signoff.detail.splitlines())


def _non_agentic(ctx: Context, units: list[SpecUnit]) -> list[Finding]:
    """Synthetic-acceptance knobs this PR adds to non-agentic spec-decode configs."""
    out: list[Finding] = []
    for unit in units:
        if not unit.changed or _exception(ctx, posixpath.basename(unit.path)):
            continue
        added = _added(ctx, unit.path)
        lines = sorted({s.line for s in unit.simulations if s.path == unit.path and s.line in added}
                       | {c.line for c in unit.configs if c.synthetic and c.line in added})
        for line in lines:
            out.append(Finding(unit.path, line, RULE_NON_AGENTIC, Severity.ERROR,
                               "simulated/synthetic acceptance on a non-agentic spec-decode config; fixed-sequence "
                               "benchmarks must measure real acceptance — remove it"))
    for change in ctx.changed_entries:
        entry = change.head
        if (entry is None or change.error is not None or entry_is_agentic(change.key, entry)
                or _exception(ctx, change.key)):
            continue
        added = _added(ctx, change.path)
        for point in head_points(ctx, change.path, change.key, entry):
            if "agentic" in point.scenario or not point_is_spec(change.key, point):
                continue
            for setting in point.settings:
                if engines.meaning("master", "setting", setting.name) in _SIMULATING and setting.line in added:
                    out.append(Finding(change.path, setting.line, RULE_NON_AGENTIC, Severity.ERROR,
                                       f"{change.key}: {setting.name}={setting.value} on a non-agentic spec-decode "
                                       "config; fixed-sequence benchmarks must measure real acceptance — remove it"))
    return out


def check(ctx: Context) -> CheckResult:
    mod = model(ctx)
    inv = mod.inventory
    agentic = [u for u in inv.units if u.agentic]
    others = [u for u in inv.units if not u.agentic]
    findings = _non_agentic(ctx, others)
    unlocated = [u for u in inv.unlocated if u.agentic]
    if not agentic and not unlocated and not findings:
        tail = (f"; its {len(others)} non-agentic spec-decode config(s) add no synthetic acceptance (measured AL)"
                if others else "")
        return CheckResult(NUMBER, NAME, Status.NA,
                           inv.na_reason(f"the PR adds or changes no agentic speculative-decoding config{tail}"))
    passes: list[str] = []
    for unit in agentic:
        unit_findings, unit_passes = _agentic_unit(ctx, unit, mod.of(unit))
        findings.extend(unit_findings)
        passes.extend(unit_passes)
    for u in unlocated:
        looked = " or ".join(u.candidates) if u.candidates else "no CONFIG_FILE recipe named"
        findings.append(Finding(u.path, u.line, RULE_UNSIMULATED, Severity.ERROR,
                                f"cannot decide: agentic spec-decode config {u.key}: its benchmark script/recipe is "
                                f"not available ({looked}); cannot verify simulated acceptance", undecided=True))
    if findings:
        return CheckResult.failed(NUMBER, NAME, findings)
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(passes))
