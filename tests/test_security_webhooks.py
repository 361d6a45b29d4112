"""POST /webhook under hostile input: every bad delivery is a clear 4xx, or (signed JSON) a logged ignore
or unusable, never a 500.

Extends tests/test_webhook_endpoint.py (signatures, bodies that are not a JSON
object, truncation, missing fields, oversize bodies, unknown events, the
bot's own comments) with what an attacker or a broken proxy can send, and a
property-based fuzz over payloads and headers, signed correctly or not.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.fake_github.payloads import Site
from app.fake_github.state import GitHubState
from app.fake_github.webhooks import stored_event
from app.offline.replay import DEMO_WORLD
from app.offline.world import World
from app.settings import CHECK_NAME, Settings
from app.store.sql import SqliteStore
from app.web.server import create_app
from app.web.webhooks import HANDLED

from .test_webhook_endpoint import SECRET, sign

MAX_BODY = 200_000
ANSWERS = {202, 400, 401, 413}

# (event, action, object id) of real payloads the fake GitHub builds for the demo world.
STORED = [("issue_comment", None, 5001), ("pull_request", "opened", 42), ("pull_request", "synchronize", 42),
          ("workflow_run", "completed", 9001), ("check_run", "rerequested", 601),
          ("issue_comment", "edited", 5001)]


def _stored_payloads() -> dict[tuple[str, str | None, int], dict[str, Any]]:
    state = GitHubState.from_worlds([World.load(DEMO_WORLD)])
    site = Site(state, "http://127.0.0.1:1")
    repo = state.repo("demo-org", "InferenceX-demo")
    out = {key: stored_event(site, repo, key[0], key[1], key[2]).payload for key in STORED}
    out[("check_run", "rerequested", 601)]["check_run"]["name"] = CHECK_NAME  # a re-run of the bot's check
    return out


PAYLOADS = _stored_payloads()


def payload(event: str, action: str | None = None, object_id: int | None = None) -> dict[str, Any]:
    key = next(k for k in STORED if k[0] == event and (action is None or k[1] == action)
               and (object_id is None or k[2] == object_id))
    return copy.deepcopy(PAYLOADS[key])


def new_client(db_path: str) -> tuple[TestClient, SqliteStore]:
    settings = Settings(app_id=1, private_key="-----BEGIN KEY-----", webhook_secret=SECRET, db_path=db_path,
                        max_body_bytes=MAX_BODY)
    store = SqliteStore(db_path)
    return TestClient(create_app(settings, store, run_workers=False)), store


@pytest.fixture
def client(tmp_path):
    c, store = new_client(str(tmp_path / "bot.db"))
    with c:
        c.store = store
        yield c


def raw_post(client, body: bytes, headers: dict[str, str | bytes]):
    return client.post("/webhook", content=body, headers=headers)


def signed_headers(body: bytes, event: str = "issue_comment", guid: str = "guid-1") -> dict[str, str]:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": guid, "X-Hub-Signature-256": sign(body),
            "Content-Type": "application/json", "X-GitHub-Hook-ID": "9",
            "X-GitHub-Hook-Installation-Target-ID": "1"}


# --- signatures ---------------------------------------------------------------------------------


@pytest.mark.parametrize("signature", [
    pytest.param(lambda body: sign(body, "another-secret"), id="other-secret"),
    pytest.param(lambda body: sign(body).upper().replace("SHA256=", "sha256="), id="upper-case-hex"),
    pytest.param(lambda body: " " + sign(body), id="leading-space"),
    pytest.param(lambda body: sign(body) + ", " + sign(body), id="two-signatures"),
    pytest.param(lambda body: sign(body)[:-1], id="one-digit-short"),
    pytest.param(lambda body: sign(body + b" "), id="other-body"),
    pytest.param(lambda body: "sha512=" + hmac.new(SECRET.encode(), body, hashlib.sha512).hexdigest(), id="sha512"),
])
def test_signatures_that_do_not_verify_this_body_are_401(client, signature):
    body = json.dumps(payload("issue_comment")).encode()
    headers = signed_headers(body)
    headers["X-Hub-Signature-256"] = signature(body)
    r = raw_post(client, body, headers)
    assert r.status_code == 401
    assert SECRET not in r.text
    assert client.store.jobs() == []


def test_a_signed_body_cut_short_or_extended_in_transit_is_401(client):
    body = json.dumps(payload("issue_comment")).encode()
    headers = signed_headers(body)
    assert raw_post(client, body[:-10], headers).status_code == 401
    assert raw_post(client, body + b"\n ", headers).status_code == 401
    assert client.store.jobs() == []


def test_the_signature_binds_the_body_not_the_event_header(client):
    """A captured pull_request delivery replayed as another event is no comment: nothing queued."""
    body = json.dumps(payload("pull_request", "opened")).encode()
    r = raw_post(client, body, signed_headers(body, event="issue_comment", guid="replayed-as-comment"))
    assert r.status_code == 202 and r.json()["outcome"] == "unusable"
    assert client.store.jobs() == []


# --- replays ----------------------------------------------------------------------------------


def test_a_delivery_replayed_under_new_ids_only_coalesces_into_the_queued_job(client):
    """The signature does not cover X-GitHub-Delivery: a captured body sent again under fresh GUIDs is
    processed, but jobs coalesce per comment, so a replay storm yields one verification request."""
    body = json.dumps(payload("issue_comment")).encode()
    answers = [raw_post(client, body, signed_headers(body, guid=f"replay-{n}")) for n in range(20)]
    assert {r.status_code for r in answers} == {202}
    assert len(client.store.jobs("queued")) == 1


def test_the_same_guid_from_another_hook_is_its_own_delivery(client):
    body = json.dumps(payload("issue_comment")).encode()
    first = raw_post(client, body, signed_headers(body, guid="shared"))
    other_hook = {**signed_headers(body, guid="shared"), "X-GitHub-Hook-ID": "10"}
    second = raw_post(client, body, other_hook)
    again = raw_post(client, body, other_hook)
    assert [r.json()["outcome"] for r in (first, second, again)] == ["queued", "queued", "duplicate"]


# --- bodies -------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    pytest.param(b"[" * 100_000 + b"]" * 100_000, id="arrays-nested-100k-deep"),
    pytest.param(b'{"a":' * 20_000 + b"1" + b"}" * 20_000, id="objects-nested-20k-deep"),
    pytest.param(b'{"action": "created"' + b", " * 10, id="truncated-object"),
    pytest.param(b'{"action": 1' + b"0" * 5_000 + b"}", id="integer-of-5000-digits"),
    pytest.param(b'{"installation": {"id": 1' + b"0" * 5_000 + b"}}", id="nested-integer-of-5000-digits"),
    pytest.param("{\"action\": \"créé\"}".encode("latin-1"), id="latin-1"),
    pytest.param(b"\x00" * 1_000, id="nul-bytes"),
    pytest.param(b"null", id="null"),
])
def test_bodies_that_are_not_a_usable_json_object_are_400(client, raw):
    r = raw_post(client, raw, signed_headers(raw))
    assert r.status_code == 400
    assert client.store.jobs() == []


def test_a_field_the_bot_never_reads_is_not_decoded(client):
    """Only the fields routing reads are decoded (app/web/webhooks.py `routed_fields`): an integer Python would
    refuse to read, in a field nothing reads, is skipped; the delivery lacks what a job needs, so it is
    acknowledged as unusable and queues nothing."""
    raw = b'{"number": 1' + b"0" * 5_000 + b"}"
    r = raw_post(client, raw, signed_headers(raw))
    assert r.status_code == 202 and r.json()["outcome"] == "unusable"
    assert client.store.jobs() == []


def test_a_streamed_body_over_the_limit_is_413_without_reading_it_all(client):
    """No Content-Length (chunked): the server counts as it reads and stops at the limit."""
    sent = []

    def chunks():
        for _ in range(100):
            sent.append(1)
            yield b"x" * 10_000

    r = client.post("/webhook", content=chunks(), headers={"X-GitHub-Event": "issue_comment",
                                                             "X-GitHub-Delivery": "big",
                                                             "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert r.status_code == 413
    assert client.store.jobs() == []


def test_a_content_length_over_the_limit_is_413_before_the_body(client):
    r = raw_post(client, b"{}", {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "x",
                                 "Content-Length": str(MAX_BODY + 1)})
    assert r.status_code == 413


# --- fields -------------------------------------------------------------------------------------


def _set(data: dict, path: str, value: Any) -> dict:
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    return data


@pytest.mark.parametrize("event,path,value", [
    ("issue_comment", "repository.full_name", "demo-org/\ud800"),
    ("issue_comment", "action", "created\udfff"),
    ("issue_comment", "repository.full_name", "no-slash"),
    ("issue_comment", "repository.full_name", "../../etc/passwd"),
    ("issue_comment", "issue.number", 2**63),
    ("issue_comment", "issue.number", 2**70),
    ("issue_comment", "issue.number", -42),
    ("issue_comment", "issue.number", 0),
    ("issue_comment", "installation.id", 2**64),
    ("issue_comment", "comment.user", "signoff-bot[bot]"),
    ("pull_request", "pull_request.number", 10**30),
    ("workflow_run", "workflow_run.pull_requests", [{"number": 2**64}]),
    ("workflow_run", "workflow_run.id", "nine thousand and one"),
    ("check_run", "check_run.pull_requests", "42"),
])
def test_values_github_never_sends_where_the_bot_reads_are_unusable_not_500(client, event, path, value):
    """Signed, so acknowledged (202), but nothing a job could act on: counted as unusable, nothing queued."""
    data = _set(payload(event), path, value)
    body = json.dumps(data).encode()
    r = raw_post(client, body, signed_headers(body, event=event))
    assert r.status_code == 202 and r.json()["outcome"] == "unusable", r.text
    assert client.store.jobs() == []


@pytest.mark.parametrize("event,path,value", [
    ("issue_comment", "comment.body", {"text": "As a PR reviewer and CODEOWNER"}),
    ("pull_request", "pull_request.head.sha", None),
    ("issue_comment", "issue.labels", [{"archived_by": 7}]),
])
def test_odd_values_where_the_bot_does_not_read_are_queued(client, event, path, value):
    """The job reads the comment or PR from GitHub afresh: the payload's copy of it is never trusted."""
    data = _set(payload(event), path, value)
    body = json.dumps(data).encode()
    r = raw_post(client, body, signed_headers(body, event=event))
    assert r.status_code == 202 and r.json()["outcome"] == "queued", r.text


def test_a_body_with_a_byte_order_mark_is_read_as_the_json_it_is(client):
    raw = b'\xef\xbb\xbf{"action": "created"}'
    r = raw_post(client, raw, signed_headers(raw))
    assert r.status_code == 202 and r.json()["outcome"] == "unusable"


@pytest.mark.parametrize("login,kind", [("SIGNOFF-BOT[BOT]", "User"), ("signoff-bot[bot]", "Bot"),
                                        ("dependabot[bot]", "Bot"), ("github-actions[bot]", "Bot")])
def test_comments_by_the_bot_in_any_spelling_or_by_other_bots_queue_nothing(client, login, kind):
    """No loops: the bot's own verdict comment, delivered back as a webhook, is ignored, however the
    login is cased; so are other bots' comments, whatever they say."""
    data = payload("issue_comment")
    data["comment"]["user"].update(login=login, type=kind)
    data["comment"]["body"] = ("<!-- codeowner-signoff-verify sha=b2 -->\n"
                               "As a PR reviewer and CODEOWNER, ...\n/signoff-recheck")
    body = json.dumps(data).encode()
    r = raw_post(client, body, signed_headers(body, guid=f"bot-{login}"))
    assert r.status_code == 202 and r.json()["outcome"] == "ignored"
    assert client.store.jobs() == []


@pytest.mark.parametrize("event", ["ping", "installation", "push", "star", "security_advisory", "issues"])
def test_events_the_bot_does_not_handle_are_acknowledged_and_ignored(client, event):
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    r = raw_post(client, body, signed_headers(body, event=event, guid=f"ev-{event}"))
    assert r.status_code == 202 and r.json()["outcome"] == "ignored"
    assert client.store.jobs() == []


def test_a_signed_delivery_without_an_event_name_is_400(client):
    body = json.dumps(payload("issue_comment")).encode()
    headers = signed_headers(body)
    del headers["X-GitHub-Event"]
    assert raw_post(client, body, headers).status_code == 400


def test_unsigned_requests_cannot_mint_metric_labels(client):
    """Label values come from the handled events only until the signature is verified."""
    for n in range(50):
        raw_post(client, b"{}", {"X-GitHub-Event": f"made-up-{n}", "X-GitHub-Delivery": str(n),
                                 "X-Hub-Signature-256": "sha256=" + "0" * 64})
    text = client.get("/metrics").text
    assert "made-up" not in text
    assert 'signoff_bot_deliveries_total{event="other",outcome="bad_signature"} 50.0' in text


# --- fuzz ---------------------------------------------------------------------------------------


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every (key or index) path inside a JSON value."""
    out = []
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return out
    for key, child in items:
        out.append(prefix + (key,))
        out.extend(_paths(child, prefix + (key,)))
    return out


PATHS = {key: _paths(p) for key, p in PAYLOADS.items()}
# Fields the router reads: mutated more often, so a few hundred examples reach each of them.
ROUTED_KEYS = {"action", "repository", "full_name", "installation", "id", "number", "issue", "pull_request",
               "comment", "review", "user", "login", "type", "check_run", "workflow_run", "name", "path",
               "pull_requests", "head", "sha"}
ROUTED_PATHS = {key: [p for p in paths if p[-1] in ROUTED_KEYS] for key, paths in PATHS.items()}

_any_text = st.text(st.characters(exclude_categories=()), max_size=40)  # lone surrogates included
_weird_ints = st.sampled_from([0, -1, 2**31, 2**63 - 1, 2**63, 2**64, 10**30])
_weird_texts = st.one_of(_any_text, st.sampled_from(["", "\ud800", "a\udfffb", "no-slash", "a/b/c", "x" * 250_000,
                                                     "é" * 1_000, "Bot", "signoff-bot[bot]", CHECK_NAME,
                                                     "created", "edited", "rerequested", "synchronize"]))
_junk = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**80, max_value=2**80), _weird_ints,
                  st.floats(allow_nan=True, allow_infinity=True), _weird_texts,
                  st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


def _like(value: Any) -> st.SearchStrategy:
    """A value of the same JSON type that GitHub would never send: the schema passes, routing decides."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return _weird_ints
    if isinstance(value, str):
        return _weird_texts
    return _junk


_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _any_text),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(_any_text, inner, max_size=4)), max_leaves=20)
_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
                       max_size=30)
_event = st.one_of(st.sampled_from(sorted(HANDLED) + ["ping", "push", "installation", ""]), _header_text)


@st.composite
def _mutated(draw) -> tuple[str, bytes]:
    """(event, body): a real payload with keys deleted and values replaced by ones of the wrong type or
    size, usually under its own event name (so the schema is what decides), sometimes cut short."""
    key = draw(st.sampled_from(sorted(PAYLOADS, key=str)))
    data = copy.deepcopy(PAYLOADS[key])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.one_of(st.sampled_from(ROUTED_PATHS[key]), st.sampled_from(PATHS[key])))
        parent = data
        try:
            for part in path[:-1]:
                parent = parent[part]
            how = draw(st.sampled_from(["delete", "junk", "same-type", "same-type"]))
            if how == "delete" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif how == "junk":
                parent[path[-1]] = draw(_junk)
            else:
                parent[path[-1]] = draw(_like(parent[path[-1]]))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path
    body = json.dumps(data).encode()
    if draw(st.integers(0, 9)) == 0:
        body = body[:draw(st.integers(0, len(body)))]
    event = draw(st.one_of(st.just(key[0]), st.just(key[0]), st.just(key[0]), _event))
    return event, body


_delivery = st.one_of(
    _mutated(), _mutated(), _mutated(),
    st.tuples(_event, _json.map(lambda v: json.dumps(v).encode())),
    st.tuples(_event, st.binary(max_size=300)),
    st.tuples(_event, st.integers(1, 5_000).map(lambda n: b"[" * n + b"]" * n)),
)
_signature = st.sampled_from(["valid"] * 6 + ["missing", "wrong-secret", "sha1", "garbage"])
_guid = st.one_of(st.uuids().map(str), st.uuids().map(str), _header_text)


def _headers(body: bytes, event: str, guid: str, how: str) -> dict[str, bytes]:
    headers = {"X-GitHub-Event": event.encode("latin-1"), "X-GitHub-Delivery": guid.encode("latin-1"),
               "Content-Type": b"application/json"}
    signature = {"valid": sign(body), "wrong-secret": sign(body, "wrong"), "garbage": "sha256=" + "z" * 64,
                 "sha1": "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()}.get(how)
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature.encode()
    return headers


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory):
    c, store = new_client(str(tmp_path_factory.mktemp("fuzz") / "bot.db"))
    with c:
        c.store = store
        yield c


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(delivery=_delivery, guid=_guid, how=_signature)
def test_fuzzed_deliveries_get_a_4xx_or_202_never_a_500(fuzz_client, delivery, guid, how):
    event, body = delivery
    r = raw_post(fuzz_client, body, _headers(body, event, guid, how))
    assert r.status_code in ANSWERS, (r.status_code, r.text[:300])
    if how != "valid":
        assert r.status_code in (401, 413)
    assert SECRET not in r.text


@pytest.mark.slow
def test_after_the_fuzz_the_server_is_healthy_and_still_queues_real_deliveries(fuzz_client):
    assert fuzz_client.get("/healthz").status_code == 200
    ready = fuzz_client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ok"] is True
    body = json.dumps(payload("issue_comment")).encode()
    r = raw_post(fuzz_client, body, signed_headers(body, guid="after-the-fuzz"))
    assert r.status_code == 202 and r.json()["outcome"] in ("queued", "duplicate")
    metrics = fuzz_client.get("/metrics").text
    assert re.search(r'outcome="(queued|duplicate)"', metrics)
    assert 'outcome="error"' not in metrics
