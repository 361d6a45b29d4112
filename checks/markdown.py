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
from dataclasses import dataclass
from functools import cache, partial

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim
from markdown_it.rules_block.state_block import StateBlock

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
    text = text.replace("\r\n", "\n")
    if len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        text = text[:cut if cut > 0 else limit]
    return Document(tuple(text.split("\n")), tuple(_blocks(_markdown().parse(text))))


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


@cache
def _markdown() -> MarkdownIt:
    """GitHub's flavour at block level: CommonMark and tables, without inline parsing (tables read by `_table`)."""
    md = MarkdownIt("commonmark").enable("table").disable("inline")
    ends = [r.name for r in md.block.ruler.__rules__ if r.enabled and "blockquote" in r.alt]
    starts = _TABLE_ENDS_START if ends == list(_TABLE_ENDS) else None
    alt = next(r.alt for r in md.block.ruler.__rules__ if r.name == "table")
    md.block.ruler.at("table", partial(_table, starts=starts), {"alt": alt})
    return md


# The rules that end a table (markdown-it's "blockquote" chain), and the characters a line one of them reads
# starts with (after its indentation): a fence, a quote, a rule, a list item, an HTML block, a heading.
_TABLE_ENDS = ("fence", "blockquote", "hr", "list", "html_block", "heading")
_TABLE_ENDS_START = frozenset("`~>*-_+0123456789<#")
_ALIGN = re.compile(r"^:?-+:?$")
_MAX_AUTOCOMPLETED_CELLS = 0x10000  # markdown-it's bound on the empty cells a table's short rows add


def _table(state: StateBlock, start: int, end: int, silent: bool, starts: frozenset[str] | None) -> bool:
    """markdown-it's table rule (`markdown_it.rules_block.table`), line for line, but for the tokens: only what
    `_block` reads (table_open, a tr_open per row with an inline token per cell, tr_close, table_close), a
    third of the rule's, which cost more than the rest of a MODELS.md read. Its rows are split by
    `split_cells`, and a row is tried against the rules that end a table only when it starts with a
    character one of them needs (`starts`; every row when the chain is not the one known)."""
    if start + 2 > end:
        return False
    line = start + 1
    if state.sCount[line] < state.blkIndent or state.is_code_block(line):
        return False
    delimiter = state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]
    if len(delimiter) < 2 or delimiter[0] not in "|-:" or delimiter[1] not in "|-: \t" or \
            (delimiter[0] == "-" and delimiter[1] in " \t") or delimiter.strip("|-: \t"):
        return False
    aligns = 0
    columns = delimiter.split("|")
    for i, column in enumerate(columns):
        cell = mdTrim(column)
        if not cell:
            if i == 0 or i == len(columns) - 1:
                continue  # empty columns before and after the table are allowed, not between
            return False
        if not _ALIGN.search(cell):
            return False
        aligns += 1
    header = mdTrim(_line(state, start))
    if "|" not in header or state.is_code_block(start):
        return False
    cells = _row(header)
    width = len(cells)
    if width == 0 or width != aligns:
        return False
    if silent:
        return True

    parent, state.parentType = state.parentType, "table"
    ends = state.md.block.ruler.getRules("blockquote")
    table = _push(state, "table_open", "table", 1, start)
    _push(state, "tr_open", "tr", 1, start)
    for cell in cells:
        _push(state, "inline", "", 0, start).content = mdTrim(cell)
    _push(state, "tr_close", "tr", -1)
    autocompleted = 0
    line = start + 2
    src, b_marks, t_shift, e_marks = state.src, state.bMarks, state.tShift, state.eMarks
    while line < end:
        if state.sCount[line] < state.blkIndent:
            break
        first = b_marks[line] + t_shift[line]
        if (starts is None or (first < e_marks[line] and src[first] in starts)) and \
                any(rule(state, line, end, True) for rule in ends):
            break
        text = mdTrim(src[first:e_marks[line]])
        if not text or state.is_code_block(line):
            break
        cells = _row(text)
        autocompleted += width - len(cells)
        if autocompleted > _MAX_AUTOCOMPLETED_CELLS:
            break
        _push(state, "tr_open", "tr", 1, line)
        for i in range(width):
            _push(state, "inline", "", 0, line).content = mdTrim(cells[i]) if i < len(cells) and cells[i] else ""
        _push(state, "tr_close", "tr", -1)
        line += 1
    _push(state, "table_close", "table", -1)
    table.map[1] = line
    state.parentType = parent
    state.line = line
    return True


def _line(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]


def _row(text: str) -> list[str]:
    """The cells of a table row (its text trimmed): split at unescaped pipes, a leading and a trailing empty
    cell dropped."""
    cells = split_cells(text)
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return cells


def _push(state: StateBlock, kind: str, tag: str, nesting: int, line: int | None = None):
    token = state.push(kind, tag, nesting)
    if line is not None:
        token.map = [line, line + 1]
    if kind == "inline":
        token.children = []
    return token


def split_cells(row: str) -> list[str]:
    """A table row's cells as markdown-it's `escapedSplit` cuts them: at every `|` not right after a
    backslash, the backslash of each escaped pipe dropped."""
    if "\\" not in row:
        return row.split("|")
    return [cell.replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(row)]


def _blocks(tokens) -> list[Block]:
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
        elif kind.endswith("_open") and kind[:-5] in ("paragraph", "heading", "table") or kind in (
                "fence", "code_block", "html_block", "hr"):
            block, i = _block(tokens, i)
            out.append(Block(block.kind, block.line, block.end, block.text, block.level, depth, quotes > 0,
                             fresh_item, block.rows))
            fresh_item = False
        i += 1
    return out


def _block(tokens, i: int) -> tuple[Block, int]:
    """The block whose first token is `tokens[i]`, and the index of its last token."""
    t = tokens[i]
    line, end = t.map[0] + 1, t.map[1] + 1
    if t.type == "paragraph_open":
        return Block("paragraph", line, end, tokens[i + 1].content), i + 2
    if t.type == "heading_open":
        return Block("heading", line, end, tokens[i + 1].content, level=int(t.tag[1])), i + 2
    if t.type == "table_open":
        rows: list[tuple[int, tuple[str, ...]]] = []
        j = i + 1
        while tokens[j].type != "table_close":
            if tokens[j].type == "tr_open":
                row_line, cells = tokens[j].map[0] + 1, []
                j += 1
                while tokens[j].type != "tr_close":
                    if tokens[j].type == "inline":
                        cells.append(tokens[j].content)
                    j += 1
                rows.append((row_line, tuple(cells)))
            j += 1
        return Block("table", line, end, "", rows=tuple(rows)), j
    kind = {"fence": "fence", "code_block": "code", "html_block": "html", "hr": "hr"}[t.type]
    return Block(kind, line, end, t.content if kind in ("fence", "code") else ""), i
