"""Reading bash: the one place that knows the syntax of the benchmark scripts.

A `Script` is lexed and parsed once, by one lexer, and read two ways:

- As a program. `Script.launches(env)` is a small, total interpreter: it
  runs assignments, arrays, `export`, `if`/`case`/loops, functions,
  `&&`/`||`, quoting, `${VAR:-default}` and `$((...))`, and returns every
  `vllm serve` / `python -m sglang.launch_server` command it reaches, each
  token with the line it was written on. `env` holds the variables the
  master config gives the script (MODEL, TP, EP_SIZE, DP_ATTENTION, ...);
  every other variable the script does not assign is *unknown*. A condition
  that depends on an unknown value is undecidable: both branches run, and a
  variable they set differently keeps every candidate value.
  `Script.exports()` lists the environment a script exports. Check 3 reads
  scripts this way (`checks/serverargs.py`, `checks/recipe_link.py`).
  `Script.trace(env, path, watch)` runs it the same way and also follows
  strings run as code (`eval`, `bash -c`, the bodies of `$(...)`): it
  returns the launches, every command `watch` selects with each word's
  candidate values, and every script it runs (`bash FILE`, `source FILE`,
  `sbatch FILE`, behind `srun`/`nohup`/`exec`...) with its PWD and
  environment. Checks 9 and 11 read benchmark clients and the scripts a
  launcher runs this way (`checks/runs.py`, `checks/specdecode.py`).
- As lines. `Script.lines` gives every physical line with its code (the
  comment cut where bash cuts it), the heredoc it is the body of (its
  delimiter, whether it is quoted, whether the body is a diff or python),
  and `expanded`: the code with each variable whose value the script fixes
  substituted. `Script.commands` joins lines into the logical lines bash
  reads, and `Script.assignments` lists every variable the script sets.
  Checks 8-11 read scripts this way, looking for settings with patterns
  (`checks/architecture.py`, `checks/chat_template.py`,
  `checks/engine_patches.py`, `checks/specdecode.py`).

Both ways work out `${NAME%pattern}` and its kin (`%%`, `#`, `##`, `/`, `//`)
and `$(...)` whose body is a pure builtin (`printf`, `echo`, `dirname`,
`basename`) on known arguments; any other command substitution is unknown.

The two ways evaluate variables differently on purpose. The interpreter
follows the control flow for one set of runner variables, because check 3
compares the server args of each search-space point. The line readers need
one value per variable wherever it is used, in any line, heredoc body or
JSON string: a variable is fixed when every assignment in the script gives
it the same value, whatever branch it sits in, and a variable the script
reads before setting it (`N="${N:-2}"`) is taken as not set by the runner.

PR content is never executed: this reads scripts as text. Work, nesting and
recursion are capped, so hostile input ends as unknown values, never an
exception or an unbounded loop.
"""

from __future__ import annotations

import ast
import bisect
import fnmatch
import itertools
import operator
import posixpath
import re
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple

# ---------------------------------------------------------------------------
# Shell subset: lexer
# ---------------------------------------------------------------------------

MAX_SCRIPT = 400_000  # characters; longer scripts are read up to this point
_MAX_DEPTH = 60
_MAX_NESTING = 16
_MAX_STEPS = 50_000
_MAX_ALTS = 8

_OPERATORS = sorted(["&&", "||", ";;&", ";;", ";&", ";", "&", "|&", "|", "(", ")", "<<<", "<<-", "<<",
                     ">>", "&>>", "&>", ">&", "<&", ">|", "<>", ">", "<"], key=len, reverse=True)
_OPERATOR_CHARS = frozenset(o[0] for o in _OPERATORS)
_OPERATOR = re.compile("|".join(re.escape(o) for o in _OPERATORS))  # longest first, as `_OPERATORS` is sorted
_BLANKS = re.compile(r"[ \t\r]+")
_WORD_STOP = " \t\r\n;&|()<>"  # what ends a word outside quotes
_SIMPLE_WORD = re.compile(r"[^ \t\r\n;&|()<>\\'\"`$\x00]+(?=[ \t\r\n;&|()<>]|\Z)")  # a word with no quoting or expansion
_BALANCED = {"(": re.compile(r"[\\\n'\"()]"), "{": re.compile(r"[\\\n\"{}]")}  # what `_balanced` must look at
_REDIRECTS = {"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&", "<<<", "<<", "<<-"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


class Part(NamedTuple):
    """One piece of a shell word (a tuple, as `Word` and `_Tok`: a script has thousands, built fast).

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
        """The word's text when it is plain unquoted text (reserved words, names, operators in `[[ ]]`)."""
        if all(p.kind == "lit" and not p.quoted for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None


class _Tok(NamedTuple):
    kind: str  # word | op | nl | array | arith
    line: int
    word: Word | None = None
    op: str = ""
    name: str = ""  # array assignment: variable name
    append: bool = False
    items: tuple[Word, ...] = ()
    lit: str | None = None  # a word's `unquoted_literal`, worked out once for the parser


@cache
def _plain(stop: str, quoted: bool, end: str) -> re.Pattern:
    """A run of characters `_Lexer._word_parts` takes as they are, in its mode."""
    special = set(stop) | set("\\$`\n\x00") | set(end) | (set() if quoted else set("'\""))
    return re.compile("[^" + "".join(re.escape(c) for c in sorted(special)) + "]+")


@lru_cache(maxsize=64)
def _terminator(delimiter: str, strip_tabs: bool) -> re.Pattern:
    """The line that ends a heredoc body."""
    return re.compile(("^\t*" if strip_tabs else "^") + re.escape(delimiter) + "$", re.MULTILINE)


@dataclass(frozen=True)
class _DocSpan:
    """A heredoc as the lexer met it (offsets into the lexed text)."""

    line: int  # line of its `<<` operator
    at: int  # offset of the operator
    first: int  # first body line
    last: int  # its terminator's line; the last line read when it is unterminated
    closed: bool
    delimiter: str
    quoted: bool


class _Lexer:
    """Tokens of a script; with `record`, also what a line-by-line reader needs (comments, heredocs, expansions)."""

    def __init__(self, text: str, nesting: int = 0, record: bool = False, line: int = 1):
        self.nesting = nesting  # `${...}` / `$(...)` depth: beyond _MAX_NESTING a value is unknown
        self.record = record
        self.s = text[:MAX_SCRIPT]
        self.i = 0
        self.line = line
        self.toks: list[_Tok] = []
        self.heredocs: list[tuple[str, bool, bool, int, int]] = []  # pending: delimiter, <<-, quoted, line, offset
        self.want_delim: tuple[bool, int, int] | None = None  # after << / <<-: (<<-, line, offset)
        self.comments: list[int] = []  # offsets where comments start
        self.docs: list[_DocSpan] = []
        self.refs: list[tuple[int, int, Part]] = []  # (start, end, part) of each parameter expansion

    def run(self) -> list[_Tok]:
        self._tokens(close=False)
        return self.toks

    def _tokens(self, close: bool) -> bool:
        """Lex to the end, or with `close` to the `)` that closes a `$(`: whether that `)` was found."""
        s = self.s
        depth = 0
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self.i = _BLANKS.match(s, self.i).end()
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
            elif c == "\n":
                self.toks.append(_Tok("nl", self.line))
                self.i += 1
                self.line += 1
                self._skip_heredocs()
            elif c == "#":
                self._comment()
            elif s.startswith("((", self.i):
                line = self.line
                text = self._balanced(self.i + 2, "(", ")", depth=2)
                self.toks.append(_Tok("arith", line, word=Word((Part("arith", text),), line)))
            elif c in _OPERATOR_CHARS:
                op = _OPERATOR.match(s, self.i).group()
                self.i += len(op)
                if close and op in ("(", ")"):
                    if op == ")" and depth == 0:
                        return True
                    depth += 1 if op == "(" else -1
                self.toks.append(_Tok("op", self.line, op=op))
                if op in ("<<", "<<-"):
                    self.want_delim = (op == "<<-", self.line, self.i - len(op))
            else:
                self._word_or_array()
        return False

    def _comment(self) -> None:
        self.comments.append(self.i)
        end = self.s.find("\n", self.i)
        self.i = len(self.s) if end < 0 else end

    def _skip_heredocs(self) -> None:
        """Read the bodies of the heredocs opened on the line just ended, in order.

        A body ends at a line that is exactly its delimiter (`<<-`: after leading tabs), as in bash.
        """
        s = self.s
        for delim, strip, quoted, line, at in self.heredocs:
            start, first = self.i, self.line
            end = _terminator(delim, strip).search(s, start) if "\n" not in delim else None
            if end is not None and end.start() == len(s):
                end = None  # an empty delimiter matched past the last line
            stop = end.start() if end else len(s)  # where the body ends
            self.i = min(end.end() + 1, len(s)) if end else len(s)
            self.line += s.count("\n", start, self.i)
            if self.i == len(s) and start < len(s) and not s.endswith("\n"):
                self.line += 1  # the last line, which has no newline
            if self.record and not quoted:
                self._body_refs(start, stop)
            self.docs.append(_DocSpan(line, at, first, self.line - 1, end is not None, delim, quoted))
        self.heredocs = []

    def _body_refs(self, start: int, stop: int) -> None:
        """Record the expansions in a heredoc body (its delimiter unquoted), line by line."""
        s = self.s
        j = s.find("$", start, stop)
        while j >= 0:
            begin = s.rfind("\n", start, j) + 1 or start
            end = s.find("\n", j, stop)
            end = stop if end < 0 else end
            self.refs.extend((a + begin, b + begin, part) for a, b, part in _expansions(s[begin:end], self.nesting))
            j = s.find("$", end, stop)

    def _balanced(self, start: int, open_: str, close: str, depth: int = 1) -> str:
        """The text up to the `depth`-fold matching `close` (quotes respected); advance past it."""
        s = self.s
        special = _BALANCED[open_]
        i = start
        level = depth
        while True:
            m = special.search(s, i)
            if m is None:
                break
            i = m.start()
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "\n":
                self.line += 1
            elif c == "'":
                j = s.find("'", i + 1)
                j = len(s) if j < 0 else j
                self.line += s.count("\n", i, j)
                i = j
            elif c == '"':
                j = i + 1
                while j < len(s) and s[j] != '"':
                    j += 2 if s[j] == "\\" else 1
                self.line += s.count("\n", i, min(j, len(s)))
                i = j
            elif c == open_:
                level += 1
            elif c == close:
                level -= 1
                if level == 0:
                    self.i = i + 1
                    return s[start:max(start, i - (depth - 1))]
            i += 1
        self.i = len(s)
        return s[start:]

    def _word_or_array(self) -> None:
        line = self.line
        simple = _SIMPLE_WORD.match(self.s, self.i)
        if simple is not None:  # most words: plain text, nothing to quote or expand
            self.i = simple.end()
            lit = simple.group()
            parts = [Part("lit", lit)]
            word = Word((parts[0],), line)
        else:
            parts = self._word_parts(stop=_WORD_STOP)
            word = Word(tuple(parts), line)
            lit = word.unquoted_literal
        m = _ASSIGN.match(lit) if lit is not None else None
        if m and lit == m.group(0) and self.s.startswith("(", self.i):
            self.i += 1
            self.toks.append(_Tok("array", line, name=m.group(1), append=bool(m.group(2)),
                                  items=tuple(self._array_items())))
            return
        if self.want_delim is not None:
            delim = "".join(p.text for p in parts)
            self.heredocs.append((delim, self.want_delim[0], any(p.quoted for p in parts), *self.want_delim[1:]))
            self.want_delim = None
        if not parts:  # a stray character no rule consumes: skip it
            self.i += 1
            return
        self.toks.append(_Tok("word", line, word=word, lit=lit))

    def _array_items(self) -> list[Word]:
        s = self.s
        items: list[Word] = []
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\n":
                self.i += 1
                self.line += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
            elif c == "#":
                self._comment()
            elif c == ")":
                self.i += 1
                break
            else:
                line = self.line
                parts = self._word_parts(stop=" \t\r\n)")
                if not parts:
                    self.i += 1
                    continue
                items.append(Word(tuple(parts), line))
        return items

    def _word_parts(self, stop: str, quoted: bool = False, end: str = "") -> list[Part]:
        """Parts of one word (or of a double-quoted string / `${...}` argument when `end` is set)."""
        s = self.s
        parts: list[Part] = []
        buf: list[str] = []

        def flush(q: bool = quoted) -> None:
            if buf:
                parts.append(Part("lit", "".join(buf), q))
                buf.clear()

        plain = _plain(stop, quoted, end)
        while self.i < len(s):
            run = plain.match(s, self.i)  # ordinary characters, taken in one step
            if run is not None:
                buf.append(run.group())
                self.i = run.end()
                continue
            c = s[self.i]
            if end and s.startswith(end, self.i):
                self.i += len(end)
                break
            if not end and c in stop:
                break
            if c == "\\":
                nxt = s[self.i + 1:self.i + 2]
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                if quoted and nxt not in ('"', "\\", "$", "`"):
                    buf.append("\\")
                    self.i += 1
                    continue
                flush()
                parts.append(Part("lit", nxt, True))
                self.i += 2
                continue
            if c == "\n":
                self.line += 1
            if c == "'" and not quoted:
                flush()
                j = s.find("'", self.i + 1)
                j = len(s) if j < 0 else j
                text = s[self.i + 1:j]
                self.line += text.count("\n")
                parts.append(Part("lit", text, True))
                self.i = j + 1
                continue
            if c == '"' and not quoted:
                flush()
                self.i += 1
                inner = self._word_parts(stop="", quoted=True, end='"')
                parts.extend(inner or [Part("lit", "", True)])
                continue
            if c == "`":
                flush()
                j = self.i + 1
                while j < len(s) and s[j] != "`":
                    j += 2 if s[j] == "\\" else 1
                text = s[self.i + 1:j]
                self.line += text.count("\n")
                parts.append(Part("cmd", text, quoted))
                self.i = j + 1
                continue
            if c == "$":
                start = self.i
                part = self._dollar(quoted)
                if part is not None:
                    flush()
                    parts.append(part)
                    if self.record and part.kind == "param":
                        self.refs.append((start, self.i, part))
                    continue
            buf.append(c)
            self.i += 1
        flush()
        return parts

    def _dollar(self, quoted: bool) -> Part | None:
        s = self.s
        i = self.i
        if s.startswith("$((", i):
            text = self._balanced(i + 3, "(", ")", depth=2)
            return Part("arith", text, quoted)
        if s.startswith("$(", i):
            return Part("cmd", self._substitution(i + 2), quoted)
        if s.startswith("${", i):
            text = self._balanced(i + 2, "{", "}")
            return self._braced(text, quoted)
        if s.startswith("$'", i) and not quoted:
            j = s.find("'", i + 2)
            j = len(s) if j < 0 else j
            text = s[i + 2:j].encode("utf-8", "replace").decode("unicode_escape", "replace")
            self.i = j + 1
            return Part("lit", text, True)
        m = _NAME.match(s, i + 1)
        if m:
            self.i = m.end()
            return Part("param", "$" + m.group(0), quoted, name=m.group(0))
        if i + 1 < len(s) and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
            self.i = i + 2
            return Part("param", s[i:i + 2], quoted, name=s[i + 1])
        return None

    def _substitution(self, start: int) -> str:
        """The text of the `$(...)` whose body starts at `start`; advance past it.

        The body is lexed as the script it is, so its comments, heredocs and expansions are known like
        the script's own; its tokens are dropped (a command substitution is never run).
        """
        if self.nesting >= _MAX_NESTING:
            return self._balanced(start, "(", ")")
        outer = (self.toks, self.heredocs, self.want_delim)
        self.toks, self.heredocs, self.want_delim = [], [], None
        self.nesting += 1
        self.i = start
        closed = self._tokens(close=True)
        self.nesting -= 1
        self.toks, self.heredocs, self.want_delim = outer
        return self.s[start:self.i - 1] if closed else self.s[start:]

    def _braced(self, text: str, quoted: bool) -> Part:
        length = re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)(?:\[([@*])\])?", text)
        if length:  # `${#NAME}`, `${#ARR[@]}`: a length
            return Part("param", "${" + text + "}", quoted, name=length.group(1), subscript=length.group(2) or "",
                        op="#len")
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(?:\[([^\]]*)\])?", text)
        if not m or text.startswith(("#", "!")) and len(text) > 1:
            return Part("param", "${" + text + "}", quoted, name="", op="?")
        name, index = m.group(1), (m.group(2) or "").strip()
        rest = text[m.end():]
        op = ""
        arg: tuple[Part, ...] = ()
        if rest:
            om = re.match(r":?[-=+?]|%%|%|##|#|//|/", rest)
            if om and om.group(0) not in ("?", ":?") and self.nesting < _MAX_NESTING:
                op = om.group(0)
                sub = _Lexer(rest[om.end():], self.nesting + 1)
                sub.line = self.line
                arg = tuple(sub._word_parts(stop="", quoted=quoted, end="\x00"))
            else:
                op = "?"
        return Part("param", "${" + text + "}", quoted, name=name, subscript=index, op=op, arg=arg)


def _expansions(text: str, nesting: int = 0) -> list[tuple[int, int, Part]]:
    """The parameter expansions of one line of a heredoc body, where quotes are plain characters."""
    lexer = _Lexer(text, nesting + 1, record=True)
    lexer._word_parts(stop="", quoted=True, end="\n")
    return lexer.refs


# ---------------------------------------------------------------------------
# Shell subset: parser
# ---------------------------------------------------------------------------

# The syntax tree. A statement list is a tuple of these nodes.

@dataclass(frozen=True)
class _Simple:
    """A simple command: leading assignments, the command's words and its redirections."""

    line: int
    assigns: tuple[tuple[str, bool, Word | None, tuple[Word, ...] | None], ...]  # name, append, scalar, array
    words: tuple[Word, ...]
    redirects: tuple[tuple[str, Word], ...] = ()  # (operator, target word), e.g. (">", file), ("<<", delimiter)


@dataclass(frozen=True)
class _AndOr:
    first: object
    rest: tuple[tuple[str, object], ...]  # ("&&" | "||", node)


@dataclass(frozen=True)
class _Not:
    node: object


@dataclass(frozen=True)
class _If:
    clauses: tuple[tuple[tuple, tuple], ...]  # (condition statements, body statements)
    orelse: tuple


@dataclass(frozen=True)
class _Case:
    word: Word
    items: tuple[tuple[tuple[Word, ...], tuple], ...]


@dataclass(frozen=True)
class _Loop:
    body: tuple


@dataclass(frozen=True)
class _Group:
    body: tuple


@dataclass(frozen=True)
class _Func:
    name: str
    body: tuple
    line: int  # where the definition starts
    end: int  # where its body ends


_Node = object  # one of the node dataclasses above
_NONE: frozenset[str] = frozenset()


class _Parser:
    def __init__(self, toks: list[_Tok]):
        self.t = toks
        self.i = 0
        self.depth = 0

    # --- token helpers ---
    def _peek(self) -> _Tok | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def _word_is(self, tok: _Tok | None, *names: str) -> bool:
        return tok is not None and tok.kind == "word" and tok.lit in names

    def _skip_nl(self) -> None:
        while self.i < len(self.t) and (self.t[self.i].kind == "nl" or
                                        (self.t[self.i].kind == "op" and self.t[self.i].op == ";")):
            self.i += 1

    def _expect_word(self, name: str) -> None:
        self._skip_nl()
        if self._word_is(self._peek(), name):
            self.i += 1

    # --- grammar ---
    def statements(self, stops: frozenset[str] = _NONE, stop_ops: frozenset[str] = _NONE) -> tuple:
        """Statements up to a reserved word in `stops` or an operator in `stop_ops` (not consumed)."""
        out = []
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                self.i = len(self.t)
                return ()
            while self.i < len(self.t):
                tok = self.t[self.i]
                if tok.kind == "nl" or (tok.kind == "op" and tok.op in (";", "&")):
                    self.i += 1
                    continue
                if tok.kind == "op" and tok.op in stop_ops:
                    break
                if tok.kind == "word" and tok.lit in stops:
                    break
                start = self.i
                node = self.and_or(stops, stop_ops)
                if node is not None:
                    out.append(node)
                if self.i == start:  # nothing consumed: skip the token so parsing always advances
                    self.i += 1
        finally:
            self.depth -= 1
        return tuple(out)

    def and_or(self, stops: frozenset[str], stop_ops: frozenset[str]) -> _Node | None:
        first = self.pipeline(stops, stop_ops)
        rest = []
        while True:
            tok = self._peek()
            if tok is None or tok.kind != "op" or tok.op not in ("&&", "||"):
                break
            self.i += 1
            while self._peek() is not None and self._peek().kind == "nl":
                self.i += 1
            node = self.pipeline(stops, stop_ops)
            if node is None:
                break
            rest.append((tok.op, node))
        if first is None:
            return None
        return _AndOr(first, tuple(rest)) if rest else first

    def pipeline(self, stops: frozenset[str], stop_ops: frozenset[str]) -> _Node | None:
        negate = False
        if self._word_is(self._peek(), "!"):
            self.i += 1
            negate = True
        node = self.command(stops, stop_ops)
        commands = [node]
        while True:
            tok = self._peek()
            if tok is None or tok.kind != "op" or tok.op not in ("|", "|&"):
                break
            self.i += 1
            while self._peek() is not None and self._peek().kind == "nl":
                self.i += 1
            commands.append(self.command(stops, stop_ops))
        if len(commands) > 1:
            # The last command of a pipeline decides its status; earlier ones still run. One flat group:
            # nesting a group per `|` made a script of 10,000 pipes recurse past Python's limit.
            node = _Group(tuple(n for n in commands if n is not None))
        return _Not(node) if negate and node is not None else node

    def command(self, stops: frozenset[str], stop_ops: frozenset[str]) -> _Node | None:
        tok = self._peek()
        if tok is None:
            return None
        if tok.kind == "word":
            lit = tok.lit
            if lit == "if":
                return self._redirects(self._if())
            if lit == "case":
                return self._redirects(self._case())
            if lit in ("for", "while", "until", "select"):
                return self._redirects(self._loop(lit))
            if lit == "{":
                self.i += 1
                body = self.statements(frozenset({"}"}), stop_ops)
                self._expect_word("}")
                return self._redirects(_Group(body))
            if lit == "function":
                self.i += 1
                name_tok = self._peek()
                name = name_tok.lit if name_tok and name_tok.kind == "word" else None
                self.i += 1
                if self._op_at(0, "(") and self._op_at(1, ")"):
                    self.i += 2
                return self._funcdef(name or "", tok.line)
            if lit == "[[":
                return self._double_bracket(tok)
            if lit is not None and _NAME.fullmatch(lit) and self._op_at(1, "(") and self._op_at(2, ")"):
                self.i += 3
                return self._funcdef(lit, tok.line)
        if tok.kind == "op" and tok.op == "(":
            self.i += 1
            body = self.statements(_NONE, frozenset({")"}))
            if self._op_at(0, ")"):
                self.i += 1
            return self._redirects(_Group(body))
        if tok.kind == "arith":
            self.i += 1
            return _Simple(tok.line, (), (Word((Part("lit", "(("),), tok.line),))
        return self._simple(stops)

    def _op_at(self, offset: int, op: str) -> bool:
        j = self.i + offset
        return j < len(self.t) and self.t[j].kind == "op" and self.t[j].op == op

    def _redirects(self, node: _Node) -> _Node:
        """Skip redirections after a compound command (`{ ...; } 2>/dev/null`)."""
        while self.i < len(self.t):
            tok = self.t[self.i]
            if tok.kind == "op" and tok.op in _REDIRECTS:
                self.i += 1
                if self._peek() is not None and self._peek().kind == "word":
                    self.i += 1
            elif self._fd_before_redirect():
                self.i += 1
            else:
                break
        return node

    def _fd_before_redirect(self) -> bool:
        """Whether the next token is the fd number of a redirection (the `2` of `2>&1`)."""
        tok = self._peek()
        lit = tok.lit if tok is not None and tok.kind == "word" else None
        return bool(lit) and lit.isdigit() and self.i + 1 < len(self.t) \
            and self.t[self.i + 1].kind == "op" and self.t[self.i + 1].op in _REDIRECTS

    def _funcdef(self, name: str, line: int) -> _Func:
        self._skip_nl()
        body_node = self.command(_NONE, _NONE)
        body = (body_node,) if body_node is not None else ()
        last = min(self.i, len(self.t)) - 1  # the last token of the body
        return _Func(name, body, line, self.t[last].line if last >= 0 else line)

    def _double_bracket(self, first: _Tok) -> _Node:
        words = [first.word]
        self.i += 1
        while self.i < len(self.t):
            tok = self.t[self.i]
            self.i += 1
            if tok.kind == "word":
                words.append(tok.word)
                if tok.lit == "]]":
                    break
            elif tok.kind == "op":
                words.append(Word((Part("lit", tok.op),), tok.line))
            elif tok.kind == "nl":
                continue
        return self._redirects(_Simple(first.line, (), tuple(words)))

    def _if(self) -> _If:
        clauses = []
        orelse: tuple = ()
        self.i += 1  # if
        cond = self.statements(frozenset({"then"}))
        self._expect_word("then")
        body = self.statements(frozenset({"elif", "else", "fi"}))
        clauses.append((cond, body))
        while True:
            self._skip_nl()
            tok = self._peek()
            if self._word_is(tok, "elif"):
                self.i += 1
                cond = self.statements(frozenset({"then"}))
                self._expect_word("then")
                body = self.statements(frozenset({"elif", "else", "fi"}))
                clauses.append((cond, body))
            elif self._word_is(tok, "else"):
                self.i += 1
                orelse = self.statements(frozenset({"fi"}))
            else:
                break
        self._expect_word("fi")
        return _If(tuple(clauses), orelse)

    def _case(self) -> _Case:
        self.i += 1  # case
        tok = self._peek()
        subject = tok.word if tok is not None and tok.kind == "word" else Word((), tok.line if tok else 0)
        self.i += 1
        self._expect_word("in")
        items = []
        while self.i < len(self.t):
            self._skip_nl()
            tok = self._peek()
            if tok is None or self._word_is(tok, "esac"):
                break
            if tok.kind == "op" and tok.op == "(":
                self.i += 1
            patterns = []
            while self.i < len(self.t):
                tok = self.t[self.i]
                self.i += 1
                if tok.kind == "word":
                    patterns.append(tok.word)
                elif tok.kind == "op" and tok.op == ")":
                    break
                elif tok.kind == "nl":
                    break
            body = self.statements(frozenset({"esac"}), frozenset({";;", ";&", ";;&"}))
            if self.i < len(self.t) and self.t[self.i].kind == "op" and self.t[self.i].op in (";;", ";&", ";;&"):
                self.i += 1
            items.append((tuple(patterns), body))
        self._expect_word("esac")
        return _Case(subject, tuple(items))

    def _loop(self, kind: str) -> _Loop:
        self.i += 1
        if kind in ("for", "select"):
            while self.i < len(self.t) and not self._word_is(self._peek(), "do"):
                if self._word_is(self._peek(), "{"):
                    break
                self.i += 1
        else:
            self.statements(frozenset({"do"}))
        self._skip_nl()
        if self._word_is(self._peek(), "{"):
            self.i += 1
            body = self.statements(frozenset({"}"}))
            self._expect_word("}")
        else:
            self._expect_word("do")
            body = self.statements(frozenset({"done"}))
            self._expect_word("done")
        return _Loop(body)

    def _simple(self, stops: frozenset[str]) -> _Simple | None:
        tok = self._peek()
        line = tok.line if tok is not None else 0
        assigns = []
        words: list[Word] = []
        redirects: list[tuple[str, Word]] = []
        while self.i < len(self.t):
            tok = self.t[self.i]
            if tok.kind == "array":  # `X=(...)`, also after `declare -a` / `local`
                assigns.append((tok.name, tok.append, None, tok.items))
                self.i += 1
                continue
            if tok.kind == "op":
                if tok.op not in _REDIRECTS:
                    break
                self.i += 1
                target = self._peek()
                if target is not None and target.kind == "word":
                    redirects.append((tok.op, target.word))
                    self.i += 1
                continue
            if tok.kind != "word":
                break
            lit = tok.lit
            if not words and not assigns and lit in stops:
                break
            if self._fd_before_redirect():
                self.i += 1
                continue
            assignment = _assignment(tok.word) if not words else None
            if assignment is not None:
                assigns.append((*assignment, None))
            else:
                words.append(tok.word)
            self.i += 1
        if not assigns and not words:
            return None
        return _Simple(line, tuple(assigns), tuple(words), tuple(redirects))


_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})  # builtins taking NAME=value


def _assignment(word: Word) -> tuple[str, bool, Word] | None:
    """(name, +=, value) of a `NAME=value` / `NAME+=value` word: an assignment where a command starts, or an
    argument of a declaration builtin (`export X=1`)."""
    first = word.parts[0] if word.parts else None
    m = _ASSIGN.match(first.text) if first is not None and first.kind == "lit" and not first.quoted else None
    if m is None:
        return None
    rest = first.text[m.end():]
    value = ((first._replace(text=rest),) if rest else ()) + word.parts[1:]
    return m.group(1), bool(m.group(2)), Word(value, word.line)


# ---------------------------------------------------------------------------
# Shell subset: values and expansion
# ---------------------------------------------------------------------------

UNKNOWN = "\x00"  # marks the part of a value that the script does not determine


@dataclass(frozen=True)
class Token:
    """One field of an expanded command line.

    `values` are the candidate texts (one unless a branch could not be
    decided). None stands for a value the script does not determine at all;
    a text containing UNKNOWN is only partly determined (`"{\"n\": $N}"`).
    """

    values: tuple[str | None, ...]
    line: int

    @property
    def known(self) -> tuple[str, ...]:
        return tuple(v for v in self.values if v is not None and UNKNOWN not in v)

    @property
    def first(self) -> str | None:
        return self.values[0] if self.values else None


_UNSET = object()  # a variable that was `unset` (expands to "")
_OUT = "\x00out"  # inside `$(...)`: what its body has printed so far (a variable no script can name)
_IMPURE = "\x00impure"  # set when the body of a `$(...)` ran a command whose output is not known


@dataclass(frozen=True)
class _Binding:
    alts: tuple  # each: str | None (unknown) | tuple[Token, ...] (array) | _UNSET
    line: int


def _dedupe(items: Iterable) -> tuple:
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out[:_MAX_ALTS])


@dataclass
class _State:
    vars: dict[str, _Binding]
    exported: set[str]
    alive: bool = True

    def copy(self) -> "_State":
        return _State(dict(self.vars), set(self.exported), self.alive)


def _merge(a: _State, b: _State, known: Mapping[str, str]) -> _State:
    """The state after a branch that may or may not have run: each variable keeps every candidate."""
    if not a.alive:
        return b
    if not b.alive:
        return a
    out = {}
    for name in list(a.vars) + [n for n in b.vars if n not in a.vars]:
        x, y = a.vars.get(name), b.vars.get(name)
        if x == y:
            out[name] = x
            continue
        before = (known[name],) if name in known else (None,)
        alts = (x.alts if x else before) + (y.alts if y else before)
        out[name] = _Binding(_dedupe(alts), max(x.line if x else 0, y.line if y else 0))
    return _State(out, a.exported | b.exported, True)


@dataclass(frozen=True)
class Launch:
    """A server launch the interpreter reached."""

    engine: str  # vllm | sglang
    argv: tuple[Token, ...]  # the args after `vllm serve` / `-m sglang.launch_server`
    env: tuple[tuple[str, Token], ...]  # variables the script exported (or set on the command) for it
    line: int


@dataclass(frozen=True)
class Call:
    """A command the interpreter reached that the caller watches for (`Script.trace(watch=...)`).

    `words` holds every word as written, each with its candidate texts (a word is not split into
    fields: `$FLAGS` is one word whose candidates are the values FLAGS may have there).
    """

    words: tuple[tuple[str | None, ...], ...]
    env: tuple[tuple[str, Token], ...]
    line: int


@dataclass(frozen=True)
class Run:
    """Another script this one runs: `bash FILE`, `sh FILE`, `source FILE` / `. FILE`, `sbatch FILE` (also
    behind `srun`, `nohup`, `exec`, `timeout`, ...). `path` holds the candidates of FILE as written, `cwd` those
    of PWD after the script's `cd`s, `env` the variables the script runs it with (known, exported, prefixed)."""

    how: str  # bash | source | sbatch
    path: Token
    cwd: Token | None
    env: tuple[tuple[str, Token], ...]
    line: int


@dataclass(frozen=True)
class Trace:
    """What `Script.trace` reached: server launches, watched commands and scripts run."""

    launches: tuple[Launch, ...]
    calls: tuple[Call, ...]
    runs: tuple[Run, ...]


_WRAPPERS = {"env", "nohup", "exec", "numactl", "timeout", "setsid", "stdbuf", "taskset", "time", "sudo",
             "command", "builtin", "unbuffer"}
_RUN_WRAPPERS = _WRAPPERS | {"srun", "mpirun"}
_SHELLS = frozenset({"bash", "sh"})


_DOCKER_FLAGS = frozenset({"--rm", "--privileged", "--init", "-d", "--detach", "-i", "-t", "-it", "-ti", "--interactive",
                           "--tty", "--read-only", "--no-healthcheck", "-P", "--publish-all", "--sig-proxy"})


def _docker_run(values: list[str | None], i: int) -> int | None:
    """For `docker run [options] IMAGE CMD...` at `i`: the index where the command starts, the image's
    entrypoint put in front when it is a shell (`--entrypoint=/bin/bash IMAGE SCRIPT`); None otherwise."""
    j, entrypoint = i + 2, None
    while j < len(values) and (values[j] or "").startswith("-"):
        option, eq, value = (values[j] or "").partition("=")
        if option == "--entrypoint":
            entrypoint = value if eq else (values[j + 1] if j + 1 < len(values) else None)
        j += 1 if eq or option in _DOCKER_FLAGS else 2
    j += 1  # the image
    if j >= len(values):
        return None
    if entrypoint is not None and entrypoint.rsplit("/", 1)[-1] in _SHELLS:
        values[j - 1] = entrypoint  # the shell the image runs, in the image's place
        return j - 1
    return j


def _run_at(values: list[str | None]) -> tuple[str, int] | None:
    """(how, index of the script operand or of the `-c` string) of a command that runs a script; None if none."""
    values = list(values)
    i = 0
    while i < len(values) and values[i] is not None and (
            values[i].rsplit("/", 1)[-1] in _RUN_WRAPPERS or values[i].startswith("-") or "=" in values[i]
            or re.fullmatch(r"[\d.]+[smhd]?", values[i])):
        i += 1
    if i + 1 < len(values) and values[i] == "docker" and values[i + 1] == "run":
        start = _docker_run(values, i)
        found = _run_at(values[start:]) if start is not None else None
        return (found[0], found[1] + start) if found else None
    head = (values[i] or "").rsplit("/", 1)[-1] if i < len(values) else ""
    if head in ("source", "."):
        return ("source", i + 1) if i + 1 < len(values) else None
    if head == "sbatch":  # options take values (`-N 2`): the job script is the argument that names one
        for j in range(i + 1, len(values)):
            if re.search(r"\.(?:sh|slurm|sbatch)$", values[j] or ""):
                return "sbatch", j
    if head in _SHELLS or head == "sbatch":
        j = i + 1
        while j < len(values) and (values[j] or "").startswith("-"):
            if head in _SHELLS and "c" in (values[j] or "")[1:] and not (values[j] or "").startswith("--"):
                return ("-c", j + 1) if j + 1 < len(values) else None
            j += 1
        return (("bash" if head in _SHELLS else "sbatch"), j) if j < len(values) else None
    return None


@lru_cache(maxsize=256)
def _statements(text: str) -> tuple:
    """The syntax tree of a string run as shell code (`eval`, `bash -c`, `$(...)`)."""
    return _Parser(_Lexer(text, nesting=1).run()).statements()


def _launch_at(values: list[str | None]) -> tuple[str, int, int] | None:
    """(engine, index where the command starts, index after its signature) in argv; None if no launch."""
    i = 0
    while i < len(values) and values[i] is not None and values[i].rsplit("/", 1)[-1] in _WRAPPERS:
        i += 1
        while i < len(values) and values[i] is not None and (
                values[i].startswith("-") or "=" in values[i] or re.fullmatch(r"[\d.]+[smhd]?", values[i])):
            i += 1
    head = [v.rsplit("/", 1)[-1] if v else "" for v in values[i:i + 3]]
    if head[:2] == ["vllm", "serve"]:
        return "vllm", i, i + 2
    if head[:2] == ["sglang", "serve"]:
        return "sglang", i, i + 2
    if len(head) == 3 and re.fullmatch(r"python[\d.]*", head[0]) and head[1] == "-m":
        module = values[i + 2] or ""
        if module == "sglang.launch_server":
            return "sglang", i, i + 3
        if module == "vllm.entrypoints.openai.api_server":
            return "vllm", i, i + 3
    return None


class _Interpreter:
    """Runs statements over a `_State`, recording every server launch it reaches.

    `known` are the variables the runner provides; any other variable the
    script does not assign is unknown (None).
    """

    def __init__(self, known: Mapping[str, str], watch: Callable[[list[str | None]], bool] | None = None,
                 exists: Callable[[str], bool | None] | None = None, defaults: bool = False):
        self.known = dict(known)
        self.exists = exists
        self.defaults = defaults  # `known` is every variable the script is given: `${X:-d}` of another X is d
        self.funcs: dict[str, tuple] = {}
        self.called: set[str] = set()
        self.stack: list[str] = []
        self.args: list[tuple[Token, ...]] = []  # per active function call: its positional parameters
        self.returned: list[list[_State]] = []  # per active function call: states at each `return`
        self.launches: list[Launch] = []
        self.steps = 0
        self.tracing = watch is not None  # also follow `eval`, `bash -c` and `$(...)`; record calls and runs
        self.watch = watch
        self.calls: list[Call] = []
        self.runs: list[Run] = []
        self.nested = 0  # depth of strings run as code
        self.at: int | None = None  # while running a string as code: the line of the command that runs it
        self.current = 0  # the line of the simple command being run

    # --- expansion ---
    def lookup(self, state: _State, name: str) -> tuple:
        if name.isdigit() and name != "0" or name in ("@", "*", "#"):
            return self._positional(name)
        binding = state.vars.get(name)
        if binding is not None:
            return binding.alts
        if name in self.known:
            return (self.known[name],)
        return (None,)

    def _passed(self, state: _State, name: str) -> bool:
        """Whether a variable may come from outside the script: the runner's or a function argument."""
        return name in self.known or name.isdigit() or name in state.vars

    def _positional(self, name: str) -> tuple:
        """`$1`.. / `$@` / `$#` inside a function call (a script's own arguments are not known)."""
        if not self.args:
            return (None,)
        args = self.args[-1]
        if name in ("@", "*"):
            return (args,)
        if name == "#":
            return (str(len(args)),)
        n = int(name)
        return (args[n - 1].values[0] if len(args[n - 1].values) == 1 else None,) if n <= len(args) else ("",)

    def param(self, state: _State, part: Part) -> tuple:
        """Candidates of one parameter expansion: str, None (unknown) or tuple[Token, ...] (array fields)."""
        if part.op == "?" or not (_NAME.fullmatch(part.name) or part.name.isdigit() or part.name in ("@", "*", "#")):
            return (None,)
        out: list = []
        for alt in self.lookup(state, part.name):
            out.extend(self._apply_op(state, part, alt))
        return _dedupe(out)

    def _apply_op(self, state: _State, part: Part, alt) -> list:
        if part.op == "#len":
            if isinstance(alt, tuple):
                return [str(len(alt)) if part.subscript else str(len(alt[0].first or "")) if alt else "0"]
            return ["0" if alt is _UNSET else None if alt is None or UNKNOWN in alt else str(len(alt))]
        if isinstance(alt, tuple):  # an array
            if part.subscript in ("@", "*") or part.name in ("@", "*"):
                value = alt
            elif part.subscript.isdigit() or part.subscript == "":
                n = int(part.subscript or 0)
                value = alt[n].first if n < len(alt) else ""
            else:
                value = None
        elif alt is _UNSET:
            value = ""
        else:
            value = alt if part.subscript in ("", "0", "@", "*") else ""
        op = part.op
        if not op:
            return [value]
        if op in _PATTERN_OPS:
            if not isinstance(value, str):
                return [None]
            return [None if pattern is None else _pattern_op(value, op, pattern)
                    for pattern in self._text(state, part.arg)]
        if value is None:  # unknown: either it is set, or the operator's word applies
            if op in (":-", "-", ":=", "="):
                if self.defaults and alt is None and not self._passed(state, part.name):
                    return self._text(state, part.arg)
                return [None, *self._text(state, part.arg)]
            return [*self._text(state, part.arg), ""]
        empty = value in ("", ())
        unset = alt is _UNSET
        if op in (":-", ":="):
            return self._text(state, part.arg) if empty else [value]
        if op in ("-", "="):
            return self._text(state, part.arg) if unset else [value]
        if op == ":+":
            return [""] if empty else self._text(state, part.arg)
        return [""] if unset else self._text(state, part.arg)  # "+"

    def _text(self, state: _State, parts: tuple[Part, ...]) -> list:
        """Candidates of a word read as one string (no field splitting)."""
        tokens = self.expand(state, Word(parts, 0), split=False)
        if len(tokens) == 1:
            return list(tokens[0].values)
        if not tokens:
            return [""]
        return [" ".join(UNKNOWN if t.first is None else t.first for t in tokens)]

    def arith(self, state: _State, text: str) -> str | None:
        """`$((...))` when every variable in it is a known integer; None otherwise."""
        def integer(name: str) -> str | None:
            alts = self.lookup(state, name)
            if len(alts) == 1 and isinstance(alts[0], str) and re.fullmatch(r"\s*-?\d+\s*", alts[0]):
                return alts[0].strip()
            return "0" if len(alts) == 1 and alts[0] in ("", _UNSET) else None

        return _arithmetic(text, integer)

    def expand(self, state: _State, word: Word, split: bool = True) -> list[Token]:
        """The fields of `word`; when branches left candidates, one Token per field with every candidate."""
        per_part: list[tuple] = []
        for p in word.parts:
            if p.kind == "lit":
                per_part.append((("lit", p.text, p.quoted),))
            elif p.kind == "param":
                per_part.append(tuple(("val", a, p.quoted) for a in self.param(state, p)))
            elif p.kind == "arith":
                per_part.append((("val", self.arith(state, p.text), True),))
            else:  # command substitution: its output when it is a pure builtin, else unknown
                per_part.append(tuple(("val", v, p.quoted) for v in self.substitute(state, p.text)))
        # The first _MAX_ALTS candidates in order, built once each: extending every partial candidate part by
        # part copied it per part, quadratic in a word of 100,000 escaped characters.
        combos = [list(c) for c in itertools.islice(itertools.product(*per_part), _MAX_ALTS)]
        results = [_fields(combo, word.line, split) for combo in combos]
        if len(results) == 1:
            return results[0]
        if all(len(r) == 1 for r in results):
            return [Token(_dedupe(v for r in results for v in r[0].values), results[0][0].line)]
        merged: list[Token] = []
        for r in results:  # candidates of different shapes: every field of every candidate
            merged.extend(t for t in r if t not in merged)
        return merged

    def substitute(self, state: _State, text: str) -> tuple:
        """Candidates of `$(text)`: the output of a pure builtin (`printf`, `echo`, `dirname`, `basename`) on
        known arguments, else unknown. When tracing, the body is run in a subshell (a copy of the state):
        the scripts and commands it reaches are recorded, and what its `echo`s and `printf`s print is its
        value when nothing else in it prints (`$(f 2)` of a function that echoes its result, `$([[ $X ]] &&
        printf a || printf b)`)."""
        words = substitution_command(text)
        if words is not None:  # an unknown argument is an unknown part of the output (`%s` of it), or all of it
            candidates = [[UNKNOWN if c is None else c for c in self._text(state, w.parts)] for w in words]
            out = [pure_output(list(combo)) for combo in itertools.islice(itertools.product(*candidates), _MAX_ALTS)]
            return _dedupe(None if o is None or o.strip(UNKNOWN) == "" else o for o in out) or (None,)
        if not self.tracing:
            return (None,)
        inner = state.copy()
        inner.vars[_OUT] = _Binding(("",), 0)
        after = self.subshell(inner, text, self.current, inline=True)
        if after.vars.get(_IMPURE) is not None or _OUT not in after.vars:
            return (None,)
        return tuple(a.rstrip("\n") if isinstance(a, str) else None for a in after.vars[_OUT].alts)

    def _print(self, state: _State, fields: list[Token]) -> None:
        """Inside `$(...)`: what an `echo` / `printf` adds to the substitution's output."""
        combos = itertools.islice(itertools.product(*(t.values for t in fields)), _MAX_ALTS)
        outs = [None if None in combo else pure_output(list(combo)) for combo in combos]
        outs = [None if o is None else o + ("\n" if fields[0].first == "echo" else "") for o in outs]
        before = state.vars[_OUT]
        alts = [None if a is None or not isinstance(a, str) or o is None else a + o for a in before.alts for o in outs]
        state.vars[_OUT] = _Binding(_dedupe(alts), before.line)

    def subshell(self, state: _State, text: str | None, line: int, inline: bool = False) -> _State:
        """Run a string as shell code: in `state` itself (`eval`) or in a copy (`bash -c`, `$(...)`)."""
        if text is None or self.nested >= 4 or len(text) > MAX_SCRIPT // 4:
            return state
        self.nested += 1
        outer, self.at = self.at, self.at or line
        try:
            after = self.run(_statements(text), state if inline else state.copy())
        finally:
            self.nested -= 1
            self.at = outer
        if not inline:
            return state
        after.alive = True
        return after

    # --- execution ---
    def run(self, nodes: tuple, state: _State) -> _State:
        for node in nodes:
            if not state.alive:
                break
            state = self.node(node, state)[1]
        return state

    def node(self, node: _Node, state: _State) -> tuple[bool | None, _State]:
        """Execute `node`: (its exit status as True/False, None when unknown; the state after it)."""
        self.steps += 1
        if self.steps > _MAX_STEPS:
            return None, state
        if isinstance(node, _Simple):
            return self.simple(node, state)
        if isinstance(node, _AndOr):
            return self.and_or(node, state)
        if isinstance(node, _Not):
            status, state = self.node(node.node, state)
            return (None if status is None else not status), state
        if isinstance(node, _If):
            return None, self.if_(node.clauses, node.orelse, state)
        if isinstance(node, _Case):
            return None, self.case(node, state)
        if isinstance(node, _Loop):  # runs zero or more times: both
            return None, _merge(self.run(node.body, state.copy()), state, self.known)
        if isinstance(node, _Group):
            status: bool | None = True
            for child in node.body:
                if not state.alive:
                    break
                status, state = self.node(child, state)
            return status, state
        if isinstance(node, _Func):
            self.funcs[node.name] = node.body
            return True, state
        return None, state

    def if_(self, clauses: tuple, orelse: tuple, state: _State) -> _State:
        if not clauses:
            return self.run(orelse, state)
        (cond, body), rest = clauses[0], clauses[1:]
        status: bool | None = True
        for node in cond:
            status, state = self.node(node, state)
        if status is True:
            return self.run(body, state)
        if status is False:
            return self.if_(rest, orelse, state)
        return _merge(self.run(body, state.copy()), self.if_(rest, orelse, state.copy()), self.known)

    def case(self, node: _Case, state: _State) -> _State:
        subject = self.expand(state, node.word, split=False)
        values = tuple(_decided(v) for v in subject[0].values) if subject else ("",)
        patterns_of = [[_decided(v) for pat in patterns for t in self.expand(state, pat, split=False)
                        for v in t.values] for patterns, _body in node.items]
        branches: list[_State] = []
        for (patterns, body), texts in zip(node.items, patterns_of):
            per_value = set()
            for value in values:
                hits = {None if value is None or text is None else fnmatch.fnmatchcase(value, text)
                        for text in texts}
                per_value.add(True if True in hits else (None if None in hits else False))
            if per_value == {True}:
                branches.append(self.run(body, state.copy()))
                break
            if per_value != {False}:
                branches.append(self.run(body, state.copy()))
        else:
            branches.append(state.copy())  # no item matched (for some candidate)
        out = branches[0]
        for other in branches[1:]:
            out = _merge(out, other, self.known)
        return out

    def and_or(self, node: _AndOr, state: _State) -> tuple[bool | None, _State]:
        status, state = self.node(node.first, state)
        for op, nxt in node.rest:
            if not state.alive:
                break
            if status is None:
                _s, after = self.node(nxt, state.copy())
                state = _merge(after, state, self.known)
            elif status is (op == "&&"):
                status, state = self.node(nxt, state)
        return status, state

    def simple(self, node: _Simple, state: _State) -> tuple[bool | None, _State]:
        self.current = node.line
        split = not (node.words and node.words[0].unquoted_literal == "[[")
        fields: list[Token] = []
        for w in node.words:
            fields.extend(self.expand(state, w, split=split))
        values = [t.first for t in fields]
        command = values[0] if values else None
        if not node.words:
            for name, append, scalar, array in node.assigns:
                self.assign(state, name, append, scalar, array, node.line)
            return True, state
        if command in _DECLARATIONS:
            return True, self.declare(node, state, command)
        if command == "unset":
            for name in values[1:]:
                if name and _NAME.fullmatch(name):
                    state.vars[name] = _Binding((_UNSET,), node.line)
                    state.exported.discard(name)
            return True, state
        if command == "exit":
            state.alive = False
            return False, state
        if command == "return" and self.returned:
            self.returned[-1].append(state.copy())
            state.alive = False
            return None, state
        if command in ("true", ":"):
            return True, state
        if command == "false":
            return False, state
        if command in ("[", "test", "[["):
            args = fields[1:]
            if args and args[-1].first in ("]", "]]"):
                args = args[:-1]
            return _test(args, command == "[[", self.exists), state
        if command in self.funcs and command not in self.stack:
            if self.watch is not None and self.watch(values):
                self.calls.append(self._call(node, state))
            return None, self.call(command, state, tuple(fields[1:]))
        found = _launch_at(values)
        if found is not None:
            self.launches.append(self._launch(node, state, fields, *found))
        if not self.tracing:
            return None, state
        if _OUT in state.vars:  # inside `$(...)`
            if command in ("echo", "printf") and len(fields) > (command == "printf"):
                self._print(state, fields)
                return True, state
            if command not in ("eval", "cd"):
                state.vars[_IMPURE] = _Binding(("1",), node.line)
        if self.watch(values):
            self.calls.append(self._call(node, state))
        if command == "eval":
            return None, self.subshell(state, " ".join(UNKNOWN if t.first is None else t.first for t in fields[1:]),
                                       node.line, inline=True)
        if command == "cd" and len(fields) > 1:
            self._cd(state, fields[1], node.line)
            return None, state
        ran = _run_at(values)
        if ran is not None:
            how, at = ran
            if how == "-c":
                self.subshell(state, values[at], node.line)
            else:
                env = dict(self._env(node, state, fields, at))
                for name in self.known:
                    env.setdefault(name, Token((self.known[name],), 0))
                cwd = state.vars.get("PWD")
                self.runs.append(Run(how, fields[at], Token(tuple(a if isinstance(a, str) else None for a in cwd.alts),
                                                            cwd.line) if cwd else None,
                                     tuple(sorted(env.items())), self.at or node.line))
        return None, state

    def _cd(self, state: _State, target: Token, line: int) -> None:
        """`cd DIR`: PWD becomes DIR (joined to the PWD before when DIR is relative)."""
        before = self.lookup(state, "PWD")
        alts = []
        for value in target.values:
            for old in before:
                if value is not None and value.startswith(("/", UNKNOWN)):
                    alts.append(posixpath.normpath(value))
                elif value is None or not isinstance(old, str):
                    alts.append(None)
                else:
                    alts.append(posixpath.normpath(posixpath.join(old, value)))
        state.vars["PWD"] = _Binding(_dedupe(alts), line)

    def _call(self, node: _Simple, state: _State) -> Call:
        words = tuple(tuple(_dedupe(self._text(state, w.parts))) for w in node.words)
        return Call(words, tuple(sorted(self._env(node, state, [], 0).items())), self.at or node.line)

    def _launch(self, node: _Simple, state: _State, fields: list[Token], engine: str, start: int,
                after: int) -> Launch:
        env = self._env(node, state, fields, start)
        return Launch(engine, tuple(fields[after:]), tuple(sorted(env.items())), fields[start].line)

    def _env(self, node: _Simple, state: _State, fields: list[Token], start: int) -> dict[str, Token]:
        """The variables a command runs with beyond the runner's: exported ones, and its own assignments."""
        env: dict[str, Token] = {}
        for name in sorted(state.exported - set(self.known)):
            binding = state.vars.get(name)
            if binding is not None:
                env[name] = Token(tuple(a if isinstance(a, str) or a is None else "" for a in binding.alts),
                                  binding.line)
        for name, _append, scalar, _array in node.assigns:  # `VAR=1 vllm serve ...`
            env[name] = Token(self._scalar(state, scalar), node.line)
        for t in fields[:start]:  # `env VAR=1 vllm serve ...`
            m = _ASSIGN.match(t.first or "")
            if m:
                env[m.group(1)] = Token((t.first[len(m.group(0)):],), t.line)
        return env

    def declare(self, node: _Simple, state: _State, command: str) -> _State:
        """`export` / `declare` / `local` / `readonly`: assignments, and marks for export."""
        export = command == "export" or any(
            w.unquoted_literal and re.fullmatch(r"-[a-zA-Z]*x[a-zA-Z]*", w.unquoted_literal) for w in node.words[1:])
        for name, append, scalar, array in node.assigns:
            self.assign(state, name, append, scalar, array, node.line)
            if export:
                state.exported.add(name)
        for w in node.words[1:]:
            assignment = _assignment(w)
            if assignment is not None:
                name, append, value = assignment
                self.assign(state, name, append, value, None, w.line)
            else:
                name = w.unquoted_literal or ""
            if export and _NAME.fullmatch(name):
                state.exported.add(name)
        return state

    def call(self, name: str, state: _State, args: tuple[Token, ...] = ()) -> _State:
        if len(self.stack) >= 8:
            return state
        self.called.add(name)
        self.stack.append(name)
        self.args.append(args)
        self.returned.append([])
        try:
            out = self.run(self.funcs[name], state)
        finally:
            self.stack.pop()
            self.args.pop()
            frames = self.returned.pop()
        for back in frames:  # every `return` resumes the caller
            back.alive = True
            out = _merge(out, back, self.known)
        return out

    def _scalar(self, state: _State, scalar: Word | None) -> tuple:
        if scalar is None:
            return ("",)
        return tuple(self._text(state, scalar.parts))

    def assign(self, state: _State, name: str, append: bool, scalar: Word | None,
               array: tuple[Word, ...] | None, line: int) -> None:
        if array is not None:
            items: list[Token] = []
            for w in array:
                items.extend(self.expand(state, w))
            old = [a for a in self.lookup(state, name) if isinstance(a, tuple)] if append else []
            alts = tuple(o + tuple(items) for o in old) if old else (tuple(items),)
        else:
            alts = self._scalar(state, scalar)
            if append:
                alts = tuple(None if o is None or a is None else (o if isinstance(o, str) else "") + a
                             for o in self.lookup(state, name) for a in alts)
        state.vars[name] = _Binding(_dedupe(alts), line)


def _fields(combo: list, line: int, split: bool) -> list[Token]:
    """Fields of one candidate expansion of a word (bash field splitting of unquoted values)."""
    if len(combo) == 1 and combo[0][0] == "val" and isinstance(combo[0][1], tuple):
        return list(combo[0][1])  # "${ARR[@]}" alone: its fields, with the lines they were written on
    fields: list[Token] = []
    cur: list[str] = []
    present = False

    def emit() -> None:
        nonlocal cur, present
        text = "".join(cur)
        if text or present:
            fields.append(Token((None if text and not text.strip(UNKNOWN) else text,), line))
        cur, present = [], False

    for kind, value, quoted in combo:
        if kind == "lit":
            cur.append(value)
            present = present or quoted
        elif value is None:
            cur.append(UNKNOWN)
        elif isinstance(value, tuple):
            for n, t in enumerate(value):
                if n:
                    emit()
                cur.append(UNKNOWN if t.first is None else t.first)
                present = present or quoted
        elif split and not quoted:
            if value[:1].isspace():
                emit()
            for n, piece in enumerate(value.split()):
                if n:
                    emit()
                cur.append(piece)
            if value[-1:].isspace():
                emit()
        else:
            cur.append(value)
            present = True
    emit()
    return fields


# ---------------------------------------------------------------------------
# Command substitutions that can be worked out: pure builtins on known arguments
# ---------------------------------------------------------------------------

_PURE = frozenset({"printf", "echo", "dirname", "basename"})
_PRINTF_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([sdifgeExXqbc%])")
_PRINTF_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "a": "\a"}


@lru_cache(maxsize=512)
def substitution_command(text: str) -> tuple[Word, ...] | None:
    """The words of a `$(...)` body that is one pure builtin (`printf`, `echo`, `dirname`, `basename`), so its
    output can be worked out from its arguments; None for any other body (it is never run)."""
    if len(text) > MAX_RESOLVED:
        return None
    nodes = _Parser(_Lexer(text, nesting=1).run()).statements()
    if len(nodes) != 1 or not isinstance(nodes[0], _Simple) or nodes[0].assigns or not nodes[0].words:
        return None
    return nodes[0].words if nodes[0].words[0].unquoted_literal in _PURE else None


def pure_output(argv: list[str]) -> str | None:
    """What `printf` / `echo` / `dirname` / `basename` prints for `argv` (trailing newlines cut, as `$(...)`
    cuts them); None when an argument it computes with is not known."""
    command, args = argv[0], argv[1:]
    if command == "echo":
        while args and re.fullmatch(r"-[neE]+", args[0]):
            args = args[1:]
        out = " ".join(args)
    elif command == "dirname":
        if any(UNKNOWN in a.rsplit("/", 1)[0] + ("" if "/" in a else UNKNOWN) for a in args):
            return UNKNOWN  # where the directory ends is not known
        out = "\n".join((posixpath.dirname(a.rstrip("/")) or ".") for a in args) if args else None
    elif command == "basename":
        out = posixpath.basename(args[0].rstrip("/")) if args else None
        if out is not None and UNKNOWN in out:
            return UNKNOWN
        if out is not None and len(args) > 1 and out.endswith(args[1]) and out != args[1]:
            out = out[:-len(args[1])]
    else:
        out = _printf(args[0], args[1:]) if args else None
    return None if out is None else out.rstrip("\n")


def _printf(fmt: str, args: list[str]) -> str | None:
    """bash's `printf FMT ARGS...`: the format is reused while arguments remain."""
    fmt = re.sub(r"\\(.)", lambda m: _PRINTF_ESCAPES.get(m.group(1), "\\" + m.group(1)), fmt)
    out: list[str] = []
    rest = list(args)
    for _ in range(64):
        used = False

        def one(m: re.Match) -> str:
            nonlocal used
            flags, width, prec, conv = m.groups()
            if conv == "%":
                return "%"
            used = True
            arg = rest.pop(0) if rest else ""
            if conv in "sqbc":
                text = arg[:1] if conv == "c" else arg
                return f"{text:{'<' if '-' in flags else '>'}{width or 0}}"
            if UNKNOWN in arg:
                return UNKNOWN
            try:
                number = float(arg or 0) if conv in "fgeE" else int(arg or 0, 0)
            except ValueError:
                return UNKNOWN
            spec = f"{flags}{width}{'.' + prec if prec is not None else ''}{conv}"
            try:
                return ("%" + spec) % number
            except (TypeError, ValueError, OverflowError):
                return UNKNOWN
        out.append(_PRINTF_SPEC.sub(one, fmt))
        if not used or not rest or sum(map(len, out)) > MAX_RESOLVED:
            break
    text = "".join(out)
    return text if len(text) <= MAX_RESOLVED else None


_PATTERN_OPS = frozenset({"%", "%%", "#", "##", "/", "//"})
_MAX_PATTERN_VALUE = 2_000  # characters a value may have for `${NAME%pattern}` & co to be worked out


def _pattern_op(value: str, op: str, arg: str) -> str | None:
    """`${NAME<op>arg}` for the pattern operators, as bash computes it: `%`/`%%` remove the shortest/longest
    suffix matching the glob, `#`/`##` the prefix, `/`/`//` replace the first/every longest match (`pat/rep`).
    None (unknown) for values too long to match cheaply."""
    if len(value) > _MAX_PATTERN_VALUE or len(arg) > _MAX_PATTERN_VALUE:
        return None
    match = fnmatch.fnmatchcase
    n = len(value)
    if op in ("#", "##"):
        for i in (range(n + 1) if op == "#" else range(n, -1, -1)):
            if match(value[:i], arg):
                return value[i:]
        return value
    if op in ("%", "%%"):
        for i in (range(n, -1, -1) if op == "%" else range(n + 1)):
            if match(value[i:], arg):
                return value[:i]
        return value
    pattern, _, replacement = arg.partition("/")
    if not pattern or n > 200:
        return value if not pattern else None
    out, i = [], 0
    while i <= n:
        j = next((j for j in range(n, i, -1) if match(value[i:j], pattern)), None)
        if j is None:
            out.append(value[i:i + 1])
            i += 1
            continue
        out.append(replacement)
        if op == "/":
            out.append(value[j:])
            return "".join(out)
        i = j
    return "".join(out)


def _decided(value: str | None) -> str | None:
    """A value a condition can use: None when any part of it is unknown."""
    return None if value is None or UNKNOWN in value else value


_INT_OPS = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge,
            "-lt": operator.lt, "-le": operator.le}
_BINARY = {"=", "==", "!=", "<", ">", "=~", *_INT_OPS}


def _test(args: list[Token], pattern: bool, exists: Callable[[str], bool | None] | None = None) -> bool | None:
    """`[ ... ]` / `[[ ... ]]` over candidate values: decided only when every candidate agrees."""
    combos: list[list[str | None]] = [[]]
    for t in args:
        combos = [c + [_decided(v)] for c in combos for v in t.values][:_MAX_ALTS * 4]
    results = {_Test(c, pattern, exists).run() for c in combos}
    return results.pop() if len(results) == 1 else None


class _Test:
    """One `test` expression in three-valued logic (None: depends on something unknown)."""

    def __init__(self, args: list[str | None], pattern: bool, exists: Callable[[str], bool | None] | None = None):
        self.a = args
        self.pos = 0
        self.depth = 0
        self.pattern = pattern  # `[[ ]]`: the right side of = / != is a glob
        self.exists = exists  # whether a file exists, where the caller knows

    def run(self) -> bool | None:
        value = self.or_()
        return value if self.pos >= len(self.a) else None

    def _at(self, *ops: str) -> bool:
        return self.pos < len(self.a) and self.a[self.pos] in ops

    def or_(self) -> bool | None:
        left = self.and_()
        while self._at("-o", "||"):
            self.pos += 1
            right = self.and_()
            left = True if True in (left, right) else (None if None in (left, right) else False)
        return left

    def and_(self) -> bool | None:
        left = self.not_()
        while self._at("-a", "&&"):
            self.pos += 1
            right = self.not_()
            left = False if False in (left, right) else (None if None in (left, right) else True)
        return left

    def not_(self) -> bool | None:
        negations = 0
        while self._at("!"):
            self.pos += 1
            negations += 1
        value = self.primary()
        return None if value is None else value ^ (negations % 2 == 1)

    def primary(self) -> bool | None:
        a = self.a
        if self.pos >= len(a):
            return False
        first = a[self.pos]
        if first == "(":
            self.pos += 1
            self.depth += 1
            if self.depth > _MAX_NESTING:
                self.pos = len(a) + 1  # too deep: undecided
                return None
            value = self.or_()
            self.depth -= 1
            if self._at(")"):
                self.pos += 1
            return value
        if self.pos + 1 < len(a) and a[self.pos + 1] in _BINARY:
            left, op = first, a[self.pos + 1]
            right = a[self.pos + 2] if self.pos + 2 < len(a) else ""
            self.pos += 3
            return self._binary(left, op, right)
        if first is not None and re.fullmatch(r"-[a-zA-Z]", first) and self.pos + 1 < len(a):
            operand = a[self.pos + 1]
            self.pos += 2
            if first in ("-f", "-e", "-s", "-r", "-x") and self.exists is not None and operand is not None:
                return self.exists(operand)
            if first not in ("-n", "-z"):
                return None  # file tests and the like: not knowable here
            return None if operand is None else bool(operand) == (first == "-n")
        self.pos += 1
        return None if first is None else bool(first)

    def _binary(self, left: str | None, op: str, right: str | None) -> bool | None:
        if left is None or right is None or op == "=~":
            return None
        if op in _INT_OPS:
            try:
                return _INT_OPS[op](int(left.strip()), int(right.strip()))
            except ValueError:
                return False  # bash: "integer expression expected", a failing test
        if op in ("=", "==", "!="):
            equal = fnmatch.fnmatchcase(left, right) if self.pattern else left == right
            return equal if op != "!=" else not equal
        return left < right if op == "<" else left > right


_ARITH_NAME = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b")


def _arithmetic(text: str, integer: Callable[[str], str | None]) -> str | None:
    """`$((text))` when `integer(name)` gives every variable in it; None otherwise."""
    def value(m: re.Match) -> str:
        found = integer(m.group(1) or m.group(2) or m.group(3))
        if found is None:
            raise ValueError("unknown operand")
        return found

    try:
        return _eval_int(_ARITH_NAME.sub(value, text))
    except (ValueError, SyntaxError, ZeroDivisionError, RecursionError, MemoryError):
        return None


_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod}


def _eval_int(expr: str) -> str:
    tree = ast.parse(expr.strip(), mode="eval")

    def ev(n) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in _ARITH_OPS:
            left, right = ev(n.left), ev(n.right)
            if abs(left) > 10**12 or abs(right) > 10**12:
                raise ValueError("too large")
            return _ARITH_OPS[type(n.op)](left, right)
        raise ValueError("unsupported")

    return str(ev(tree))


# ---------------------------------------------------------------------------
# A script, read once: as a program and as lines
# ---------------------------------------------------------------------------

MAX_RESOLVED = 20_000  # characters a variable's value, or the expansions on one line, may come to
MAX_EXPANDED = 1_000_000  # characters all of a script's values and line expansions may come to
_MAX_CHAIN = 8  # a value is worked out through at most this many other variables
_DIFF_BODY = re.compile(r"^(?:diff --git |--- \S|\+\+\+ \S|@@ -\d|Index: )")
_PYTHON_CMD = re.compile(r"\bpython[\d.]*\b")
_END = object()


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


@dataclass(frozen=True)
class ShellLine:
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


@dataclass(frozen=True)
class ShellCommand:
    """A logical line: the physical lines bash reads as one (over a trailing backslash, or an open quote,
    array or `$(...)`), without comments and heredoc bodies."""

    line: int
    end: int
    text: str
    expanded: str  # as `ShellLine.expanded`


@dataclass(frozen=True)
class Assignment:
    """A variable the script sets: `NAME=value`, `NAME+=value`, `NAME=(items)`, alone or as an argument of
    `export` / `declare` / `local` / `readonly` / `typeset`. Prefix assignments (`NAME=value cmd`) only set
    the command's environment and are not listed."""

    name: str
    line: int
    value: Word | None  # None for an array
    items: tuple[Word, ...] | None  # the items of an array
    append: bool

    @property
    def text(self) -> str:
        """The value as written, quotes removed; expansions and command substitutions kept as source."""
        if self.items is not None:
            return "(" + " ".join(_as_written(w.parts) for w in self.items) + ")"
        return _as_written(self.value.parts if self.value is not None else ())


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command as bash reads it, for readers that judge what a command does.

    `words` are the command's words with each variable the script fixes substituted; an unknown value stays
    as written (`$X`), a command substitution as `$(...)` (never run). `quoted` says which words were
    written in quotes. `redirects` are (operator, target). `function` is the function the command is
    written in ("" at the top level).
    """

    line: int
    words: tuple[str, ...]
    quoted: tuple[bool, ...]
    redirects: tuple[tuple[str, str], ...]
    function: str
    substitutions: tuple[str, ...]  # the source of every `$(...)` in its words and redirections

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""


def _as_written(parts: tuple[Part, ...]) -> str:
    return "".join(f"$({p.text})" if p.kind == "cmd" else f"$(({p.text}))" if p.kind == "arith" else p.text
                   for p in parts)


def line_code(line: str) -> str:
    """`line`, read on its own, without its comment (a `#` that starts a word outside quotes)."""
    if "#" not in line:
        return line.rstrip()  # most lines: nothing to lex
    lexer = _Lexer(line)
    lexer.run()
    return (line[:lexer.comments[0]] if lexer.comments else line).rstrip()


def heredoc_bodies(lines: Iterable[ShellLine]) -> dict[int, list[ShellLine]]:
    """Body lines of each heredoc, keyed by the line of its operator."""
    out: dict[int, list[ShellLine]] = {}
    for ln in lines:
        if ln.heredoc is not None:
            out.setdefault(ln.heredoc.start, []).append(ln)
    return out


@dataclass(frozen=True)
class _Read:
    """What lexing a text gives the readers of its lines."""

    statements: tuple
    ends: frozenset[int]  # lines where a logical line ends
    comments: dict[int, int]  # line -> column where its comment starts
    refs: dict[int, list[tuple[int, int, Part]]]  # line -> (start, end column, part) of its expansions
    docs: tuple[tuple[int, int, int, int, bool, str, bool], ...]  # line, column, first, last, closed, delim, quoted
    lexed: int  # lines read by the lexer; any after them (past MAX_SCRIPT) are read alone


def _read_whole(raw: list[str]) -> _Read:
    text = "\n".join(raw)
    lexer = _Lexer(text, record=True)
    tokens = lexer.run()
    starts = list(itertools.accumulate((len(line) + 1 for line in raw), initial=0))

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    comments: dict[int, int] = {}
    for at in lexer.comments:
        n = line_of(at)
        comments.setdefault(n, at - starts[n - 1])
    refs: dict[int, list[tuple[int, int, Part]]] = {}
    for begin, end, part in lexer.refs:
        n = line_of(begin)
        if end < starts[n]:  # on one line
            refs.setdefault(n, []).append((begin - starts[n - 1], end - starts[n - 1], part))
    docs = tuple((d.line, d.at - starts[d.line - 1], d.first, d.last, d.closed, d.delimiter, d.quoted)
                 for d in lexer.docs)
    return _Read(_Parser(tokens).statements(), frozenset(t.line for t in tokens if t.kind == "nl"), comments, refs,
                 docs, bisect.bisect_left(starts, len(lexer.s)) if len(lexer.s) < len(text) else len(raw))


@lru_cache(maxsize=128)
def _parsed(text: str, embedded: bool) -> _Read:
    """The lexed and parsed script (a pure function of its text, immutable): the same library or launcher is
    read by every evidence round and every PR of a backtest, and lexing it is most of reading it."""
    raw = text.splitlines()
    return (_read_embedded if embedded else _read_whole)(raw)


def _read_embedded(raw: list[str]) -> _Read:
    """Each line lexed on its own; a heredoc body ends at its delimiter, indented or not."""
    statements: list = []
    comments: dict[int, int] = {}
    refs: dict[int, list[tuple[int, int, Part]]] = {}
    docs = []
    n = 0
    while n < len(raw):
        n += 1
        lexer = _Lexer(raw[n - 1], record=True, line=n)
        statements.extend(_Parser(lexer.run()).statements())
        if lexer.comments:
            comments[n] = lexer.comments[0]
        if lexer.refs:
            refs[n] = lexer.refs
        opener = n
        for delim, _strip, quoted, _line, at in lexer.heredocs:
            first = n + 1
            while n < len(raw) and raw[n].strip() != delim:
                if not quoted and "$" in raw[n]:
                    refs[n + 1] = _expansions(raw[n])
                n += 1
            closed = n < len(raw)
            n += closed
            docs.append((opener, at, first, n, closed, delim, quoted))
    return _Read(tuple(statements), frozenset(range(1, len(raw) + 1)), comments, refs, tuple(docs), len(raw))


class Script:
    """A bash script, lexed and parsed once, then read two ways.

    As a program: `launches(env)` and `exports()` run the interpreter over its syntax tree. As lines:
    `lines`, `commands`, `assignments`, `functions` and `array_items`, for checks that look for settings
    with patterns. Both come from the one lexer, so quoting, comments, heredocs and `$(...)` mean the
    same to every reader.

    Lines are those of `str.splitlines`, so their numbers are the diff's. With `embedded`, the text is
    shell inside YAML (a workflow's `run:` blocks): each line is lexed on its own, since YAML text
    around the commands may hold quotes that do not pair up, and a heredoc ends at a line that is its
    delimiter once indentation is stripped (YAML removes the block's indentation before bash reads it).
    """

    def __init__(self, text: str, embedded: bool = False):
        self.raw = text.splitlines()
        self.embedded = embedded
        self._read = _parsed(text, embedded) if len(text) <= MAX_SCRIPT else (
            _read_embedded if embedded else _read_whole)(self.raw)
        self.statements = self._read.statements
        self._values: dict[str, str | None] = {}
        self._room = MAX_EXPANDED  # what values and expansions may still add; past it, variables stay as written
        self._resolving: set[str] = set()

    # --- as a program ---
    def launches(self, env: Mapping[str, str] | None = None) -> tuple[Launch, ...]:
        """Every vLLM/SGLang server launch the script reaches with `env` as the known variables.

        Functions the script defines but never calls are run last, so a launch
        wrapped in an uncalled helper is still found.
        """
        interp = _Interpreter(env or {})
        state = interp.run(self.statements, _State({}, set()))
        for name in list(interp.funcs):
            if name not in interp.called:
                interp.call(name, state.copy() if state.alive else _State({}, set()))
        seen: list[Launch] = []
        for launch in interp.launches:
            if launch not in seen:
                seen.append(launch)
        return tuple(seen)

    def trace(self, env: Mapping[str, str] | None = None, path: str = "",
              watch: Callable[[list[str | None]], bool] = lambda values: False,
              exists: Callable[[str], bool | None] | None = None, uncalled: bool = True,
              defaults: bool = False) -> Trace:
        """Run the script with `env` as the known variables (and `path` as `$0`), as `launches` does, and also
        follow `eval`, `bash -c` strings and the bodies of `$(...)`; return the launches reached, every
        command for which `watch(its field values)` is true, and every script it runs or sources.
        `exists(path)` answers file tests (`[ -f "$SCRIPT" ]`): True, False, or None where not known.
        With `uncalled`, functions the script defines but never calls are run last (as `launches` does);
        a library that is sourced is traced without (its callers call what they use). With `defaults`, `env`
        is every variable the script is given: one it neither gets nor sets takes the default the script
        gives it (`${DRAFT_PATH:-/models/x}`), as the line readers take it.

        Sourced files are not read (the caller resolves `Run.path` and traces them in turn).
        """
        known = dict(env or {})
        if path:
            known["0"] = path
        interp = _Interpreter(known, watch, exists, defaults)
        state = interp.run(self.statements, _State({}, set()))
        for name in list(interp.funcs) if uncalled else ():
            if name not in interp.called:
                interp.call(name, state.copy() if state.alive else _State({}, set()))
        return Trace(tuple(dict.fromkeys(interp.launches)), tuple(dict.fromkeys(interp.calls)),
                     tuple(dict.fromkeys(interp.runs)))

    def exports(self) -> tuple[tuple[str, Token], ...]:
        """The variables the script exports (a guide's env block), in the order they were set."""
        interp = _Interpreter({})
        state = interp.run(self.statements, _State({}, set()))
        out = []
        for name in sorted(state.exported, key=lambda n: state.vars[n].line if n in state.vars else 0):
            binding = state.vars.get(name)
            if binding is not None:
                out.append((name, Token(tuple(a if isinstance(a, str) or a is None else "" for a in binding.alts),
                                        binding.line)))
        return tuple(out)

    # --- as lines ---
    @cached_property
    def lines(self) -> tuple[ShellLine, ...]:
        """Every line, classified: code without comments, heredoc bodies, variables expanded."""
        read = self._read
        codes = []
        for n, text in enumerate(self.raw, 1):
            col = read.comments.get(n)
            codes.append(line_code(text) if n > read.lexed else (text if col is None else text[:col]).rstrip())
        docs: dict[int, Heredoc] = {}
        ends: set[int] = set()
        python_at: dict[int, int] = {}  # line -> column of the first python on it (-1: none)
        for line, col, first, last, closed, delim, quoted in read.docs:
            opener = codes[line - 1]
            if line not in python_at:
                m = _PYTHON_CMD.search(opener)
                python_at[line] = m.start() if m else -1
            body = range(first, last if closed else last + 1)
            lead = next((self.raw[k - 1] for k in body if self.raw[k - 1].strip()), "")
            lead = lead.lstrip() if self.embedded else lead
            doc = Heredoc(line, max(last, line), opener, delim, quoted, bool(_DIFF_BODY.match(lead)),
                          0 <= python_at[line] < col)
            docs.update(dict.fromkeys(body, doc))
            if closed:
                ends.add(last)
        out = []
        for n, text in enumerate(self.raw, 1):
            doc = docs.get(n)
            code = text if doc is not None else "" if n in ends else codes[n - 1]
            refs = read.refs.get(n)
            out.append(ShellLine(n, text, code, doc, self._expand_line(code, refs) if refs else code))
        return tuple(out)

    @cached_property
    def commands(self) -> tuple[ShellCommand, ...]:
        """The logical lines outside heredoc bodies that hold code."""
        out: list[ShellCommand] = []
        group: list[ShellLine] = []
        for ln in self.lines:
            if ln.heredoc is not None or not group and not ln.code.strip():
                continue
            group.append(ln)
            if ln.number in self._read.ends or ln.number > self._read.lexed:
                out.append(_command(group))
                group = []
        if group:
            out.append(_command(group))
        return tuple(out)

    @cached_property
    def assignments(self) -> tuple[Assignment, ...]:
        """Every variable the script sets, anywhere (in functions, branches, loops), in order."""
        out: list[Assignment] = []
        for node in _walk(self.statements):
            if not isinstance(node, _Simple):
                continue
            declares = bool(node.words) and node.words[0].unquoted_literal in _DECLARATIONS
            if not node.words or declares:
                out.extend(Assignment(name, scalar.line if scalar is not None else node.line, scalar, array, append)
                           for name, append, scalar, array in node.assigns)
            for w in node.words[1:] if declares else ():
                assignment = _assignment(w)
                if assignment is not None:
                    name, append, value = assignment
                    out.append(Assignment(name, w.line, value, None, append))
        return tuple(out)

    @cached_property
    def functions(self) -> dict[str, tuple[ShellLine, ...]]:
        """The lines of each function the script defines (its last definition), from `name() {` to `}`."""
        return {node.name: self.lines[node.line - 1:node.end] for node in _walk(self.statements)
                if isinstance(node, _Func)}

    @cached_property
    def simple_commands(self) -> tuple[SimpleCommand, ...]:
        """Every simple command of the script, in the order written (inside functions, branches and loops
        too), with its words and redirections as `SimpleCommand` gives them."""
        out: list[SimpleCommand] = []
        stack: list[tuple[Iterator, str]] = [(iter(self.statements), "")]
        while stack:
            node = next(stack[-1][0], _END)
            if node is _END:
                stack.pop()
                continue
            function = stack[-1][1]
            if isinstance(node, _Simple) and (node.words or node.redirects):
                words = [self.text_of(w.parts) for w in node.words]
                subs = [p.text for w in (*node.words, *(t for _, t in node.redirects)) for p in w.parts
                        if p.kind == "cmd"]
                quoted = tuple(bool(w.parts) and all(p.quoted for p in w.parts) for w in node.words)
                redirects = tuple((op, self.text_of(t.parts)) for op, t in node.redirects)
                out.append(SimpleCommand(node.line, tuple(words), quoted, redirects, function, tuple(subs)))
            if node is not None:
                stack.append((iter(_children(node)), node.name if isinstance(node, _Func) else function))
        return tuple(out)

    def text_of(self, parts: tuple[Part, ...]) -> str:
        """A word's text: variables the script fixes substituted, anything else as written."""
        out = []
        for p in parts:
            value = self._expand(p, "", 0) if p.kind == "param" else None
            if value is not None and len(value) <= MAX_RESOLVED:
                out.append(value)
            else:
                out.append(_as_written((p,)))
        return "".join(out)

    def value_of(self, a: Assignment) -> str | None:
        """The value an assignment gives, variables the script fixes expanded (others kept as written); None
        for an array, or a value a command substitution or undecidable arithmetic makes unknown."""
        return self._render(a.value.parts, a.name, 0) if a.value is not None and not a.append else None

    def array_items(self, name: str) -> tuple[str, ...]:
        """The items of every `name=(...)` / `name+=(...)`, with the variables the script fixes expanded."""
        return tuple(self._render(w.parts, "", 0) or _as_written(w.parts)
                     for a in self._assigned.get(name, ()) if a.items is not None for w in a.items)

    # --- variables, resolved where every assignment agrees ---
    @cached_property
    def _assigned(self) -> dict[str, list[Assignment]]:
        out: dict[str, list[Assignment]] = {}
        for a in self.assignments:
            out.setdefault(a.name, []).append(a)
        return out

    def _value(self, name: str, depth: int) -> str | None:
        """The value every assignment of `name` gives it, when they all give the same one; None otherwise.

        Where an assignment sits does not matter: a value two branches set differently is not fixed.
        In its own assignment a variable is taken as not set by the runner (`N="${N:-2}"`: N is 2), as is
        a variable the script never sets (`${Y:-7}` is 7). Unknown variables inside a value stay as
        written (`{"n": $N}`); a command substitution makes the value unknown.
        """
        if name in self._values:
            return self._values[name]
        if depth > _MAX_CHAIN or name in self._resolving or self._room <= 0:
            return None
        self._resolving.add(name)
        found: set[str | None] = set()
        for a in self._assigned[name]:
            found.add(None if a.value is None or a.append else self._render(a.value.parts, name, depth))
            if None in found or len(found) > 1:
                break
        self._resolving.discard(name)
        value = found.pop() if len(found) == 1 else None
        self._room -= len(value or "")
        self._values[name] = value
        return value

    def _expand(self, part: Part, owner: str, depth: int) -> str | None:
        """What `$NAME` / `${NAME}` / `${NAME:-word}` (and `-`, `:=`, `=`) comes to; None when not fixed."""
        if part.kind != "param" or part.op not in ("", ":-", "-", ":=", "=", *_PATTERN_OPS) or part.subscript \
                or not _NAME.fullmatch(part.name):
            return None
        if part.op in _PATTERN_OPS:
            value = self._value(part.name, depth + 1) if part.name != owner and part.name in self._assigned else None
            pattern = self._render(part.arg, owner, depth) if value is not None else None
            return None if pattern is None else _pattern_op(value, part.op, pattern)
        if part.name == owner or part.name not in self._assigned:  # unset, as far as the script says
            return self._render(part.arg, owner, depth) if part.op else None
        value = self._value(part.name, depth + 1)
        if value == "" and part.op in (":-", ":="):
            return self._render(part.arg, owner, depth)
        return value

    def _render(self, parts: tuple[Part, ...], owner: str, depth: int) -> str | None:
        """The text of a word, expansions resolved where fixed (kept as written where not); None when a
        command substitution or an undecidable arithmetic makes it unknown."""
        out: list[str] = []
        size = 0
        for p in parts:
            if p.kind == "lit":
                text = p.text
            elif p.kind == "param":
                text = self._expand(p, owner, depth)
                text = p.text if text is None else text
            elif p.kind == "arith":
                text = _arithmetic(p.text, lambda name: self._integer(name, owner, depth))
            else:
                text = self._substitute(p.text, owner, depth)
            if text is None:
                return None
            size += len(text)
            if size > MAX_RESOLVED:
                return None
            out.append(text)
        return "".join(out)

    def _substitute(self, text: str, owner: str, depth: int) -> str | None:
        """The output of a `$(...)` that is a pure builtin whose arguments are fixed; None otherwise."""
        words = substitution_command(text)
        if words is None or depth > _MAX_CHAIN:
            return None
        argv = [self._render(w.parts, owner, depth + 1) for w in words]
        if any(a is None or "$" in a for a in argv):
            return None
        return pure_output(argv)

    def _integer(self, name: str, owner: str, depth: int) -> str | None:
        value = self._value(name, depth + 1) if name != owner and name in self._assigned else None
        if value is not None and re.fullmatch(r"\s*-?\d+\s*", value):
            return value.strip()
        return "0" if value == "" else None

    def _expand_line(self, code: str, refs: list[tuple[int, int, Part]]) -> str:
        """`code` with its expansions replaced where their value is fixed (values put on one line)."""
        out: list[str] = []
        at = added = 0
        for begin, end, part in refs:
            value = self._expand(part, "", 0) if end <= len(code) else None
            if value is None or added + len(value) > MAX_RESOLVED or len(value) > self._room:
                continue
            added += len(value)
            self._room -= len(value)
            out += (code[at:begin], value.replace("\n", " "))
            at = end
        out.append(code[at:])
        return "".join(out)


def _walk(nodes: tuple) -> Iterator[_Node]:
    """Every statement of `nodes` and every statement inside them, in order (without recursion: hostile
    scripts nest deep)."""
    stack: list[Iterator] = [iter(nodes)]
    while stack:
        node = next(stack[-1], _END)
        if node is _END:
            stack.pop()
        elif node is not None:
            yield node
            stack.append(iter(_children(node)))


def _children(node: _Node) -> tuple:
    """The statements directly inside a compound command."""
    if isinstance(node, _AndOr):
        return (node.first, *(n for _op, n in node.rest))
    if isinstance(node, _Not):
        return (node.node,)
    if isinstance(node, _If):
        return (*(n for cond, body in node.clauses for n in (*cond, *body)), *node.orelse)
    if isinstance(node, _Case):
        return tuple(n for _patterns, body in node.items for n in body)
    if isinstance(node, (_Loop, _Group, _Func)):
        return node.body
    return ()


def _command(group: list[ShellLine]) -> ShellCommand:
    def joined(texts: list[str]) -> str:
        return " ".join((t[:-1] if k < len(texts) - 1 and t.endswith("\\") else t).strip()
                        for k, t in enumerate(texts))

    return ShellCommand(group[0].number, group[-1].number, joined([ln.code.rstrip() for ln in group]),
                        joined([ln.expanded.rstrip() for ln in group]))
