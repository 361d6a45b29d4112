"""A small, total interpreter over the bash subset benchmark scripts are written in.

`launches(script, env)` runs assignments, arrays, `export`, `if`/`case`/loops,
functions, `&&`/`||`, quoting, `${VAR:-default}` and `$((...))`, and returns
every `vllm serve` / `python -m sglang.launch_server` command it reaches,
each token with the line it was written on. `env` holds the variables the
master config gives the script (MODEL, TP, EP_SIZE, DP_ATTENTION, ...); every
other variable the script does not assign is *unknown*. A condition that
depends on an unknown value is undecidable: both branches run, and a
variable they set differently keeps every candidate value.
`shell_exports(script)` lists the environment a script exports.

PR content is never executed: this reads scripts as text. Work, nesting and
recursion are capped, so hostile input ends as unknown values, never an
exception or an unbounded loop.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import itertools
import operator
import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

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
_BALANCED = {"(": re.compile(r"[\\\n'\"()]"), "{": re.compile(r"[\\\n\"{}]")}  # what `_balanced` must look at
_REDIRECTS = {"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&", "<<<", "<<", "<<-"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


@dataclass(frozen=True)
class Part:
    """One piece of a shell word.

    kind: "lit" (literal text), "param" (`$NAME`, `${NAME...}`), "cmd"
    (command substitution, never run) or "arith" (`$((...))`).
    """

    kind: str
    text: str
    quoted: bool = False
    name: str = ""
    index: str = ""  # array subscript: "@", "*", a number, or ""
    op: str = ""  # ":-", "-", ":=", "=", ":+", "+", or "?" for any other operator
    arg: tuple["Part", ...] = ()


@dataclass(frozen=True)
class Word:
    parts: tuple[Part, ...]
    line: int

    @property
    def unquoted_literal(self) -> str | None:
        """The word's text when it is plain unquoted text (reserved words, names, operators in `[[ ]]`)."""
        if all(p.kind == "lit" and not p.quoted for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None


@dataclass(frozen=True)
class _Tok:
    kind: str  # word | op | nl | array | arith
    line: int
    word: Word | None = None
    op: str = ""
    name: str = ""  # array assignment: variable name
    append: bool = False
    items: tuple[Word, ...] = ()


@functools.cache
def _plain(stop: str, quoted: bool, end: str) -> re.Pattern:
    """A run of characters `_Lexer._word_parts` takes as they are, in its mode."""
    special = set(stop) | set("\\$`\n\x00") | set(end) | (set() if quoted else set("'\""))
    return re.compile("[^" + "".join(re.escape(c) for c in sorted(special)) + "]+")


class _Lexer:
    def __init__(self, text: str, nesting: int = 0):
        self.nesting = nesting  # `${a:-${b:-...}}` depth: beyond _MAX_NESTING a value is unknown
        self.s = text[:MAX_SCRIPT]
        self.i = 0
        self.line = 1
        self.toks: list[_Tok] = []
        self.heredocs: list[tuple[str, bool]] = []
        self.want_delim: bool | None = None  # after << / <<-: whether tabs are stripped

    def run(self) -> list[_Tok]:
        s = self.s
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
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif s.startswith("((", self.i):
                line = self.line
                text = self._balanced(self.i + 2, "(", ")", depth=2)
                self.toks.append(_Tok("arith", line, word=Word((Part("arith", text),), line)))
            elif c in _OPERATOR_CHARS:
                op = _OPERATOR.match(s, self.i).group()
                self.toks.append(_Tok("op", self.line, op=op))
                self.i += len(op)
                if op in ("<<", "<<-"):
                    self.want_delim = op == "<<-"
            else:
                self._word_or_array()
        return self.toks

    def _skip_heredocs(self) -> None:
        s = self.s
        for delim, strip in self.heredocs:
            while self.i < len(s):
                end = s.find("\n", self.i)
                end = len(s) if end < 0 else end
                body = s[self.i:end]
                self.i = min(end + 1, len(s))
                self.line += 1
                if (body.lstrip("\t") if strip else body).strip() == delim:
                    break
        self.heredocs = []

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
        parts = self._word_parts(stop=" \t\r\n;&|()<>")
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
            self.heredocs.append((delim, self.want_delim))
            self.want_delim = None
        if not parts:  # a stray character no rule consumes: skip it
            self.i += 1
            return
        self.toks.append(_Tok("word", line, word=word))

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
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
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
                part = self._dollar(quoted)
                if part is not None:
                    flush()
                    parts.append(part)
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
            text = self._balanced(i + 2, "(", ")")
            return Part("cmd", text, quoted)
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
            return Part("param", m.group(0), quoted, name=m.group(0))
        if i + 1 < len(s) and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
            self.i = i + 2
            return Part("param", s[i:i + 2], quoted, name=s[i + 1])
        return None

    def _braced(self, text: str, quoted: bool) -> Part:
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(?:\[([^\]]*)\])?", text)
        if not m or text.startswith(("#", "!")) and len(text) > 1:
            return Part("param", "${" + text + "}", quoted, name="", op="?")
        name, index = m.group(1), (m.group(2) or "").strip()
        rest = text[m.end():]
        op = ""
        arg: tuple[Part, ...] = ()
        if rest:
            om = re.match(r":?[-=+?]", rest)
            if om and om.group(0) not in ("?", ":?") and self.nesting < _MAX_NESTING:
                op = om.group(0)
                sub = _Lexer(rest[om.end():], self.nesting + 1)
                sub.line = self.line
                arg = tuple(sub._word_parts(stop="", quoted=quoted, end="\x00"))
            else:
                op = "?"
        return Part("param", "${" + text + "}", quoted, name=name, index=index, op=op, arg=arg)


# ---------------------------------------------------------------------------
# Shell subset: parser
# ---------------------------------------------------------------------------

# The syntax tree. A statement list is a tuple of these nodes.

@dataclass(frozen=True)
class _Simple:
    """A simple command: leading assignments and the command's words (redirections dropped)."""

    line: int
    assigns: tuple[tuple[str, bool, Word | None, tuple[Word, ...] | None], ...]  # name, append, scalar, array
    words: tuple[Word, ...]


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
        return tok is not None and tok.kind == "word" and tok.word.unquoted_literal in names

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
                if tok.kind == "word" and tok.word.unquoted_literal in stops:
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
            lit = tok.word.unquoted_literal
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
                name = name_tok.word.unquoted_literal if name_tok and name_tok.kind == "word" else None
                self.i += 1
                if self._op_at(0, "(") and self._op_at(1, ")"):
                    self.i += 2
                return self._funcdef(name or "")
            if lit == "[[":
                return self._double_bracket(tok)
            if lit is not None and _NAME.fullmatch(lit) and self._op_at(1, "(") and self._op_at(2, ")"):
                self.i += 3
                return self._funcdef(lit)
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
        lit = tok.word.unquoted_literal if tok is not None and tok.kind == "word" else None
        return bool(lit) and lit.isdigit() and self.i + 1 < len(self.t) \
            and self.t[self.i + 1].kind == "op" and self.t[self.i + 1].op in _REDIRECTS

    def _funcdef(self, name: str) -> _Func:
        self._skip_nl()
        body_node = self.command(_NONE, _NONE)
        body = (body_node,) if body_node is not None else ()
        return _Func(name, body)

    def _double_bracket(self, first: _Tok) -> _Node:
        words = [first.word]
        self.i += 1
        while self.i < len(self.t):
            tok = self.t[self.i]
            self.i += 1
            if tok.kind == "word":
                words.append(tok.word)
                if tok.word.unquoted_literal == "]]":
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
                if self._peek() is not None and self._peek().kind == "word":
                    self.i += 1
                continue
            if tok.kind != "word":
                break
            lit = tok.word.unquoted_literal
            if not words and not assigns and lit in stops:
                break
            if self._fd_before_redirect():
                self.i += 1
                continue
            first = tok.word.parts[0] if tok.word.parts else None
            m = _ASSIGN.match(first.text) if first is not None and first.kind == "lit" and not first.quoted else None
            if m and not words:
                assigns.append((m.group(1), bool(m.group(2)), _strip_prefix(tok.word, len(m.group(0))), None))
            else:
                words.append(tok.word)
            self.i += 1
        if not assigns and not words:
            return None
        return _Simple(line, tuple(assigns), tuple(words))


def _strip_prefix(word: Word, n: int) -> Word:
    first = word.parts[0]
    rest = first.text[n:]
    parts = ((replace(first, text=rest),) if rest else ()) + word.parts[1:]
    return Word(parts, word.line)


def parse_shell(text: str) -> tuple:
    """The statements of a shell script (a bash subset); never raises."""
    return _Parser(_Lexer(text).run()).statements()


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


_WRAPPERS = {"env", "nohup", "exec", "numactl", "timeout", "setsid", "stdbuf", "taskset", "time", "sudo",
             "command", "builtin", "unbuffer"}


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

    def __init__(self, known: Mapping[str, str]):
        self.known = dict(known)
        self.funcs: dict[str, tuple] = {}
        self.called: set[str] = set()
        self.stack: list[str] = []
        self.returned: list[list[_State]] = []  # per active function call: states at each `return`
        self.launches: list[Launch] = []
        self.steps = 0

    # --- expansion ---
    def lookup(self, state: _State, name: str) -> tuple:
        binding = state.vars.get(name)
        if binding is not None:
            return binding.alts
        if name in self.known:
            return (self.known[name],)
        return (None,)

    def param(self, state: _State, part: Part) -> tuple:
        """Candidates of one parameter expansion: str, None (unknown) or tuple[Token, ...] (array fields)."""
        if part.op == "?" or not _NAME.fullmatch(part.name):
            return (None,)
        out: list = []
        for alt in self.lookup(state, part.name):
            out.extend(self._apply_op(state, part, alt))
        return _dedupe(out)

    def _apply_op(self, state: _State, part: Part, alt) -> list:
        if isinstance(alt, tuple):  # an array
            if part.index in ("@", "*"):
                value = alt
            elif part.index.isdigit() or part.index == "":
                n = int(part.index or 0)
                value = alt[n].first if n < len(alt) else ""
            else:
                value = None
        elif alt is _UNSET:
            value = ""
        else:
            value = alt if part.index in ("", "0", "@", "*") else ""
        op = part.op
        if not op:
            return [value]
        if value is None:  # unknown: either it is set, or the operator's word applies
            if op in (":-", "-", ":=", "="):
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
        def value(m: re.Match) -> str:
            alts = self.lookup(state, m.group(1) or m.group(2) or m.group(3))
            if len(alts) == 1 and isinstance(alts[0], str) and re.fullmatch(r"\s*-?\d+\s*", alts[0]):
                return alts[0].strip()
            if len(alts) == 1 and alts[0] in ("", _UNSET):
                return "0"
            raise ValueError("unknown operand")

        try:
            return _eval_int(re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b", value, text))
        except (ValueError, SyntaxError, ZeroDivisionError, RecursionError, MemoryError):
            return None

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
            else:  # command substitution: never run
                per_part.append((("val", None, True),))
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
        if command in ("export", "declare", "typeset", "local", "readonly"):
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
            return _test(args, pattern=command == "[["), state
        if command in self.funcs and command not in self.stack:
            return None, self.call(command, state)
        found = _launch_at(values)
        if found is not None:
            self.launches.append(self._launch(node, state, fields, *found))
        return None, state

    def _launch(self, node: _Simple, state: _State, fields: list[Token], engine: str, start: int,
                after: int) -> Launch:
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
        return Launch(engine, tuple(fields[after:]), tuple(sorted(env.items())), fields[start].line)

    def declare(self, node: _Simple, state: _State, command: str) -> _State:
        """`export` / `declare` / `local` / `readonly`: assignments, and marks for export."""
        export = command == "export" or any(
            w.unquoted_literal and re.fullmatch(r"-[a-zA-Z]*x[a-zA-Z]*", w.unquoted_literal) for w in node.words[1:])
        for name, append, scalar, array in node.assigns:
            self.assign(state, name, append, scalar, array, node.line)
            if export:
                state.exported.add(name)
        for w in node.words[1:]:
            first = w.parts[0] if w.parts else None
            m = _ASSIGN.match(first.text) if first is not None and first.kind == "lit" and not first.quoted else None
            if m:
                self.assign(state, m.group(1), bool(m.group(2)), _strip_prefix(w, len(m.group(0))), None, w.line)
                name = m.group(1)
            else:
                name = w.unquoted_literal or ""
            if export and _NAME.fullmatch(name):
                state.exported.add(name)
        return state

    def call(self, name: str, state: _State) -> _State:
        if len(self.stack) >= 8:
            return state
        self.called.add(name)
        self.stack.append(name)
        self.returned.append([])
        try:
            out = self.run(self.funcs[name], state)
        finally:
            self.stack.pop()
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


def _decided(value: str | None) -> str | None:
    """A value a condition can use: None when any part of it is unknown."""
    return None if value is None or UNKNOWN in value else value


_INT_OPS = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge,
            "-lt": operator.lt, "-le": operator.le}
_BINARY = {"=", "==", "!=", "<", ">", "=~", *_INT_OPS}


def _test(args: list[Token], pattern: bool) -> bool | None:
    """`[ ... ]` / `[[ ... ]]` over candidate values: decided only when every candidate agrees."""
    combos: list[list[str | None]] = [[]]
    for t in args:
        combos = [c + [_decided(v)] for c in combos for v in t.values][:_MAX_ALTS * 4]
    results = {_Test(c, pattern).run() for c in combos}
    return results.pop() if len(results) == 1 else None


class _Test:
    """One `test` expression in three-valued logic (None: depends on something unknown)."""

    def __init__(self, args: list[str | None], pattern: bool):
        self.a = args
        self.pos = 0
        self.depth = 0
        self.pattern = pattern  # `[[ ]]`: the right side of = / != is a glob

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


def launches(script: str, env: Mapping[str, str] | None = None) -> tuple[Launch, ...]:
    """Every vLLM/SGLang server launch `script` reaches with `env` as the known variables.

    Functions the script defines but never calls are run last, so a launch
    wrapped in an uncalled helper is still found.
    """
    interp = _Interpreter(env or {})
    state = interp.run(parse_shell(script), _State({}, set()))
    for name in list(interp.funcs):
        if name not in interp.called:
            interp.call(name, state.copy() if state.alive else _State({}, set()))
    seen: list[Launch] = []
    for launch in interp.launches:
        if launch not in seen:
            seen.append(launch)
    return tuple(seen)


def shell_exports(script: str) -> tuple[tuple[str, Token], ...]:
    """`export NAME=value` lines of a snippet (a guide's env block), in order."""
    interp = _Interpreter({})
    state = interp.run(parse_shell(script), _State({}, set()))
    out = []
    for name in sorted(state.exported, key=lambda n: state.vars[n].line if n in state.vars else 0):
        binding = state.vars.get(name)
        if binding is not None:
            out.append((name, Token(tuple(a if isinstance(a, str) or a is None else "" for a in binding.alts),
                                    binding.line)))
    return tuple(out)
