"""Check 2 — the evals of the audited sweep run are real, meet the bar, and ran on this PR's image.

## What it enforces

The aggregated eval results of one workflow run hold a row for every
master-config entry the PR adds or changes, every such row scores at or above
its accuracy bar, and the run used the image the PR's config pins.

## Why

A green `eval /` job only says the job exited 0. The merge standard asks
for accuracy that is present, above the model's bar, and measured on the
same inference-engine image the PR will publish numbers for.

## How it decides

- The run audited is the one pinned by the effective authorized
  `/reuse-sweep-run <id>` (the last authorized one, `checks.facts.commands`), else
  the run behind Check 1's passing eval lanes (`sweeps.passing_run`); with
  neither: FAIL, following from Check 1. A pinned run must have run on a
  commit currently in this PR (the reuse gate rejects any other).
- Eval rows are the JSON lists in files `agg_eval_*.json` (as written by
  InferenceX's `utils/collect_eval_results.py`) of the run's artifacts named
  with a `Policy.eval_artifact_prefixes` prefix. No such artifact, an artifact
  that could not be read, a file that is not a JSON list of objects, or a file
  without rows: FAIL naming it.
- A row belongs to a changed entry when model_prefix, precision, framework,
  is_multinode and the SKU family of hw equal the entry's model-prefix,
  precision, framework, multinode and the SKU family of its runner (the
  text after any `cluster:`, up to the first `-`/`_`, upper-cased:
  `b200-nscale` -> B200, `cluster:mi355x-amds` -> MI355X, `gb200` -> GB200).
  InferenceX evaluates fixed-seq-len points only at 8k1k and agentic points
  with isl/osl 0/0, so each entry needs a row for every (isl, osl,
  spec_decoding) among its search points' 8192/1024 and agentic variants
  (spec-decoding absent = "none"), and at least one row in any case.
  Removed entries need none. When the PR adds or changes no entry, every row
  of the run is audited instead (Check 1 still demands a sweep).
- A row passes when its `score` >= the bar for its task: `models.<prefix>.<task>`,
  else `default.<task>`, from the first of `Policy.thresholds_paths` on the
  base branch (YAML, or the older JSON thresholds.json). No thresholds file,
  an unreadable one, or a task without a bar: FAIL closed. A row without a
  numeric score failed its eval. SpeedBench acceptance-length rows
  (score_name `acceptance_length`) carry their own bounds and pass when
  `speedbench_passed` is true.
- Image: the entry's image at the commit the run evaluated (its head_sha;
  master configs read there) must equal the image at head, and when the run
  has a benchmark artifact (`Policy.bmk_artifact_prefixes`, files
  `agg_bmk*.json`), every row of it for the entry (by `config_key`, else the
  identity above plus spec_decoding) must carry the head image (`#` read as `/`).
- All problems are collected in this order (run, rows, accuracy, image); the
  reason is the first, with a count of the rest.

## Passing example

    run 31451666262 (behind Check 1), agg_eval_all.json rows for
    dsv4 fp4 dynamo-sglang B200 multi-node 8192/1024 mtp, gsm8k
    em_strict 0.9644-0.9682 >= dsv4 0.91, results_bmk image = head image

## Failing example

    a row at 0.88 < 0.91; no row for a new 8k1k config; the sweep ran
    on a commit whose config pinned an older image
"""

from __future__ import annotations

import json
import math
import posixpath
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checks.context import Context
from checks.evidence import Missing
from checks.facts import commands, hardware, sweeps
from checks.facts.masterconfig import EntryChange, MasterConfig, search_points
from checks.facts.yamlload import YamlProblem, load
from checks.result import CheckResult, Status

NUMBER = 2
NAME = "evals pass"

EVAL_SEQ_LENS = frozenset({(8192, 1024)})  # fixed-seq-len points InferenceX's sweep evaluates
AGENTIC_SEQ_LEN = (0, 0)  # isl/osl of agentic eval rows
FIX_RERUN = "re-run the sweep with evals on a commit in this PR"


class _Fail(Exception):
    """Stops the audit with one FAIL reason; caught in `check`, never escapes it."""


@dataclass(frozen=True)
class Target:
    """The workflow run to audit and the commit it evaluated."""

    run_id: int
    sha: str | None  # None only for a pinned run the app could not read
    pin: commands.Command | None  # the `/reuse-sweep-run <id>` that chose it, if any


@dataclass(frozen=True)
class _Row:
    file: str  # basename, e.g. agg_eval_all.json
    data: dict[str, Any]


@dataclass(frozen=True)
class _Config:
    change: EntryChange
    prefix: str
    precision: str
    framework: str
    sku: str
    multinode: bool
    variants: frozenset[tuple[int, int, str]]  # (isl, osl, spec_decoding) the sweep evaluates
    specs: frozenset[str]
    image: str

    @property
    def where(self) -> str:
        return f"{self.change.path}:{self.change.line} {self.change.key}"

    @property
    def identity(self) -> str:
        node = "multi-node" if self.multinode else "single-node"
        return f"{self.prefix} {self.precision} {self.framework} {self.sku} {node}"

    def owns(self, row: Mapping[str, Any]) -> bool:
        prefix = row.get("model_prefix", row.get("infmax_model_prefix"))
        return (_low(prefix) == self.prefix and _low(row.get("precision")) == self.precision
                and _low(row.get("framework")) == self.framework and hardware.sku(row.get("hw")).upper() == self.sku
                and _bool(row.get("is_multinode")) == self.multinode)

    def owns_bmk(self, row: Mapping[str, Any]) -> bool:
        if "config_key" in row:
            return bool(row["config_key"] == self.change.key)
        return self.owns(row) and ("spec_decoding" not in row or _low(row["spec_decoding"]) in self.specs)


@dataclass(frozen=True)
class _Bars:
    path: str
    default: dict[str, Any]
    models: dict[str, Any]

    def bar(self, prefix: str, task: str) -> tuple[float | None, str]:
        """(bar, "the <scope> bar"), or (None, why there is no usable bar)."""
        model = self.models.get(prefix)
        if isinstance(model, dict) and task in model:
            value, key, scope = model[task], f"models.{prefix}.{task}", f"the {prefix} bar"
        elif task in self.default:
            value, key, scope = self.default[task], f"default.{task}", f"the default {task} bar"
        else:
            return None, (f"no {task} bar for model {prefix} in {self.path} (neither models.{prefix}.{task}"
                          f" nor default.{task}); add one to the thresholds")
        if not _is_number(value):
            return None, f"{key} in {self.path} is not a number; fix the thresholds"
        return float(value), scope


def target(ctx: Context) -> Target | None:
    """The run Check 2 audits: the pinned `/reuse-sweep-run <id>`, else Check 1's; None without either."""
    pin = commands.effective(_reuse_commands(ctx))
    if pin is not None and pin.run_id is not None:
        run = ctx.need.run(pin.run_id)
        return Target(pin.run_id, run.head_sha if run else None, pin)
    passing = sweeps.passing_run(ctx)
    if passing is None:
        return None
    sha, run_id = passing
    if run_id is None:
        return None
    run = ctx.need.run(run_id)
    return Target(run_id, run.head_sha if run else sha, None)


def check(ctx: Context) -> CheckResult:
    try:
        return CheckResult(NUMBER, NAME, Status.PASS, _audit(ctx))
    except _Fail as fail:
        return CheckResult(NUMBER, NAME, Status.FAIL, str(fail))


def _audit(ctx: Context) -> str:
    """The PASS reason; raises _Fail with the FAIL reason."""
    t = _checked_target(ctx)
    if t.sha is not None and t.sha != ctx.snap.pr.head_sha:  # (not None: `_checked_target`) the configs the run evaluated: asked for with its artifacts, in one round
        for ch in ctx.changed_entries:
            if ch.status != "removed":
                ctx.need.file(t.sha, ch.path)
    rows = _eval_rows(ctx, t.run_id)
    bars = _thresholds(ctx)
    configs = _configs(ctx)
    judged = [r for r in rows if any(c.owns(r.data) for c in configs)] if configs else rows

    problems = [_missing(c, rows, t.run_id) for c in configs]
    passed: list[tuple[_Row, float, str]] = []
    speedbench = 0
    for row in judged:
        problem, bar, scope = _judge(row, bars, t.run_id)
        if problem:
            problems.append(problem)
        elif bar is None:
            speedbench += 1
        else:
            passed.append((row, bar, scope))
    problems += _image_problems(ctx, t, configs)
    reasons = list(dict.fromkeys(p for p in problems if p))
    if reasons:
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        raise _Fail(reasons[0] + more)
    return _summary(t, rows, passed, speedbench, bars, configs)


def _checked_target(ctx: Context) -> Target:
    t = target(ctx)
    if t is None:
        passing = sweeps.passing_run(ctx)
        if passing is not None:
            raise _Fail(f"the green eval check-runs on {passing[0][:8]} link no workflow run, so there are no eval"
                        f" results to audit; {FIX_RERUN}")
        raise _Fail("no eval run to audit (follows from Check 1)")
    if t.pin is not None:
        where = f"run {t.run_id} pinned by `/reuse-sweep-run` ({t.pin.comment.url})"
        if t.sha is None:
            raise _Fail(f"{where} could not be read; pin a sweep run of this repository")
        if t.sha not in ctx.snap.commits:
            raise _Fail(f"{where} ran on {t.sha[:8]}, which is not a commit of this PR;"
                        f" pin a sweep run on a commit in this PR")
    return t


def _eval_rows(ctx: Context, run_id: int) -> list[_Row]:
    prefixes = ctx.policy.eval_artifact_prefixes
    names = "/".join(f"{p}*" for p in prefixes)
    found = sorted((a for a in ctx.need.artifacts(run_id) if a.name.startswith(prefixes)),
                   key=lambda a: (a.name, a.artifact_id))
    if not found:
        run = ctx.need.run(run_id)
        listed = sorted(a.name for a in run.artifacts if a.name.startswith(prefixes)) if run else []
        if listed:
            raise _Fail(f"eval artifact {listed[0]} of run {run_id} was not downloaded; cannot audit accuracy,"
                        f" re-run this check")
        raise _Fail(f"run {run_id} uploaded no eval artifact ({names}): evals were skipped or failed; {FIX_RERUN}")
    rows: list[_Row] = []
    for artifact in found:
        if artifact.error:
            raise _Fail(f"eval artifact {artifact.name} of run {run_id} could not be read ({artifact.error});"
                        f" {FIX_RERUN}")
        for path in sorted(artifact.files):
            name = posixpath.basename(path)
            if not (name.startswith("agg_eval_") and name.endswith(".json")):
                continue
            data = _json_rows(artifact.files[path], f"{artifact.name}/{path} of run {run_id}")
            if not data:
                raise _Fail(f"{artifact.name}/{path} of run {run_id} has no eval rows: the evals produced no"
                            f" results; {FIX_RERUN}")
            rows.extend(_Row(name, r) for r in data)
    if not rows:
        raise _Fail(f"no agg_eval_*.json in eval artifact(s) {', '.join(a.name for a in found)} of run {run_id};"
                    f" {FIX_RERUN}")
    return rows


def _json_rows(text: str, where: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _Fail(f"{where} is not valid JSON ({exc}); {FIX_RERUN}") from None
    except RecursionError:
        raise _Fail(f"{where} nests arrays or objects too deeply to read; {FIX_RERUN}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise _Fail(f"{where} is not a JSON list of row objects; {FIX_RERUN}")
    return data


def _thresholds(ctx: Context) -> _Bars:
    paths = ctx.policy.thresholds_paths
    found = ctx.policy_file(*paths)
    if found is None:
        raise _Fail(f"no eval thresholds on the base branch ({' or '.join(paths)}), so accuracy cannot be judged;"
                    f" add the thresholds file")
    path, text = found
    try:
        data = json.loads(text) if path.endswith(".json") else load(text)
    except (ValueError, YamlProblem) as exc:
        raise _Fail(f"{path} on the base branch does not parse ({exc}); fix it") from None
    default = data.get("default", {}) if isinstance(data, dict) else None
    models = data.get("models", {}) if isinstance(data, dict) else None
    if not isinstance(default, dict) or not isinstance(models, dict):
        raise _Fail(f"{path} on the base branch must map `default` and `models` to task bars; fix it")
    return _Bars(path, default, models)


def _configs(ctx: Context) -> list[_Config]:
    out = []
    for ch in ctx.changed_entries:
        if ch.status == "removed":
            continue
        if ch.error is not None or ch.head is None:
            line = ch.error.line if ch.error else ch.line
            raise _Fail(f"config {ch.key} at {ch.path}:{line} does not parse, so no eval row can be matched to it;"
                        f" fix the YAML")
        entry = ch.head
        variants: set[tuple[int, int, str]] = set()
        specs: set[str] = set()
        for point in search_points(entry):
            spec = _low(point.get("spec-decoding") or "none")
            specs.add(spec)
            isl, osl = point["isl"], point["osl"]  # (`search_points` gives every point both)
            if isl is None and osl is None:
                variants.add((*AGENTIC_SEQ_LEN, spec))
            elif (isl, osl) in EVAL_SEQ_LENS:
                variants.add((isl, osl, spec))
        out.append(_Config(ch, _low(entry.get("model-prefix")), _low(entry.get("precision")),
                           _low(entry.get("framework")), hardware.sku(entry.get("runner")).upper(), entry.get("multinode") is True,
                           frozenset(variants), frozenset(specs), str(entry.get("image") or "")))
    return out


def _missing(config: _Config, rows: list[_Row], run_id: int) -> str | None:
    """Why `config` lacks eval rows, or None."""
    owned = [r.data for r in rows if config.owns(r.data)]
    files = ", ".join(sorted({r.file for r in rows}))
    if not owned:
        return (f"no eval row for {config.where} ({config.identity}) in {files} of run {run_id};"
                f" {FIX_RERUN}")
    have = {(_int(r.get("isl")), _int(r.get("osl")), _low(r.get("spec_decoding"))) for r in owned}
    lacking = sorted(v for v in config.variants if v not in have)
    if not lacking:
        return None
    isl, osl, spec = lacking[0]
    return (f"no eval row for {config.where} ({config.identity}) at isl/osl {isl}/{osl} spec-decoding {spec}"
            f" in {files} of run {run_id}; {FIX_RERUN}")


def _judge(row: _Row, bars: _Bars, run_id: int) -> tuple[str | None, float | None, str]:
    """(problem, bar, bar scope) of one row; bar None for a passing SpeedBench row."""
    d = row.data
    task = str(d.get("task") or "?")
    where = f"{row.file} of run {run_id}: {_describe(d)} {task}"
    if d.get("score_name") == "acceptance_length":
        if d.get("speedbench_passed") is True:
            return None, None, ""
        bounds = f"[{d.get('speedbench_min_acceptance_length')}, {d.get('speedbench_max_acceptance_length')}]"
        return f"{where} acceptance length {d.get('score')} failed its bounds {bounds}; {FIX_RERUN}", None, ""
    score: Any = d.get("score")  # a JSON value: a number past `_is_number`
    if not _is_number(score):
        return f"{where} has no score (the eval failed); {FIX_RERUN}", None, ""
    bar, scope = bars.bar(_low(d.get("model_prefix")), task)
    if bar is None:
        return scope, None, ""
    if score < bar:
        return (f"{where} {d.get('score_name') or 'score'} {_num(score)} is below {scope} {_num(bar)}"
                f" ({bars.path}); fix the accuracy regression and re-run the sweep"), bar, scope
    return None, bar, scope


def _image_problems(ctx: Context, t: Target, configs: list[_Config]) -> list[str]:
    return _commit_image_problems(ctx, t, configs) + _bmk_image_problems(ctx, t, configs)


def _commit_image_problems(ctx: Context, t: Target, configs: list[_Config]) -> list[str]:
    """Each changed entry's image at the commit the run evaluated must be the head's."""
    snap = ctx.snap
    if t.sha is None or t.sha == snap.pr.head_sha:
        return []
    problems = []
    for c in configs:
        path, key = c.change.path, c.change.key
        text = ctx.need.file(t.sha, path)
        if isinstance(text, Missing):
            problems.append(f"{path} at {t.sha[:8]} (the commit run {t.run_id} evaluated) is not available, so"
                            f" the run's image cannot be compared with the head image {c.image}; re-run this check")
            continue
        entry = _entry_at(path, text, key)
        if entry is None:
            problems.append(f"run {t.run_id} evaluated {t.sha[:8]}, where {path} has no readable config {key};"
                            f" {FIX_RERUN}")
        elif _image(entry.get("image")) != _image(c.image):
            problems.append(f"run {t.run_id} evaluated {t.sha[:8]}, where {key} uses image {entry.get('image')},"
                            f" but the head uses {c.image}; re-run the sweep on the head image")
    return problems


def _bmk_image_problems(ctx: Context, t: Target, configs: list[_Config]) -> list[str]:
    """Every benchmark-artifact row of a changed entry must carry the head image (one problem per image)."""
    problems = []
    seen = set()
    found = sorted((a for a in ctx.need.artifacts(t.run_id) if a.name.startswith(ctx.policy.bmk_artifact_prefixes)),
                   key=lambda a: (a.name, a.artifact_id))
    for artifact in found:
        if artifact.error:
            problems.append(f"benchmark artifact {artifact.name} of run {t.run_id} could not be read"
                            f" ({artifact.error}), so its image cannot be confirmed; {FIX_RERUN}")
            continue
        for path in sorted(artifact.files):
            name = posixpath.basename(path)
            if not (name.startswith("agg_bmk") and name.endswith(".json")):
                continue
            where = f"{artifact.name}/{path} of run {t.run_id}"
            try:
                data = _json_rows(artifact.files[path], where)
            except _Fail as fail:
                problems.append(str(fail))
                continue
            for row in data:
                image = row.get("image")
                for c in configs:
                    if c.owns_bmk(row) and _image(image) != _image(c.image) and (c.change.key, image) not in seen:
                        seen.add((c.change.key, image))
                        problems.append(f"{where} ran {c.change.key} on image {image}, but the head config uses"
                                        f" {c.image}; re-run the sweep on the head image")
    return problems


def _entry_at(path: str, text: str | None, key: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        return MasterConfig(path, text).entry(key)
    except YamlProblem:
        return None


def _summary(t: Target, rows: list[_Row], passed: list[tuple[_Row, float, str]], speedbench: int,
             bars: _Bars, configs: list[_Config]) -> str:
    files = ", ".join(sorted({r.file for r in rows}))
    chosen = " (pinned by `/reuse-sweep-run`)" if t.pin is not None else ""
    groups: dict[tuple[str, str, str, float], list[float]] = defaultdict(list)
    for row, bar, scope in passed:
        d = row.data
        groups[(str(d.get("task")), str(d.get("score_name") or "score"), scope, bar)].append(float(d["score"]))
    parts = []
    for (task, score_name, scope, bar), scores in sorted(groups.items()):
        low, high = min(scores), max(scores)
        span = _num(low) if low == high else f"{_num(low)}–{_num(high)}"
        count = f"across {len(scores)} rows" if len(scores) > 1 else "on 1 row"
        above = "at or above" if low == bar else "above"
        parts.append(f"{task} {score_name} {span} {count}, {above} {scope} {_num(bar)}")
    if speedbench:
        parts.append(f"{speedbench} SpeedBench acceptance-length row{'s' if speedbench > 1 else ''} within bounds")
    text = f"{files} of run {t.run_id}{chosen}: {'; '.join(parts)} ({bars.path})"
    if not configs:
        return f"{text}; the PR changes no master-config entry, so every row of the run was audited."
    images = sorted({c.image for c in configs})
    return f"{text}, on the head image{'s' if len(images) > 1 else ''} {', '.join(images)}."


def _reuse_commands(ctx: Context) -> list[commands.Command]:
    p = ctx.policy
    return commands.commands(ctx, p.reuse_command, p.authorized_associations)


def _describe(d: Mapping[str, Any]) -> str:
    spec = _low(d.get("spec_decoding"))
    parts = [d.get("model_prefix"), d.get("hw"), d.get("framework"), d.get("precision"),
             spec if spec not in ("", "none") else None, f"conc {d.get('conc')}"]
    return " ".join(str(p) for p in parts if p)


def _image(value: object) -> str:
    return str(value or "").strip().replace("#", "/")


def _low(value: object) -> str:
    return str(value if value is not None else "").strip().lower()


def _bool(value: object) -> bool:
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _int(value: Any) -> int:  # (any JSON value: what `int` cannot read is 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _is_number(value: object) -> bool:
    """A finite int or float (JSON's NaN is not a score)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num(x: float) -> str:
    """0.9 -> 0.90, 0.9644 -> 0.9644, 0.91 -> 0.91: at least two decimals, at most four."""
    text = f"{x:.4f}".rstrip("0")
    return text if len(text.partition(".")[2]) >= 2 else f"{x:.2f}"
