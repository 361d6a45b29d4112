"""Stable identifiers for objects a world leaves unnamed, and git's object hashes.

GitHub objects carry numeric ids and node ids that worlds do not spell out;
deriving them from a hash of what the object is keeps them stable across runs,
so tests and benchmarks can compare responses byte for byte.
"""

from __future__ import annotations

import base64
import hashlib


def stable_id(kind: str, key: str) -> int:
    """A positive id, the same for the same (kind, key) in every run."""
    digest = hashlib.sha256(f"{kind}:{key}".encode()).digest()
    return 10_000_000 + int.from_bytes(digest[:4], "big")


def node_id(type_name: str, number: int) -> str:
    """A GraphQL node id in GitHub's legacy format (base64 of `0<len>:<Type><id>`)."""
    raw = f"0{len(type_name)}:{type_name}{number}"
    return base64.b64encode(raw.encode()).decode().rstrip("=")


def blob_sha(data: bytes) -> str:
    """The git blob hash of `data`, as `git hash-object` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_sha(entries: list[tuple[str, str, str]]) -> str:
    """The git tree hash of (mode, name, sha) entries, sorted as git sorts them."""
    def key(entry: tuple[str, str, str]) -> bytes:
        mode, name, _sha = entry
        return (name + "/" if mode == "40000" else name).encode()

    body = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(sha)
                    for mode, name, sha in sorted(entries, key=key))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
