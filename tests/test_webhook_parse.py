"""A delivery's body reads as `json.loads` reads it (app/web/ingest.py `parse`: msgspec first, `json.loads` for the
rest): the same values, of the same types, in the same order, and the same bodies refused."""

from __future__ import annotations

import codecs
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.settings import CHECK_NAME
from app.web.ingest import parse, read
from app.web.webhooks import HANDLED, Unusable, route

from .conftest import ROOT, present, shared_files

OCTOKIT = ROOT.parent / "shared" / "fixtures" / "webhooks" / "octokit"

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


# --- the fields routing reads (app/web/webhooks.py `routed_fields`) ----------------------------------------

ANY_JSON = st.recursive(SCALARS.filter(lambda v: not (isinstance(v, float) and v != v)),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
FIELD = st.one_of(ANY_JSON, st.sampled_from(["created", "edited", "submitted", "rerequested", "completed", "opened",
                                             "synchronize", "o/r", "a" * 40, "Bot", "signoff-bot[bot]",
                                             CHECK_NAME, ".github/workflows/sweep.yml"]),
                  st.integers(min_value=-3, max_value=2**64))


def _object(fields: dict) -> st.SearchStrategy:
    """An object with any of `fields` (name: strategy), each of them possibly absent, and fields nothing reads."""
    return st.fixed_dictionaries({}, optional={**fields, "unread": ANY_JSON, "body": st.text()})


USER = _object({"login": FIELD, "type": FIELD}) | FIELD
WRITTEN = _object({"id": FIELD, "user": USER}) | FIELD
RUN = _object({"id": FIELD, "name": FIELD, "path": FIELD, "head_sha": FIELD,
               "pull_requests": st.lists(_object({"number": FIELD}) | FIELD, max_size=3) | FIELD}) | FIELD
PAYLOADS = _object({
    "action": FIELD, "before": FIELD, "repository": _object({"full_name": FIELD}) | FIELD,
    "installation": _object({"id": FIELD}) | FIELD, "issue": _object({"number": FIELD, "pull_request": FIELD}) | FIELD,
    "comment": WRITTEN, "review": WRITTEN, "pull_request": _object({"number": FIELD}) | FIELD,
    "check_run": RUN, "check_suite": RUN, "workflow_run": RUN,
})


def _decided(event: str, payload: object) -> object:
    """What route makes of a payload: its Routed, or the field it finds unusable."""
    try:
        return route(event, payload, "signoff-bot[bot]", CHECK_NAME)
    except Unusable as exc:
        return ("unusable", str(exc))


@settings(max_examples=400, deadline=None)
@given(PAYLOADS, st.sampled_from(sorted(HANDLED) + ["push"]))
def test_route_decides_alike_on_the_fields_it_reads_and_on_the_whole_payload(payload, event):
    raw = json.dumps(payload).encode()
    assert _decided(event, read(raw)) == _decided(event, json.loads(raw))


@pytest.mark.parametrize("path", shared_files(OCTOKIT, "*/*.json"))
def test_route_decides_alike_on_githubs_own_deliveries(path):
    raw = present(path, OCTOKIT).read_bytes()
    event = path.parent.name
    assert _decided(event, read(raw)) == _decided(event, json.loads(raw))


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "null", "3"])
def test_a_body_that_is_not_an_object_reads_as_its_value(text):
    assert read(text.encode()) == json.loads(text)
