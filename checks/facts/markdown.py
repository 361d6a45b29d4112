"""The one Markdown reader: what a sign-off, the checklist template and MODELS.md say, block by block.

Markdown is read as GitHub renders it (CommonMark with tables, markdown-it-py),
so what a reader does not see as text is not text: a fenced or indented code
block, an HTML block. Each `Block` keeps its place in the source (1-based
lines), its nesting (list depth, quote) and its source lines, so a check can
anchor what it finds to a line and a task item is read with its checked
state (`task_items`).

Only the block structure is parsed. Inline parsing of hostile text is
superlinear (a megabyte of "[" takes half a minute) and nothing here needs it:
a block's text is its inline source. At most `limit` characters of a document
are read (cut at the end of a line): a sign-off of megabytes is read as far as
its first `limit` characters, which is where its checklist is.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.rules_block import table as stock_table  # the rule (the package exports the function)

MAX_CHARS = 1_000_000
TEXT = ("paragraph", "heading", "table")  # the blocks a reader sees as text

_BOX = re.compile(r"\[(?P<mark>[ xX])\]\s*")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_LINK = re.compile(r"!?\[([^\[\]]*)\]\([^()]*\)")  # no nesting: linear, even on "[[[[..." or "[a](" * n


@dataclass(frozen=True)
class Block:
    kind: str  # paragraph | heading | table | fence | code | html | hr
    line: int  # its first line, 1-based
    end: int  # the line after its last
    text: str  # paragraph, heading: its inline source; fence, code: its content; table, html, hr: ""
    level: int = 0  # a heading's level (1-6)
    depth: int = 0  # how many list items it is in
    quoted: bool = False  # whether it is in a block quote
    opens_item: bool = False  # whether it is the first block of a list item
    rows: tuple[tuple[int, tuple[str, ...]], ...] = ()  # a table's rows, header first: (line, cells)


@dataclass(frozen=True)
class TaskItem:
    """A list item that opens with a box: `- [x] text` (checked) or `- [ ] text`."""

    checked: bool
    text: str  # the item's first paragraph after the box, its lines joined by spaces
    depth: int  # 0 for a top-level item, 1 for a sub-item, ...
    line: int


@dataclass(frozen=True)
class Document:
    lines: tuple[str, ...]  # the source lines read (at most `limit` characters)
    blocks: tuple[Block, ...]

    def source(self, block: Block, stop: int | None = None) -> list[str]:
        """The source lines of `block`, up to line `stop` (excluded)."""
        end = block.end if stop is None else min(block.end, stop)
        return list(self.lines[block.line - 1:end - 1])

    def text_lines(self) -> list[int]:
        """Every line, in order, of a block a reader sees as text (no code, no HTML), outside quotes."""
        return sorted({n for b in self.blocks if b.kind in TEXT and not b.quoted for n in range(b.line, b.end)})


def read(text: str, limit: int = MAX_CHARS) -> Document:
    """`text` (its first `limit` characters, cut at the end of a line) as Markdown blocks; never raises."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # every line break markdown-it sees: lines and blocks agree
    if len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        text = text[:cut if cut > 0 else limit]
    return Document(tuple(text.split("\n")), tuple(_blocks(_MARKDOWN.parse(text))))


def task_items(doc: Document, before: int | None = None) -> tuple[TaskItem, ...]:
    """The task items of `doc` outside quotes, in order; with `before`, only those above that line, each
    read up to it (a heading written straight under the last item continues its paragraph)."""
    items = []
    for b in doc.blocks:
        if b.kind != "paragraph" or not b.opens_item or b.quoted or (before is not None and b.line >= before):
            continue
        box = _BOX.match(b.text)
        if box is None:
            continue
        lines = b.text.split("\n")[:(before - b.line) if before is not None else None]
        text = " ".join(line.strip() for line in [lines[0][box.end():], *lines[1:]] if line.strip())
        items.append(TaskItem(box.group("mark") in "xX", text, b.depth - 1, b.line))
    return tuple(items)


def unlink(text: str) -> str:
    """Inline source with each link (or image) replaced by its text."""
    return _LINK.sub(r"\1", text) if "](" in text else text  # every link has its "]("


def _markdown() -> MarkdownIt:
    """GitHub's flavour at block level: CommonMark and tables, without inline parsing (nor `text_join`, which
    only joins the text tokens inline parsing would make)."""
    md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    if callable(stock_table.__globals__.get("escapedSplit")):
        # markdown-it's own table rule, its rows split by `split_cells` (its `escapedSplit` walks every
        # character in Python: a third of a MODELS.md read); where the library has no such helper, its rule.
        rule = types.FunctionType(stock_table.__code__, {**stock_table.__globals__, "escapedSplit": split_cells},
                                  stock_table.__name__, stock_table.__defaults__, stock_table.__closure__)
        alt = next(r.alt for r in md.block.ruler.__rules__ if r.name == "table")
        md.block.ruler.at("table", rule, {"alt": alt})
    return md


def split_cells(row: str) -> list[str]:
    """A table row's cells as markdown-it's `escapedSplit` cuts them: at every `|` not right after a
    backslash, the backslash of each escaped pipe dropped."""
    if "\\" not in row:
        return row.split("|")
    return [cell.replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(row)]


_MARKDOWN = _markdown()  # built once, at import (0.3 ms); only read after

# The token each kind of block starts with.
_FIRST_TOKENS = frozenset(("paragraph_open", "heading_open", "table_open", "fence", "code_block", "html_block", "hr"))


def _blocks(tokens: Sequence[Token]) -> list[Block]:
    out: list[Block] = []
    depth = quotes = 0
    fresh_item = False  # the next block opens a list item
    i = 0
    while i < len(tokens):
        t = tokens[i]
        kind = t.type
        if kind == "list_item_open":
            depth += 1
            fresh_item = True
        elif kind == "list_item_close":
            depth -= 1
            fresh_item = False
        elif kind == "blockquote_open":
            quotes += 1
        elif kind == "blockquote_close":
            quotes -= 1
        elif kind in _FIRST_TOKENS:
            block, i = _block(tokens, i, depth, quotes > 0, fresh_item)
            out.append(block)
            fresh_item = False
        i += 1
    return out


def _block(tokens: Sequence[Token], i: int, depth: int, quoted: bool, opens_item: bool) -> tuple[Block, int]:
    """The block whose first token is `tokens[i]`, at its nesting, and the index of its last token."""
    t = tokens[i]
    line, end = t.map[0] + 1, t.map[1] + 1  # type: ignore[index]  # a block's first token has its lines
    if t.type == "paragraph_open":
        return Block("paragraph", line, end, tokens[i + 1].content, 0, depth, quoted, opens_item), i + 2
    if t.type == "heading_open":
        return Block("heading", line, end, tokens[i + 1].content, int(t.tag[1]), depth, quoted, opens_item), i + 2
    if t.type == "table_open":
        rows: list[tuple[int, tuple[str, ...]]] = []
        j = i + 1
        while tokens[j].type != "table_close":
            if tokens[j].type == "tr_open":
                row_line, cells = tokens[j].map[0] + 1, list[str]()  # type: ignore[index]  # (a row's too)
                j += 1
                while tokens[j].type != "tr_close":
                    if tokens[j].type == "inline":
                        cells.append(tokens[j].content)
                    j += 1
                rows.append((row_line, tuple(cells)))
            j += 1
        return Block("table", line, end, "", 0, depth, quoted, opens_item, tuple(rows)), j
    kind = {"fence": "fence", "code_block": "code", "html_block": "html", "hr": "hr"}[t.type]
    return Block(kind, line, end, t.content if kind in ("fence", "code") else "", 0, depth, quoted, opens_item), i
