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
one's. `not_own_words` says why; `checks.rules.extra15_own_words` turns that into a FAIL.
An edit by the author is a fresh sign-off (`version`).

The parsed sign-off keeps its checklist items (task items, checked or not,
with nesting) and its "Additional detail section", where reviewers justify
exceptions and link recipes and waivers: the lines after its heading, up to a
"Signed:" line. Both are read by the one Markdown reader (`checks.facts.markdown`)
as GitHub shows them: an item in a code block or a quote is not an item. A
sign-off is read as far as its first SIGNOFF_CHARS characters.

The checklist template is read by the same grammar (`template`): the
checklist under the first heading of the checklist file that names
"Template", in its fenced code block, or the section's text when it has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from checks.snapshot import Comment

from . import markdown

_DETAIL = "additional detail section"
_SIGNED = re.compile(r"^\s*\**signed\**\s*:", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# Only the comment's first block decides whether the phrase is paragraph text; Markdown parses a
# megabyte in seconds, so only its first lines are parsed (enough to see code, quote, heading or table).
OPENING_CHARS = 4096
# GitHub refuses a comment body longer than this: what lies past it cannot be a sign-off's (a body that
# long can only come from elsewhere, and is read as far as this).
SIGNOFF_CHARS = 65_536
_WORD_BREAK = re.compile(r"[\W_]+")


ChecklistItem = markdown.TaskItem  # checked, text, depth (0: top level), line (1-based, in the body)


@dataclass(frozen=True)
class SignOff:
    comment: Comment
    items: tuple[ChecklistItem, ...]
    detail: str  # the "Additional detail section" text ("" when absent)
    has_detail_section: bool
    # The detail section's paragraphs (a bullet is its paragraph), each on one line; code is not among them.
    detail_paragraphs: tuple[str, ...] = ()

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
    return _first_is_phrase(markdown.read(_opening(_from_first_line(body))).blocks, phrase)


def _first_is_phrase(blocks: tuple[markdown.Block, ...], phrase: str) -> bool:
    return bool(blocks) and blocks[0].kind == "paragraph" and blocks[0].depth == 0 and not blocks[0].quoted \
        and blocks[0].text.startswith(phrase)


def _first_line(body: str) -> int:
    """Where the first line of `body` that is not blank starts."""
    return body.rfind("\n", 0, len(body) - len(body.lstrip())) + 1


def _from_first_line(body: str) -> str:
    """The body from its first line that is not blank, as far as `_opening` may read."""
    start = _first_line(body)
    return body[start:start + OPENING_CHARS + 1].replace("\r\n", "\n")


def _opens_in(doc: markdown.Document, body: str, phrase: str) -> bool | None:
    """`opens_with(body, phrase)` read from `doc`, the whole of `body` read (`markdown.read(body, SIGNOFF_CHARS)`),
    or None when `doc` cannot tell.

    It can when the lines before the opening are blank ones (spaces, tabs), so the opening's lines start `doc`
    too; when `doc`'s first block starts on the first of them; and when what decides that block lies within
    the opening: a blank line ends the opening, or the block's last line is at least two lines above the
    opening's last. A block rule decides on the lines up to the one that ends the block and the next (a table
    needs two lines to interrupt a paragraph), so that block is the opening's first block too: a paragraph that
    begins with `phrase` in both or in neither (a list, quote, fence, code or HTML block is decided by its first
    line)."""
    start = _first_line(body)
    if len(body) > SIGNOFF_CHARS or body[:start].strip(" \t\n") or not doc.blocks:
        return None
    text = _from_first_line(body)
    before = body.count("\n", 0, start)  # the blank lines before the opening
    lines = _opening(text).count("\n") + 1
    first = doc.blocks[0]
    if first.line != before + 1 or (_BLANK_LINE.search(text, 0, OPENING_CHARS) is None and
                                    first.end > before + lines - 1):
        return None
    return _first_is_phrase(doc.blocks, phrase)


def _opening(body: str) -> str:
    """The body up to its first blank line, at most about OPENING_CHARS (cut at the end of a line)."""
    blank = _BLANK_LINE.search(body, 0, OPENING_CHARS)
    if blank is not None:
        return body[:blank.start()]
    if len(body) <= OPENING_CHARS:
        return body
    cut = body.rfind("\n", 0, OPENING_CHARS)
    return body[:cut] if cut > 0 else body[:OPENING_CHARS]


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
    """The newest sign-off among `comments`, parsed; None when there is none.

    The newest comment that begins with the phrase is nearly always the sign-off: its body is read whole
    first, and that reading also says whether the phrase opens it (`_opens_in`), so its opening is not read
    again. Older ones are looked at only when it is not, each by its opening (as `is_signoff`)."""
    candidates = sorted((c for c in comments if not is_bot(c, bot_login) and phrase and
                         c.body.lstrip().startswith(phrase)), key=lambda c: (c.created_at, c.id), reverse=True)
    if not candidates:
        return None
    newest = candidates[0]
    doc = markdown.read(newest.body, SIGNOFF_CHARS)
    opens = _opens_in(doc, newest.body, phrase)
    if opens is None:
        opens = opens_with(newest.body, phrase)
    if opens:
        return _signoff(newest, doc)
    return next((parse(c) for c in candidates[1:] if opens_with(c.body, phrase)), None)


def parse(comment: Comment) -> SignOff:
    """The sign-off's items above its detail section, and that section (see the module docstring)."""
    return _signoff(comment, markdown.read(comment.body, SIGNOFF_CHARS))


def _signoff(comment: Comment, doc: markdown.Document) -> SignOff:
    items, detail, found, paragraphs = _checklist(doc)
    return SignOff(comment, items, detail, found, paragraphs)


@dataclass(frozen=True)
class Template:
    """The checklist template of the checklist file."""

    items: tuple[ChecklistItem, ...]  # their lines are lines of the checklist file
    detail: str  # the template's detail section: its placeholder text
    line: int  # the template's first line in the file


def template(text: str) -> Template | None:
    """The checklist under the first heading naming "Template" (up to the next heading of its level or
    above): its first fenced code block, else the section's text; None without such a heading."""
    doc = markdown.read(text)
    headings = [b for b in doc.blocks if b.kind == "heading" and not b.quoted]
    start = next((h for h in headings if "template" in _WORD_BREAK.split(markdown.unlink(h.text).lower())), None)
    if start is None:
        return None
    end = next((h.line for h in headings if h.line > start.line and h.level <= start.level), len(doc.lines) + 1)
    fence = next((b for b in doc.blocks if b.kind == "fence" and start.end <= b.line < end), None)
    if fence is not None:
        block, first = fence.text.removesuffix("\n"), fence.line + 1
    else:
        block, first = "\n".join(doc.lines[start.end - 1:end - 1]), start.end
    items, detail, _found, _paragraphs = _checklist(markdown.read(block))
    return Template(tuple(replace(i, line=i.line + first - 1) for i in items), detail, first)


def checklist_template(ctx: Any) -> Template | None:  # a checks.context.Context (which imports this module)
    """`template` of the checklist file on the base branch (None without the file or its heading), read
    once per Context: the checklist and recipe-link checks both hold the sign-off to it."""
    found: Template | None = ctx.once(_checklist_template)
    return found


def _checklist_template(ctx: Any) -> Template | None:
    text = ctx.snap.policy.get(ctx.policy.checklist)
    return template(text) if text is not None else None


def _checklist(doc: markdown.Document) -> tuple[tuple[ChecklistItem, ...], str, bool, tuple[str, ...]]:
    """(task items above the detail heading, the detail text, whether there is a detail heading, its
    paragraphs). The heading is the first line of text that is one (`is_detail_heading`); the section
    runs to the first "Signed:" line of text after it."""
    text = doc.text_lines()
    heading = next((n for n in text if is_detail_heading(doc.lines[n - 1])), None)
    if heading is None:
        return markdown.task_items(doc), "", False, ()
    end = next((n for n in text if n > heading and _SIGNED.match(doc.lines[n - 1])), len(doc.lines) + 1)
    detail = "\n".join(doc.lines[heading:end - 1]).strip()
    paragraphs = []
    for b in doc.blocks:
        if b.kind in markdown.TEXT and not b.quoted and b.end > heading + 1 and b.line < end:
            lines = doc.source(b, end)[max(0, heading + 1 - b.line):]  # a paragraph may run on from the heading
            paragraphs.append(" ".join(line.strip() for line in lines))
    return markdown.task_items(doc, before=heading), detail, True, tuple(p for p in paragraphs if p)


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
