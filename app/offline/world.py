"""World fixtures (see WORLD_FORMAT.md): GitHub's state for some pull requests, on disk.

`World.load(dir)` reads `world.yaml` and serves file contents of commits from
`trees/<name>/` and artifact files from `artifacts/<id>/`, lazily and read-only;
`artifacts/<id>.zip`, when present, is the artifact's archive as served, byte
for byte (for archives no well-behaved upload makes: zip bombs, `../` entries).
A symlink in a tree is a git symbolic link (mode 120000: its content is the
target path, never the target's content); links are never followed, so a world
cannot make the fake serve a file from outside it.
The fake GitHub server answers the REST API from a World; `diff_trees`
computes a pull request's files the way GitHub lists them.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from app.files import decode_text


@dataclass
class Commit:
    sha: str
    tree: str
    parents: list[str]
    message: str
    author: str
    root: Path

    _files: dict[str, bytes] | None = None
    _symlinks: frozenset[str] = frozenset()

    @property
    def files(self) -> dict[str, bytes]:
        """path -> bytes of every file in this commit's tree (a symlink's bytes are its target path)."""
        if self._files is None:
            self._load()
        return self._files

    @property
    def symlinks(self) -> frozenset[str]:
        """Paths of this commit's tree that are symbolic links."""
        if self._files is None:
            self._load()
        return self._symlinks

    def _load(self) -> None:
        base = self.root / "trees" / self.tree
        files: dict[str, bytes] = {}
        links: set[str] = set()
        if base.is_dir():
            for dirpath, dirs, names in os.walk(base):  # links to directories are listed, not entered
                for name in names + dirs:
                    full = Path(dirpath) / name
                    path = full.relative_to(base).as_posix()
                    if full.is_symlink():
                        files[path] = os.fsencode(os.readlink(full))
                        links.add(path)
                    elif name in names:
                        files[path] = full.read_bytes()
        self._files = dict(sorted(files.items()))
        self._symlinks = frozenset(links)


@dataclass
class Repo:
    full_name: str
    default_branch: str
    installation_id: int | None
    collaborators: dict[str, str]
    commits: dict[str, Commit]
    branches: dict[str, str]
    pulls: dict[int, dict[str, Any]]
    check_runs: list[dict[str, Any]]
    workflow_runs: list[dict[str, Any]]
    raw: dict[str, Any] = field(default_factory=dict)

    def commit(self, ref: str) -> Commit | None:
        """A commit by SHA, or the tip of a branch."""
        sha = self.branches.get(ref, ref)
        return self.commits.get(sha)

    def workflow_run(self, run_id: int) -> dict[str, Any] | None:
        return next((r for r in self.workflow_runs if r.get("id") == run_id), None)


@dataclass
class World:
    root: Path
    now: str
    teams: dict[str, list[str]]
    repos: dict[str, Repo]
    tokens: list[str] = field(default_factory=list)  # workflow tokens the fake accepts: TOKEN[:perm,perm]

    @classmethod
    def load(cls, root: str | Path) -> "World":
        root = Path(root)
        data = yaml.safe_load((root / "world.yaml").read_text(encoding="utf-8")) or {}
        repos: dict[str, Repo] = {}
        for r in data.get("repos") or []:
            commits = {
                c["sha"]: Commit(c["sha"], c.get("tree", ""), list(c.get("parents") or []),
                                 c.get("message", ""), c.get("author", ""), root)
                for c in r.get("commits") or []
            }
            repos[r["full_name"]] = Repo(
                full_name=r["full_name"],
                default_branch=r.get("default_branch", "main"),
                installation_id=r.get("installation_id"),
                collaborators=dict(r.get("collaborators") or {}),
                commits=commits,
                branches=dict(r.get("branches") or {}),
                pulls={p["number"]: p for p in r.get("pulls") or []},
                check_runs=list(r.get("check_runs") or []),
                workflow_runs=list(r.get("workflow_runs") or []),
                raw=r,
            )
        now = data.get("now") or "1970-01-01T00:00:00Z"
        return cls(root, str(now), {k: list(v or []) for k, v in (data.get("teams") or {}).items()}, repos,
                   [str(t) for t in data.get("tokens") or []])

    def artifact_files(self, artifact_id: int) -> dict[str, bytes]:
        """name -> bytes of the files inside artifact `artifact_id` (relative paths; symlinks skipped)."""
        base = self.root / "artifacts" / str(artifact_id)
        files: dict[str, bytes] = {}
        if base.is_dir():
            for dirpath, _dirs, names in os.walk(base):
                for name in names:
                    full = Path(dirpath) / name
                    if not full.is_symlink():
                        files[full.relative_to(base).as_posix()] = full.read_bytes()
        return dict(sorted(files.items()))

    def archive_path(self, artifact_id: int) -> Path | None:
        """The artifact's prebuilt zip (`artifacts/<id>.zip`), or None when it is built from its files."""
        path = self.root / "artifacts" / f"{artifact_id}.zip"
        return path if path.is_file() and not path.is_symlink() else None

    def artifact_size(self, artifact_id: int) -> int:
        """The size GitHub reports: the prebuilt zip's bytes (without reading them), else the files' total."""
        path = self.archive_path(artifact_id)
        return path.stat().st_size if path else sum(len(b) for b in self.artifact_files(artifact_id).values())

    def pull_repo(self, number: int | None = None) -> tuple[Repo, dict[str, Any]]:
        """The repository and pull request to verify: `number`, or the world's only PR with an installation."""
        candidates = [(repo, pr) for repo in self.repos.values() if repo.installation_id is not None
                      for pr in repo.pulls.values() if number is None or pr["number"] == number]
        if not candidates:
            raise LookupError(f"no pull request #{number} in {self.root}" if number else f"no pull request in {self.root}")
        if len(candidates) > 1 and number is None:
            raise LookupError(f"{self.root} holds several pull requests; pass --pr")
        return candidates[0]


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # added | modified | removed | renamed
    previous_path: str | None
    patch: str | None
    additions: int
    deletions: int
    base: bytes | None
    head: bytes | None


def diff_trees(base: Mapping[str, bytes], head: Mapping[str, bytes]) -> list[FileDiff]:
    """The files GitHub lists for a base -> head comparison, sorted by path.

    A removed file and an added file with identical content are one rename.
    Mappings that know their blob ids (`blob_id(path)`, as `app.history.gitrepo.Blobs`)
    are compared by id, so an unchanged file is never read.
    """
    removed = {p: base[p] for p in base if p not in head}
    added = {p: head[p] for p in head if p not in base}
    renames: dict[str, str] = {}
    by_content: dict[bytes, list[str]] = {}
    for p in sorted(removed):
        by_content.setdefault(removed[p], []).append(p)
    for p in sorted(added):
        olds = by_content.get(added[p])
        if olds:
            renames[p] = olds.pop(0)
    renamed_from = set(renames.values())
    out: list[FileDiff] = []
    for path in sorted(set(base) | set(head)):
        if path in renamed_from:
            continue
        old_path = renames.get(path)
        if old_path is None and path in base and path in head and _same(base, head, path):
            continue
        b = base.get(old_path or path)
        h = head.get(path)
        status = "renamed" if old_path else "added" if b is None else "removed" if h is None else "modified"
        patch, adds, dels = unified_patch(b, h)
        out.append(FileDiff(path, status, old_path, patch, adds, dels, b, h))
    return out


def _same(base: Mapping[str, bytes], head: Mapping[str, bytes], path: str) -> bool:
    ids = getattr(base, "blob_id", None), getattr(head, "blob_id", None)
    if ids[0] and ids[1]:
        return ids[0](path) == ids[1](path)
    return base[path] == head[path]


def unified_patch(base: bytes | None, head: bytes | None) -> tuple[str | None, int, int]:
    """GitHub's `patch` field (hunks only, no file headers), additions, deletions; None for binary."""
    a_text, a_err = decode_text(base) if base is not None else ("", None)
    b_text, b_err = decode_text(head) if head is not None else ("", None)
    if a_err or b_err or a_text is None or b_text is None:
        return None, 0, 0
    a_lines = a_text.splitlines()
    b_lines = b_text.splitlines()
    lines = list(difflib.unified_diff(a_lines, b_lines, lineterm="", n=3))[2:]
    adds = sum(1 for line in lines if line.startswith("+"))
    dels = sum(1 for line in lines if line.startswith("-"))
    return "\n".join(lines) if lines else None, adds, dels
