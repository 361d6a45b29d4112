"""One way to fetch what the checks asked for, whatever holds the pull request's evidence.

The checks name what a snapshot lacks (`checks.evidence.Wanted`, through `Context.need`); a `Fetcher`
reads each piece from where the PR lives: GitHub (`app.github.gather.Gatherer`), or a world's files
(`app.offline.snapshot.WorldFetcher`), which is also how a git history is read (`app.history.gitrepo.pull_world` makes
a world of a clone). The evidence rounds (`complete`) and the fuller snapshot built from the answers
(`with_evidence`) are written once, here, so that every source completes a snapshot the same way, as
policy-bot's pull context does for its rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Protocol

from checks.engine import Completion
from checks.evidence import MISSING, Missing, UpstreamTarget, Wanted
from checks.policy import Policy
from checks.snapshot import ArtifactFiles, Snapshot, UpstreamDoc, WorkflowRun, frozen_map

from .judge import LocalRounds, Rounds


class Fetcher(Protocol):
    """Reads the evidence of one repository's pull request; every read may be asked for concurrently."""

    async def file(self, sha: str, path: str) -> str | None | Missing:
        """Text of `path` at commit `sha`; None when it is absent or not text; MISSING when the source
        cannot say (a world without that commit)."""

    async def paths(self, sha: str) -> Collection[str]:
        """The files of commit `sha` (the base branch tip's, where the golden curves are found)."""

    async def run(self, run_id: int, prefixes: tuple[str, ...]) -> tuple[WorkflowRun | None,
                                                                           Sequence[ArtifactFiles]]:
        """The workflow run with its artifacts listed (None when unknown), and those of its artifacts whose
        names start with one of `prefixes`, unpacked."""

    async def upstream(self, target: UpstreamTarget) -> UpstreamDoc: ...

    async def membership(self, team: str, login: str) -> bool | None:
        """Whether `login` is in `team` ("org/slug"); None when the source will not say."""

    async def permission(self, login: str) -> str:
        """`login`'s permission on the repository ("none" when it has none)."""


async def with_evidence(fetcher: Fetcher, snap: Snapshot, want: Wanted) -> Snapshot:
    """`snap` with everything `want` names (all that was asked so far), read through `fetcher` at once."""
    policy, _err = Policy.from_yaml(snap.policy.get(snap.config_path))
    prefixes = policy.eval_artifact_prefixes + policy.bmk_artifact_prefixes
    curves = sorted(p for p in await fetcher.paths(snap.policy_sha)
                    if any(policy.is_golden_curve(p, stem) for stem in want.golden))
    curve_texts, files, runs, upstream, teams, permissions = await asyncio.gather(
        asyncio.gather(*(fetcher.file(snap.policy_sha, path) for path in curves)),
        asyncio.gather(*(fetcher.file(sha, path) for sha, path in want.files)),
        asyncio.gather(*(fetcher.run(i, prefixes) for i in want.runs)),
        asyncio.gather(*(fetcher.upstream(t) for t in want.upstream)),
        asyncio.gather(*(fetcher.membership(team, login) for team, login in want.teams)),
        asyncio.gather(*(fetcher.permission(login) for login in want.permissions)),
    )
    extra: dict[str, dict[str, str | None]] = {}
    for (sha, path), text in zip(want.files, files):
        if text is not MISSING:
            extra.setdefault(sha, {})[path] = text
    by_id = {r.id: r for r in snap.workflow_runs}
    unpacked: list[ArtifactFiles] = []
    for run, artifacts in runs:
        if run is not None:
            by_id[run.id] = run  # the fuller record, with artifacts
            unpacked += artifacts
    team_map: dict[str, tuple[str, ...]] = {}
    for (team, login), member in zip(want.teams, teams):
        if member is None:
            continue  # unknown: the source would not tell
        known = team_map.setdefault(team, ())
        if member:
            team_map[team] = tuple(sorted(set(known) | {login}))
    return replace(
        snap,
        policy=frozen_map({**snap.policy, **{p: t for p, t in zip(curves, curve_texts) if isinstance(t, str)}}),
        extra_files=frozen_map({sha: frozen_map(f) for sha, f in extra.items()}),
        workflow_runs=tuple(sorted(by_id.values(), key=lambda r: r.id)),
        artifacts=tuple(sorted(unpacked, key=lambda a: (a.run_id, a.artifact_id))),
        upstream=tuple(upstream),
        teams=frozen_map(team_map),
        collaborators=frozen_map({login: p for login, p in zip(want.permissions, permissions)}),
    )


async def complete(rounds: Rounds, fetcher: Fetcher) -> Rounds:
    """The evidence rounds: until the checks want nothing more, fetch what they want and judge again."""
    while (want := rounds.wanted()) is not None:
        await rounds.add(await with_evidence(fetcher, rounds.snapshot, want))
    return rounds


def complete_here(done: Completion, fetcher: Fetcher) -> Completion:
    """`complete` on the caller's thread, which must not be running an event loop (`asyncio.run`)."""
    asyncio.run(complete(LocalRounds(done), fetcher))
    return done
