"""What the checks need beyond the base snapshot: deciding it is policy, fetching it is the app's.

Gathering runs in two rounds. The app first builds a snapshot of the PR
(files, comments, commits, check runs, policy files, master configs); then
it asks `wanted(snapshot)` which further evidence the checks name, fetches
exactly that, and builds the final snapshot. Each check module may define
`wants(ctx) -> Wanted`; this module merges them. A `wants` that raises asks
for nothing: gathering goes on, and the check, raising again when the engine
runs it, fails closed with the error (`checks.engine.run_check`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


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
    runs: tuple[int, ...] = ()  # workflow runs whose eval and benchmark artifacts are needed
    upstream: tuple[UpstreamTarget, ...] = ()
    teams: tuple[tuple[str, str], ...] = ()  # ("org/slug", login): is login a member of the team?
    permissions: tuple[str, ...] = ()  # logins whose repository permission is needed
    golden: tuple[str, ...] = ()  # stems of golden AL curves (Policy.is_golden_curve) read from the base branch tip

    def __or__(self, other: "Wanted") -> "Wanted":
        return Wanted(**{f.name: tuple(sorted(set(getattr(self, f.name)) | set(getattr(other, f.name))))
                         for f in fields(self)})

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def wanted(snap, modules=None) -> Wanted:
    """Everything the checks (default: all registered, and lint) ask for, given what `snap` holds."""
    from .context import Context

    if modules is None:
        from . import lint
        from .engine import CHECKS

        modules = (*CHECKS, lint)
    ctx = Context(snap)
    total = Wanted()
    for module in modules:
        wants = getattr(module, "wants", None)
        if wants is None:
            continue
        try:
            more = wants(ctx)
        except Exception:  # noqa: BLE001 - a bug on hostile input: the check fails closed when it runs
            more = Wanted()
        total = total | more
    return total
