"""Check 0 — the sign-off author is a CODEOWNER of the changed files.

## What it enforces

The sign-off's author owns what the PR changes, by the CODEOWNERS file of the
base branch tip (the first of `Policy.codeowners_paths` present; the PR's own
edits to CODEOWNERS never count). Per changed path (both paths of a rename),
the LAST matching line owns it, owners never accumulating (`checks.facts.codeowners`).

## Why

A sign-off vouches for the change on the owners' behalf: CODEOWNERS names who
may do that for each file. An owner of other files (an AMD owner signing an
NVIDIA-only change) carries no such authority, and a PR that edits CODEOWNERS
could otherwise name its own signer.

## How it decides

- Specific rule (a pattern that does not match every path, with owners): the
  signer must be listed directly (case-insensitive), or be a member of a
  listed team whose membership GitHub tells (`ctx.need.member`). When the
  rule also lists teams or emails the app could not resolve, the path is
  "unverified" rather than failed: per the spec's "be decisive" guidance it
  passes when the signer is a definite owner (named, or a known team member)
  of the owning rule of at least one changed path; otherwise it fails closed.
  When every listed owner is known not to be the signer, the path FAILs,
  naming the path, its rule's line and its owners.
- Catch-all rule (`*`, `**`, `/*`, `/**`: matches every path), a rule without
  owners, or no rule at all: satisfied by any recognized CODEOWNER, i.e. a
  signer listed anywhere in CODEOWNERS directly or through a team he is known
  to be in. The catch-all is a default, not a per-file gatekeeper.
- Self sign-off (signer == PR author): noted in the reason; FAIL only when the
  policy sets `block_self_signoff`. A sign-off is a comment, not a line of a
  file at the PR head, so it is reported in the reason, not as a Finding.
- Lines GitHub rejects are skipped, as GitHub skips them, and noted.
- Fails closed: no sign-off, no CODEOWNERS on the base branch, an unreadable
  CODEOWNERS, a file or commit list GitHub truncated, or a CODEOWNERS too
  complex to match against the changed paths within `codeowners.MAX_STEPS`.

## Passing example

`configs/nvidia-master.yaml @ankur-singh @InferenceX/core` signed by
Ankur-singh, other paths under `* @InferenceX/core`.

## Failing example

The same change signed by chunfangamd, named only on
`configs/amd-master.yaml` (an AMD owner signing an NVIDIA-only change).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from checks.context import Context
from checks.evidence import Missing
from checks.facts import codeowners
from checks.result import CheckResult, Status

NUMBER = 0
NAME = "CODEOWNER"

_SHOWN = 3  # paths named in a reason before "+N more"
# Why GitHub would not say who is in a team: reading an organisation's team membership needs the members
# permission, which a workflow's GITHUB_TOKEN never has (the App asks for it).
UNREADABLE_TEAMS = ("GitHub does not tell these credentials (reading team membership needs the organisation's "
                    "members: read, which a workflow's GITHUB_TOKEN never has; the App has it)")


@dataclass(frozen=True)
class _Ownership:
    path: str
    rule: codeowners.Rule | None
    kind: str  # named | team | unverified | not-owner | default
    team: str = ""


def check(ctx: Context) -> CheckResult:
    sign = ctx.signoff
    if sign is None:
        return _fail(f'no sign-off found: no comment begins with "{ctx.policy.signoff_phrase}"')
    found = ctx.policy_file(*ctx.policy.codeowners_paths)
    if found is None:
        return _fail(f"no CODEOWNERS on the base branch ({', '.join(ctx.policy.codeowners_paths)}); "
                     "add one so ownership can be verified")
    path, text = found
    owners = ctx.once(_parsed, text)
    if not owners.rules and owners.problems:
        first = owners.problems[0]
        return _fail(f"{path}:{first.line} cannot be used: {first.message}")
    if ctx.snap.truncated:
        return _fail(f"{ctx.snap.truncated}; ownership of what GitHub did not list cannot be verified")

    signer = sign.author
    paths = _changed_paths(ctx)
    budget = codeowners.Budget()
    try:
        rules = [owners.owners_of(p, budget) for p in paths]
    except codeowners.TooComplex as exc:
        return _fail(f"{path} cannot be evaluated: {exc} ({len(owners.rules):,} rules, {len(paths):,} "
                     f"changed paths); fails closed")
    member = _memberships(ctx, signer, owners, rules)
    rows = [_ownership(p, rule, signer, member) for p, rule in zip(paths, rules)]
    definite = any(r.kind in ("named", "team") or (r.kind == "default" and r.rule is not None
                                                   and _member_of_rule(signer, r.rule, member))
                   for r in rows)
    note = _notes(ctx, path, owners, signer)

    # (a path not owned, or not known to be, is so by a rule: `_ownership`)
    denied = [(r.path, r.rule) for r in rows if r.kind == "not-owner" and r.rule is not None]
    if denied:
        owned, rule = denied[0]
        more = f" (+{len(denied) - 1} more path{'s' if len(denied) > 2 else ''})" if len(denied) > 1 else ""
        return _fail(f"{signer} is not an owner of {owned}: {path}:{rule.line} "
                     f"`{rule}` assigns it to {_owner_list(rule)}{more}; "
                     f"one of them must sign off{note}")
    unverified = [(r.path, r.rule) for r in rows if r.kind == "unverified" and r.rule is not None]
    if unverified and not definite:
        owned, rule = unverified[0]
        return CheckResult.undecided(
            NUMBER, NAME, f"whether {signer} owns {owned}: {path}:{rule.line} lists only "
                          f"{_owner_list(rule)}; {_unknowable(rule, member)}, and {signer} is not "
                          f"a named owner of any changed path; a maintainer who knows the team confirms it, or a "
                          f"named owner signs off{note}")
    defaults = [r for r in rows if r.kind == "default"]
    if defaults and not _recognized(signer, owners, member):
        unknown = [t for t in owners.teams if member(t) is None]
        if unknown:
            return CheckResult.undecided(
                NUMBER, NAME, f"whether {signer} is a CODEOWNER: not named in {path}, and membership of "
                              f"{', '.join('@' + t for t in unknown)} could not be read ({UNREADABLE_TEAMS}); "
                              f"a maintainer who knows the team confirms it, or a CODEOWNER signs off{note}")
        return _fail(f"{signer} is not a CODEOWNER: not named in {path} nor a known member of its "
                     f"teams; a CODEOWNER must sign off{note}")
    if ctx.policy.block_self_signoff and signer.lower() == ctx.snap.pr.author.lower():
        return _fail(f"{signer} signed off their own PR; block_self_signoff requires another CODEOWNER")
    return CheckResult(NUMBER, NAME, Status.PASS, _pass_reason(signer, path, owners, rows, member) + note)


def _parsed(_ctx: Context, text: str) -> codeowners.Codeowners:
    return codeowners.parse(text)


def _memberships(ctx: Context, signer: str, owners: codeowners.Codeowners,
                 rules: list[codeowners.Rule | None]) -> Callable[[str], bool | None]:
    """Whether the signer is in a team (None: unknown), asking for every team owning a changed path, and
    for all teams when only a catch-all decides a path and the signer is not named anywhere."""
    teams = {t for r in rules if r is not None for t in r.teams}
    if any(r is None or r.catch_all or not r.owners for r in rules) and not owners.names(signer):
        teams |= set(owners.teams)
    known = {t.lower(): ctx.need.member(t, signer) for t in sorted(teams)}

    def member(team: str) -> bool | None:
        found = known.get(team.lower())
        return None if isinstance(found, Missing) else found

    return member


def _fail(reason: str) -> CheckResult:
    return CheckResult(NUMBER, NAME, Status.FAIL, reason)


def _changed_paths(ctx: Context) -> list[str]:
    paths = set()
    for f in ctx.snap.files:
        paths.add(f.path)
        if f.previous_path:
            paths.add(f.previous_path)
    return sorted(paths)


def _member_of_rule(login: str, rule: codeowners.Rule, member: Callable[[str], bool | None]) -> bool:
    return rule.names(login) or any(member(t) for t in rule.teams)


def _recognized(login: str, owners: codeowners.Codeowners, member: Callable[[str], bool | None]) -> bool:
    """Named anywhere in CODEOWNERS, or a known member of a team it lists."""
    return bool(owners.names(login)) or any(member(t) for r in owners.rules for t in r.teams)


def _ownership(path: str, rule: codeowners.Rule | None, signer: str,
               member: Callable[[str], bool | None]) -> _Ownership:
    if rule is None or rule.catch_all or not rule.owners:
        return _Ownership(path, rule, "default")
    if rule.names(signer):
        return _Ownership(path, rule, "named")
    for team in rule.teams:
        if member(team):
            return _Ownership(path, rule, "team", team)
    if rule.emails or any(member(t) is None for t in rule.teams):
        return _Ownership(path, rule, "unverified")
    return _Ownership(path, rule, "not-owner")


def _unknowable(rule: codeowners.Rule, member: Callable[[str], bool | None]) -> str:
    """Why none of the rule's owners can be matched to the signer: unreadable teams, email addresses."""
    teams = [t for t in rule.teams if member(t) is None]
    parts = [f"whether they are in {', '.join('@' + t for t in teams)}: {UNREADABLE_TEAMS}"] if teams else []
    if rule.emails:
        parts.append(f"{', '.join(rule.emails)} {'is an email address' if len(rule.emails) == 1 else 'are email addresses'}, "
                     "which GitHub does not match to a login")
    return "; ".join(parts)


def _owner_list(rule: codeowners.Rule) -> str:
    return ", ".join(rule.owners)


def _paths(rows: list[_Ownership]) -> str:
    names = [r.path for r in rows]
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" (+{len(names) - _SHOWN} more)" if len(names) > _SHOWN else "")


def _pass_reason(signer: str, path: str, owners: codeowners.Codeowners, rows: list[_Ownership],
                 member: Callable[[str], bool | None]) -> str:
    if not rows:
        return f"the PR changes no files; {signer} is a recognized CODEOWNER in {path}"
    parts = []
    named = [r for r in rows if r.kind == "named"]
    if named:
        parts.append(f"{signer} is a named owner of {_paths(named)}")
    for team in sorted({r.team for r in rows if r.kind == "team"}):
        parts.append(f"{signer} owns {_paths([r for r in rows if r.team == team])} as a member of @{team}")
    unverified = [r for r in rows if r.kind == "unverified"]
    if unverified:
        parts.append(f"{_paths(unverified)} (team membership unreadable) accepted because {signer} "
                     "owns a changed path")
    defaults = [r for r in rows if r.kind == "default"]
    if not defaults:
        return "; ".join(parts)
    catch_all = next((r.rule for r in defaults if r.rule is not None and r.rule.owners), None)
    default = f"the catch-all `{catch_all}`" if catch_all else "the catch-all"
    if parts:
        parts.append(f"all other changed paths fall to {default}, which a recognized CODEOWNER satisfies")
        return "; ".join(parts)
    where = owners.names(signer)
    team = next((t for t in owners.teams if member(t)), "")
    via = f"named at {path}:{where[0].line}" if where else f"a member of @{team}"
    subject = "the only changed path falls" if len(rows) == 1 else "every changed path falls"
    return f"{subject} to {default}, which {signer} ({via}) satisfies as a recognized CODEOWNER"


def _notes(ctx: Context, path: str, owners: codeowners.Codeowners, signer: str) -> str:
    notes = []
    if signer.lower() == ctx.snap.pr.author.lower():
        notes.append(f"note: {signer} is also the PR's author (self sign-off)")
    if owners.problems:
        first = owners.problems[0]
        count = len(owners.problems)
        notes.append(f"{count} invalid CODEOWNERS line{'s' if count > 1 else ''} skipped as GitHub does "
                     f"(first: {path}:{first.line} {first.message})")
    return "".join(f"; {n}" for n in notes)
