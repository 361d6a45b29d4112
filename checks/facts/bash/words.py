"""Words: what a shell word is made of, read from the nodes tree-sitter gives it.

A `Word` is a tuple of `Part`s: literal text (quoted or not), parameter expansions, command substitutions
(never run) and arithmetic. Parts are read from the word's nodes (`word`, `string`, `raw_string`,
`concatenation`, `expansion`, ...); the inside of `${...}` (name, subscript, operator) is read from its
text, and its argument from the nodes after the operator.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from tree_sitter import Node

from .record import builder
from .tree import Source

MAX_NESTING = 16  # `${...}` inside `${...}`: deeper arguments are not read (the value is unknown)

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_LENGTH = re.compile(r"#([A-Za-z_][A-Za-z0-9_]*)(?:\[([@*])\])?")
_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(?:\[([^\]]*)\])?")
_OPERATOR = re.compile(r":?[-=+?]|%%|%|##|#|//|/")
_SPECIAL = frozenset("@*#?$!-0123456789")
_AFTER_DOLLAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_ANSI_C = re.compile(rb"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x(?:\{([0-9A-Fa-f]*)\}?|([0-9A-Fa-f]{1,2}))"
                     rb"|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(\\\\|.))", re.DOTALL)
_ANSI_C_SIMPLE = {b"a": b"\a", b"b": b"\b", b"e": b"\x1b", b"E": b"\x1b", b"f": b"\f", b"n": b"\n", b"r": b"\r",
                  b"t": b"\t", b"v": b"\v", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?"}

WORD_NODES = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation", "simple_expansion",
    "expansion", "command_substitution", "arithmetic_expansion", "number", "brace_expression", "extglob_pattern",
    "regex", "special_variable_name", "variable_name", "test_operator"})
_LITERAL_NODES = frozenset({"word", "number", "brace_expression", "extglob_pattern", "regex", "variable_name",
                            "special_variable_name", "test_operator", "file_descriptor"})
_QUOTED_ESCAPES = frozenset('"\\$`')
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"})


class Part(NamedTuple):
    """One piece of a shell word (a tuple, as `Word`: a script has thousands, built fast).

    kind: "lit" (literal text), "param" (`$NAME`, `${NAME...}`), "cmd"
    (command substitution, never run) or "arith" (`$((...))`).
    """

    kind: str
    text: str
    quoted: bool = False
    name: str = ""
    subscript: str = ""  # array subscript: "@", "*", a number, or ""
    op: str = ""  # ":-", "-", ":=", "=", ":+", "+", "%", "%%", "#", "##", "/", "//", "#len"; "?" for any other
    arg: tuple["Part", ...] = ()


class Word(NamedTuple):
    parts: tuple[Part, ...]
    line: int

    @property
    def unquoted_literal(self) -> str | None:
        """The word's text when it is plain unquoted text (command names, options, operators in `[[ ]]`)."""
        parts = self.parts
        if len(parts) == 1:  # most words
            p = parts[0]
            return p.text if p.kind == "lit" and not p.quoted else None
        if all(p.kind == "lit" and not p.quoted for p in parts):
            return "".join(p.text for p in self.parts)
        return None


new_word = builder(Word)  # Word(parts, line) from (parts, line), for the words read by the thousand


def literal(text: str, line: int) -> Word:
    return Word((Part("lit", text),), line)


def as_written(parts: tuple[Part, ...]) -> str:
    """A word's text with quotes removed and every expansion and substitution kept as source."""
    return "".join(f"$({p.text})" if p.kind == "cmd" else f"$(({p.text}))" if p.kind == "arith" else p.text
                   for p in parts)


def assignment(word: Word) -> tuple[str, bool, Word] | None:
    """(name, +=, value) of a `NAME=value` / `NAME+=value` word: an assignment where a command starts, or an
    argument of a declaration builtin (`export X=1`)."""
    first = word.parts[0] if word.parts else None
    m = _ASSIGN.match(first.text) if first is not None and first.kind == "lit" and not first.quoted else None
    if m is None or first is None:
        return None
    rest = first.text[m.end():]
    value = ((first._replace(text=rest),) if rest else ()) + word.parts[1:]
    return m.group(1), bool(m.group(2)), Word(value, word.line)


def begins(src: Source, node: Node) -> int:
    """Where `node`'s text starts: inside double quotes, tree-sitter-bash gives the blanks (and line
    continuations) before a `$` or backquote to the expansion's first token."""
    at, raw, end = node.start_byte, src.raw, node.end_byte
    while at < end and (raw[at] in b" \t\n" or raw[at] == 92 and raw[at + 1:at + 2] == b"\n"):
        at += 1 if raw[at] != 92 else 2
    return at if at < end else node.start_byte


def join(a: Word, b: Word) -> Word:
    """Two pieces of one word (nothing between them in the text) as one word."""
    return Word(_dollars(a.parts + b.parts), a.line)


def _dollars(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """Parts with each unquoted `$` that ends a literal and has a name after it read as the expansion it is
    (tree-sitter-bash leaves it a literal after punctuation that follows an expansion: `$A/$B/`, #315)."""
    if len(parts) < 2 or not any(p.kind == "lit" and not p.quoted and p.text.endswith("$") for p in parts[:-1]):
        return parts
    out: list[Part] = []
    i = 0
    while i < len(parts):
        p, nxt = parts[i], parts[i + 1] if i + 1 < len(parts) else None
        m = _AFTER_DOLLAR.match(nxt.text) if nxt is not None and nxt.kind == "lit" and not nxt.quoted \
            and p.kind == "lit" and not p.quoted and p.text.endswith("$") else None
        if m is None or nxt is None:
            out.append(p)
            i += 1
            continue
        if len(p.text) > 1:
            out.append(p._replace(text=p.text[:-1]))
        out.append(Part("param", "$" + m.group(), name=m.group()))
        rest = nxt.text[m.end():]
        if rest:
            out.append(nxt._replace(text=rest))
        i += 2
    return tuple(out)


def is_arithmetic(src: Source, node: Node) -> bool:
    """Whether a `command_substitution` is `$((...))`: arithmetic, as bash reads it (tree-sitter-bash reads a
    `$(( ))` in the argument of `${X:-...}` as `$(` and a subshell)."""
    return src.raw.startswith(b"$((", begins(src, node)) and src.raw.endswith(b"))", 0, node.end_byte)


def is_name(text: str) -> bool:
    """A shell variable name: `[A-Za-z_][A-Za-z0-9_]*` (an ASCII identifier is exactly that)."""
    return text.isascii() and text.isidentifier()


def delimiter(text: str) -> tuple[str, bool]:
    """A heredoc delimiter as written (`EOF`, `'EOF'`, `"EOF"`, `\\EOF`): its text, and whether it is quoted
    (a quoted delimiter leaves the body unexpanded)."""
    out, quoted, i = [], False, 0
    while i < len(text):
        c = text[i]
        if c in "'\"":
            end = text.find(c, i + 1)
            end = len(text) if end < 0 else end
            out.append(text[i + 1:end])
            quoted, i = True, end + 1
        elif c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            quoted, i = True, i + 2
        else:
            out.append(c)
            i += 1
    return "".join(out), quoted


class WordReader:
    """Builds the `Word`s of one parsed text from its nodes."""

    def __init__(self, src: Source):
        self.src = src
        # (start, end) of each `$NAME` read -> its first part; of each `${...}` read in double quotes outside
        # any other -> its part
        self.expansions: dict[tuple[int, int], Part] = {}
        self._plain: dict[str, tuple[Part, ...]] = {}
        self._quoted: dict[str, Part] = {}
        self._params: tuple[dict[str, tuple[Part, ...]], dict[str, tuple[Part, ...]]] = ({}, {})  # unquoted, quoted

    def plain(self, text: str) -> tuple[Part, ...]:
        """The parts of a word of plain text (unquoted, no backslash), one tuple for each text: a script
        repeats its command names, options and operators."""
        parts = self._plain.get(text)
        if parts is None:
            parts = self._plain[text] = (Part("lit", text),) if text else ()
        return parts

    def word(self, node: Node) -> Word:
        kind = node.type
        src = self.src
        if kind == "word":  # most words: plain text, read without the general walk
            start = node.start_byte
            text = src.text(start, node.end_byte)
            if "\\" not in text:
                return new_word((self.plain(text), src.line(start)))
        parts: list[Part] = []
        if kind == "string":  # the next most common ones read as `parts` reads them
            self._string(node, parts, 0)
        elif kind == "simple_expansion":
            self._simple_expansion(node, parts, False)
        else:
            self.parts(node, parts, False, 0)
        return new_word((_dollars(tuple(parts)) if len(parts) > 1 else tuple(parts), src.line(begins(src, node))))

    def sequence(self, node: Node, start: int, end: int, out: list[Part]) -> None:
        """The parts of `node`'s children between byte offsets `start` and `end` (an assignment's value)."""
        self._sequence(node, start, end, out, False, 0)
        out[:] = _dollars(tuple(out))

    def parts(self, node: Node, out: list[Part], quoted: bool, depth: int) -> None:
        """Append the parts of `node`, read in a double-quoted context when `quoted`."""
        kind = node.type
        if kind in _LITERAL_NODES:
            self._literal(self.src.of_node(node), out, quoted)
        elif kind == "string":
            self._string(node, out, depth)
        elif kind == "raw_string":
            text = self.src.of_node(node)
            out.append(Part("lit", text if quoted else text[1:-1] if text.endswith("'") and len(text) > 1
                            else text[1:], True))
        elif kind == "concatenation" or kind == "subscript":
            self._sequence(node, node.start_byte, node.end_byte, out, quoted, depth)
        elif kind == "simple_expansion":
            self._simple_expansion(node, out, quoted)
        elif kind == "expansion":
            part = self._expansion(node, quoted, depth)
            if quoted and not depth:
                self.expansions[node.start_byte, node.end_byte] = part
            out.append(part)
        elif kind == "command_substitution":
            if is_arithmetic(self.src, node):
                text = self.src.text(begins(self.src, node), node.end_byte)
                out.append(Part("arith", text[3:-2], quoted))
            else:
                out.append(Part("cmd", self._body(node), quoted))
        elif kind == "arithmetic_expansion":
            out.append(Part("arith", self._body(node), quoted))
        elif kind == "ansi_c_string":
            text = self.src.of_node(node)[2:]
            text = text[:-1] if text.endswith("'") else text
            out.append(Part("lit", ansi_c(text), True))
        elif kind == "translated_string":  # `$"..."`: bash's locale translation, read as the string
            out.append(Part("lit", "$", quoted))
            self._sequence(node, node.start_byte + 1, node.end_byte, out, quoted, depth)
        else:  # an operator token, an ERROR: its text
            self._literal(self.src.of_node(node), out, quoted)

    def _literal(self, text: str, out: list[Part], quoted: bool) -> None:
        """Literal text; a backslash quotes the character after it (in double quotes only `"`, `\\`, `$`, `` ` ``)
        and a backslash-newline is removed."""
        if "\\" not in text:
            if text:
                out.append(Part("lit", text, quoted))
            return
        buf: list[str] = []
        i = 0
        while i < len(text):
            c = text[i]
            if c != "\\" or i + 1 >= len(text):
                buf.append(c)
                i += 1
                continue
            nxt = text[i + 1]
            if nxt != "\n" and quoted and nxt not in _QUOTED_ESCAPES:
                buf.append(c)
                i += 1
                continue
            if buf:
                out.append(Part("lit", "".join(buf), quoted))
                buf = []
            if nxt != "\n":
                out.append(Part("lit", nxt, True))
            i += 2
        if buf:
            out.append(Part("lit", "".join(buf), quoted))

    def _string(self, node: Node, out: list[Part], depth: int) -> None:
        kids = node.children
        closed = len(kids) > 1 and kids[-1].type == '"'
        if closed and len(kids) <= 3 and (len(kids) == 2 or kids[1].type == "string_content"):
            text = self.src.text(node.start_byte + 1, node.end_byte - 1)  # most strings: "text" (each text's part
            # built once: a script repeats its quoted words)
            if "\\" not in text:
                part = self._quoted.get(text)
                if part is None:
                    part = self._quoted[text] = Part("lit", text, True)
                out.append(part)
                return
        start = len(out)
        end = node.end_byte - 1 if closed else node.end_byte
        self._sequence(node, node.start_byte + 1, end, out, True, depth, kids)
        if len(out) == start:
            out.append(Part("lit", "", True))

    def _sequence(self, node: Node, start: int, end: int, out: list[Part], quoted: bool, depth: int,
                  children: list[Node] | None = None) -> None:
        """The parts of `node`'s children (`children`, when the caller has them) between `start` and `end`, text
        between them taken literally (and the part of a token that reaches over either end: tree-sitter-bash
        gives a string's blanks to the token after them)."""
        at = start
        for child in node.children if children is None else children:
            child_end = child.end_byte
            if child_end <= at:
                continue
            begin = child.start_byte
            if begin >= end:
                continue
            kind = child.type
            if kind in _EXPANSIONS:
                begin = begins(self.src, child)
            if begin > at:
                self._literal(self.src.text(at, begin), out, quoted)
            if begin < at or child_end > end or kind == "string_content" or not child.is_named:
                self._literal(self.src.text(max(at, begin), min(end, child_end)), out, quoted)
            else:
                self.parts(child, out, quoted, depth)
            at = min(end, child_end)
        if at < end:
            self._literal(self.src.text(at, end), out, quoted)

    def _simple_expansion(self, node: Node, out: list[Part], quoted: bool) -> None:
        """`$NAME`, `$1`, `$@`...; `$` before anything else is a literal `$`."""
        end = node.end_byte
        text = self.src.text(begins(self.src, node), end)
        known = self._params[quoted]
        parts = known.get(text)
        if parts is None:  # (read once for each text: a script uses its few variables often)
            parts = known[text] = self._dollar(text, quoted)
        if parts and parts[0].kind == "param":
            self.expansions[node.start_byte, end] = parts[0]
        out.extend(parts)

    def _dollar(self, text: str, quoted: bool) -> tuple[Part, ...]:
        name = text[1:]
        if name[:1].isdigit() and len(name) > 1:  # `$10` is `$1` then `0`
            return Part("param", text[:2], quoted, name=name[0]), Part("lit", name[1:], quoted)
        if is_name(name) or (len(name) == 1 and name in _SPECIAL):
            return (Part("param", text, quoted, name=name),)
        parts: list[Part] = []
        self._literal(text, parts, quoted)
        return tuple(parts)

    def quoted(self, node: Node) -> Part | None:
        """The first part of an expansion read in double quotes outside any other (what a line's reader
        replaces with its value); the part the statements read, when they read it so (a `$NAME` read either
        way: the two differ only in `quoted`)."""
        part = self.expansions.get((node.start_byte, node.end_byte))
        if part is None:
            parts: list[Part] = []
            self.parts(node, parts, True, 0)
            return parts[0] if parts else None
        return part if part.quoted else Part("param", part.text, True, name=part.name)

    def _expansion(self, node: Node, quoted: bool, depth: int) -> Part:
        """`${...}`: a length, or a name with an optional subscript and operator; its argument read from the
        nodes after the operator."""
        begin = begins(self.src, node)
        text = self.src.text(begin, node.end_byte)
        inner = text[2:-1] if text.endswith("}") else text[2:]
        length = _LENGTH.fullmatch(inner)
        if length:
            return Part("param", text, quoted, name=length.group(1), subscript=length.group(2) or "", op="#len")
        m = _BRACED.match(inner)
        if not m or inner.startswith(("#", "!")) and len(inner) > 1:
            return Part("param", text, quoted, op="?")
        name, index = m.group(1), (m.group(2) or "").strip()
        rest = inner[m.end():]
        if not rest:
            return Part("param", text, quoted, name=name, subscript=index)
        om = _OPERATOR.match(rest)
        if om is None or om.group(0) in ("?", ":?") or depth >= MAX_NESTING:
            return Part("param", text, quoted, name=name, subscript=index, op="?")
        arg_start = begin + 2 + len(inner[:m.end() + om.end()].encode("utf-8", "surrogatepass"))
        end = node.end_byte - 1 if text.endswith("}") else node.end_byte
        arg: list[Part] = []
        self._sequence(node, arg_start, end, arg, quoted, depth + 1)
        return Part("param", text, quoted, name=name, subscript=index, op=om.group(0), arg=tuple(arg))

    def _body(self, node: Node) -> str:
        """The text inside `$(...)`, `` `...` ``, `$((...))` or `<(...)`, between its first and last tokens."""
        children = node.children
        start = children[0].end_byte if children else node.start_byte
        last = children[-1] if len(children) > 1 else None
        end = last.start_byte if last is not None and not last.is_named and not last.is_missing else node.end_byte
        return self.src.text(start, max(start, end))



def ansi_c(text: str) -> str:
    """The value of `$'text'` as bash 5 gives it in a UTF-8 locale: `\\n`, `\\t`, `\\e`, `\\?` and the other
    ANSI C escapes, `\\nnn` (1-3 octal digits, taken modulo 256), `\\xHH` (1-2 hex digits) and `\\x{H...}`,
    `\\uHHHH` and `\\UHHHHHHHH` (1-4 and 1-8 hex digits, encoded as bash encodes them), `\\cX` (control-X),
    and the string cut at its first NUL; any other backslash stays with the character after it (`\\q` is
    `\\q`). Bash works on bytes: what is not UTF-8 in the result reads as U+FFFD. tests/test_shell.py
    holds bash's own answers."""
    raw = text.encode("utf-8", "replace")
    if b"\\" not in raw:
        return text
    return _ANSI_C.sub(_ansi_c_escape, raw).split(b"\0", 1)[0].decode("utf-8", "replace")


def _ansi_c_escape(m: re.Match[bytes]) -> bytes:
    simple, octal, braced, hex_, u4, u8, control = m.groups()
    if simple is not None:
        return _ANSI_C_SIMPLE[simple]
    if octal is not None:
        return bytes([int(octal, 8) & 0xFF])
    if braced is not None:  # `\x{HH...}`: any number of hex digits (none: 0), the `}` optional
        return bytes([int(braced or "0", 16) & 0xFF])
    if hex_ is not None:
        return bytes([int(hex_, 16)])
    if control is not None:
        return b"\x7f" if control == b"?" else bytes([control[0] & 0x1F])
    return _utf8(int(u4 or u8, 16))


def _utf8(code: int) -> bytes:
    """A code point as bash writes it in a UTF-8 locale: the original UTF-8 of up to six bytes (31 bits), so
    surrogates and points past U+10FFFF too; nothing for a larger number."""
    if code < 0x80:
        return bytes([code])
    for size, limit in ((2, 0x800), (3, 0x10000), (4, 0x200000), (5, 0x4000000), (6, 0x80000000)):
        if code < limit:
            tail = [0x80 | (code >> 6 * k) & 0x3F for k in range(size - 2, -1, -1)]
            return bytes([(0xFF << (8 - size)) & 0xFF | code >> 6 * (size - 1), *tail])
    return b""
