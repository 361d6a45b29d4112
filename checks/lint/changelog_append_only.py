"""changelog-append-only-file: perf-changelog.yaml history is never rewritten; new entries go at its end.

## What it enforces

Historical entries of perf-changelog.yaml are never edited, deleted or
reordered; new facts go into new entries, appended after the last one; a
correction is a new entry too.

## Why

The changelog is the history of the published results: each entry records
what changed, when and in which PR. Editing, deleting or reordering a
historical entry rewrites that history (and the tooling that keys results on
entries sees changes that never ran).

## How it decides

Uses `checks.facts.changelog.diff`, which aligns the entries of base and head by
their text. Errors:

- a historical entry the PR edits: on the edited entry;
- a historical entry the PR moves: on its new place;
- a historical entry the PR deletes: on the head entry that now stands at
  its place (the message names the entry's base line).

A new entry inserted between historical ones, which leaves the history
intact but out of time order, is a warning on the new entry: a merge of
main into the PR branch can leave it there, and reviewed PRs (InferenceX
#2213, #2508) passed with it.

## Passing example

Base `[A, B]`, head `[A, B, N]`.

## Failing example

Head `[A, B', N]` (on B'), head `[B, N]` (A deleted, on B), head `[B, A]` (on
the moved one). Warns: head `[A, N, B]` (on N).
"""

from __future__ import annotations

from typing import Iterator

from checks.facts.changelog import Entry
from checks.facts.yamlload import YamlProblem

from ..context import Context
from ..result import Finding, Severity
from .recipes import changelog_diff

ID = "changelog-append-only-file"
SEVERITY = Severity.ERROR


def check(ctx: Context) -> Iterator[Finding]:
    diff = changelog_diff(ctx)
    if diff is None or diff.append_only_file or diff.head.problem is not None:
        return
    path = diff.head.path
    removed = {old.key: old for old in diff.removed}
    accounted: set[int] = set()  # head indexes already reported
    for entry in diff.new:
        old = removed.pop(entry.key, None)
        if old is not None:
            accounted.add(entry.index)
            yield Finding(path, entry.line, ID, SEVERITY,
                          f"this moves {_where(old)}; historical entries keep their order: put it back and add "
                          f"new entries at the end of the file")
    misplaced = {e.index: e for e in diff.misplaced if e.index not in accounted}
    head = diff.head
    for old in removed.values():
        replacement = misplaced.pop(old.index, None)
        if replacement is not None:
            yield Finding(path, replacement.line, ID, SEVERITY,
                          f"this edits {_where(old)}; historical entries are immutable: restore it and record the "
                          f"change in a new entry at the end of the file")
            continue
        anchor = head.entry(min(old.index, len(head) - 1)).line if len(head) else 1  # where it was
        yield Finding(path, anchor, ID, SEVERITY,
                      f"{_where(old)} is deleted here; historical entries are immutable: restore it")
    for entry in misplaced.values():
        yield Finding(path, entry.line, ID, Severity.WARNING,
                      "new entry is inserted before historical entries; move it to the end of the file "
                      "(the changelog is append-only)")


def _where(entry: Entry) -> str:
    return f"the historical entry at base line {entry.line} ({_describe(entry)})"


def _describe(entry: Entry) -> str:
    """A short identity of an entry for messages: its config keys and PR link."""
    try:
        keys = ", ".join(k for k, _line in entry.config_keys()) or "no config-keys"
        link = entry.data.get("pr-link")
    except YamlProblem:
        return "unparsable"
    return f"{keys}; {link}" if link else keys
