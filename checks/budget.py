"""The verdict of a verification whose checks outran their budget of CPU time, memory or time.

The app enforces the budget (app/judge.py kills the checks process); what
the verdict then says is policy, and is decided here from the snapshot and
what the process last noted (`checks.progress`). Nothing was decided, so
nothing passes: every row of the gate is UNDECIDED, saying which rule was
running and which file it was reading ("could not be read within the
budget"), with a finding on that file for the annotations. A sign-off found
before the overrun (the previous round's verdict's, or found again: the
process noted it found one, `Overrun.signer`, so reading the comments for it
fit in the budget) is kept, so the verdict asks a maintainer; without one it
is REJECTED as any unsigned PR. Recipe lint, when it ran, reports the same
on its row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .facts.signoff import find
from .policy import Policy
from .result import CheckResult, Finding, Severity, Verdict
from .rule import LINT_ROW, Rule
from .snapshot import Snapshot

MAX_PATHS = 3  # files named when a text is found in several


@dataclass(frozen=True)
class Overrun:
    """What stopped a verification's checks, and what they were doing then (None: not known)."""

    limit: str  # the budget spent, as the verdict says it: "10 s of CPU time", "512 MB of memory"
    rule: str | None = None  # the id of the rule that was running
    text: str | None = None  # `progress.fingerprint` of the text being parsed
    signer: str | None = None  # the sign-off's author, when it was found before the overrun


def reading_paths(snap: Snapshot, fingerprint: str | None) -> tuple[str, ...]:
    """The files of `snap` whose text is the one `fingerprint` names; else those holding its start."""
    if not fingerprint or ":" not in fingerprint:
        return ()
    start = fingerprint.split(":", 1)[1]
    exact: list[str] = []
    holding: list[str] = []
    for path, text in _texts(snap):
        if f"{len(text)}:{text[:len(start)]}" == fingerprint:
            exact.append(path)
        elif start and start in text:
            holding.append(path)
    found = exact or holding
    return tuple(dict.fromkeys(found))[:MAX_PATHS]


def _texts(snap: Snapshot) -> Iterator[tuple[str, str]]:
    for f in snap.files:
        for text in (f.head_text, f.base_text):
            if text is not None:
                yield f.path, text
    for files in (snap.master_head, snap.master_base, snap.policy):
        yield from files.items()
    for extra in snap.extra_files.values():
        yield from ((p, t) for p, t in extra.items() if t is not None)
    for doc in snap.upstream:
        yield from ((f"{doc.url} {p}", t) for p, t in doc.files.items())
    for artifact in snap.artifacts:
        yield from ((f"artifact {artifact.name}: {p}", t) for p, t in artifact.files.items())


def overrun_verdict(snap: Snapshot, rules: Sequence[Rule], overrun: Overrun,
                    previous: Verdict | None = None) -> Verdict:
    """The verdict of `rules` on `snap` when their checks were stopped by `overrun` (`previous`: the last
    round's verdict, when a round was complete)."""
    paths = reading_paths(snap, overrun.text)
    running = next((r for r in rules if r.id == overrun.rule), None)
    where = ""
    if running is not None:
        who = f"check {running.row} ({running.name})" if running.kind == "check" else f"rule {running.id}"
        where = f" while {who} was reading {', '.join(paths)}" if paths else f" while {who} ran"
    elif paths:
        where = f" while reading {', '.join(paths)}"
    reason = f"could not be read within the budget ({overrun.limit}){where}; nothing of this row was decided"
    findings = tuple(Finding(p, 1, running.id if running else "budget", Severity.ERROR,
                             f"cannot decide: could not be read within the budget ({overrun.limit}); "
                             "a maintainer must read it", undecided=True) for p in paths if " " not in p)
    results = tuple(CheckResult.undecided(r.row, r.name, reason, findings) for r in rules if r.kind == "check")
    lint = None
    if any(r.kind == "lint" for r in rules):
        lint = CheckResult.undecided(LINT_ROW, "Recipe lint", reason, findings)
    policy, problems = Policy.from_yaml(snap.policy.get(snap.config_path),  # the base branch's: not the PR's text
                                        snap.config_path)
    sign = previous.signoff if previous is not None else None
    if sign is None and overrun.signer is not None:
        sign = find(snap.comments, policy.signoff_phrase, snap.bot_login)
    return Verdict(
        head_sha=snap.pr.head_sha,
        signer=sign.author if sign else None,
        signoff_url=sign.comment.url if sign else None,
        results=results,
        lint=lint,
        lint_blocking=policy.lint == "blocking",
        findings=tuple(sorted(findings, key=lambda f: (f.path, f.line, f.rule, f.message))),
        lint_findings=findings if lint is not None else (),
        policy=policy,
        signoff=sign,
        notes=problems,
    )
