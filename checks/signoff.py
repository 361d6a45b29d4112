"""Which comment is the CODEOWNER sign-off, and what it says.

Rule: the sign-off is the newest conversation comment, review summary or
inline review comment whose text *begins* with the sign-off phrase, as
ordinary paragraph text (up to three spaces before it, as Markdown allows),
written by a user, not a bot. "Newest" is by creation time, then by id.
Paragraph text as GitHub renders it (CommonMark with tables): the phrase in a
code block (fenced, or indented four spaces), a quote, an HTML comment, a
heading or a table is not a sign-off, because the reader does not see a
sign-off there.

    passes:  "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n- [x] ..."
    ignored: "... you must follow the template, including the phrase
              `As a PR reviewer and CODEOWNER, I have reviewed this and have`"  (mid-sentence, and a bot)
    ignored: "> As a PR reviewer and CODEOWNER, ..."  (a quoted reply)
    ignored: "    As a PR reviewer and CODEOWNER, ..."  (indented four spaces: a code block)

A sign-off counts only as its author's own words: on GitHub anyone with write
access may edit another user's comment, so a comment whose body was last
edited by anyone but its author is not a sign-off by that author, and one
whose last editor GitHub would not tell (`Comment.last_editor` None) is no
one's. `not_own_words` says why; `checks.standing` turns that into a FAIL.
An edit by the author is a fresh sign-off (`version`).

The parsed sign-off keeps its checklist items (checked or not, with nesting)
and its "Additional detail section", where reviewers justify exceptions and
link recipes and waivers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt

from .snapshot import Comment

_ITEM = re.compile(r"^(?P<indent>[ \t]*)[-*+]\s+\[(?P<mark>[ xX])\]\s*(?P<text>.*)$")
_DETAIL = "additional detail section"
_SIGNED = re.compile(r"^\s*\**signed\**\s*:", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# Only the comment's first block decides whether the phrase is paragraph text; Markdown parses a
# megabyte in seconds, so only its first lines are parsed (enough to see code, quote, heading or table).
OPENING_CHARS = 4096


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
    return not is_bot(comment, bot_login) and opens_with(comment.body, phrase)


def opens_with(body: str, phrase: str) -> bool:
    """Whether `body` begins with `phrase` as the text of its first block, a top-level paragraph."""
    if not phrase or not body.lstrip().startswith(phrase):
        return False
    start = body.rfind("\n", 0, len(body) - len(body.lstrip())) + 1  # the first line that is not blank
    first = _opening(body[start:start + OPENING_CHARS + 1].replace("\r\n", "\n"))
    tokens = _markdown().parse(first)
    return bool(tokens) and tokens[0].type == "paragraph_open" and tokens[0].level == 0 \
        and tokens[1].content.startswith(phrase)


def _opening(body: str) -> str:
    """The body up to its first blank line, at most about OPENING_CHARS (cut at the end of a line)."""
    blank = _BLANK_LINE.search(body, 0, OPENING_CHARS)
    if blank is not None:
        return body[:blank.start()]
    if len(body) <= OPENING_CHARS:
        return body
    cut = body.rfind("\n", 0, OPENING_CHARS)
    return body[:cut] if cut > 0 else body[:OPENING_CHARS]


@cache
def _markdown() -> MarkdownIt:
    """GitHub's flavour as far as the first block goes: CommonMark and tables."""
    return MarkdownIt("commonmark").enable("table")


def not_own_words(comment: Comment) -> str | None:
    """Why `comment` is not its author's own words (someone else last edited it, or GitHub would not
    say who did); None when it is: never edited, or last edited by its author."""
    editor = comment.last_editor
    if editor is None:
        return (f"who last edited {comment.author}'s {comment.kind_label} could not be established from "
                "GitHub, so it cannot count as their sign-off")
    if editor and editor.lower() != comment.author.lower():
        when = f" at {comment.edited_at}" if comment.edited_at else ""
        return (f"{comment.author}'s {comment.kind_label} was last edited by {editor}{when}: a sign-off counts "
                f"only as its author's own words, so {comment.author} must post it again or edit it")
    return None


def version(comment: Comment) -> str:
    """Which sign-off this is: the comment, as of its last edit (an edit by its author is a fresh sign-off)."""
    return f"{comment.kind}:{comment.id}:{comment.edited_at or comment.created_at}"


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
