"""Whether a sign-off still vouches for the PR: the content it was first verified on, and the records of it.

A sign-off vouches for what the reviewer saw: a push that changes the PR's
effective diff (`content`) after it was given changes what it would vouch for.
The first verification is recorded twice: in the App's database (the local
pin) and, with every other pin of the PR, in every sign-off check run the App
posts from then on (`Record`, hidden in the run's summary; only this App can
write its check runs, so the record survives the loss of the database).
`decide` then says whether a sign-off is fresh, stale or unknown, in the order
the "Signer's own words" row documents (`checks.rules.extra15_own_words`). Pure: the app
gathers the edit history and the records, calls `decide` and posts what it
says; the same reading serves `/signoff-accept`, which is pinned the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from checks.snapshot import Comment, Snapshot

from . import signoff

RECORD_PREFIX = "<!-- signoff-bot record "
RECORD_SUFFIX = " -->"


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
