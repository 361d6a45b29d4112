"""Whether a sign-off stands: the phrase as paragraph text, its author's own words, the content it was
first verified on (checks/facts/signoff.py, checks/rules/extra15_own_words.py), and the app's side of it: the last editor read
from GitHub's GraphQL API (app/github/edits.py, app/github/gather.py) and the records that outlive the database
(app/jobs/runner.py, against the fake GitHub)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.fake_github import FakeGitHub
from app.github.client import GitHubError, installation_client
from app.github.edits import LastEdit, _last_edit
from app.github.gather import Gatherer
from app.settings import CHECK_NAME
from app.jobs.runner import Clients, JobRunner
from app.observability import Metrics
from app.offline.replay import REPLAY_APP_ID, throwaway_key
from app.settings import Settings
from app.store.sql import Job, SqliteStore
from checks.context import Context
from checks.engine import evaluate
from checks.facts import freshness, signoff
from checks.policy import Policy
from checks.result import Status
from checks.rules import extra15_own_words
from checks.rules.extra14_complete_evidence import NUMBER as COMPLETENESS_NUMBER
from checks.snapshot import Comment

from .builders import snapshot
from .variants import BASE_SHA, HEAD_SHA, PR, REPO, SIGNOFF_ID, comment_of, edit_world, green_world, repo_of

PHRASE = "As a PR reviewer and CODEOWNER"
SIGNOFF = f"{PHRASE}, I have reviewed this and have:\n- [x] Verified it\n\nSigned: `owner`"
KEY = throwaway_key()


def comment(body: str = SIGNOFF, **kw) -> Comment:
    fields = dict(id=1, kind="issue_comment", author="owner", author_association="MEMBER", body=body,
                  created_at="2026-09-02T10:00:00Z", updated_at="2026-09-02T10:00:00Z")
    return Comment(**{**fields, **kw})


# --- the phrase as paragraph text ----------------------------------------------------------------


@pytest.mark.parametrize("body", [
    SIGNOFF,
    "   " + SIGNOFF,  # up to three spaces: still a paragraph
    "\n\n" + SIGNOFF,
    SIGNOFF.replace("\n", "\r\n"),
    f"{PHRASE}, I have reviewed this and have:\nmore words on a second line\n- [x] item",
])
def test_the_phrase_opening_a_paragraph_is_a_sign_off(body):
    assert signoff.opens_with(body, PHRASE)
    assert signoff.is_signoff(comment(body), PHRASE)


@pytest.mark.parametrize("body", [
    pytest.param("    " + SIGNOFF, id="indented-four-spaces"),
    pytest.param("\n".join("    " + line for line in SIGNOFF.splitlines()), id="all-indented"),
    pytest.param("\t" + SIGNOFF, id="tab"),
    pytest.param("```\n" + SIGNOFF + "\n```", id="fenced"),
    pytest.param("~~~md\n" + SIGNOFF + "\n~~~", id="tilde-fenced"),
    pytest.param("> " + SIGNOFF, id="quote"),
    pytest.param("<!--\n" + SIGNOFF + "\n-->", id="html-comment"),
    pytest.param("# " + SIGNOFF, id="atx-heading"),
    pytest.param(f"{PHRASE}, I have reviewed this\n===", id="setext-heading"),
    pytest.param(f"{PHRASE} | and have\n--- | ---\n", id="table"),
    pytest.param("I agree. " + SIGNOFF, id="mid-sentence"),
])
def test_the_phrase_anywhere_but_ordinary_paragraph_text_is_no_sign_off(body):
    assert not signoff.opens_with(body, PHRASE)


def test_only_the_opening_of_a_megabyte_comment_is_parsed():
    """A 2 MB sign-off is judged by its first block (Markdown takes seconds to parse a megabyte)."""
    big = SIGNOFF + "\n" + "- [x] more\n" * 200_000
    assert signoff.opens_with(big, PHRASE)
    assert not signoff.opens_with("    " + big, PHRASE)
    one_line = PHRASE + " " + "word " * 400_000  # no line break for two megabytes
    assert signoff.opens_with(one_line, PHRASE)


# --- own words ------------------------------------------------------------------------------------


def test_a_comment_never_edited_or_edited_by_its_author_is_its_authors_own_words():
    assert signoff.not_own_words(comment()) is None
    assert signoff.not_own_words(comment(last_editor="Owner", edited_at="2026-09-02T11:00:00Z")) is None


def test_an_edit_by_someone_else_or_by_no_one_known_is_not_the_authors_words():
    by_other = signoff.not_own_words(comment(last_editor="mallory", edited_at="2026-09-02T11:00:00Z"))
    assert "last edited by mallory at 2026-09-02T11:00:00Z" in by_other and "owner must" in by_other
    unknown = signoff.not_own_words(comment(last_editor=None, edited_at="2026-09-02T11:00:00Z"))
    assert "could not be established" in unknown


def test_an_edit_is_a_new_version_of_the_sign_off():
    assert signoff.version(comment()) == "issue_comment:1:2026-09-02T10:00:00Z"
    assert signoff.version(comment(last_editor="owner", edited_at="2026-09-02T11:00:00Z")) == \
        "issue_comment:1:2026-09-02T11:00:00Z"


def test_the_engine_adds_the_own_words_row_first_among_its_extra_rows_saying_why():
    own = evaluate(snapshot(comments=[comment()]))
    assert own.signoff.comment == comment() and extra15_own_words.OWN_WORDS_NUMBER not in {r.number for r in own.extra}
    edited = evaluate(snapshot(comments=[comment(last_editor="mallory", edited_at="2026-09-02T11:00:00Z")],
                               truncated="GitHub lists at most 3000 files of a pull request; this one has more"))
    assert edited.label == "REJECTED"
    assert [r.number for r in edited.extra] == [extra15_own_words.OWN_WORDS_NUMBER, COMPLETENESS_NUMBER]
    assert edited.extra[0].status is Status.FAIL and "last edited by mallory" in edited.extra[0].reason
    assert extra15_own_words.OWN_WORDS_NAME in [r.name for r in edited.rows if not r.passed]


# --- freshness ------------------------------------------------------------------------------------


SIGN = signoff.parse(comment())
KEY_V = signoff.version(SIGN.comment)
A, B = "a" * 64, "b" * 64
H1, H2 = "1" * 40, "2" * 40


def record(seen: str, *pins: freshness.Pin, pr: int = PR) -> freshness.Record:
    return freshness.Record(pr, seen, pins)


def test_a_first_verification_pins_the_content_now():
    fresh = freshness.decide(SIGN, A, H1, None, [])
    assert fresh.fresh and fresh.first and fresh.pin == freshness.Pin(KEY_V, A, H1) and fresh.record == fresh.pin
    earlier = record("2026-09-02T09:00:00Z")  # a verification before the sign-off was given
    assert freshness.decide(SIGN, A, H1, None, [earlier]).first


def test_a_pinned_sign_off_is_fresh_on_the_same_content_and_stale_on_other_content():
    pin = freshness.Pin(KEY_V, A, H1)
    same = freshness.decide(SIGN, A, H2, pin, [])  # a push with the same diff
    assert same.fresh and not same.needs_signoff and same.record is None  # nothing new to store
    stale = freshness.decide(SIGN, B, H2, pin, [])
    assert stale.state == "stale" and stale.needs_signoff and H1[:8] in stale.reason


def test_a_pin_under_the_key_of_an_older_database_is_stored_anew_under_this_one():
    edited = signoff.parse(comment(updated_at="2026-09-02T10:05:00Z"))  # a reaction moved updated_at
    old_key = freshness.pin_keys(edited.comment)[1]
    assert freshness.pin_keys(edited.comment) == (KEY_V, "issue_comment:1:2026-09-02T10:05:00Z")
    assert freshness.pin_keys(SIGN.comment) == (KEY_V,)
    for content, state in ((A, "fresh"), (B, "stale")):
        moved = freshness.decide(edited, content, H2, freshness.Pin(old_key, A, H1), [])
        assert moved.state == state and moved.record == freshness.Pin(KEY_V, A, H1)


def test_a_sign_off_in_someone_elses_words_vouches_for_nothing_and_pins_nothing():
    """Its verdict is REJECTED on the own-words row (published as such), not a request for a fresh one."""
    disowned = freshness.decide(signoff.parse(comment(last_editor="mallory", edited_at="2026-09-02T11:00:00Z")),
                               B, H2, freshness.Pin(KEY_V, A, H1), [])
    assert disowned.state == "disowned" and not disowned.needs_signoff
    assert disowned.pin is None and disowned.record is None


def test_without_the_database_the_apps_records_say_what_the_sign_off_vouches_for():
    recorded = record("2026-09-02T11:00:00Z", freshness.Pin(KEY_V, A, H1))
    assert freshness.decide(SIGN, B, H2, None, [recorded]).state == "stale"
    assert freshness.decide(SIGN, A, H2, None, [recorded]).fresh


def test_records_that_disagree_fail_closed():
    local, other = freshness.Pin(KEY_V, A, H1), freshness.Pin(KEY_V, B, H2)
    unknown = freshness.decide(SIGN, B, H2, local, [record("2026-09-02T11:00:00Z", other)])
    assert unknown.state == "unknown" and not unknown.fresh and "disagree" in unknown.reason


def test_a_verification_after_the_sign_off_that_pinned_nothing_for_it_fails_closed():
    """The App read the PR after this sign-off was given and holds no pin for it: a newer sign-off was judged
    then (since deleted), or the record is lost. Which content it was given on is unknown."""
    other = freshness.Pin("issue_comment:2:2026-09-02T10:30:00Z", A, H1)
    unknown = freshness.decide(SIGN, B, H2, None, [record("2026-09-02T10:30:00Z", other)])
    assert unknown.state == "unknown" and "no record" in unknown.reason


def test_a_record_survives_a_round_trip_through_a_summary_and_nothing_else_reads_as_one():
    rec = record("2026-09-02T11:00:00Z", freshness.Pin(KEY_V, A, H1))
    summary = "## REJECTED\n\nsome text\n" + rec.marker()
    assert freshness.Record.from_json(freshness.recorded(summary)) == rec
    assert freshness.recorded("no record here") == ""
    for text in ("not json", "[]", '{"pr": "42", "seen": "", "pins": []}', '{"pr": 1, "seen": "", "pins": [[1]]}'):
        assert freshness.Record.from_json(text) is None


def test_seen_is_the_newest_time_of_anyone_but_the_app():
    snap_comments = (comment(), comment(id=2, author="signoff-bot[bot]", created_at="2026-09-03T00:00:00Z",
                                        updated_at="2026-09-03T00:00:00Z"),
                     comment(id=3, updated_at="2026-09-02T12:00:00Z"))

    class Snap:
        comments = snap_comments
        bot_login = "signoff-bot[bot]"

    assert freshness.seen(Snap()) == "2026-09-02T12:00:00Z"


# --- the last editor from GitHub --------------------------------------------------------------------


def node(body="b", last="2026-09-02T11:00:00Z", editor=("User", "owner"), edits=None, total=None):
    actor = lambda t: {"__typename": t[0], "login": t[1]} if t else None  # noqa: E731
    edits = edits if edits is not None else [("2026-09-02T10:00:00Z", ("User", "owner")), (last, editor)]
    return {"id": "x", "body": body, "lastEditedAt": last, "editor": actor(editor),
            "userContentEdits": {"totalCount": len(edits) if total is None else total,
                                 "nodes": [{"editedAt": at, "editor": actor(who)} for at, who in edits]}}


def test_the_last_editor_is_the_author_of_the_newest_edit_in_any_order():
    assert _last_edit(node(last=None), "b") == LastEdit("")
    newest_first = node(editor=("User", "mallory"),
                        edits=[("2026-09-02T11:00:00Z", ("User", "mallory")), ("2026-09-02T10:00:00Z", ("User", "o"))])
    assert _last_edit(newest_first, "b") == LastEdit("mallory", "2026-09-02T11:00:00Z")
    assert _last_edit(node(editor=("Bot", "renovate")), "b").editor == "renovate[bot]"


@pytest.mark.parametrize("broken", [
    pytest.param(None, id="no-node"),
    pytest.param(node(total=101), id="history-longer-than-read"),
    pytest.param(node(editor=None), id="deleted-account"),
    pytest.param(node(edits=[]), id="edited-without-history"),
    pytest.param({**node(), "editor": {"__typename": "User", "login": "someone-else"}}, id="editor-disagrees"),
    pytest.param({**node(), "lastEditedAt": "2026-09-02T12:00:00Z"}, id="times-disagree"),
])
def test_when_github_will_not_say_who_last_edited_it_is_unknown(broken):
    assert _last_edit(broken, "b").editor is None


def test_a_sign_off_that_changed_between_the_two_reads_is_read_again_later():
    """GraphQL read another body than REST: an edit landed in between. For a sign-off the verification is
    tried again; any other comment's last editor is merely unknown."""
    assert _last_edit(node(body="new"), "old") == LastEdit(None, changed=True)
    gatherer = Gatherer(installation_client(REPLAY_APP_ID, KEY, 1, "http://127.0.0.1:9"), REPO)
    changed = {"a": LastEdit(None, changed=True), "b": LastEdit(None, changed=True)}
    chat = comment("thanks!", id=2)
    assert gatherer._edited([(chat, "b")], changed, Policy())[0].last_editor is None
    with pytest.raises(GitHubError) as retried:
        gatherer._edited([(comment(), "a"), (chat, "b")], changed, Policy())
    assert retried.value.transient


def test_gather_reads_who_last_edited_the_sign_off(tmp_path):
    """Through the fake: the owner's sign-off, last edited by a write user, is judged REJECTED for that;
    a world's comment edited by an account since deleted is no one's words."""
    def edited(by):
        def change(data):
            comment_of(data, SIGNOFF_ID).update(edited_at="2026-09-02T11:45:00Z", last_editor=by)
            repo_of(data)["collaborators"]["mallory"] = "write"
        return change

    for by, expect in (("mallory", "last edited by mallory"), (None, "could not be established")):
        world = edit_world(green_world(tmp_path / str(by)), edited(by))
        with FakeGitHub(world) as fake:
            gh = installation_client(REPLAY_APP_ID, KEY, 1, fake.url)
            snap = asyncio.run(Gatherer(gh, REPO).snapshot(PR, "2026-09-02T12:00:00Z"))
        sign = Context(snap).signoff
        assert (sign.comment.last_editor, sign.comment.edited_at) == (by, "2026-09-02T11:45:00Z")
        verdict = evaluate(snap)
        assert verdict.label == "REJECTED" and expect in verdict.extra[0].reason
        assert all(r.passed for r in verdict.results)  # everything else would pass


# --- records that outlive the database (app/jobs/runner.py against the fake) ---------------------------------


def _runner(fake: FakeGitHub, db: Path) -> tuple[JobRunner, SqliteStore]:
    settings = Settings(app_id=REPLAY_APP_ID, private_key=KEY, webhook_secret="unused", github_url=fake.url,
                        db_path=str(db))
    store = SqliteStore(settings.db_path)
    metrics = Metrics()
    return JobRunner(settings, store, Clients(settings, metrics), metrics), store


def _job(kind: str, **payload) -> Job:
    return Job(id=1, kind=kind, repo=REPO, pr=PR, key="", installation_id=1, payload=payload, attempts=1,
               created_at=0.0, owner="test")


def test_after_a_force_push_with_the_database_lost_the_previous_heads_record_decides(tmp_path):
    """The App verified the sign-off on an old head (its check run there records the pin), the database was
    lost, and a force push replaced that head: it is no commit of the PR any more, yet the push's `before`
    leads to its record, so the new head, whose content differs, asks for a fresh sign-off."""
    old = "c3" * 20
    pin = freshness.Pin(f"issue_comment:{SIGNOFF_ID}:2026-09-02T10:00:00Z", "0" * 64, old)

    def force_pushed(data):
        repo = repo_of(data)
        repo["commits"].append({"sha": old, "tree": "base", "parents": [BASE_SHA], "message": "the old head",
                                "author": "contributor"})
        repo.setdefault("check_runs", []).append({
            "id": 880001, "head_sha": old, "name": CHECK_NAME, "status": "completed", "conclusion": "success",
            "app_id": REPLAY_APP_ID, "started_at": "2026-09-02T11:50:00Z",
            "output": {"title": "Sign-off PASS", "summary": "PASS\n" + record("2026-09-02T11:50:00Z", pin).marker()}})

    with FakeGitHub(edit_world(green_world(tmp_path), force_pushed)) as fake:
        runner, store = _runner(fake, tmp_path / "new.db")
        asyncio.run(runner.run(_job("synchronize", head_sha=HEAD_SHA, before=old)))
        [queued] = store.jobs("queued")
        assert queued["kind"] == "verify" and json.loads(queued["payload"])["before"] == old
        asyncio.run(runner.run(_job("verify", **json.loads(queued["payload"]))))
        runs = [c for c in fake.state.repo(*REPO.split("/")).check_runs.values()
                if c["head_sha"] == HEAD_SHA and c["name"] == CHECK_NAME]
    assert [r["conclusion"] for r in runs] == ["action_required"]
    assert freshness.recorded(runs[0]["output"]["summary"])  # the record goes on to the new head
    assert store.verdict_for(REPO, PR, HEAD_SHA)["label"] == "STALE"
    assert store.signoff_pin(REPO, PR, pin.signoff)["fingerprint"] == pin.content


def test_without_a_verdict_or_a_record_a_push_verifies_nothing(tmp_path):
    with FakeGitHub(green_world(tmp_path)) as fake:
        runner, store = _runner(fake, tmp_path / "new.db")
        asyncio.run(runner.run(_job("synchronize", head_sha=HEAD_SHA, before=BASE_SHA)))
    assert store.jobs("queued") == []
