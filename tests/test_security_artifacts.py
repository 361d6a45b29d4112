"""Hostile workflow artifacts: refused with a reason, in bounded memory, and check 2 fails naming them.

Artifacts come from the PR's own workflow run. Every archive here is built in
memory at test time; `app.github.artifacts.unpack` is tested directly, and through
the pipeline a world's eval artifact is replaced by the hostile zip
(`artifacts/<id>.zip`, served byte for byte by the fake GitHub) so gather
downloads it over HTTP and check 2 must say what was wrong with it.
"""

from __future__ import annotations

import struct
import tracemalloc
import zipfile

import pytest

from app.github import artifacts
from app.github.artifacts import (
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    MAX_TOTAL_UNCOMPRESSED,
    MAX_ZIP_BYTES,
    unpack,
)
from checks.rules import check02_evals

from .test_replay import assert_same_snapshot, gathered
from .variants import EVAL_ARTIFACT, failing, green_world, replayed, verdict, zipped

ROWS = b'[{"model_prefix": "dsv4", "score": 0.99, "task": "gsm8k"}]'
PEAK_LIMIT = 64_000_000  # bytes traced while refusing any archive below


def refused(data: bytes) -> str:
    """The reason `unpack` refuses `data`, asserting it keeps no files and stays within PEAK_LIMIT."""
    tracemalloc.start()
    try:
        files, reason = unpack(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert files == {} and reason, reason
    assert peak < PEAK_LIMIT, f"refusing took {peak:,} bytes"
    return reason


def _zip_bomb() -> bytes:
    """One entry of 200 MB of zeros, about 200 kB compressed (a ratio near 1000:1)."""
    return zipped([("agg_eval_all.json", b"\0" * 200_000_000)])


def _quine_like_bomb() -> bytes:
    """Many entries of 20 MB zeros each: each within the per-file cap, together beyond the total."""
    return zipped([(f"agg_eval_{n}.json", b"\0" * MAX_FILE_BYTES) for n in range(MAX_TOTAL_UNCOMPRESSED
                                                                               // MAX_FILE_BYTES + 1)])


def _lying_sizes() -> bytes:
    """A central directory that declares 10 bytes for an entry that inflates to 30 MB."""
    data = bytearray(zipped([("agg_eval_all.json", b"[" + b" " * 30_000_000 + b"]")]))
    at = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, at + 24, 10)  # uncompressed size of the central-directory record
    return bytes(data)


def _many_entries(n: int) -> bytes:
    return zipped([(zipfile.ZipInfo(f"{i:x}"), b"") for i in range(n)], zipfile.ZIP_STORED)


# --- unpack ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("build,reason", [
    pytest.param(_zip_bomb, "zip bomb", id="ratio-1000"),
    pytest.param(_quine_like_bomb, "zip bomb", id="total-over-cap"),
    pytest.param(lambda: _many_entries(MAX_ENTRIES + 1), f"over the {MAX_ENTRIES} cap", id="1001-entries"),
    pytest.param(lambda: _many_entries(300_000), "300,000 entries", id="300k-entries"),
    pytest.param(lambda: _many_entries(70_000), "70,000 entries", id="zip64-entry-count"),
    pytest.param(_lying_sizes, "cannot be read", id="sizes-that-lie"),
])
def test_archives_that_expand_without_bound_are_refused_before_they_expand(build, reason):
    assert reason in refused(build())


@pytest.mark.parametrize("name", ["../agg_eval_all.json", "/etc/agg_eval_all.json", "a/../../agg_eval_all.json",
                                  "..\\agg_eval_all.json", "C:/agg_eval_all.json", "\\\\server\\agg_eval_all.json"])
def test_entries_that_climb_out_of_the_archive_refuse_it_whole(name):
    data = zipped([("agg_eval_ok.json", ROWS), (name, ROWS)])
    assert "escapes the archive" in refused(data)


def test_a_nested_zip_is_never_opened():
    inner = zipped([("agg_eval_all.json", ROWS)])
    files, reason = unpack(zipped([("inner.zip", inner), ("results/agg_eval_all.json.zip", inner)]))
    assert (files, reason) == ({}, None)


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04" + b"\xff" * 100, b"not a zip at all",
                                  zipped([("agg_eval_all.json", ROWS)])[:-30]], ids=["empty", "header-only",
                                                                                     "text", "truncated"])
def test_archives_that_are_not_zips_are_refused(data):
    assert "not a valid zip" in refused(data)


def test_an_archive_over_the_size_cap_is_refused_unread():
    assert "over the" in refused(b"\0" * (MAX_ZIP_BYTES + 1))
    assert artifacts.oversize(MAX_ZIP_BYTES + 1) and not artifacts.oversize(MAX_ZIP_BYTES)


def test_a_json_entry_that_is_not_utf8_refuses_the_artifact():
    assert "not UTF-8" in refused(zipped([("agg_eval_all.json", b'["caf\xe9"]')]))


def test_only_json_files_are_kept_and_a_sane_archive_reads():
    files, reason = unpack(zipped([("agg_eval_all.json", ROWS), ("logs/run.txt", b"\xff\xfe"), ("a/", b"")]))
    assert reason is None and files == {"agg_eval_all.json": ROWS.decode()}


# --- through the pipeline -----------------------------------------------------------------------------


def _deep_json() -> bytes:
    return zipped([("agg_eval_all.json", b"[" * 100_000 + b"]" * 100_000)])


HOSTILE = {
    "zip-bomb": (_zip_bomb, "zip bomb"),
    "traversal": (lambda: zipped([("../agg_eval_all.json", ROWS)]), "escapes the archive"),
    "nested-zip": (lambda: zipped([("inner.zip", zipped([("agg_eval_all.json", ROWS)]))]), "no agg_eval_*.json"),
    "malformed-json": (lambda: zipped([("agg_eval_all.json", b'[{"score": 0.99,]')]), "is not valid JSON"),
    "deep-json": (_deep_json, "nests arrays or objects too deeply"),
    "not-rows": (lambda: zipped([("agg_eval_all.json", b'{"score": 0.99}')]), "not a JSON list of row objects"),
    "too-many-entries": (lambda: _many_entries(MAX_ENTRIES + 1), "over the 1000 cap"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_eval_artifact_fails_check_2_naming_it_and_why(tmp_path, case):
    build, reason = HOSTILE[case]
    world = green_world(tmp_path)
    (world / "artifacts" / f"{EVAL_ARTIFACT}.zip").write_bytes(build())
    v = replayed(world)
    assert v.label == "REJECTED"
    why = failing(v)[check02_evals.NUMBER]
    assert "eval_results_all" in why and reason in why
    assert "internal error" not in why
    over_http, offline = gathered(world)
    assert_same_snapshot(over_http, offline)


@pytest.mark.slow
def test_an_eval_artifact_over_the_size_cap_is_never_downloaded(tmp_path):
    """Its listed size refuses it: a sparse 60 MB file the fake would serve is never requested."""
    world = green_world(tmp_path)
    with open(world / "artifacts" / f"{EVAL_ARTIFACT}.zip", "wb") as archive:
        archive.truncate(60_000_000)
    over_http, offline = gathered(world)
    assert_same_snapshot(over_http, offline)
    art = next(a for a in over_http.artifacts if a.artifact_id == EVAL_ARTIFACT)
    assert art.error == f"artifact is 60,000,000 bytes, over the {MAX_ZIP_BYTES:,}-byte cap"
    why = failing(verdict(world))[check02_evals.NUMBER]
    assert "eval_results_all" in why and "over the 50,000,000-byte cap" in why
