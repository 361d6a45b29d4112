"""What a text gives its readers: statements, and where its comments, heredocs, expansions and logical
lines are, all from the positions of tree-sitter's nodes.

Heredoc bodies end where bash ends them: at the first line that is exactly the delimiter (`<<-`: after
leading tabs). tree-sitter-bash also ends one at an indented delimiter, and reads only the first of two
heredocs opened on one line; where it disagrees with bash, the bodies bash reads are blanked (their
lines kept) and the text parsed again, so no body line is read as commands and every command after one is.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from checks import memo

from .syntax import Builder, Statement, Statements, heredoc_operator
from .tree import MAX_SCRIPT, Source, find, parse, query
from .words import Part, WordReader, begins, is_arithmetic

_NODES = query("""
(comment) @comment
(heredoc_redirect) @heredoc
(heredoc_start) @start
[(simple_expansion) (expansion)] @expansion
(concatenation "$" @dollar)
[(expansion) (arithmetic_expansion) (command_substitution) (compound_statement) (c_style_for_statement)] @opaque
[(string) (raw_string) (ansi_c_string) (translated_string) (command_substitution) (arithmetic_expansion)
 (expansion) (array) (heredoc_body) (compound_statement) (c_style_for_statement)] @spanning
""")
# expansion: parameter expansions; dollar: tree-sitter-bash's literal `$` before `B` in `$A/$B/` (#315);
# opaque: what expansions inside are not the line's own; spanning: what newlines inside are not line ends
_NAME_AFTER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")


@dataclass(frozen=True)
class Doc:
    """A heredoc as bash reads it: its operator's line and column, its body's lines, its delimiter."""

    line: int
    column: int
    first: int  # first body line
    last: int  # its terminator's line; the last line read when it is unterminated
    closed: bool
    delimiter: str
    quoted: bool


@dataclass(frozen=True)
class Reading:
    """What reading a text gives the readers of its lines."""

    statements: Statements
    ends: frozenset[int]  # lines where a logical line ends
    comments: dict[int, int]  # line -> column where its comment starts
    refs: dict[int, list[tuple[int, int, Part]]]  # line -> (start, end column, part) of its expansions
    docs: tuple[Doc, ...]
    lexed: int  # lines read as a whole; any after them (past MAX_SCRIPT) are read alone
    # (first, last) lines whose commands were not read: past MAX_SCRIPT, or a line tree-sitter gave up on
    unread: tuple[tuple[int, int], ...] = ()


@memo.reading(maxsize=128)
def read(text: str, embedded: bool) -> Reading:
    """The reading of a script (a pure function of its text, immutable): the same library or launcher is
    read by every evidence round and every PR of a backtest, and parsing it is most of reading it."""
    raw = text.splitlines()
    return read_lines(raw, indented=True) if embedded else read_whole(raw)


def read_whole(raw: list[str]) -> Reading:
    text = "\n".join(raw)
    cut = text[:MAX_SCRIPT]
    lexed = len(raw) if len(cut) == len(text) else cut.count("\n") + 1
    parsed = _parse(Source.of(cut))
    if parsed is None:  # tree-sitter gave up on it: each line on its own
        return read_lines(raw, indented=False)
    src, root, nodes, docs, body_refs = parsed
    comments: dict[int, int] = {}
    for node in nodes.get("comment", ()):
        line = src.line(node.start_byte)
        if line not in comments:  # (the first comment on a line is where its code ends)
            comments[line] = src.column(node.start_byte)
    builder = Builder(src)
    statements = builder.statements(root.children, 1)
    refs = _line_refs(src, nodes, builder.words)
    for n, found in body_refs.items():
        refs.setdefault(n, []).extend(found)
    unread = ((lexed + 1, len(raw)),) if lexed < len(raw) else ()
    return Reading(statements, _ends(src, nodes, docs, comments), comments, refs, docs, lexed, unread)


@memo.reading(maxsize=256)
def statements(text: str, base: int = 1) -> Statements:
    """The statements of a string run as shell code (`eval`, `bash -c`, `$(...)`, a sourced file), its first
    line numbered `base`."""
    parsed = _parse(Source.of(text[:MAX_SCRIPT], base))
    return Builder(parsed[0]).statements(parsed[1].children, 1) if parsed is not None else ()


def read_lines(raw: list[str], indented: bool) -> Reading:
    """Each line parsed on its own: shell inside YAML (a workflow's `run:` blocks, whose text around the
    commands may hold quotes that do not pair up), or a script tree-sitter gave up on. A heredoc body ends
    at its delimiter; with `indented`, also at an indented one (YAML strips the block's indentation)."""
    out: list[Statement] = []
    comments: dict[int, int] = {}
    refs: dict[int, list[tuple[int, int, Part]]] = {}
    docs: list[Doc] = []
    unread: list[tuple[int, int]] = []
    n = 0
    while n < len(raw):
        n += 1
        src = Source.of(raw[n - 1], n)
        root = parse(src.data)
        if root is None:
            if unread and unread[-1][1] == n - 1:
                unread[-1] = (unread[-1][0], n)
            else:
                unread.append((n, n))
            continue
        builder = Builder(src)
        out.extend(builder.statements(root.children, 1))
        nodes = find(_NODES, root)
        if "comment" in nodes:
            comments[n] = src.column(nodes["comment"][0].start_byte)
        line_refs = _line_refs(src, nodes, builder.words)
        if line_refs:
            refs[n] = line_refs[n]
        opener = n
        for at, op, text, quoted, _node in _operators(src, nodes):
            first = n + 1
            while n < len(raw) and not _terminates(raw[n], text, op == "<<-", indented):
                n += 1
            if not quoted:
                for k, found_refs in _body_refs(raw[first - 1:n]).items():
                    refs[first + k] = found_refs
            closed = n < len(raw)
            n += closed
            docs.append(Doc(opener, src.column(at), first, n, closed, text, quoted))
    return Reading(tuple(out), frozenset(range(1, len(raw) + 1)), comments, refs, tuple(docs), len(raw),
                   tuple(unread))


def _operators(src: Source, nodes: dict[str, list[Node]]) -> list[tuple[int, str, str, bool, Node | None]]:
    """(offset, operator, delimiter, quoted, its `heredoc_redirect` or None) of every heredoc operator among
    `nodes`, in order: those tree-sitter reads as heredocs, a second one on a line (which it reads as an
    ERROR `<` and a `<` redirection), and one it leaves in an ERROR (a line read alone)."""
    out: list[tuple[int, str, str, bool, Node | None]] = []
    for start in nodes.get("start", ()):
        op, parent = start.prev_sibling, start.parent
        if op is not None and op.type in ("<<", "<<-") and (found := heredoc_operator(src, [op, start], 0)):
            out.append((op.start_byte, *found,
                        parent if parent is not None and parent.type == "heredoc_redirect" else None))
    for node in nodes.get("heredoc", ()):
        kids = node.children
        out.extend((kids[i].start_byte, *found, None) for i in range(2, len(kids))
                   if kids[i].type == "ERROR" and (found := heredoc_operator(src, kids, i)) is not None)
    out.sort(key=lambda o: o[0])
    return out


def _terminates(line: str, text: str, tabs: bool, indented: bool) -> bool:
    if indented:
        return line.strip() == text
    return (line.lstrip("\t") if tabs else line) == text


def _parse(src: Source
           ) -> tuple[Source, Node, dict[str, list[Node]], tuple[Doc, ...], dict[int, list[tuple[int, int, Part]]]] | None:
    """(source, root, the nodes `_NODES` finds, heredocs, expansions of blanked bodies by line), bodies read as
    bash reads them; None when tree-sitter gives up."""
    root = parse(src.data)
    if root is None:
        return None
    nodes = find(_NODES, root)
    docs, blank = _heredocs(src, nodes)
    if not blank:
        return src, root, nodes, docs, {}
    data = bytearray(src.data)
    body_refs: dict[int, list[tuple[int, int, Part]]] = {}
    lines = src.text(0, len(src.raw)).split("\n")
    for doc, through in blank:
        start = src.starts[doc.first - 1] if doc.first <= len(src.starts) else len(data)
        end = src.starts[through] - 1 if through < len(src.starts) else len(data)
        if start < end:
            data[start:end] = re.sub(rb"[^\n]", b" ", bytes(data[start:end]))
        if not doc.quoted:
            for k, found in _body_refs(lines[doc.first - 1:doc.last - 1 if doc.closed else doc.last]).items():
                body_refs[doc.first + k] = found
    blanked = replace(src, data=bytes(data))
    root = parse(blanked.data)
    return (blanked, root, find(_NODES, root), docs, body_refs) if root is not None else None


def _heredocs(src: Source, nodes: dict[str, list[Node]]) -> tuple[tuple[Doc, ...], list[tuple[Doc, int]]]:
    """Every heredoc with the body bash reads; and those tree-sitter-bash reads otherwise, each with the
    last line to blank (its body; the terminator too when tree-sitter does not know the heredoc)."""
    operators = _operators(src, nodes)
    lines = src.text(0, len(src.raw)).split("\n") if operators else []
    docs: list[Doc] = []
    blank: list[tuple[Doc, int]] = []
    before = (0, 0)  # (line, last) of the heredoc before: a second one on a line starts after its body
    for at, op, text, quoted, node in operators:
        line = src.line(at)
        kids = node.children if node is not None else []
        body = next((k for k in kids if k.type == "heredoc_body"), None)
        end = next((k for k in kids if k.type == "heredoc_end"), None)
        if line == before[0]:
            first = before[1] + 1
        else:
            first = src.line(body.start_byte) if body is not None else \
                src.line(end.start_byte) if end is not None else line + 1
        last = _terminator(lines, first, text, op == "<<-")
        closed = last <= len(lines) and (text != "" or last < len(lines))
        last = min(last, len(lines))
        doc = Doc(line, src.column(at), first, last, closed, text, quoted)
        docs.append(doc)
        if node is None or line == before[0]:
            blank.append((doc, last))
        else:
            seen_closed = end is not None and end.end_byte > end.start_byte
            if seen_closed != closed or closed and end is not None and src.line(end.start_byte) != last:
                blank.append((doc, last - 1 if closed else last))
        before = (line, last)
    return tuple(docs), blank


def _terminator(lines: list[str], first: int, text: str, tabs: bool) -> int:
    """The number of the first line from `first` on that ends a heredoc delimited by `text` (`tabs`: `<<-`,
    after leading tabs); one past the last line when none does. (A body is most of a patch script: its
    lines compared in C where the delimiter must be the whole line.)"""
    if not tabs:
        try:
            return lines.index(text, first - 1) + 1
        except ValueError:
            return max(first, len(lines) + 1)
    last = first
    while last <= len(lines) and lines[last - 1].lstrip("\t") != text:
        last += 1
    return last


def _line_refs(src: Source, nodes: dict[str, list[Node]],
               words: WordReader) -> dict[int, list[tuple[int, int, Part]]]:
    """The parameter expansions on each line that are the line's own: not inside another `${...}`,
    arithmetic or backquotes, each on one line (`words`: the reader of the text's statements, which has
    read most of them)."""
    opaque: list[tuple[int, int]] = []
    for node in nodes.get("opaque", ()):
        kind = node.type
        if kind == "expansion" or kind == "arithmetic_expansion":
            opaque.append((begins(src, node) + 2, node.end_byte))
        elif kind == "command_substitution":
            kids = node.children
            if kids and kids[0].type == "`" or is_arithmetic(src, node):
                opaque.append((begins(src, node) + 1, node.end_byte))
        elif kind == "compound_statement":
            kids = node.children
            if kids and kids[0].type == "((":
                opaque.append((node.start_byte, node.end_byte))
        else:  # `for ((...))`: its header
            body = node.child_by_field_name("body")
            opaque.append((node.start_byte, body.start_byte if body is not None else node.end_byte))
    starts, ends = _merged(opaque)
    lines = src.starts
    last = len(lines) - 1
    out: dict[int, list[tuple[int, int, Part]]] = {}
    for node in nodes.get("expansion", ()):
        at = begins(src, node)
        k = bisect.bisect_right(starts, at) - 1
        if k >= 0 and at < ends[k]:
            continue
        row = bisect.bisect_right(lines, at) - 1  # (one search for the line of both ends and their columns)
        end = node.end_byte
        if row < last and end >= lines[row + 1]:
            continue
        part = words.quoted(node)
        if part is not None and part.kind == "param":
            begin = lines[row]
            columns = (at - begin, end - begin) if src.ascii or src.ascii_line(row) else \
                (len(src.text(begin, at)), len(src.text(begin, end)))
            out.setdefault(row + src.base, []).append((*columns, part))
    for node in nodes.get("dollar", ()):
        at = node.start_byte
        m = _NAME_AFTER.match(src.raw, at + 1)
        k = bisect.bisect_right(starts, at) - 1
        if m is None or k >= 0 and at < ends[k]:
            continue
        name = m.group().decode()
        found = out.setdefault(src.line(at), [])
        found.append((src.column(at), src.column(m.end()), Part("param", "$" + name, name=name)))
        found.sort(key=lambda ref: ref[0])
    return out


def _merged(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, overlapping spans merged: their starts and ends."""
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(spans):
        if starts and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


def _ends(src: Source, nodes: dict[str, list[Node]], docs: tuple[Doc, ...], comments: dict[int, int]) -> frozenset[int]:
    """The lines whose newline ends a logical line: not inside a quote, `$(...)`, `${...}`, arithmetic, an
    array or a heredoc body, not escaped, and not a heredoc's terminator."""
    spans = []
    for node in nodes.get("spanning", ()):
        if node.start_point[0] == node.end_point[0]:
            continue
        if node.type == "compound_statement":
            if node.children and node.children[0].type == "((":
                spans.append((node.start_byte, node.end_byte))
        elif node.type == "c_style_for_statement":
            body = node.child_by_field_name("body")
            spans.append((node.start_byte, body.start_byte if body is not None else node.end_byte))
        else:
            spans.append((node.start_byte, node.end_byte))
    starts, ends = _merged(spans)
    lines = src.starts
    out = set(range(1, len(lines)))  # (line n's newline is at lines[n] - 1)
    for start, end in zip(starts, ends):  # a newline inside a span
        out.difference_update(range(bisect.bisect_left(lines, start + 1), bisect.bisect_left(lines, end + 1)))
    out.difference_update(d.last for d in docs if d.closed)
    raw = src.raw
    at = raw.find(b"\\\n")
    while at >= 0:  # a newline after an odd count of backslashes, outside a comment
        n = bisect.bisect_left(lines, at + 2)
        before = raw[lines[n - 1]:at + 1]
        if (len(before) - len(before.rstrip(b"\\"))) % 2 and n not in comments:
            out.discard(n)
        at = raw.find(b"\\\n", at + 2)
    return frozenset(out)


def _body_refs(lines: list[str]) -> dict[int, list[tuple[int, int, Part]]]:
    """The expansions of heredoc body lines (the delimiter unquoted), by index of the line."""
    if not lines or not any("$" in ln for ln in lines):
        return {}
    body = "\n".join(lines)
    mark = "SIGNOFF_BOT_EOF"
    while mark in body:
        mark += "_"
    src = Source.of(f"cat <<{mark}\n{body}\n{mark}\n")
    root = parse(src.data)
    if root is None:
        return {}
    return {n - 2: found for n, found in _line_refs(src, find(_NODES, root), WordReader(src)).items() if n >= 2}
