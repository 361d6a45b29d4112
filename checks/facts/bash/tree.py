"""tree-sitter-bash, bounded: a script's syntax tree and the positions of its text.

Queries over a deeply nested tree take time quadratic in its depth (`'(' * 399_000` took 112 s), so a text
whose brackets nest deeper than `MAX_NESTING` is not parsed at all (`nesting`, counted in C-speed passes
before the parser sees it): its readers report it as not read, as they do a text tree-sitter gave up on.

tree-sitter's error recovery can take time quadratic in the input on broken text (deeply unclosed arrays,
`case ... in (`, `=~`, `$[`, repeated; tree-sitter/tree-sitter#5801). The parser reads the text through a
callback, a chunk at a time, and recovery is where it reads the same text again: so the reads are
counted, and a parse that asks for more than a small multiple of the text ends there (the callback
answers "end of input") and is reported as not read. Real scripts stay far below the budget; the
readers take a script tree-sitter gave up on line by line (`syntax.read_lines`).
"""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, count, islice
from operator import attrgetter, sub

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Query, QueryCursor

LANGUAGE = Language(tree_sitter_bash.language())
# A parser per thread: a parse calls back into Python (`parse`'s `read`), where another thread may take the
# GIL, and a tree-sitter parser parses one text at a time. Queries and trees are read-only, so shared.
_LOCAL = threading.local()

MAX_SCRIPT = 400_000  # characters; longer scripts are read up to this point
_CHUNK = 128  # bytes handed to the parser per read
_BASE_READS = 64  # the read budget: this many reads, plus one per _READS_PER bytes
_READS_PER = 16
_GITHUB_EXPRESSION = re.compile(rb"\$\{\{.*?\}\}", re.S)
_START, _END = attrgetter("start_byte"), attrgetter("end_byte")
_NEWLINE = re.compile(b"\n")
MAX_NESTING = 256  # brackets ( { [ open at once; no script nests so deep, and queries cost depth x size
_OPENERS, _CLOSERS = b"({[", b")}]"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _OPENERS + _CLOSERS)
_STEPS = bytes.maketrans(_OPENERS + _CLOSERS, b"\x02\x02\x02\x00\x00\x00")  # +1 and -1, shifted by 1


def nesting(data: bytes) -> int:
    """How deep `data`'s brackets nest (a closer with none open is ignored; quoting is not: an upper bound of
    what tree-sitter nests), in linear time: depth after each bracket minus the lowest depth before it."""
    brackets = data.translate(None, _NOT_BRACKETS)
    if len(brackets) <= MAX_NESTING:
        return min(len(brackets), brackets.count(b"(") + brackets.count(b"{") + brackets.count(b"["))
    depths = list(map(sub, accumulate(brackets.translate(_STEPS)), count(1)))
    deepest: int = max(map(sub, depths, islice(accumulate(depths, min, initial=0), 1, None)))
    return max(0, deepest)


def query(source: str) -> Query:
    return Query(LANGUAGE, source)


def captures(q: Query, node: Node) -> list[Node]:
    """The nodes `q` captures under `node`, in the order of the text."""
    found = [n for nodes in QueryCursor(q).captures(node).values() for n in nodes]
    _in_order(found)
    return found


def find(q: Query, node: Node) -> dict[str, list[Node]]:
    """The nodes under `node` each capture of `q` names (none: absent), each list in the order of the text:
    one pass over the tree for what several queries would find."""
    out = {}
    for name, nodes in QueryCursor(q).captures(node).items():
        _in_order(nodes)
        out[name] = nodes
    return out


def _in_order(nodes: list[Node]) -> None:
    """Sort nodes by where they start, an outer one before the nodes inside it: two stable sorts on keys read
    in C, cheaper than one on a Python key that builds a tuple per node."""
    nodes.sort(key=_END, reverse=True)
    nodes.sort(key=_START)


def parse(data: bytes) -> Node | None:
    """The root of `data`'s syntax tree; None when tree-sitter needs more than its read budget for it, or its
    brackets nest deeper than `MAX_NESTING`."""
    if nesting(data) > MAX_NESTING:
        return None
    budget = _BASE_READS + len(data) // _READS_PER
    reads = 0

    def read(offset: int, _point: object) -> bytes:
        nonlocal reads
        reads += 1
        return data[offset:offset + _CHUNK] if reads <= budget else b""

    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(LANGUAGE)
    tree = parser.parse(read)
    return tree.root_node if tree is not None and reads <= budget else None


def masked(data: bytes) -> bytes:
    """`data` as the parser should read it, each change of the same length: a GitHub Actions expression
    (`${{ inputs.x }}`, substituted before bash runs: not bash) made a plain `${___}`, so the text around
    it parses as bash does after substitution; a NUL (tree-sitter's end of input; in a string run as code,
    the mark of a value the interpreter does not know) made a word character."""
    if b"${{" in data:
        data = _GITHUB_EXPRESSION.sub(lambda m: b"${" + b"_" * (len(m.group()) - 3) + b"}", data)
    return data.replace(b"\x00", b"^")


@dataclass(frozen=True)
class Source:  # cached_property here: a reading of what it was built from, which never changes
    """A text as tree-sitter reads it: lines joined by "\\n", as UTF-8 bytes, and the way back from byte
    offsets to line numbers and character columns."""

    raw: bytes  # the text as written, encoded
    data: bytes  # what the parser reads: `raw` with GitHub expressions masked (same length)
    base: int = 1  # the number of its first line

    @classmethod
    def of(cls, text: str, base: int = 1) -> Source:
        raw = text.encode("utf-8", "surrogatepass")
        return cls(raw, masked(raw), base)

    @cached_property
    def starts(self) -> list[int]:
        """Byte offset where each line starts."""
        return [0, *[m.end() for m in _NEWLINE.finditer(self.raw)]]

    @cached_property
    def ascii(self) -> bool:
        return self.raw.isascii()

    @cached_property
    def _ascii_rows(self) -> dict[int, bool]:
        return {}

    def ascii_line(self, row: int) -> bool:
        """Whether line `row` (from 0) is ASCII, its columns its byte offsets (in a text that is not: a script
        with a few non-ASCII characters holds them on a few lines)."""
        known = self._ascii_rows
        found = known.get(row)
        if found is None:
            starts = self.starts
            found = known[row] = self.raw[starts[row]:starts[row + 1] if row + 1 < len(starts) else None].isascii()
        return found

    def line(self, offset: int) -> int:
        """The line number of a byte offset."""
        return bisect.bisect_right(self.starts, offset) + self.base - 1

    def column(self, offset: int) -> int:
        """The character column of a byte offset in its line."""
        row = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[row]
        return offset - start if self.ascii or self.ascii_line(row) else len(self.text(start, offset))

    def text(self, start: int, end: int) -> str:
        data = self.raw[start:end]
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # tree-sitter's error recovery cut a character: its bytes read as U+FFFD
            return data.decode("utf-8", "replace")

    def of_node(self, node: Node) -> str:
        return self.text(node.start_byte, node.end_byte)
