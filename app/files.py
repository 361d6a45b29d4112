"""Turning bytes fetched from a pull request into text the checks may read, within limits."""

from __future__ import annotations

import hashlib

MAX_TEXT_BYTES = 5_000_000
SYMLINK_MODE = "120000"  # git's mode of a symbolic link; its blob holds the link's target path
NOT_FOLLOWED = "symbolic link; not followed"


def decode_text(data: bytes | None, limit: int = MAX_TEXT_BYTES) -> tuple[str | None, str | None]:
    """(text, None), or (None, reason) for content the checks must not read as text."""
    if data is None:
        return None, None
    if len(data) > limit:
        return None, f"file is {len(data):,} bytes, over the {limit:,}-byte limit; not read"
    if b"\x00" in data[:8192]:
        return None, "binary file; not read"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start}); not read"


def blob_sha(text: str) -> str:
    """The SHA git (and so GitHub's trees) gives a blob holding `text` as UTF-8."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
