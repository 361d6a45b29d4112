"""A delivery's body reads as `json.loads` reads it (app/ingest.py `parse`: msgspec first, `json.loads` for the
rest): the same values, of the same types, in the same order, and the same bodies refused."""

from __future__ import annotations

import codecs
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ingest import parse

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=40)


def _read_alike(text: str | bytes) -> None:
    raw = bytearray(text.encode() if isinstance(text, str) else text)
    assert repr(parse(raw)) == repr(json.loads(bytes(raw)))  # repr: 1 and 1.0, -0.0, NaN and key order too


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans(), st.sampled_from([None, 2]))
def test_any_json_text_reads_as_json_loads_reads_it(value, ascii_only, indent):
    _read_alike(json.dumps(value, ensure_ascii=ascii_only, indent=indent))


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}',  # a repeated key: the last one
    '{"b": 1, "a": 2, "c": {"z": 0, "y": 1}}',
    '["\\ud800", "\\udc00x", "\\ud83d\\ude00"]',  # lone surrogates, escaped, and a pair
    '[NaN, Infinity, -Infinity, 1e400, -0.0, -0, 0.1, 1E+2]',
    '[18446744073709551616, -9223372036854775809, 9223372036854775807]',  # beyond 64 bits, and the limit
    '  {"padded": true}\n\t ',
    '"just a string"',
    "[" * 600 + "]" * 600,
])
def test_the_edges_read_as_json_loads_reads_them(text):
    _read_alike(text)


@pytest.mark.parametrize("raw", [
    codecs.BOM_UTF8 + b'{"a": 1}',
    '{"a": "\u00e9"}'.encode("utf-16"),
    '{"a": "\u00e9"}'.encode("utf-32-le"),
])
def test_other_encodings_json_loads_takes_are_still_taken(raw):
    _read_alike(raw)


@pytest.mark.parametrize("raw", [b"", b"{", b'{"a": }', b"[1,]", b"\xff\xfe\xfd", b"{'a': 1}", b"[" * 5000])
def test_what_json_loads_refuses_is_refused(raw):
    with pytest.raises((ValueError, RecursionError)):
        parse(bytearray(raw))
