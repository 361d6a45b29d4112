"""What bash computes without running anything: `printf`/`echo`/`dirname`/`basename` on known arguments,
`${NAME%pattern}` and its kin, `$((...))`, and `[ ... ]` / `[[ ... ]]` in three-valued logic."""

from __future__ import annotations

import ast
import fnmatch
import operator
import posixpath
import re
from functools import lru_cache
from typing import Callable

from .reading import statements
from .syntax import Simple
from .words import MAX_NESTING, Word

UNKNOWN = "\x00"  # marks the part of a value that the script does not determine
MAX_RESOLVED = 20_000  # characters a variable's value, or the expansions on one line, may come to

PURE = frozenset({"printf", "echo", "dirname", "basename"})
# Possessive: each part takes what it can and never gives it back (what it would give back no later part
# takes), so a long run of flags or digits costs its length, not its square.
_PRINTF_SPEC = re.compile(r"%([-+ #0]*+)(\d*+)(?:\.(\d++))?+([sdifgeExXqbc%])")
_ECHO_FLAGS = re.compile(r"-[neE]+")
_PRINTF_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "a": "\a"}
_FIRST_NAME = re.compile(r"[ \t\n]*([A-Za-z_][A-Za-z0-9_]*)")  # how a body's first word begins, when with a name
PATTERN_OPS = frozenset({"%", "%%", "#", "##", "/", "//"})
_MAX_PATTERN_VALUE = 2_000  # characters a value may have for `${NAME%pattern}` & co to be worked out


@lru_cache(maxsize=512)
def substitution_command(text: str) -> tuple[Word, ...] | None:
    """The words of a `$(...)` body that is one pure builtin (`printf`, `echo`, `dirname`, `basename`), so its
    output can be worked out from its arguments; None for any other body (it is never run)."""
    if len(text) > MAX_RESOLVED:
        return None
    first = _FIRST_NAME.match(text)
    if first is not None and not any(name.startswith(first.group(1)) for name in PURE) or _piped(text):
        return None  # (most bodies: the command's name begins with text no pure builtin's does, or its output
        # is piped, `echo "$X" | sed ...`: it is not parsed to learn that)
    nodes = statements(text)
    if len(nodes) != 1 or not isinstance(nodes[0], Simple) or nodes[0].assigns or not nodes[0].words:
        return None
    return nodes[0].words if nodes[0].words[0].unquoted_literal in PURE else None


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t./=:,+%@-")  # for `_piped`


def _piped(text: str) -> bool:
    """Whether `text` certainly pipes (or chains with `||`): a `|` outside quotes with a command after it, in
    text a scan this simple follows (and tree-sitter reads as bash does): outside quotes, only names, `$NAME`
    and plain punctuation (no comment, redirection, grouping, list, glob or control character); no expansion
    but `$NAME` in double quotes; a command named after every `|` (tree-sitter reads a stray one into the
    command)."""
    quote = ""
    piped = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\" and quote:
            i += 1  # the next character is taken as it is
        elif c == "$" and not _name_starts(text[i + 1:i + 2]) or c in "`\\":
            return False  # (of expansions only `$NAME`: no `$(`, `${`, `$'`, `$1`, ...)
        elif quote:
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c not in _PLAIN and c not in "$|":
            return False
        elif c == "|":
            i += 2 if text[i + 1:i + 2] in ("|", "&") else 1
            while i < n and text[i] in " \t":
                i += 1
            if not _name_starts(text[i:i + 1]):
                return False
            piped = True
            continue
        i += 1
    return piped


_COMMAND_NAME = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_.-]*)(?:[ \t]|$)")
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
                       "done", "function", "time", "coproc", "in"})


@lru_cache(maxsize=512)
def lone_command(text: str) -> str | None:
    """The name of the one simple command a `$(...)` body certainly is, with no `$(...)` in its words, in text
    a scan this simple follows (and tree-sitter reads as bash does): one line; a name first; then, outside
    quotes, only names, `$NAME`, plain punctuation and output redirections (`2>/dev/null`, `>>log`, `2>&1`); no
    expansion but `$NAME` in double quotes; no backslash or backquote. None for any other body."""
    first = _COMMAND_NAME.match(text)
    if (first is None or first.group(1) in _RESERVED or len(text) > MAX_RESOLVED or "`" in text or "\\" in text
            or not text.replace("\t", " ").isprintable()):
        return None
    quote = ""
    i, n = first.end(1), len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "$" and not _name_starts(text[i + 1:i + 2]):
            return None  # (of expansions only `$NAME`: no `$(`, `${`, `$'`, `$1`, ...)
        elif quote:
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == ">":
            i += 2 if text[i + 1:i + 2] == ">" else 1
            if text[i:i + 1] == "&":
                if not text[i + 1:i + 2].isdigit():
                    return None
                i += 2
                continue
            while i < n and text[i] in " \t":
                i += 1
            if i == n or text[i] not in _PLAIN or text[i] in " \t":
                return None  # (a redirection names its file)
            continue
        elif c not in _PLAIN and c != "$":
            return None
        i += 1
    return first.group(1) if not quote else None


def _name_starts(c: str) -> bool:
    return c.isascii() and (c.isalpha() or c == "_")


def pure_output(argv: list[str]) -> str | None:
    """What `printf` / `echo` / `dirname` / `basename` prints for `argv` (trailing newlines cut, as `$(...)`
    cuts them); None when an argument it computes with is not known."""
    command, args = argv[0], argv[1:]
    if command == "echo":
        while args and _ECHO_FLAGS.fullmatch(args[0]):
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
            if len(width) > 6 or len(prec or "") > 6 or int(width or 0) + int(prec or 0) > MAX_RESOLVED:
                return UNKNOWN  # wider than any value the checks resolve
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


def pattern_op(value: str, op: str, arg: str) -> str | None:
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


_ARITH_NAME = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b")
_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod}


def arithmetic(text: str, integer: Callable[[str], str | None]) -> str | None:
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


def decided(value: str | None) -> str | None:
    """A value a condition can use: None when any part of it is unknown."""
    return None if value is None or UNKNOWN in value else value


_INT_OPS = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge,
            "-lt": operator.lt, "-le": operator.le}
_BINARY = {"=", "==", "!=", "<", ">", "=~", *_INT_OPS}
_UNARY = re.compile(r"-[a-zA-Z]")


def test(args: list[tuple[str | None, ...]], pattern: bool, exists: Callable[[str], bool | None] | None = None,
         limit: int = 32) -> bool | None:
    """`[ ... ]` / `[[ ... ]]` over each argument's candidate values: decided only when every candidate
    agrees."""
    combos: list[list[str | None]] = [[]]
    for values in args:
        combos = [c + [decided(v)] for c in combos for v in values][:limit]
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
            if self.depth > MAX_NESTING:
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
        if first is not None and _UNARY.fullmatch(first) and self.pos + 1 < len(a):
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
