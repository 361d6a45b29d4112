"""Evidence beyond the first snapshot: what the checks name while they run, and how it is named.

The app first builds a snapshot of the PR (files, comments, commits, check
runs, policy files, master configs). The checks then run on it and ask the
context for what they need (`Context.need`); what the snapshot does not hold
yet comes back as `MISSING` and is recorded as `Wanted`. The app fetches
exactly that, the checks run again on the fuller snapshot (`checks.engine`),
until nothing new is wanted. Deciding what is needed is policy; fetching it
is the app's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal


class Missing:
    """What a `Context.need` read returns for evidence the snapshot does not hold yet (falsy)."""

    _instance: "Missing | None" = None

    def __new__(cls) -> "Missing":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


@dataclass(frozen=True, order=True)
class UpstreamTarget:
    """Where an upstream recipe link is read from.

    kind "pull": pull request `number` of `repo`.
    kind "page": a published page, built from the first of `paths` that exists
    on `repo`'s default branch.
    """

    url: str
    kind: str
    repo: str
    number: int | None = None
    paths: tuple[str, ...] = ()

    def not_found(self) -> str:
        """Why the document is missing when GitHub answers 404 (it cannot tell which part is missing)."""
        what = f"{self.repo}#{self.number}" if self.kind == "pull" else self.repo
        return f"{what} was not found (missing, private or unreachable)"


@dataclass(frozen=True)
class Wanted:
    files: tuple[tuple[str, str], ...] = ()  # (commit sha, path)
    runs: tuple[int, ...] = ()  # workflow runs whose record, eval and benchmark artifacts are needed
    upstream: tuple[UpstreamTarget, ...] = ()
    teams: tuple[tuple[str, str], ...] = ()  # ("org/slug", login): is login a member of the team?
    permissions: tuple[str, ...] = ()  # logins whose repository permission is needed
    golden: tuple[str, ...] = ()  # stems of golden AL curves (Policy.is_golden_curve) read from the base branch tip

    def __or__(self, other: "Wanted") -> "Wanted":
        return Wanted(**{f.name: tuple(sorted(set(getattr(self, f.name)) | set(getattr(other, f.name))))
                         for f in fields(self)})

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def __le__(self, other: "Wanted") -> bool:
        """Whether everything wanted here is wanted in `other` too."""
        return all(set(getattr(self, f.name)) <= set(getattr(other, f.name)) for f in fields(self))
