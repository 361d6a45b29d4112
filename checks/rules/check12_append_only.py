"""Check 12: an append-only sweep only adds points to an unchanged curve.

## What it enforces

When a new perf-changelog.yaml entry sets `append-only: true`, the sweep runs
only the points the PR adds and keeps the published ones. That is sound only
if no existing point would come out differently, so:

1. every new changelog entry of the PR is append-only (mixing regular and
   append-only entries is not allowed);
2. every config the append-only entries select (`config-keys`, globs
   expanded against the master configs) exists at base and head, with every
   entry field other than `scenarios` unchanged (image, model, runner,
   precision, framework, ...);
3. every base search-space point survives at head unchanged, in canonical
   form: scenario, isl/osl, the scenario group's fields and the point's own,
   one concurrency per point (`conc-list` items; `conc-start`..`conc-end`
   doubling from the start and clamped to the end, as InferenceX's matrix
   generator expands it). Points may be added, including new recipe
   variants (e.g. a new TP), but only in scenarios (scenario, isl, osl) the
   base config already has;
4. nothing else changes: another master-config entry, or any other file
   (benchmark scripts, runners, utils, workflows, docs).

## Why

Append-only results are merged into the published curve without rerunning
it; a changed recipe or shared script would silently mix two different setups
on one curve.

## How it decides

The four conditions above, in order. Whether a change to another file (4)
can reach only the appended points cannot be proven from a diff
deterministically, so it fails closed naming the file; land it with a
regular changelog entry instead.

N/A when no new changelog entry (its text present at head, not at base,
see `checks.facts.changelog.diff`) sets `append-only: true`. Like InferenceX's
own changelog processing, only entries whose `append-only:` line the PR
adds are considered; editing a historical entry is recipe lint's concern.

## Passing example

The changelog gains

    - config-keys: [dsv4-fp4-mi355x-vllm-agentic-mtp]
      append-only: true

and the entry's `conc-list: [1, 4, 8]` becomes `[1, 4, 8, 16]`; no other file
changes.

## Failing example

The same, but the PR also edits
`benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh` (a shared
launcher: every existing point would run it too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from checks.context import Context
from checks.facts import changelog
from checks.facts.masterconfig import MasterConfig, search_points
from checks.facts.yamlload import LineDict, YamlProblem
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 12
NAME = "append-only"

RULE = "append-only"


class _Problems:
    """Failures collected in order: a one-line reason each, and findings on head lines."""

    def __init__(self, anchor: tuple[str, int]):
        self.anchor = anchor  # where a failure without a head line of its own is reported
        self.reasons: list[str] = []
        self.findings: list[Finding] = []

    def add(self, path: str, line: int | None, message: str) -> None:
        """A failure on `path` at head `line`, or on the anchor when the head has no line for it (None)."""
        self.reasons.append(f"{f'{path}:{line}' if line else path} {message}")
        if line:
            self.findings.append(Finding(path, line, RULE, Severity.ERROR, message))
        else:
            self.findings.append(Finding(self.anchor[0], self.anchor[1], RULE, Severity.ERROR, f"{path}: {message}"))

    def result(self) -> CheckResult | None:
        if not self.reasons:
            return None
        more = f" (+{len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        return CheckResult(NUMBER, NAME, Status.FAIL, self.reasons[0] + more, tuple(sorted(set(self.findings))))


def check(ctx: Context) -> CheckResult:
    path = ctx.policy.changelog
    na = CheckResult(NUMBER, NAME, Status.NA, f"no new {path} entry sets append-only: true")
    f = ctx.snap.changed(path)
    if f is None or f.status == "removed":
        return na
    if f.head_text is None:
        if f.error:
            return CheckResult(NUMBER, NAME, Status.FAIL,
                               f"{path} could not be read ({f.error}); append-only cannot be verified")
        return na
    mentions = [(n, t) for n, t in ctx.added_lines(f) if "append-only" in t]
    if not mentions:  # an append-only entry the PR adds has its `append-only:` line among the added lines
        return na
    d = changelog.diff_texts(path, f.base_text, f.head_text)
    problem = d.head.problem or d.base.problem
    if problem is not None:
        side = "head" if d.head.problem else "base"
        line = problem.line if side == "head" else mentions[0][0]
        msg = (f"{path} is not a plain list of entries at {side} (line {problem.line}: {problem.message}); "
               f"append-only cannot be verified")
        return CheckResult(NUMBER, NAME, Status.FAIL, f"{path}:{line} {msg}",
                           (Finding(path, line, RULE, Severity.ERROR, msg),))

    append: list[changelog.Entry] = []
    regular: list[changelog.Entry] = []
    broken: list[tuple[changelog.Entry, YamlProblem]] = []
    for entry in d.new:
        try:
            (append if entry.append_only else regular).append(entry)
        except YamlProblem as exc:
            broken.append((entry, exc))
    if not append and not any("append-only" in e.text for e, _ in broken):
        return na
    first = append[0] if append else broken[0][0]
    problems = _Problems((path, _append_line(first)))
    for _entry, problem in broken:
        problems.add(path, problem.line, f"new changelog entry does not parse ({problem.message}); fix the YAML")
    for entry in regular:
        problems.add(path, entry.line, f"regular changelog entry is mixed with the append-only entry at line "
                                       f"{first.line}; mixed regular and append-only entries are not allowed, "
                                       f"split them into separate PRs")
    if broken and (unparsed := problems.result()) is not None:  # (each broken entry is a problem)
        return unparsed

    selected = _selected(ctx, append, problems, path)
    for key in selected:
        _compare(ctx, key, problems)
    _others(ctx, set(selected), path, problems)
    failed = problems.result()
    if failed is not None:
        return failed
    keys = ", ".join(selected)
    return CheckResult(NUMBER, NAME, Status.PASS,
                       f"append-only for {keys}: every base point is unchanged at head with the same image and "
                       f"recipe; only new points are added and no other file changes")


def _append_line(entry: changelog.Entry) -> int:
    try:
        return entry.data.line_of("append-only")
    except YamlProblem:
        return entry.line


def _selected(ctx: Context, entries: list[changelog.Entry], problems: _Problems, path: str) -> list[str]:
    known = {k for cfgs in (ctx.base_configs, ctx.head_configs) for cfg in cfgs.values() for k in cfg.keys()}
    selected: set[str] = set()
    for entry in entries:
        items = entry.config_keys()
        if not items:
            problems.add(path, entry.line, "append-only entry selects no config-keys; name the configs it appends to")
        for pattern, line in items:
            matched = changelog.expand_keys([pattern], known)
            if not matched:
                problems.add(path, line, f"config key {pattern!r} matches no master-config entry")
            selected.update(matched)
    return sorted(selected)


def _locate(cfgs: dict[str, MasterConfig], key: str) -> tuple[str, MasterConfig] | None:
    for path in sorted(cfgs):
        if key in cfgs[path].blocks:
            return path, cfgs[path]
    return None


def _compare(ctx: Context, key: str, problems: _Problems) -> None:
    """Entry fields unchanged, every base point present at head, additions only in existing scenarios."""
    at_base, at_head = _locate(ctx.base_configs, key), _locate(ctx.head_configs, key)
    if at_base is None:  # then it is at head: the key was matched among base and head keys
        assert at_head is not None
        head_path, head_cfg = at_head
        problems.add(head_path, head_cfg.blocks[key].line,
                     f"{key} is a new config; append-only can only add points to an existing config, "
                     f"use a regular changelog entry")
        return
    if at_head is None:
        problems.add(at_base[0], None, f"{key} is removed at head; append-only cannot remove a config")
        return
    head_path, head_cfg = at_head
    try:
        base = at_base[1].entry(key)
    except YamlProblem as exc:
        problems.add(at_base[0], None, f"{key} does not parse at base (line {exc.line}: {exc.message}); "
                                       f"its points cannot be compared")
        return
    try:
        head = head_cfg.entry(key)
    except YamlProblem as exc:
        problems.add(head_path, exc.line, f"{key} does not parse ({exc.message}); fix the YAML")
        return
    assert base is not None and head is not None  # (`_locate` found the key's block on both sides)

    for name in sorted(set(base) | set(head), key=str):
        if name == "scenarios" or _canon(base.get(name)) == _canon(head.get(name)):
            continue
        line = head.line_of(name) if name in head else head.line
        problems.add(head_path, line, f"{key} changes {name} ({_show(base.get(name))} -> {_show(head.get(name))}); "
                                      f"append-only keeps every entry field, rerun the curve with a regular entry")

    base_points, head_points = _points(base), _points(head)
    head_index = {canon: point for canon, point in head_points}
    for canon, point in base_points:
        if canon in head_index:
            continue
        problems.add(head_path, _nearest(point, head_points, head),
                     f"{key} no longer has base point {_describe(point)} (base line {point['line']}); "
                     f"append-only must keep every existing point unchanged")
    base_scenarios = {_scenario(p) for _, p in base_points}
    base_set = {canon for canon, _ in base_points}
    reported: set[tuple[object, object, object]] = set()
    for canon, point in head_points:
        scenario = _scenario(point)
        if canon in base_set or scenario in base_scenarios or scenario in reported:
            continue
        reported.add(scenario)
        problems.add(head_path, point["line"], f"{key} adds points to scenario {_describe_scenario(scenario)}, "
                                               f"which the base config does not have; append-only only extends "
                                               f"existing scenarios")


def _others(ctx: Context, selected: set[str], path: str, problems: _Problems) -> None:
    """Every change outside the changelog and the selected entries fails closed."""
    for change in ctx.changed_entries:
        if change.key in selected:
            continue
        line = change.line if change.status != "removed" else None
        problems.add(change.path, line, f"also changes config {change.key} ({change.status}), which no append-only "
                                        f"entry selects; land it with a regular changelog entry")
    for f in ctx.snap.files:
        if f.path == path or ctx.policy.is_master_config(f.path):
            continue
        added = ctx.added_lines(f)
        line = added[0][0] if added and f.status != "removed" else None
        problems.add(f.path, line, f"changes {f.path} ({f.status}) outside the selected configs' entries; cannot "
                                   f"prove the change is isolated to the appended points, land it with a "
                                   f"regular changelog entry")


def _points(entry: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(canonical form, point) of every search-space point, one concurrency each."""
    out = []
    for point in search_points(entry):
        for conc in _concurrencies(point):
            fields = {k: v for k, v in point.items() if k not in ("line", "conc-list", "conc-start", "conc-end")}
            if conc is not None:
                fields["conc"] = conc
            out.append((_canon(fields), {**fields, "line": point["line"]}))
    return out


def _concurrencies(point: Mapping[str, Any]) -> list[object]:
    values = point.get("conc-list")
    if isinstance(values, list) and values:
        return list(dict.fromkeys(_canon(v) if isinstance(v, (dict, list)) else v for v in values))
    start, end = point.get("conc-start"), point.get("conc-end")
    if isinstance(start, int) and isinstance(end, int) and 0 < start <= end:
        out: list[object] = []
        conc = start
        while conc < end:
            out.append(conc)
            conc *= 2
        out.append(end)
        return out
    if start is not None or end is not None:
        return [f"{start}..{end}"]
    return [None]


def _scenario(point: Mapping[str, Any]) -> tuple[object, object, object]:
    return point.get("scenario"), point.get("isl"), point.get("osl")


def _nearest(point: Mapping[str, Any], head_points: list[tuple[str, dict[str, Any]]], head: LineDict) -> int:
    """Where to report a missing base point at head: that point at another concurrency, its scenario, or the entry."""
    shape = _canon({k: v for k, v in point.items() if k not in ("conc", "line")})
    for _, p in head_points:
        if _canon({k: v for k, v in p.items() if k not in ("conc", "line")}) == shape:
            return int(p["line"])
    for _, p in head_points:
        if _scenario(p) == _scenario(point):
            return int(p["line"])
    return head.line_of("scenarios") if "scenarios" in head else head.line


def _describe(point: Mapping[str, Any]) -> str:
    parts = [_describe_scenario(_scenario(point))]
    for name in ("tp", "ep", "dp-attn", "spec-decoding", "conc"):
        if name in point:
            parts.append(f"{name}={_show(point[name])}")
    return " ".join(parts)


def _describe_scenario(scenario: tuple[object, object, object]) -> str:
    name, isl, osl = scenario
    return f"{name} {isl}/{osl}" if isl is not None or osl is not None else str(name)


def _canon(value: object) -> str:
    """A canonical text of a YAML value: key order and line numbers do not matter, any key type is fine."""
    return json.dumps(_plain(value), sort_keys=True, default=str)


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _show(value: object) -> str:
    text = "absent" if value is None else _canon(value).strip('"')
    return text if len(text) <= 80 else text[:77] + "..."
