"""Whether the sign-off stands: its author's own words, given on the content the PR has now.

## What it enforces

Two rules beyond checks 0-12. Both are pure; the app gathers their facts (GitHub's
edit history of the comment, what this App recorded when it verified before),
calls them and posts what they decide.

Own words (the "Signer's own words" row, a rule of `checks.registry`): a
sign-off counts only as its author's own words (`signoff.not_own_words`).

Freshness: a sign-off vouches for the content it was first verified on: the
PR's effective diff (`content`).

## Why

On GitHub anyone with write access may edit another user's comment, so a
sign-off's words are its author's only when its author last edited it. And a
sign-off vouches for what the reviewer saw: a push that changes the PR's
effective diff after it was given changes what it would vouch for.

## How it decides

Own words: a sign-off last edited by anyone else, or whose last editor GitHub
would not tell, gets a FAIL row naming the editor: the verdict is REJECTED and
says why. Such a sign-off vouches for no content, so its freshness is not asked
(`decide` says "disowned").

Freshness: the first verification is recorded twice: in the App's database
(the local pin) and, with every other pin of the PR, in every sign-off check
run the App posts from then on (`Record`, hidden in the run's summary; only
this App can write its check runs, so the record survives the loss of the
database). Then:

0. a sign-off that is not its author's own words vouches for nothing
   ("disowned"): its REJECTED verdict is published, and nothing is pinned;
1. every record of this sign-off must name the same content; when the local
   pin and GitHub's records disagree, which content it vouches for is unknown;
2. a recorded sign-off is fresh when the content is unchanged, stale otherwise;
3. an unrecorded sign-off is verified for the first time, and vouches for the
   content now, unless a record shows that the App read the PR after this
   sign-off was given (the newest thing that verification saw is later than
   the sign-off): then this one was not pinned when it should have been (it
   was not the one judged, or the record is lost), so which content it
   vouches for is unknown.

Stale and unknown fail closed alike: the check run asks for a fresh sign-off
(`action_required`) until a CODEOWNER posts one or edits theirs.

## Passing example

    own words: a sign-off last edited by its author (the author's own edit is a fresh sign-off)
    fresh:     signed off at head A, a push with the same diff (a rebase, a reworded commit)

## Failing example

    own words: a sign-off last edited by another user with write access, or by an editor GitHub will not name
    stale:     signed off at head A, a push that changes a config; or the same after the database was lost
    unknown:   a verification read the PR after this sign-off was given, yet no record pins it
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from . import signoff
from .context import Context
from .result import CheckResult, Status
from .snapshot import Comment, Snapshot

OWN_WORDS_NUMBER = 15
OWN_WORDS_NAME = "Signer's own words"
RECORD_PREFIX = "<!-- signoff-bot record "
RECORD_SUFFIX = " -->"


# --- own words ---------------------------------------------------------------------------------


def check(ctx: Context) -> CheckResult | None:
    """The "Signer's own words" row (15) of the verdict, shown only when it fails."""
    return own_words(ctx.signoff)


def own_words(sign: signoff.SignOff | None) -> CheckResult | None:
    """A FAIL row when the sign-off is not its author's own words; None when it is (or there is none)."""
    problem = signoff.not_own_words(sign.comment) if sign is not None else None
    if problem is None:
        return None
    return CheckResult(OWN_WORDS_NUMBER, OWN_WORDS_NAME, Status.FAIL, problem)


# --- freshness ---------------------------------------------------------------------------------


def content(snap: Snapshot) -> str:
    """A digest of the PR's effective diff: each changed path, its status, previous path and head content.

    Merging the base branch into an unrelated area, or rewording a commit, keeps it; any change to
    what the PR changes does not.
    """
    digest = hashlib.sha256()
    for f in sorted(snap.files, key=lambda f: f.path):
        text = f.head_text if f.head_text is not None else (f.error or "")
        digest.update("\0".join((f.path, f.status, f.previous_path or "", text)).encode("utf-8", "replace"))
    return digest.hexdigest()


def seen(snap: Snapshot) -> str:
    """The newest GitHub time in the snapshot's conversation (the App's own comments aside): what a
    verification had read by then."""
    return max((t for c in snap.comments if not signoff.is_bot(c, snap.bot_login)
                for t in (c.created_at, c.updated_at, c.edited_at) if t), default="")


@dataclass(frozen=True)
class Pin:
    """The content a sign-off was first verified on."""

    signoff: str  # signoff.version of the sign-off
    content: str  # `content` of the PR then
    head_sha: str  # the head it was verified at


@dataclass(frozen=True)
class Record:
    """What one sign-off check run of the App says about the verification behind it."""

    pr: int  # the pull request verified (a commit may be the head of two)
    seen: str  # `seen` of that verification's snapshot
    pins: tuple[Pin, ...] = ()  # every sign-off of the PR the App had pinned by then

    def marker(self) -> str:
        """The record as a hidden line of a check run's summary."""
        data = {"pr": self.pr, "seen": self.seen, "pins": [[p.signoff, p.content, p.head_sha] for p in self.pins]}
        return RECORD_PREFIX + json.dumps(data, sort_keys=True) + RECORD_SUFFIX

    @classmethod
    def from_json(cls, text: str) -> "Record | None":
        """The record in `text` (as `recorded` finds it in a summary); None when it is not one."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("pr"), int) \
                or not isinstance(data.get("seen"), str) or not isinstance(data.get("pins"), list):
            return None
        pins = data["pins"]
        if not all(isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p) for p in pins):
            return None
        return cls(data["pr"], data["seen"], tuple(Pin(*p) for p in pins))


def recorded(summary: str) -> str:
    """The JSON of the record hidden in a check run's summary; "" when it holds none."""
    start = summary.rfind(RECORD_PREFIX)
    if start < 0:
        return ""
    end = summary.find(RECORD_SUFFIX, start + len(RECORD_PREFIX))
    return summary[start + len(RECORD_PREFIX):end] if end > 0 else ""


def pin_keys(comment: Comment) -> tuple[str, ...]:
    """The keys a local pin of this sign-off may be stored under: `signoff.version`, then the key of
    databases from before it (which named the comment's last update, not its author's last edit)."""
    return tuple(dict.fromkeys((signoff.version(comment), f"{comment.kind}:{comment.id}:{comment.updated_at}")))


@dataclass(frozen=True)
class Freshness:
    state: str  # fresh | stale | unknown | disowned
    pin: Pin | None  # what the sign-off vouches for (None when unknown or disowned)
    first: bool = False  # True when this verification is the first to pin it
    reason: str = ""  # why a fresh sign-off is needed (stale, unknown)
    record: Pin | None = None  # the pin this verification must store: a first one, or one kept under an old key

    @property
    def fresh(self) -> bool:
        return self.state == "fresh"

    @property
    def needs_signoff(self) -> bool:
        """Whether the verdict waits for a fresh sign-off (stale or unknown) instead of being published."""
        return self.state in ("stale", "unknown")


def decide(sign: signoff.SignOff | Comment, current: str, head_sha: str, local: Pin | None,
           records: Iterable[Record], what: str = "sign-off") -> Freshness:
    """Whether `sign` vouches for the content `current` at `head_sha` (see the module docstring).

    `local` is this database's pin of the sign-off, under any of its `pin_keys`. A maintainer's
    `/signoff-accept` comment (`what`="acceptance") is pinned to content the same way."""
    comment = sign.comment if isinstance(sign, signoff.SignOff) else sign
    if signoff.not_own_words(comment) is not None:
        return Freshness("disowned", None)
    records = tuple(records)
    key = signoff.version(comment)
    pins = ([local] if local is not None else []) + [p for r in records for p in r.pins if p.signoff == key]
    who = f"{comment.author}'s {what}"
    if len({p.content for p in pins}) > 1:
        heads = ", ".join(sorted({p.head_sha[:8] for p in pins}))
        return Freshness("unknown", None, reason=(
            f"signoff-bot's records of {who} disagree about the content it was given on (verified at {heads}); "
            "a CODEOWNER must sign off again."))
    if pins:
        pin = Pin(key, pins[0].content, pins[0].head_sha)
        moved = pin if local is not None and local.signoff != key else None  # under an old key: store it anew
        if pin.content != current:
            return Freshness("stale", pin, record=moved, reason=(
                f"The pull request's content changed since {who} was verified at {pin.head_sha[:8]}; "
                "a CODEOWNER must sign off on the new content."))
        return Freshness("fresh", pin, record=moved)
    given = comment.edited_at or comment.created_at
    if any(r.seen > given for r in records):
        return Freshness("unknown", None, reason=(
            f"signoff-bot read this pull request after {who} was given ({given}) but holds no record of "
            "which content it vouches for; a CODEOWNER must sign off again (post the sign-off or edit it)."))
    pin = Pin(key, current, head_sha)
    return Freshness("fresh", pin, first=True, record=pin)
