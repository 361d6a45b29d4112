"""Unpack a workflow-artifact zip in memory, refusing anything hostile.

Artifacts are produced by the PR's own workflow run, so they are untrusted:
the zip is never written to disk, its size and entry count are capped before
reading, names that climb out of the archive (`../`, absolute paths) refuse
the whole artifact, and only the JSON files the checks read are kept.
Nested zips are not opened.
"""

from __future__ import annotations

import io
import posixpath
import zipfile

MAX_ZIP_BYTES = 50_000_000
MAX_ENTRIES = 1_000
MAX_TOTAL_UNCOMPRESSED = 100_000_000
MAX_FILE_BYTES = 20_000_000


def unpack(data: bytes) -> tuple[dict[str, str], str | None]:
    """({name: text} of the JSON files, None) or ({}, reason the artifact was refused)."""
    if len(data) > MAX_ZIP_BYTES:
        return {}, f"artifact zip is {len(data):,} bytes, over the {MAX_ZIP_BYTES:,}-byte cap"
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return {}, f"artifact is not a valid zip ({exc})"
    if len(infos) > MAX_ENTRIES:
        return {}, f"artifact has {len(infos)} entries, over the {MAX_ENTRIES} cap"
    total = 0
    for info in infos:
        name = info.filename
        normal = posixpath.normpath(name)
        if name.startswith(("/", "\\")) or normal.startswith("..") or "\\" in name or ":" in name.split("/")[0]:
            return {}, f"artifact entry {name!r} escapes the archive; refused"
        total += info.file_size
        if info.file_size > MAX_FILE_BYTES or total > MAX_TOTAL_UNCOMPRESSED:
            return {}, f"artifact expands beyond {MAX_TOTAL_UNCOMPRESSED:,} bytes (zip bomb?); refused"
    files: dict[str, str] = {}
    for info in infos:
        if info.is_dir() or not info.filename.endswith(".json"):
            continue
        try:
            with archive.open(info) as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError) as exc:
            return {}, f"artifact entry {info.filename!r} cannot be read ({exc})"
        if len(raw) > MAX_FILE_BYTES:  # the header lied about the size
            return {}, f"artifact entry {info.filename!r} expands beyond its declared size; refused"
        try:
            files[info.filename] = raw.decode("utf-8")
        except UnicodeDecodeError:
            return {}, f"artifact entry {info.filename!r} is not UTF-8"
    return dict(sorted(files.items())), None
