"""Which comment is the CODEOWNER sign-off, and what it says.

Rule: the sign-off is the newest conversation comment, review summary or
inline review comment whose text *begins* with the sign-off phrase (leading
whitespace allowed), written by a user, not a bot. "Newest" is by creation
time, then by id.

    passes:  "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n- [x] ..."
    ignored: "... you must follow the template, including the phrase
              `As a PR reviewer and CODEOWNER, I have reviewed this and have`"  (mid-sentence, and a bot)
    ignored: "> As a PR reviewer and CODEOWNER, ..."  (a quoted reply)

The parsed sign-off keeps its checklist items (checked or not, with nesting)
and its "Additional detail section", where reviewers justify exceptions and
link recipes and waivers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .snapshot import Comment

_ITEM = re.compile(r"^(?P<indent>[ \t]*)[-*+]\s+\[(?P<mark>[ xX])\]\s*(?P<text>.*)$")
_DETAIL = "additional detail section"
_SIGNED = re.compile(r"^\s*\**signed\**\s*:", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")


@dataclass(frozen=True)
class ChecklistItem:
    checked: bool
    text: str
    depth: int  # 0 for top-level items, 1 for sub-items, ...
    line: int  # 1-based line within the sign-off body


@dataclass(frozen=True)
class SignOff:
    comment: Comment
    items: tuple[ChecklistItem, ...]
    detail: str  # the "Additional detail section" text ("" when absent)
    has_detail_section: bool

    @property
    def author(self) -> str:
        return self.comment.author

    @property
    def detail_links(self) -> tuple[str, ...]:
        return links(self.detail)


def is_bot(comment: Comment, bot_login: str = "") -> bool:
    login = comment.author.lower()
    return comment.author_is_bot or login.endswith("[bot]") or (bool(bot_login) and login == bot_login.lower())


def is_signoff(comment: Comment, phrase: str, bot_login: str = "") -> bool:
    return not is_bot(comment, bot_login) and comment.body.lstrip().startswith(phrase)


def find(comments: tuple[Comment, ...], phrase: str, bot_login: str = "") -> SignOff | None:
    """The newest sign-off among `comments`, parsed; None when there is none."""
    candidates = [c for c in comments if is_signoff(c, phrase, bot_login)]
    if not candidates:
        return None
    return parse(max(candidates, key=lambda c: (c.created_at, c.id)))


def parse(comment: Comment) -> SignOff:
    lines = comment.body.replace("\r\n", "\n").split("\n")
    items: list[ChecklistItem] = []
    detail_start = None
    detail_end = len(lines)
    for n, line in enumerate(lines):
        if detail_start is None:
            if is_detail_heading(line):
                detail_start = n + 1
                continue
            m = _ITEM.match(line)
            if m:
                indent = m.group("indent").replace("\t", "    ")
                items.append(ChecklistItem(m.group("mark") in "xX", m.group("text").strip(), len(indent) // 2, n + 1))
        elif _SIGNED.match(line):
            detail_end = n
            break
    detail = "\n".join(lines[detail_start:detail_end]).strip() if detail_start is not None else ""
    return SignOff(comment, tuple(items), detail, detail_start is not None)


def is_detail_heading(line: str) -> bool:
    """Whether `line` is the "Additional detail section" heading: optional `#`s, `*`s and colons around the
    words (`### Additional detail section:`, `**Additional detail section**:`), any case.

    Plain string operations, not a regular expression: the obvious pattern, with whitespace allowed
    between each optional mark, backtracks for minutes on a line of a few thousand spaces.
    """
    before, found, after = line.lower().partition(_DETAIL)
    if not found:
        return False
    before = before.strip()
    if before.startswith("#"):
        before = before.lstrip("#").lstrip()
    after = after.strip()
    if after.startswith(":"):
        after = after[1:].lstrip()
    if after.endswith(":"):
        after = after[:-1].rstrip()
    return not before.strip("*") and not after.strip("*")


def links(text: str) -> tuple[str, ...]:
    """URLs in `text`, in order, without trailing punctuation."""
    return tuple(u.rstrip(".,;:!?*_") for u in _URL.findall(text))
