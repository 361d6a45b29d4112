"""changelog-pr-link: a new perf-changelog.yaml entry links the pull request that adds it.

## What it enforces

Each entry the PR adds must have `pr-link:
https://github.com/<this repository>/pull/<this PR's number>`. A warning:
backfilling an entry for an older PR is legitimate, but rare.

## Why

The changelog is how readers of the published results find why a curve
moved; its `pr-link` is the only way back from an entry to the review, the
sweep and the sign-off. Entries copied from a neighbour keep the
neighbour's link, and then the trail points at the wrong change.

## How it decides

Every entry the PR adds is compared with this repository and PR number. The
finding sits on `pr-link`, or on the entry's `- ` line when the key is missing.

## Passing example

In PR #2554:

    - config-keys: [dsv4-fp4-b200-dynamo-sglang-mtp]
      description: ["Add ..."]
      pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2554

## Failing example

Copied from the previous entry:

      pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1893   # <- warning here
"""

from __future__ import annotations

import re
from typing import Iterator

from checks.facts.yamlload import YamlProblem

from ..context import Context
from ..result import Finding, Severity
from .recipes import changelog_diff

ID = "changelog-pr-link"
SEVERITY = Severity.WARNING

_PULL = re.compile(r"^https?://github\.com/([\w.-]+/[\w.-]+)/pull/(\d+)(?:[/?#].*)?$", re.I)


def check(ctx: Context) -> Iterator[Finding]:
    diff = changelog_diff(ctx)
    if diff is None:
        return
    pr = ctx.snap.pr
    want = f"https://github.com/{ctx.snap.repo}/pull/{pr.number}"
    for entry in diff.new:
        try:
            data = entry.data
        except YamlProblem:
            continue  # yaml-syntax reports it
        link = data.get("pr-link")
        if link is None:
            yield Finding(diff.head.path, entry.line, ID, SEVERITY,
                          f"new changelog entry has no pr-link; add `pr-link: {want}`")
            continue
        m = _PULL.match(str(link).strip())
        if m and m.group(1).lower() == ctx.snap.repo.lower() and int(m.group(2)) == pr.number:
            continue
        what = f"names {m.group(1)}#{m.group(2)}" if m else "is not a pull request link"
        yield Finding(diff.head.path, data.line_of("pr-link"), ID, SEVERITY,
                      f"pr-link {what}, not this pull request; set it to {want}")
