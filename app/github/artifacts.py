"""Unpack a workflow-artifact zip in memory, refusing anything hostile.

Artifacts are produced by the PR's own workflow run, so they are untrusted:
the zip is never written to disk, its size and entry count are capped before
reading, names that climb out of the archive (`../`, absolute paths) refuse
the whole artifact, and only the JSON files the checks read are kept.
Nested zips are not opened. The entry count and central-directory size are
read from the end record before `zipfile` parses the directory: a 43 MB zip
of 500,000 empty entries would otherwise cost 250 MB and seconds to list.
"""

from __future__ import annotations

import io
import posixpath
import zipfile

MAX_ZIP_BYTES = 50_000_000
MAX_ENTRIES = 1_000
MAX_TOTAL_UNCOMPRESSED = 100_000_000
MAX_FILE_BYTES = 20_000_000
MAX_DIRECTORY_BYTES = MAX_ENTRIES * 2_048  # central-directory records zipfile may parse

_END = b"PK\x05\x06"  # end of central directory record (22 bytes + comment)
_END64_LOCATOR = b"PK\x06\x07"  # 20 bytes, right before the end record
_END64 = b"PK\x06\x06"  # 56 bytes, right before the locator


def oversize(size: int) -> str | None:
    """Why an artifact of `size` bytes is not downloaded at all; None when it is within the cap."""
    if size > MAX_ZIP_BYTES:
        return f"artifact is {size:,} bytes, over the {MAX_ZIP_BYTES:,}-byte cap"
    return None


def _declared_directory(data: bytes) -> tuple[int, int] | None:
    """(entries, directory bytes) the end records declare, read where `zipfile` reads them; None if absent."""
    end = len(data) - 22
    if end < 0 or data[end:end + 4] != _END:
        end = data.rfind(_END, max(0, end - 65_535))  # the record ends in a comment of up to 64 kB
    if end < 0 or len(data) < end + 22:
        return None
    entries = int.from_bytes(data[end + 10:end + 12], "little")
    size = int.from_bytes(data[end + 12:end + 16], "little")
    locator, record = end - 20, end - 76
    if (entries == 0xFFFF or size == 0xFFFFFFFF) and record >= 0 and data[locator:locator + 4] == _END64_LOCATOR \
            and data[record:record + 4] == _END64:
        entries = int.from_bytes(data[record + 32:record + 40], "little")
        size = int.from_bytes(data[record + 40:record + 48], "little")
    return entries, size


def unpack(data: bytes) -> tuple[dict[str, str], str | None]:
    """({name: text} of the JSON files, None) or ({}, reason the artifact was refused)."""
    too_big = oversize(len(data))
    if too_big:
        return {}, too_big
    declared = _declared_directory(data)
    if declared is not None and (declared[0] > MAX_ENTRIES or declared[1] > MAX_DIRECTORY_BYTES):
        return {}, (f"artifact declares {declared[0]:,} entries in a {declared[1]:,}-byte directory, over the "
                    f"{MAX_ENTRIES} cap; refused")
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
