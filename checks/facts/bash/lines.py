"""A script as lines: each physical line's code (its comment cut where bash cuts it), the heredoc it is
the body of, and the logical lines bash reads, all from the positions `reading` found."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple

from checks import memo

from .reading import Reading
from .record import builder, record
from .tree import Source, captures, parse, query
from .words import Part

_DIFF_BODY = re.compile(r"^(?:diff --git |--- \S|\+\+\+ \S|@@ -\d|Index: )")
_PYTHON_CMD = re.compile(r"\bpython[\d.]*\b")
_COMMENTS = query("(comment) @c")


@dataclass(frozen=True)
class Heredoc:
    """A here-document, and what its body is."""

    start: int  # line of its `<<` operator
    end: int  # line of its terminator (the last line read when it is unterminated)
    opener: str  # the line of the operator, comment stripped
    delimiter: str
    quoted: bool  # `<<'EOF'`, `<<"EOF"`, `<<\EOF`: the body is literal, nothing in it is expanded
    diff: bool  # the body is a unified diff: data to apply, not code to run
    python: bool  # the body is fed to a python interpreter


@record
class ShellLine(NamedTuple):
    """One physical line of a script."""

    number: int
    text: str  # the raw line
    code: str  # the line without its comment ("" for comments, blanks, heredoc terminators); heredoc bodies verbatim
    heredoc: Heredoc | None  # set on heredoc body lines
    expanded: str  # `code` with each variable whose value the script fixes replaced by that value

    @classmethod
    def alone(cls, number: int, text: str) -> ShellLine:
        """A line read on its own (a line of YAML or of a Dockerfile): nothing carries over from other lines."""
        code = line_code(text)
        return cls(number, text, code, None, code)


_new_line = builder(ShellLine)


@record
class ShellCommand(NamedTuple):
    """A logical line: the physical lines bash reads as one (over a trailing backslash, or an open quote,
    array or `$(...)`), without comments and heredoc bodies."""

    line: int
    end: int
    text: str
    expanded: str  # as `ShellLine.expanded`


@memo.reading(maxsize=4096)
def line_code(line: str) -> str:
    """`line`, read on its own, without its comment (a `#` that starts a word outside quotes)."""
    if "#" not in line:
        return line.rstrip()  # most lines: nothing to parse
    src = Source.of(line)
    root = parse(src.data)
    found = captures(_COMMENTS, root) if root is not None else []
    return (line[:src.column(found[0].start_byte)] if found else line).rstrip()


def heredoc_bodies(lines: Iterable[ShellLine]) -> dict[int, list[ShellLine]]:
    """Body lines of each heredoc, keyed by the line of its operator."""
    out: dict[int, list[ShellLine]] = {}
    for ln in lines:
        if ln.heredoc is not None:
            out.setdefault(ln.heredoc.start, []).append(ln)
    return out


def physical(raw: list[str], read: Reading, embedded: bool,
             expand: Callable[[str, list[tuple[int, int, Part]]], str]) -> tuple[ShellLine, ...]:
    """Every line, classified: code without comments, heredoc bodies, variables expanded (`expand`)."""
    comments, refs_of = read.comments, read.refs

    def code_of(n: int, text: str) -> str:
        col = comments.get(n)
        return line_code(text) if n > read.lexed else (text if col is None else text[:col]).rstrip()

    docs: dict[int, Heredoc] = {}
    ends: set[int] = set()
    python_at: dict[int, int] = {}  # line -> column of the first python on it (-1: none)
    for d in read.docs:
        opener = code_of(d.line, raw[d.line - 1])
        if d.line not in python_at:
            m = _PYTHON_CMD.search(opener)
            python_at[d.line] = m.start() if m else -1
        body = range(d.first, d.last if d.closed else d.last + 1)
        lead = next((raw[k - 1] for k in body if raw[k - 1].strip()), "")
        lead = lead.lstrip() if embedded else lead
        heredoc = Heredoc(d.line, max(d.last, d.line), opener, d.delimiter, d.quoted, bool(_DIFF_BODY.match(lead)),
                          0 <= python_at[d.line] < d.column)
        docs.update(dict.fromkeys(body, heredoc))
        if d.closed:
            ends.add(d.last)
    out = []
    for n, text in enumerate(raw, 1):  # (a body line's code is the line: most of a patch script's lines)
        doc = docs.get(n)
        code = text if doc is not None else "" if n in ends else code_of(n, text)
        refs = refs_of.get(n)
        out.append(_new_line((n, text, code, doc, expand(code, refs) if refs else code)))
    return tuple(out)


def logical(lines: tuple[ShellLine, ...], read: Reading) -> tuple[ShellCommand, ...]:
    """The logical lines outside heredoc bodies that hold code."""
    out: list[ShellCommand] = []
    group: list[ShellLine] = []
    for ln in lines:
        if ln.heredoc is not None or not group and not ln.code.strip():
            continue
        group.append(ln)
        if ln.number in read.ends or ln.number > read.lexed:
            out.append(_command(group))
            group = []
    if group:
        out.append(_command(group))
    return tuple(out)


def _command(group: list[ShellLine]) -> ShellCommand:
    if len(group) == 1:  # most: one line, stripped
        ln = group[0]
        return ShellCommand(ln.number, ln.number, ln.code.strip(), ln.expanded.strip())

    def joined(texts: list[str]) -> str:
        return " ".join((t[:-1] if k < len(texts) - 1 and t.endswith("\\") else t).strip()
                        for k, t in enumerate(texts))

    return ShellCommand(group[0].number, group[-1].number, joined([ln.code.rstrip() for ln in group]),
                        joined([ln.expanded.rstrip() for ln in group]))
