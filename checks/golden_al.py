"""Check 11 — agentic spec-decode configs simulate acceptance at the golden acceptance length.

What it enforces: agentic replay does not reproduce token-by-token real
traffic, so measured acceptance there is not representative. Per the AgentX
fairness guidelines (`golden_al_distribution/README.md`), an agentic
speculative-decoding config must simulate acceptance at the committed golden
AL for its model, thinking mode and draft length; a non-agentic config must
not simulate it (real-traffic acceptance applies there, check 9).

Which configs are agentic (`checks.specdecode`): scripts and recipes under an
`agentic/` or `agentx*` directory or named agentic / agentx, recipes whose
custom benchmark runs such a script or replays traces (`build_replay_cmd`),
and what a changed agentic master point (key or scenario `agentic`) runs.
Speculative configs come from `checks.specdecode`, read as the run reads
them: the launch the interpreter reaches with the config's variables and
EVAL_ONLY=false, so an AL set per branch (`SYNTHETIC_ACCEPT_LEN=2.88` beside
`NUM_SPEC_TOKENS=3`) or formatted by `printf` (`SPEC=$(printf
'{..."synthetic_acceptance_length":%.2f}' "$AL")`) is read with the draft
length it goes with; eval-only runs (real verification, for accuracy) do not
count. In a disaggregated recipe the decode side's speculative settings are
the config's (the prefill worker's draft settings decide nothing accepted).

Deterministic rule, for every throughput speculative config of an agentic
unit:
- (a) simulated: vLLM's `--speculative-config` has both
  `"rejection_sample_method": "synthetic"` and `"synthetic_acceptance_length"`;
  otherwise the unit pins SGLANG_SIMULATE_ACC_LEN, TLLM_SPEC_DECODE_FORCE_NUM_
  ACCEPTED_TOKENS, ATOM's `--spec-decode-acceptance-length`, or (master
  additional-settings) SYNTHETIC_ACCEPTANCE=true with
  SYNTHETIC_ACCEPTANCE_LENGTH. None of these: FAIL (real acceptance).
- (b) the pinned AL equals the golden value to two decimals; TRT-LLM's value
  counts accepted draft tokens only, so value + 1 is compared.
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
  else `thinking_on`. Draft length: `num_speculative_tokens`, SGLang
  `--speculative-num-steps`, TRT-LLM `num_nextn_predict_layers`/`max_draft_len`.
  No committed curve: PASS only if a line of the sign-off's additional detail
  section states the source — it names the pinned value and links the source
  (a collection run, a PR); else FAIL.
- Simulated-acceptance knobs the PR adds to a NON-agentic spec-decode config
  (including master additional-settings SYNTHETIC_ACCEPTANCE* of a
  fixed-sequence spec-decode point) FAIL, unless a line of the sign-off's
  detail section names that config and the word "exception".

N/A when the PR adds or changes no agentic speculative-decoding config (and
adds no synthetic acceptance elsewhere).

    passes:  agentic vLLM dspark, num_speculative_tokens 2, draft_sample_method probabilistic,
             "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.51
    passes:  SYNTHETIC_ACCEPT_LEN=2.78; SPEC=$(printf '{"method":"eagle3","model":"%s",...,
             "synthetic_acceptance_length":%.2f}' "$DRAFT" "$SYNTHETIC_ACCEPT_LEN") with an EAGLE3-GQA draft
             (minimaxm3_eagle3_gqa.yaml thinking_on 3 -> 2.78)
    fails:   agentic SGLang --speculative-algorithm EAGLE --speculative-num-steps 5, no SGLANG_SIMULATE_ACC_LEN
    fails:   TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=3.61 where the golden AL is 3.61 (must be 2.61)
"""

from __future__ import annotations

import posixpath
import re

from .context import Context
from .result import CheckResult, Finding, Severity, Status
from .runs import head_points
from .signoff import links
from .spec_settings import Simulation, SpecConfig
from .specdecode import SpecUnit, entry_is_agentic, inventory, point_is_spec
from .yamlload import YamlProblem, load

NUMBER = 11
NAME = "agentic golden AL"
RULE_UNSIMULATED = "golden-al-not-simulated"
RULE_MISMATCH = "golden-al-mismatch"
RULE_NO_CURVE = "golden-al-no-curve"
RULE_NON_AGENTIC = "synthetic-acceptance-non-agentic"
TOLERANCE = 0.005

_REQUIREMENT = re.compile(r"^#\s*speculative-config:\s*(.*)$", re.MULTILINE)


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


class _Golden:
    """The golden AL lookup for one config: a value, or why there is none."""

    def __init__(self, ctx: Context, unit: SpecUnit, config: SpecConfig):
        self.value: float | None = None
        self.source = ""
        self.problem = ""
        self.no_curve = False
        directory = ctx.policy.golden_al_dir.rstrip("/") + "/"
        stem = f"{unit.model_prefix}_{config.method}"
        curves = list(ctx.need.golden(stem)) if unit.model_prefix and config.method else []
        if not curves:
            self.no_curve = True
            self.problem = (f"no committed golden curve for {unit.model_prefix or 'an unknown model'} "
                            f"{config.method or 'unknown draft method'} in {directory}")
            return
        path, text = self._select(curves, stem, directory, config)
        self.source = f"{posixpath.basename(path)} {unit.thinking}/{config.num_tokens}"
        try:
            doc = load(text)
        except YamlProblem as exc:
            self.problem = f"golden curve {path} does not parse (line {exc.line}: {exc.message})"
            return
        models = [v for v in doc.values() if isinstance(v, dict)] if isinstance(doc, dict) else []
        if len(models) != 1:
            self.problem = f"golden curve {path} does not hold exactly one model"
            return
        mode = models[0].get(unit.thinking)
        if not isinstance(mode, dict):
            self.problem = f"golden curve {path} has no {unit.thinking} values"
            return
        if config.num_tokens is None:
            self.problem = "cannot read the config's draft length (num_speculative_tokens / MTP steps)"
            return
        value = mode.get(config.num_tokens, mode.get(str(config.num_tokens)))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.problem = f"golden curve {path} has no {unit.thinking} value for {config.num_tokens} draft tokens"
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


def _fix(unit: SpecUnit, golden: float | None) -> str:
    al = _fmt(golden) if golden is not None else "<golden AL>"
    if unit.engine == "sglang":
        return (f"export SGLANG_SIMULATE_ACC_LEN={al} (with SGLANG_SIMULATE_ACC_METHOD=match-expected and "
                "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token)")
    if unit.engine == "vllm":
        return (f'add "rejection_sample_method": "synthetic", "synthetic_acceptance_length": {al} '
                "to --speculative-config")
    if unit.engine == "trtllm":
        return f"set TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={_fmt(golden - 1) if golden is not None else '<AL - 1>'}"
    if unit.engine == "atom":
        return f"pass --spec-decode-acceptance-length {al}"
    return f"pin a simulated acceptance length of {al}"


def _pins(config: SpecConfig, unit_sims: list[Simulation], path: str) -> tuple[list[Simulation], str]:
    """The simulations pinning `config`'s acceptance, or why it is not simulated."""
    length = config.get("synthetic_acceptance_length")
    if config.synthetic or length is not None:
        if not config.synthetic:
            return [], "sets synthetic_acceptance_length without \"rejection_sample_method\": \"synthetic\""
        if length is None:
            return [], "sets \"rejection_sample_method\": \"synthetic\" without synthetic_acceptance_length"
        return [Simulation("synthetic_acceptance_length", length, config.line, path)], ""
    if unit_sims:
        return unit_sims, ""
    return [], "runs real (unsimulated) acceptance"


def _agentic_unit(ctx: Context, unit: SpecUnit) -> tuple[list[Finding], list[str]]:
    name = posixpath.basename(unit.path)
    if unit.error is not None:
        return [Finding(unit.path, unit.error_line, RULE_UNSIMULATED, Severity.ERROR,
                        f"recipe does not parse ({unit.error}); cannot verify simulated acceptance")], []
    live = [c for c in unit.configs if not c.eval_only]
    unit_sims = [s for s in unit.simulations if not s.eval_only and s.pins_length
                 and s.knob != "synthetic_acceptance_length"]
    if not live:
        return [Finding(unit.path, 1, RULE_UNSIMULATED, Severity.ERROR,
                        "agentic spec-decode config: cannot find its speculative settings (draft method and "
                        "length) to check against the golden AL")], []
    findings: list[Finding] = []
    passes: list[str] = []
    for config in live:
        golden = _Golden(ctx, unit, config)
        pins, why = _pins(config, unit_sims, unit.path)
        if not pins:
            hint = f" (golden {golden.source})" if golden.value is not None else ""
            findings.append(Finding(unit.path, config.line, RULE_UNSIMULATED, Severity.ERROR,
                                    f"agentic {config.method or 'speculative'} config "
                                    f"({config.num_tokens} draft tokens) {why}; {_fix(unit, golden.value)}{hint}"))
            continue
        for pin in pins:
            pinned = pin.length
            shown = f"{pin.knob}={pin.raw}"
            if pinned is None:
                findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR,
                                        f"{shown}: cannot read the pinned acceptance length"))
            elif golden.no_curve:
                if _source_stated(ctx, pin.raw):
                    passes.append(f"{name}: {shown} (no committed curve; source stated in the sign-off)")
                else:
                    findings.append(Finding(pin.path, pin.line, RULE_NO_CURVE, Severity.ERROR,
                                            f"{shown}: {golden.problem}, and the sign-off's additional detail "
                                            "section does not state the AL source (a line naming the value and "
                                            "linking its source)"))
            elif golden.value is None:
                findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR, f"{shown}: {golden.problem}"))
            elif abs(pinned - golden.value) > TOLERANCE:
                expected = (_fmt(golden.value - 1) if pin.knob == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
                            else _fmt(golden.value))
                findings.append(Finding(pin.path, pin.line, RULE_MISMATCH, Severity.ERROR,
                                        f"{name}: {shown} pins AL {_fmt(pinned)}, but the golden AL is "
                                        f"{_fmt(golden.value)} ({golden.source}); set {pin.knob}={expected}"))
            else:
                plus = " (+1 bonus token)" if pin.knob == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" else ""
                passes.append(f"{name}: {shown}{plus} = golden {golden.source}")
    return findings, passes


def _added(ctx: Context, path: str) -> set[int]:
    f = ctx.snap.changed(path)
    return {n for n, _ in ctx.added_lines(f)} if f is not None else set()


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
                if setting.name.startswith("SYNTHETIC_ACCEPTANCE") and setting.line in added:
                    out.append(Finding(change.path, setting.line, RULE_NON_AGENTIC, Severity.ERROR,
                                       f"{change.key}: {setting.name}={setting.value} on a non-agentic spec-decode "
                                       "config; fixed-sequence benchmarks must measure real acceptance — remove it"))
    return out


def check(ctx: Context) -> CheckResult:
    inv = inventory(ctx)
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
        unit_findings, unit_passes = _agentic_unit(ctx, unit)
        findings.extend(unit_findings)
        passes.extend(unit_passes)
    for u in unlocated:
        looked = " or ".join(u.candidates) if u.candidates else "no CONFIG_FILE recipe named"
        findings.append(Finding(u.path, u.line, RULE_UNSIMULATED, Severity.ERROR,
                                f"agentic spec-decode config {u.key}: its benchmark script/recipe is not available "
                                f"({looked}); cannot verify simulated acceptance"))
    if findings:
        return CheckResult.failed(NUMBER, NAME, findings)
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(passes))
