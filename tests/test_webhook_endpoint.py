"""POST /webhook: signatures, bad input, duplicates, routing; never a 500 for bad input."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from app.fake_github.payloads import Site
from app.fake_github.state import GitHubState
from app.fake_github.webhooks import stored_event
from app.offline.replay import DEMO_WORLD
from app.offline.world import World
from app.settings import Settings
from app.store.sql import SqliteStore
from app.web.ingest import Reply
from app.web.server import create_app

SECRET = "s3cret-for-tests"
REPO = "demo-org/InferenceX-demo"


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture(scope="module")
def events():
    state = GitHubState.from_worlds([World.load(DEMO_WORLD)])
    site = Site(state, "http://127.0.0.1:1")
    repo = state.repo("demo-org", "InferenceX-demo")

    def make(event: str, object_id: int, action: str | None = None) -> dict:
        return stored_event(site, repo, event, action, object_id).payload

    return make


@pytest.fixture
def client(tmp_path):
    settings = Settings(app_id=1, private_key="-----BEGIN KEY-----", webhook_secret=SECRET,
                        db_path=str(tmp_path / "bot.db"), max_body_bytes=200_000)
    store = SqliteStore(settings.db_path)
    app = create_app(settings, store, run_workers=False)
    with TestClient(app) as c:
        c.store = store
        yield c


def post(client, event: str, payload, guid: str = "guid-1", signature: str | None = None, raw: bytes | None = None):
    body = raw if raw is not None else json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": guid, "Content-Type": "application/json",
               "X-GitHub-Hook-ID": "9", "X-GitHub-Hook-Installation-Target-ID": "1"}
    if signature != "":
        headers["X-Hub-Signature-256"] = signature or sign(body)
    return client.post("/webhook", content=body, headers=headers)


def test_a_signed_sign_off_comment_is_queued(client, events):
    r = post(client, "issue_comment", events("issue_comment", 5001))
    assert r.status_code == 202 and r.json()["outcome"] == "queued"
    jobs = client.store.jobs("queued")
    assert [(j["kind"], j["repo"], j["pr"]) for j in jobs] == [("comment", REPO, 42)]


@pytest.mark.parametrize("signature", ["", "sha256=deadbeef", "sha1=" + "0" * 40, "0" * 64, sign(b"other body"),
                                       "sha256=" + "G" * 64])
def test_bad_signatures_are_401(client, events, signature):
    payload = events("issue_comment", 5001)
    body = json.dumps(payload).encode()
    if signature == "0" * 64:  # the right digest without the sha256= prefix (githubkit would try SHA-1)
        signature = sign(body).removeprefix("sha256=")
    r = post(client, "issue_comment", payload, signature=signature)
    assert r.status_code == 401
    assert client.store.jobs() == []


def test_a_sha1_signature_is_refused_even_when_correct(client, events):
    body = json.dumps(events("issue_comment", 5001)).encode()
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    assert post(client, "issue_comment", None, raw=body, signature=sha1).status_code == 401


def test_a_repeated_delivery_is_processed_once(client, events):
    payload = events("issue_comment", 5001)
    assert post(client, "issue_comment", payload, guid="same").json()["outcome"] == "queued"
    again = post(client, "issue_comment", payload, guid="same")
    assert again.status_code == 202 and again.json()["outcome"] == "duplicate"
    assert len(client.store.jobs()) == 1


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'"text"'])
def test_bodies_that_are_not_a_json_object_are_400(client, raw):
    assert post(client, "issue_comment", None, raw=raw).status_code == 400


def test_a_truncated_payload_is_400(client, events):
    body = json.dumps(events("issue_comment", 5001)).encode()[:500]
    assert post(client, "issue_comment", None, raw=body).status_code == 400


def test_a_signed_delivery_without_a_field_the_bot_needs_is_acknowledged_logged_and_counted(client, events, caplog):
    """Never a 4xx (GitHub does not redeliver on its own): 202, the field named, nothing queued."""
    payload = events("issue_comment", 5001)
    del payload["comment"]
    r = post(client, "issue_comment", payload)
    assert r.status_code == 202 and r.json()["outcome"] == "unusable" and "comment.user.login" in r.json()["reason"]
    payload = events("issue_comment", 5001)
    payload["issue"]["number"] = "forty-two"
    r = post(client, "issue_comment", payload, guid="g2")
    assert r.status_code == 202 and "issue.number" in r.json()["reason"]
    assert client.store.jobs() == []
    logged = [rec for rec in caplog.records if getattr(rec, "field", None)]
    assert [(rec.delivery, rec.field) for rec in logged] == [("guid-1", "comment.user.login"), ("g2", "issue.number")]
    assert 'signoff_bot_deliveries_total{event="issue_comment",outcome="unusable"} 2.0' in client.get("/metrics").text


def test_fields_the_bot_does_not_read_never_reject_a_delivery(client, events):
    """Extra, missing or differently typed fields that no job needs, as real deliveries have them."""
    payload = events("pull_request", 42, "opened")
    payload["pull_request"]["labels"] = [{"id": 1, "name": "bug", "archived_by": {"unexpected": "shape"}}]
    payload["pull_request"]["head"] = None
    payload["repository"] = {"full_name": REPO}
    payload["sender"] = "not an object"
    payload["something_new"] = {"GitHub": "adds fields"}
    del payload["pull_request"]["title"]
    r = post(client, "pull_request", payload)
    assert r.status_code == 202 and r.json()["outcome"] == "queued"
    assert sorted(j["kind"] for j in client.store.jobs()) == ["lint", "opened"]


def test_an_oversize_body_is_413(client):
    raw = b'{"x": "' + b"a" * 300_000 + b'"}'
    assert post(client, "issue_comment", None, raw=raw).status_code == 413


def test_unknown_events_are_acknowledged_and_ignored(client):
    r = post(client, "star", {"action": "created", "repository": {"full_name": REPO}})
    assert r.status_code == 202 and r.json()["outcome"] == "ignored"
    assert client.store.jobs() == []


def test_missing_delivery_header_is_400(client, events):
    body = json.dumps(events("issue_comment", 5001)).encode()
    r = client.post("/webhook", content=body, headers={"X-GitHub-Event": "issue_comment",
                                                        "X-Hub-Signature-256": sign(body)})
    assert r.status_code == 400


def test_a_bots_comment_is_ignored(client, events):
    payload = events("issue_comment", 5001)
    payload["comment"]["user"]["login"] = "signoff-bot[bot]"
    payload["comment"]["user"]["type"] = "Bot"
    r = post(client, "issue_comment", payload)
    assert r.json()["outcome"] == "ignored"


def test_pull_request_events_queue_lint_and_the_awaiting_check(client, events):
    r = post(client, "pull_request", events("pull_request", 42, "opened"))
    assert r.json()["outcome"] == "queued"
    assert sorted(j["kind"] for j in client.store.jobs()) == ["lint", "opened"]
    sync = events("pull_request", 42, "synchronize")
    sync.update(before="a1" * 20, after=sync["pull_request"]["head"]["sha"])
    r = post(client, "pull_request", sync, guid="g-sync")
    assert sorted(j["kind"] for j in client.store.jobs("queued")) == ["lint", "opened", "synchronize"]


def test_a_completed_sweep_queues_a_sweep_job(client, events):
    r = post(client, "workflow_run", events("workflow_run", 9001, "completed"))
    assert r.json()["outcome"] == "queued"
    assert [j["kind"] for j in client.store.jobs()] == ["sweep"]


def test_re_run_all_checks_queues_a_verification_of_the_suites_prs(client, events):
    r = post(client, "check_suite", events("check_suite", 601, "rerequested"))
    assert r.json()["outcome"] == "queued"
    assert [(j["kind"], j["pr"]) for j in client.store.jobs()] == [("verify", 42)]


def test_a_run_that_names_no_pr_queues_a_lookup_of_the_prs_at_its_commit(client, events):
    """GitHub leaves `pull_requests` empty for a fork's PR: the job finds the PRs whose head is the commit."""
    payload = events("workflow_run", 9001, "completed")
    payload["workflow_run"]["pull_requests"] = []
    r = post(client, "workflow_run", payload)
    assert r.json()["outcome"] == "queued"
    [job] = client.store.jobs()
    fields = json.loads(job["payload"])
    assert (job["kind"], job["pr"]) == ("commit", 0)
    head = payload["workflow_run"]["head_sha"]
    assert (fields["then"], fields["head_sha"], fields["run_id"]) == ("sweep", head, 9001)


def test_health_ready_and_metrics(client, events):
    assert client.get("/healthz").json() == {"ok": True}
    assert client.get("/readyz").status_code == 200
    post(client, "issue_comment", events("issue_comment", 5001))
    text = client.get("/metrics").text
    assert 'signoff_bot_deliveries_total{event="issue_comment",outcome="queued"} 1.0' in text
    assert "signoff_bot_queue_depth 1.0" in text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([202, 400, 401, 408, 413, 503]),  # what ingest answers: each with a body
       st.dictionaries(st.text(max_size=10), st.text() | st.integers() | st.none() | st.booleans(), max_size=4),
       st.booleans())
def test_a_reply_sends_what_starlettes_json_response_sends(status, body, retry):
    """Ingest answers through ASGI itself (app/web/ingest.py `Reply`): the same messages, bytes and headers."""
    headers = {"Retry-After": "1"} if retry else None

    async def sent(respond) -> list[dict]:
        messages: list[dict] = []

        async def send(message: dict) -> None:
            messages.append(message)

        await respond(send)
        return messages

    try:
        expected = asyncio.run(sent(lambda send: JSONResponse(body, status, headers)({"type": "http"}, None, send)))
    except UnicodeEncodeError:  # a lone surrogate: neither can send it
        with pytest.raises(UnicodeEncodeError):
            asyncio.run(sent(Reply(status, body, ((b"retry-after", b"1"),) if retry else ())))
        return
    assert asyncio.run(sent(Reply(status, body, ((b"retry-after", b"1"),) if retry else ()))) == expected
