"""Webhook ingest: signature verification and turning events into jobs.

Only cheap, local decisions happen here, so a delivery is acknowledged in
milliseconds; anything that needs GitHub (the repository's policy file, the
PR's comments, the PRs of a fork's commit) happens in the job. The signature
must be `sha256=` + 64 hex digits: githubkit's `verify` silently falls back
to SHA-1 when the prefix is missing, which would let a downgraded signature
through, so it is not used.

A delivery is read leniently, as GitHub sends it, not as a schema describes
it: only the fields a job needs are read, each checked for its type where it
is read, and nothing else in the payload is looked at. Real deliveries carry
fields no generated schema knows of and lack fields it calls required (the
octokit examples in ../shared/fixtures/webhooks/ are the reference), so a
whole-payload validation would reject what GitHub really sends. A delivery
that lacks a field a job needs is `Unusable`: acknowledged, logged, counted,
never queued.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from typing import Any, Union

import msgspec

from app.store.sql import JobSpec

_SIGNATURE = re.compile(r"^sha256=[0-9a-f]{64}$")
_FULL_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_ID = 2**63 - 1  # GitHub's ids and numbers are 64-bit; the store keeps them as SQLite integers

HANDLED = {"issue_comment", "pull_request_review", "pull_request_review_comment", "pull_request",
           "check_run", "check_suite", "workflow_run"}
COMMENT_KINDS = {"issue_comment": "issue_comment", "pull_request_review": "review",
                 "pull_request_review_comment": "review_comment"}
COMMENT_OBJECT = {"issue_comment": "comment", "pull_request_review": "review",
                  "pull_request_review_comment": "comment"}


class Unusable(Exception):
    """A delivery that lacks, or mistypes, a field the bot needs (`field`, a dotted path)."""

    def __init__(self, field: str, problem: str = "is missing") -> None:
        super().__init__(f"{field} {problem}")
        self.field = field


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    if not header or not _SIGNATURE.match(header):
        return False
    return hmac.compare_digest(hmac.digest(secret.encode(), body, "sha256").hex(), header[7:])


@dataclass(frozen=True)
class Routed:
    repo: str
    pr: int | None
    action: str
    jobs: list[JobSpec]
    ignored: str | None = None  # why nothing was queued


def _at(payload: dict[str, Any], path: str) -> Any:
    """The value at a dotted path; None when any step is absent or not an object."""
    node: Any = payload
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _text(payload: dict[str, Any], path: str) -> str:
    """A string the store can keep (JSON may carry lone surrogates, which UTF-8 cannot encode)."""
    value = _at(payload, path)
    if not isinstance(value, str):
        raise Unusable(path, "is missing" if value is None else "is not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Unusable(path, "is not valid Unicode") from None
    return value


def _number(value: Any, path: str) -> int:
    """A positive 64-bit id or number (JSON allows any size of integer; SQLite does not)."""
    if value is None:
        raise Unusable(path)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_ID:
        raise Unusable(path, "is not a positive 64-bit integer")
    return value


def _repo(payload: dict[str, Any]) -> str:
    name = _text(payload, "repository.full_name")
    if not _FULL_NAME.match(name):
        raise Unusable("repository.full_name", "is not owner/name")
    return name


def _sha(payload: dict[str, Any], path: str) -> str:
    sha = _text(payload, path)
    if not _SHA.match(sha):
        raise Unusable(path, "is not a commit SHA")
    return sha


def _pull_numbers(payload: dict[str, Any], path: str) -> list[int]:
    """The numbers of a check or workflow run's `pull_requests` (empty for a fork's PR)."""
    items = _at(payload, path)
    if items is None:
        return []
    if not isinstance(items, list):
        raise Unusable(path, "is not a list")
    return [_number(p.get("number") if isinstance(p, dict) else None, f"{path}[].number") for p in items]


def _action(payload: dict[str, Any]) -> str:
    action = payload.get("action")
    return _text(payload, "action") if isinstance(action, str) else ""


# What route reads, as msgspec Structs: decoding into them skips every other field (a third of the time a
# whole-payload decode takes), and `routed_fields` turns them into the dicts route reads, holding those fields
# only. A leaf is Any and an object may be any JSON value instead, so that a field of the wrong type reaches
# route as it is and is refused there, as in the whole payload, by name. Every path route reads is here; a
# test checks that route decides alike on these fields and on the whole payload (tests/test_webhook_parse.py).
# omit_defaults: a field the delivery lacks or holds null in is absent from the dict (route reads both as None).


class _Unread(msgspec.Struct, omit_defaults=True):
    """An object none of whose fields route reads."""


_NOT_AN_OBJECT = Union[list, str, int, float, bool, None]


class _Numbered(msgspec.Struct, omit_defaults=True):
    number: Any = None


class _User(msgspec.Struct, omit_defaults=True):
    login: Any = None
    type: Any = None


class _Written(msgspec.Struct, omit_defaults=True):  # a comment or a review
    id: Any = None
    user: Union[_User, _NOT_AN_OBJECT] = None


class _Issue(msgspec.Struct, omit_defaults=True):
    number: Any = None
    pull_request: Any = None


class _Run(msgspec.Struct, omit_defaults=True):  # a check run, check suite or workflow run
    id: Any = None
    name: Any = None
    path: Any = None
    head_sha: Any = None
    pull_requests: Union[list[Union[_Numbered, _NOT_AN_OBJECT]], _Unread, str, int, float, bool, None] = None


class _Repository(msgspec.Struct, omit_defaults=True):
    full_name: Any = None


class _Installation(msgspec.Struct, omit_defaults=True):
    id: Any = None


class RoutedFields(msgspec.Struct, omit_defaults=True):
    action: Any = None
    before: Any = None
    repository: Union[_Repository, _NOT_AN_OBJECT] = None
    installation: Union[_Installation, _NOT_AN_OBJECT] = None
    issue: Union[_Issue, _NOT_AN_OBJECT] = None
    comment: Union[_Written, _NOT_AN_OBJECT] = None
    review: Union[_Written, _NOT_AN_OBJECT] = None
    pull_request: Union[_Numbered, _NOT_AN_OBJECT] = None
    check_run: Union[_Run, _NOT_AN_OBJECT] = None
    check_suite: Union[_Run, _NOT_AN_OBJECT] = None
    workflow_run: Union[_Run, _NOT_AN_OBJECT] = None


_ROUTED = msgspec.json.Decoder(Union[RoutedFields, _NOT_AN_OBJECT])


def routed_fields(raw: bytes | bytearray) -> object:
    """The body's JSON with only the fields route reads, as dicts and lists (a body that is not an object:
    its value). Raises ValueError (msgspec's DecodeError) where msgspec refuses the body, RecursionError for
    one nested too deeply."""
    value = _ROUTED.decode(raw)
    return msgspec.to_builtins(value) if isinstance(value, RoutedFields) else value


def route(event: str, payload: dict[str, Any], bot_login: str, check_name: str) -> Routed:
    """The jobs a delivery causes. Raises Unusable when it lacks a field those jobs need; a delivery
    that causes no job is never unusable, whatever it lacks."""
    if event not in HANDLED:
        return Routed(_lenient_repo(payload), None, _lenient_action(payload), [], f"event {event!r} is not handled")
    action = _action(payload)
    decide = {"pull_request": _pull_request, "check_run": _check_run, "check_suite": _check_suite,
              "workflow_run": _workflow_run}.get(event, _comment)
    return decide(event, action, payload, bot_login, check_name)


def _lenient_repo(payload: dict[str, Any]) -> str:
    """The repository's name for the record of an ignored delivery, or "" when it names none usable."""
    try:
        return _repo(payload)
    except Unusable:
        return ""


def _lenient_action(payload: dict[str, Any]) -> str:
    try:
        return _action(payload)
    except Unusable:
        return ""


def _queue(event: str, action: str, payload: dict[str, Any], pr: int | None,
           specs: list[tuple[str, int, str, dict[str, Any]]]) -> Routed:
    """Jobs (kind, PR, key, fields) of the delivery's repository and installation."""
    repo = _repo(payload)
    installation = _number(_at(payload, "installation.id"), "installation.id")
    return Routed(repo, pr, action, [JobSpec(kind, repo, number, installation, dict(fields, action=action, event=event),
                                             key) for kind, number, key, fields in specs])


def _ignore(payload: dict[str, Any], action: str, why: str, pr: int | None = None) -> Routed:
    return Routed(_lenient_repo(payload), pr, action, [], why)


def _comment(event: str, action: str, payload: dict[str, Any], bot_login: str, _check: str) -> Routed:
    """A conversation comment, review or review comment by a user: the job decides what it is."""
    item = COMMENT_OBJECT[event]
    if event == "issue_comment":
        issue = _at(payload, "issue")
        if isinstance(issue, dict) and issue.get("pull_request") is None:
            return _ignore(payload, action, "comment on an issue, not a pull request")
        pr = _number(_at(payload, "issue.number"), "issue.number")
    else:
        pr = _number(_at(payload, "pull_request.number"), "pull_request.number")
    if action not in ("created", "edited", "submitted"):
        return _ignore(payload, action, f"{event} {action} is not a trigger", pr)
    login = _text(payload, f"{item}.user.login")
    if _at(payload, f"{item}.user.type") == "Bot" or login.lower() == bot_login.lower():
        return _ignore(payload, action, "written by a bot", pr)
    kind = COMMENT_KINDS[event]
    cid = _number(_at(payload, f"{item}.id"), f"{item}.id")
    # Which comment is a sign-off or a command depends on the repository's policy: the job decides.
    return _queue(event, action, payload, pr, [("comment", pr, f"{kind}:{cid}",
                                                {"comment_kind": kind, "comment_id": cid})])


def _pull_request(event: str, action: str, payload: dict[str, Any], _bot: str, _check: str) -> Routed:
    if action not in ("opened", "reopened", "ready_for_review", "synchronize"):
        return _ignore(payload, action, f"pull_request {action} is not a trigger")
    pr = _number(_at(payload, "pull_request.number"), "pull_request.number")
    if action != "synchronize":
        return _queue(event, action, payload, pr, [("lint", pr, "", {}), ("opened", pr, "", {})])
    before = _at(payload, "before")  # the head it replaced, whose check runs hold the App's record
    fields = {"before": before} if isinstance(before, str) and _SHA.match(before) else {}
    return _queue(event, action, payload, pr, [("lint", pr, "", {}), ("synchronize", pr, "", fields)])


def _for_prs(event: str, action: str, payload: dict[str, Any], prs: list[int], sha_path: str, then: str,
             fields: dict[str, Any]) -> Routed:
    """`then` for each PR a run names; for a run that names none (a fork's PR: GitHub leaves
    `pull_requests` empty), a job that finds the open PRs whose head is the run's commit."""
    if prs:
        return _queue(event, action, payload, prs[0], [(then, pr, "", fields) for pr in prs])
    sha = _sha(payload, sha_path)
    return _queue(event, action, payload, None, [("commit", 0, f"{then}:{sha}",
                                                   {"head_sha": sha, "then": then, **fields})])


def _check_run(event: str, action: str, payload: dict[str, Any], _bot: str, check_name: str) -> Routed:
    """"Re-run" on the sign-off check run."""
    if action != "rerequested" or _at(payload, "check_run.name") != check_name:
        return _ignore(payload, action, "not a re-run of the sign-off check")
    prs = _pull_numbers(payload, "check_run.pull_requests")
    return _for_prs(event, action, payload, prs, "check_run.head_sha", "verify", {"reason": "check run re-run"})


def _check_suite(event: str, action: str, payload: dict[str, Any], _bot: str, _check: str) -> Routed:
    """"Re-run all checks": GitHub asks each app to re-run its own suite on the commit."""
    if action != "rerequested":
        return _ignore(payload, action, f"check_suite {action} is not a trigger")
    prs = _pull_numbers(payload, "check_suite.pull_requests")
    return _for_prs(event, action, payload, prs, "check_suite.head_sha", "verify", {"reason": "check suite re-run"})


def _workflow_run(event: str, action: str, payload: dict[str, Any], _bot: str, _check: str) -> Routed:
    """A workflow finished: the sweep job decides whether it is the sweep."""
    if action != "completed":
        return _ignore(payload, action, f"workflow_run {action} is not a trigger")
    prs = _pull_numbers(payload, "workflow_run.pull_requests")
    fields = {"run_id": _number(_at(payload, "workflow_run.id"), "workflow_run.id"),
              "workflow_path": _text(payload, "workflow_run.path")}
    return _for_prs(event, action, payload, prs, "workflow_run.head_sha", "sweep", fields)
