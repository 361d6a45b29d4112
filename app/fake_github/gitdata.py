"""Git trees and blobs of a repository's world commits, computed on demand.

The contents, trees and blobs routes answer with real git hashes so a client
that caches by SHA, or follows a tree entry to its blob, sees what GitHub
would show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.files import SYMLINK_MODE
from app.offline.world import Commit

from .ids import blob_sha, tree_sha

FILE_MODE = "100644"
TREE_MODE = "40000"


@dataclass(frozen=True)
class Entry:
    """One entry of a tree: a blob (a file, or a symlink holding its target path) or a tree (directory)."""

    name: str
    mode: str
    sha: str
    size: int | None  # bytes of a blob; None for a tree

    @property
    def type(self) -> str:
        return "tree" if self.mode == TREE_MODE else "blob"


@dataclass
class GitObjects:
    """Trees and blobs of every commit hashed so far, keyed by SHA."""

    trees: dict[str, list[Entry]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)  # commit sha -> root tree sha

    def root(self, commit: Commit) -> str:
        """The SHA of the commit's root tree."""
        if commit.sha not in self.roots:
            nested: dict = {}
            for path, data in commit.files.items():
                *dirs, name = path.split("/")
                node = nested
                for d in dirs:
                    node = node.setdefault(d, {})
                node[name] = (data, SYMLINK_MODE if path in commit.symlinks else FILE_MODE)
            self.roots[commit.sha] = self._hash(nested)
        return self.roots[commit.sha]

    def _hash(self, node: dict) -> str:
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append(Entry(name, TREE_MODE, self._hash(value), None))
            else:
                data, mode = value
                sha = blob_sha(data)
                self.blobs[sha] = data
                entries.append(Entry(name, mode, sha, len(data)))
        sha = tree_sha([(e.mode, e.name, e.sha) for e in entries])
        self.trees[sha] = sorted(entries, key=lambda e: e.name)
        return sha

    def walk(self, tree: str, prefix: str = "") -> list[tuple[str, Entry]]:
        """(path, entry) of every entry below `tree`, depth first, as `?recursive=1` lists them."""
        out = []
        for entry in self.trees.get(tree, []):
            path = prefix + entry.name
            out.append((path, entry))
            if entry.type == "tree":
                out.extend(self.walk(entry.sha, path + "/"))
        return out

    def lookup(self, commit: Commit, path: str) -> Entry | None:
        """The entry at `path` in the commit ("" is the root tree)."""
        sha = self.root(commit)
        entry = Entry("", TREE_MODE, sha, None)
        for part in [p for p in path.strip("/").split("/") if p]:
            if entry.type != "tree":
                return None
            entry = next((e for e in self.trees[entry.sha] if e.name == part), None)
            if entry is None:
                return None
        return entry
