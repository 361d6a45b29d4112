"""yaml-syntax: every YAML file the PR adds or changes must parse.

## What it enforces

Every YAML file the PR adds or changes parses. The finding sits on the line
PyYAML reports.

## Why

A recipe, master config or changelog that does not parse fails the sweep
only when a runner reaches it, hours later, and hides every other finding
about the file.

## How it decides

Recipes are read with the same safe loader the other rules use (sizes,
nesting and alias expansion bounded); other YAML files, such as the master
configs of 12,000 lines, are run through libyaml's parser, which finds every
syntax error without building the document or handing Python an object per
event (5 ms rather than 27 for a master config): every `*` is read as `@`,
which cannot start a token, so the file parses only if it has no alias; where
it does not parse, the events are read for undefined aliases too. The
entries the PR adds to perf-changelog.yaml are also read with the safe
loader: an alias bomb or a nesting too deep is no syntax error, but the
changelog rules could not read the entry and would skip it unseen.

## Passing example

    resources:
      gpus_per_node: 4

## Failing example

The flow mapping is never closed:

    resources: {gpus_per_node: 4
    backend:                  # <- error here
"""

from __future__ import annotations

from typing import Iterator

import yaml

from checks.facts.yamlload import MAX_BYTES, YamlProblem

from ..context import Context
from ..result import Finding, Severity
from .recipes import changelog_diff, recipe

ID = "yaml-syntax"
SEVERITY = Severity.ERROR

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check(ctx: Context) -> Iterator[Finding]:
    for f in ctx.changed_files:
        if f.head_text is None or not f.path.endswith((".yaml", ".yml")):
            continue
        if ctx.policy.is_recipe(f.path):
            parsed = recipe(ctx, f.path)
            problem = parsed.problem if parsed else None
        else:
            problem = problem_of(f.head_text)
        if problem is not None:
            yield Finding(f.path, problem.line, ID, SEVERITY,
                          f"{f.path} is not valid YAML: {problem.message}; fix the syntax on this line")
        elif f.path == ctx.policy.changelog:
            yield from _new_entries(ctx)


def _new_entries(ctx: Context) -> Iterator[Finding]:
    diff = changelog_diff(ctx)
    if diff is None:
        return
    for entry in diff.new:
        try:
            _ = entry.data  # parsed once, cached for the changelog rules
        except YamlProblem as problem:
            yield Finding(diff.head.path, problem.line, ID, SEVERITY,
                          f"new changelog entry cannot be read: {problem.message}; fix it on this line")


def problem_of(text: str) -> YamlProblem | None:
    """The first syntax error of `text` (bad structure, undefined alias), or None."""
    if len(text) > MAX_BYTES:
        return YamlProblem(1, f"file is larger than {MAX_BYTES // 1_000_000} MB; not parsed")
    try:
        if hasattr(_Loader, "raw_parse"):
            try:
                _parse(_without_aliases(text))
                return None
            except (yaml.YAMLError, ValueError, UnicodeError):
                if "*" not in text:
                    raise
        return _undefined_alias(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return YamlProblem(mark.line + 1 if mark else 1, (exc.problem or exc.context or "invalid YAML").strip())
    except (yaml.YAMLError, ValueError, UnicodeError) as exc:
        return YamlProblem(1, str(exc).splitlines()[0] if str(exc) else "invalid YAML")


def _without_aliases(text: str) -> str:
    """`text` with each `*` made `@`, which cannot start a token. A `*` that is no alias (inside a scalar or a
    comment) reads the same either way, so the result parses exactly when `text` parses with no alias in it;
    where it does not, the events are read (an alias may be defined, a `*` may be the error)."""
    return text.replace("*", "@") if "*" in text else text


def _parse(text: str) -> None:
    """Run libyaml's parser over `text`, raising its first error; no event reaches Python."""
    loader = yaml.CSafeLoader(text)  # (called only when libyaml is there: `problem_of`)
    try:
        loader.raw_parse()
    finally:
        loader.dispose()


def _undefined_alias(text: str) -> YamlProblem | None:
    """The first alias to an anchor not defined before it in its document (parse errors raise)."""
    anchors: set[str] = set()
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                return YamlProblem(event.start_mark.line + 1,  # type: ignore[union-attr]  # libyaml marks every event
                                   f"found undefined alias {event.anchor!r}")
        elif isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            anchors.add(event.anchor)
        elif isinstance(event, yaml.DocumentStartEvent) and anchors:
            anchors.clear()
    return None
