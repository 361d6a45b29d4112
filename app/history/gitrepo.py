"""A local git repository read as a world (`app.offline.world`), for `signoff-bot backtest`.

Commits are read on demand through one `git cat-file --batch` process: a
commit's tree is listed once (`git ls-tree`), a blob is read when a check
asks for it, and files whose blob ids are equal at base and head are never
read at all. Nothing is checked out and nothing of the repository runs.
"""

from __future__ import annotations

import subprocess
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from app.files import SYMLINK_MODE
from app.offline.world import Commit, Repo, World


class GitError(Exception):
    """git could not answer: not a repository, an unknown revision, an unreadable object."""


BLOB_CACHE_BYTES = 64_000_000


class Git:
    """One repository; `git cat-file --batch` for objects, kept open for the life of the reader.

    Blobs are kept by id, up to `BLOB_CACHE_BYTES`, least recently used out first: consecutive merged PRs
    share most of their files (one PR's head is the next one's base), so most reads are answered here.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise GitError(f"{self.path} is not a directory")
        inside = self.run("rev-parse", "--is-inside-work-tree", "--is-bare-repository", check=False)
        if inside.returncode != 0:
            raise GitError(f"{self.path} is not a git repository")
        self._batch: subprocess.Popen | None = None
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._cached = 0

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True)
        if check and done.returncode != 0:
            raise GitError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
        return done

    def text(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", errors="replace")

    def object(self, oid: str) -> bytes:
        """The raw content of object `oid`."""
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "-C", str(self.path), "cat-file", "--batch"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin and self._batch.stdout
        self._batch.stdin.write(oid.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) != 3:
            raise GitError(f"object {oid} cannot be read ({b' '.join(header).decode(errors='replace')})")
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)  # the newline after every object
        return data

    def blob(self, oid: str) -> bytes:
        """A blob's content, from the cache when it was read lately."""
        data = self._blobs.get(oid)
        if data is not None:
            self._blobs.move_to_end(oid)
            return data
        data = self.object(oid)
        self._blobs[oid] = data
        self._cached += len(data)
        while self._cached > BLOB_CACHE_BYTES and len(self._blobs) > 1:
            _oid, old = self._blobs.popitem(last=False)
            self._cached -= len(old)
        return data

    def tree(self, commit: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) of every file in `commit`'s tree."""
        out: dict[str, tuple[str, str]] = {}
        raw = self.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout
        for entry in raw.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            if kind == "blob":
                out[path.decode("utf-8", errors="surrogateescape")] = (mode, oid)
        return out

    def close(self) -> None:
        if self._batch is not None:
            self._batch.stdin.close()  # type: ignore[union-attr]
            self._batch.wait()
            self._batch = None


class Blobs(Mapping):
    """path -> bytes of one commit's files, each read when asked for (through the repository's blob cache);
    `blob_id` without reading."""

    def __init__(self, git: Git, entries: dict[str, tuple[str, str]]):
        self._git = git
        self._entries = entries

    def __getitem__(self, path: str) -> bytes:
        return self._git.blob(self._entries[path][1])

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        return path in self._entries

    def blob_id(self, path: str) -> str:
        return self._entries[path][1]


@dataclass
class GitCommit(Commit):  # cached_property here: a reading of what it was built from, which never changes
    """A commit of a `Git` repository; its files are `Blobs`, read on demand."""

    git: Git | None = None

    @cached_property
    def _tree_entries(self) -> dict[str, tuple[str, str]]:
        assert self.git is not None
        return self.git.tree(self.sha)

    @property
    def files(self) -> Mapping[str, bytes]:  # type: ignore[override]
        return self._blobs

    @cached_property
    def _blobs(self) -> Blobs:
        assert self.git is not None
        return Blobs(self.git, self._tree_entries)

    @property
    def symlinks(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(p for p, (mode, _) in self._tree_entries.items() if mode == SYMLINK_MODE)


class Commits(Mapping):
    """sha -> GitCommit for any commit of the repository, made when first asked for; the last `KEEP` made are
    kept (a commit's tree listing is its memory)."""

    KEEP = 8

    def __init__(self, git: Git):
        self._git = git
        self._made: OrderedDict[str, GitCommit] = OrderedDict()

    def __getitem__(self, sha: str) -> GitCommit:
        if sha in self._made:
            self._made.move_to_end(sha)
            return self._made[sha]
        if self._git.run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode != 0:
            raise KeyError(sha)
        commit = self._made[sha] = GitCommit(sha, sha, [], "", "", self._git.path, git=self._git)
        while len(self._made) > self.KEEP:
            self._made.popitem(last=False)
        return commit

    def __iter__(self) -> Iterator[str]:
        return iter(self._made)

    def __len__(self) -> int:
        return len(self._made)


def pull_world(git: Git, commits: Commits, repo_name: str, pr: dict, now: str) -> World:
    """A world holding one pull request `pr` (base and head SHAs given) of the repository, reviewed at `now`.

    The base branch's tip is the PR's base commit, so policy files are read from it, as the App reads them
    from the base branch when the PR is verified.
    """
    repo = Repo(full_name=repo_name, default_branch=pr["base"]["ref"], installation_id=0, collaborators={},
                commits=commits, branches={pr["base"]["ref"]: pr["base"]["sha"]},  # type: ignore[arg-type]
                pulls={pr["number"]: pr}, check_runs=[], workflow_runs=[])
    return World(git.path, now, {}, {repo_name: repo})
