"""Check 7: no submissions for deprecated models, scenarios or recipe variants.

## What it enforces

Every master-config entry the PR adds or changes runs only model/scenario
combinations that MODELS.md on the base branch lists as active on the review
date (`review_date`).

## Why

MODELS.md is the source of truth for what InferenceX still benchmarks;
cluster time spent on retired models is wasted and their results are no
longer published.

## How it decides

The deterministic rules chosen where the spec asks for judgement:

- What is submitted: the head version of every added or changed entry, in
  full. A changed entry is re-run under its config key, so each of its
  search-space points counts, not only the edited ones. Benchmark scripts
  and multi-node recipes only run through a master-config entry, so the
  entries are what is checked; removed entries submit nothing.
- Each point is (model-prefix, scenario, precision, speculative decoding):
  `fixed-seq-len` isl/osl maps to a scenario by MODELS.md's Scenarios table
  (8192/1024 -> "Single-turn 8k1k"), `agentic-coding` to "Agentic coding";
  a point's `spec-decoding` other than `none` is the spec-decode arm.
- What is deprecated, and from when, is `checks.facts.models_md`'s reading: the
  Scenarios table, the model support matrix and the dated notices. A
  scheduled deprecation is allowed through its stated last day (the notice
  "Monday, August 3, 2026 is the last day" deprecates from August 4);
  "since"/"removed"/"retired" dates apply from that day; notices marked
  "Status: not yet enacted" are not in force.
- A deprecation statement MODELS.md makes that the parser cannot read is
  UNDECIDED for the models it names (all models if it names none): a
  maintainer confirms by hand.
- A model prefix MODELS.md does not list cannot be deprecated: PASS, noted.
- MODELS.md missing from the base branch: nothing is deprecated, N/A (the
  rule has nothing to enforce). N/A when the PR adds or changes no
  master-config entry. An unreadable review date: UNDECIDED.

## Passing example

PR #2213, reviewed 2026-07-27: kimik2.5-fp4-mi355x-vllm,
fixed-seq-len 8192/1024; MODELS.md lists kimik2.5 Single-turn 8k1k as active.

## Failing example

The same entry reviewed 2026-08-12: MODELS.md line 41,
"Thursday, August 6, 2026 is the last day for the Single-turn 8k1k scenario
on Kimi-K2.5/2.6/2.7-Code (`kimik2.5`)" -> FAIL on the entry's 8k1k point.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date, datetime, timedelta, timezone
from typing import Any

from checks.context import Context
from checks.facts import models_md
from checks.facts.masterconfig import EntryChange, search_points
from checks.facts.yamlload import LineDict
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 7
NAME = "deprecated models"

RULE = "deprecated-model"
ANYWHERE_ON_EARTH = timezone(timedelta(hours=-12), "AoE")
_NO_SPEC = (None, False, "", "none", "off", "false", "no")


def check(ctx: Context) -> CheckResult:
    changes = [c for c in ctx.changed_entries if c.status != "removed"]
    if not changes:
        return CheckResult(NUMBER, NAME, Status.NA, "the PR adds or changes no benchmark configurations")
    path = ctx.policy.models_md
    text = ctx.snap.policy.get(path)
    if text is None:
        return CheckResult(NUMBER, NAME, Status.NA,
                           f"{path} is not on the base branch: no model or scenario is deprecated")
    today = review_date(ctx.snap.now)
    if today is None:
        return CheckResult.undecided(NUMBER, NAME, f"the review date {ctx.snap.now!r} is unreadable")
    models = models_md.parse(text)

    problems: list[str] = []  # in the order of the changes, the first is the row's reason
    findings: list[Finding] = []
    active: list[str] = []
    unlisted: list[str] = []
    for change in changes:
        if change.error is not None:
            msg = f"malformed entry ({change.error.message}); its model and scenarios cannot be verified"
            problems.append(f"{change.path}:{change.error.line} {msg}")
            findings.append(Finding(change.path, change.error.line, RULE, Severity.ERROR, msg))
            continue
        for line, msg, undecided in _violations(change, models, today, path):
            problems.append(f"{change.path}:{line} {msg}")
            findings.append(Finding(change.path, line, RULE, Severity.ERROR, msg, undecided))
        prefix = _prefix(change)
        if prefix not in models.prefixes:
            unlisted.append(prefix or change.key)
        for scenario in _scenario_names(change, models):
            combo = f"{prefix} {scenario}"
            if combo not in active:
                active.append(combo)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        status = Status.UNDECIDED if all(f.undecided for f in findings) else Status.FAIL
        return CheckResult(NUMBER, NAME, status, problems[0] + more, tuple(sorted(set(findings))))
    shown = ", ".join(active[:4]) + (f" (+{len(active) - 4} more)" if len(active) > 4 else "")
    reason = f"{path} lists {shown or 'every changed entry'} as active on {today.isoformat()}"
    if unlisted:
        reason += f" ({', '.join(sorted(set(unlisted)))} not listed in {path}, so not deprecated)"
    return CheckResult(NUMBER, NAME, Status.PASS, reason)


def review_date(now: str) -> date | None:
    """The calendar date Anywhere on Earth at the ISO 8601 instant `now` (read as UTC when it names no zone)."""
    try:
        instant = datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        return None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    return instant.astimezone(ANYWHERE_ON_EARTH).date()


def _violations(change: EntryChange, models: models_md.ModelsMd, today: date, path: str
                ) -> Iterator[tuple[int, str, bool]]:
    """(line at head, message) for each MODELS.md statement the entry's head recipe breaks, once per statement."""
    head: Mapping[str, Any] = change.head or {}
    prefix = _prefix(change)
    precision = str(head.get("precision") or "").strip().lower()
    points = search_points(head) or [{"scenario": None, "isl": None, "osl": None, "line": change.line}]
    seen: set[int] = set()
    for point in points:
        scenario = models.scenario_name(point["scenario"], point["isl"], point["osl"]) if point["scenario"] else None
        spec = str(point.get("spec-decoding")).strip().lower() not in {str(v).lower() for v in _NO_SPEC}
        for n, dep in enumerate(models.deprecations):
            if n in seen or not dep.applies(prefix, scenario, precision, spec, today):
                continue
            seen.add(n)
            yield _line(change, dep, point), _message(change.key, prefix, scenario, precision, spec, dep, path), False
        for n, unread in enumerate(models.unreadable, len(models.deprecations)):
            if n in seen or (unread.prefixes and prefix not in unread.prefixes):
                continue
            seen.add(n)
            yield change.line, (f"cannot decide: {change.key}: {path}:{unread.line} states a deprecation the bot "
                                f"cannot read (\"{_short(unread.text)}\"); make it explicit in {path} or verify "
                                f"{prefix} by hand"), True


def _message(key: str, prefix: str, scenario: str | None, precision: str, spec: bool,
             dep: models_md.Deprecation, path: str) -> str:
    if dep.scenario is None and dep.precision is None:
        what = f"model {prefix}, retired"
    else:
        parts = [prefix, dep.scenario or scenario or "", f"{precision} recipe" if dep.precision else "",
                 "without speculative decoding" if dep.non_spec_arm else ""]
        what = " ".join(p for p in parts if p) + ", deprecated"
    since = f" since {dep.since.isoformat()}" if dep.since else ""
    return f"{key} submits {what}{since} ({path}:{dep.line}: \"{_short(dep.text)}\"); remove it from this PR"


def _line(change: EntryChange, dep: models_md.Deprecation, point: Mapping[str, Any]) -> int:
    """The head line that carries what is deprecated: precision, model prefix, or the point."""
    head = change.head or LineDict()
    if dep.precision is not None and "precision" in head:
        return head.line_of("precision")
    if dep.scenario is None and dep.precision is None and "model-prefix" in head:
        return head.line_of("model-prefix")
    return point.get("line") or change.line


def _prefix(change: EntryChange) -> str:
    value = (change.head or LineDict()).get("model-prefix")
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    return change.key.split("-", 1)[0].lower()


def _scenario_names(change: EntryChange, models: models_md.ModelsMd) -> list[str]:
    names = [models.scenario_name(p["scenario"], p["isl"], p["osl"]) for p in search_points(change.head or {})]
    return list(dict.fromkeys(names))


def _short(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."
