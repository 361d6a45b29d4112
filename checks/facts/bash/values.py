"""The one evaluator of words: what `$NAME`, `${NAME:-word}`, `${NAME%pattern}`, `${#NAME}`, `$((...))` and
pure `$(...)` come to, and how an expanded word splits into fields.

`Evaluator` works a word out over the values a subclass looks variables up in: the interpreter's
state at one point of the program (`interpreter.Interpreter`), or the value every assignment of a
variable agrees on (`script.FixedValues`). A value is a tuple of candidates: a text, None (not
known), a tuple of Tokens (an array's fields) or UNSET. What a part that is not known becomes in the
word's text is the caller's `Hole`: the interpreter marks it UNKNOWN, the line readers keep it as
written (`$X`).
"""

from __future__ import annotations

import itertools
import re
from enum import Enum
from typing import Callable, Generic, Iterable, NamedTuple, Sequence, TypeVar, cast

from .record import record
from .builtins import PATTERN_OPS, UNKNOWN, arithmetic, pattern_op, pure_output, substitution_command
from .words import Part, Word, is_name

MAX_ALTS = 8  # candidates a value keeps


class _Unset(Enum):
    UNSET = "unset"


UNSET = _Unset.UNSET  # a variable that was `unset` (expands to "")
_INTEGER = re.compile(r"\s*-?\d+\s*")
_POSITIONAL = frozenset({"@", "*", "#"})
_KEY = re.compile(r"\"?\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9])\}\"?|\"?\$([A-Za-z_][A-Za-z0-9_]*|[0-9])\"?|([\w.+:/'\"-]+)")


@record
class Token(NamedTuple):
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


# What a part expands to: a text, None (unknown), or an array's fields; a variable's candidate may also be UNSET.
Value = str | None | tuple[Token, ...]
Alt = Value | _Unset
Piece = tuple[str, Value, bool, Part]  # (lit | val, value, quoted, the part): one candidate of one part
E = TypeVar("E")  # what an evaluator looks variables up in
T = TypeVar("T")

Hole = Callable[[Part], "str | None"]  # what a part whose value is not known stands for; None: the word is unknown


def mark(part: Part) -> str:
    return UNKNOWN


def written(part: Part) -> str | None:
    """A variable as written (`$X`); a command substitution or arithmetic leaves its word unknown."""
    return part.text if part.kind == "param" else None


def strict(part: Part) -> None:
    return None


def dedupe(items: Iterable[T]) -> tuple[T, ...]:
    if type(items) is tuple and len(items) <= 1:
        return items
    out: list[T] = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out[:MAX_ALTS])


class Evaluator(Generic[E]):
    """Expands words over variables a subclass looks up (`lookup(env, name)`: a tuple of candidates)."""

    defaults = False  # whether a variable nobody passes takes the default the script gives it (`${X:-d}`)
    whole_args = False  # whether a pure `$(...)` needs every argument wholly known (else unknown parts are marked)

    def lookup(self, env: E, name: str) -> tuple[Alt, ...]:
        raise NotImplementedError

    def passed(self, env: E, name: str) -> bool:
        """Whether a variable may come from outside the script (a runner's or a function's argument)."""
        return True

    def nested(self, env: E) -> E | None:
        """The env the arguments of a `$(...)` are worked out in; None when too deep."""
        return env

    def run_substitution(self, env: E, text: str) -> tuple[str | None, ...]:
        """Candidates of a `$(text)` that is not a pure builtin."""
        return (None,)

    def param(self, env: E, part: Part, hole: Hole) -> tuple[Value, ...]:
        """Candidates of one parameter expansion."""
        name = part.name
        if part.op == "?" or not (is_name(name) or name.isdigit() or name in _POSITIONAL):
            return (None,)
        if part.subscript and part.subscript not in ("@", "*") and not part.subscript.isdigit():
            key = self._key(env, part.subscript)
            element = self.lookup(env, f"{name}[{key}]") if key is not None else (None,)
            if element != (None,):  # an associative array's element (`${TABLE[$MODEL_PREFIX]}`)
                return dedupe(v for alt in element for v in self._apply_op(env, part._replace(subscript=""), alt, hole))
        alts = self.lookup(env, name)
        if not part.op and not part.subscript and len(alts) == 1 and (type(alts[0]) is str or alts[0] is None):
            return cast("tuple[Value, ...]", alts)  # `$NAME` of one text or unknown: itself (what `_apply_op` gives it)
        out: list[Value] = []
        for alt in alts:
            out.extend(self._apply_op(env, part, alt, hole))
        return dedupe(out)

    def _key(self, env: E, subscript: str) -> str | None:
        """The key an associative array's subscript names: literal text, or one variable of one known text."""
        m = _KEY.fullmatch(subscript)
        if m is None:
            return None
        if m.group(3) is not None:
            return m.group(3).strip("'\"")
        alts = self.lookup(env, m.group(1) or m.group(2))
        return alts[0] if len(alts) == 1 and type(alts[0]) is str and UNKNOWN not in alts[0] else None

    def _apply_op(self, env: E, part: Part, alt: Alt, hole: Hole) -> Sequence[Value]:
        if part.op == "#len":
            if isinstance(alt, tuple):
                return [str(len(alt)) if part.subscript else str(len(alt[0].first or "")) if alt else "0"]
            return ["0" if alt is UNSET else None if alt is None or UNKNOWN in alt else str(len(alt))]
        value: Value
        if isinstance(alt, tuple):  # an array
            if part.subscript in ("@", "*") or part.name in ("@", "*"):
                value = alt
            else:  # `${A[2]}`, `${A[$K]}`, `${A[K-1]}`: an index bash works out as arithmetic
                sub = part.subscript
                if sub == "" or (sub.isascii() and sub.isdigit()):
                    index = sub if len(sub) <= 18 else None  # (a longer number indexes no array a script holds)
                else:
                    index = self.arith(env, sub) if len(sub) <= 200 else None
                digits = index.lstrip("-") if index is not None else ""
                n = int(index or 0) if index is not None and digits.isascii() and (digits.isdigit() or not index) \
                    else None
                value = None if n is None or n < 0 else alt[n].first if n < len(alt) else ""
        elif alt is UNSET:
            value = ""
        else:
            value = alt if part.subscript in ("", "0", "@", "*") else ""
        op = part.op
        if not op:
            return [value]
        if op in PATTERN_OPS:
            if not isinstance(value, str):
                return [None]
            return [None if pattern is None else pattern_op(value, op, pattern)
                    for pattern in self.text(env, part.arg, hole)]
        if value is None:  # unknown: either it is set, or the operator's word applies
            if op in (":-", "-", ":=", "="):
                if self.defaults and alt is None and not self.passed(env, part.name):
                    return self.text(env, part.arg, hole)
                return [None, *self.text(env, part.arg, hole)]
            return [*self.text(env, part.arg, hole), ""]
        empty = value in ("", ())
        unset = alt is UNSET
        if op in (":-", ":="):
            return self.text(env, part.arg, hole) if empty else [value]
        if op in ("-", "="):
            return self.text(env, part.arg, hole) if unset else [value]
        if op == ":+":
            return [""] if empty else self.text(env, part.arg, hole)
        return [""] if unset else self.text(env, part.arg, hole)  # "+"

    def text(self, env: E, parts: tuple[Part, ...], hole: Hole) -> list[str | None]:
        """Candidates of a word read as one string (no field splitting)."""
        if len(parts) == 1 and parts[0].kind == "lit":  # literal text: what `expand` makes of it, as a string
            text = parts[0].text
            return [None if text and not text.strip(UNKNOWN) else text]
        if not parts:  # (`${X:-}`): no field, the empty string
            return [""]
        if len(parts) == 1 and parts[0].kind == "param" and hole is mark:  # `$X`, `${X:-d}`: as `expand` reads it
            values = self.param(env, parts[0], hole)
            if values and all(type(v) is str or v is None for v in values):
                texts = cast("tuple[str | None, ...]", values)  # (as just tested)
                found = [None if v is None or v and not v.strip(UNKNOWN) else v for v in texts]
                return found if len(found) == 1 else list(dedupe(found))
            tokens = self._expand_parts(env, Word(parts, 0), False, hole, values)
        else:
            tokens = self.expand(env, Word(parts, 0), split=False, hole=hole)
        if len(tokens) == 1:
            return list(tokens[0].values)
        if not tokens:
            return [""]
        return [" ".join(UNKNOWN if t.first is None else t.first for t in tokens)]

    def arith(self, env: E, text: str) -> str | None:
        """`$((...))` when every variable in it is a known integer; None otherwise."""
        def integer(name: str) -> str | None:
            alts = self.lookup(env, name)
            if len(alts) == 1 and isinstance(alts[0], str) and _INTEGER.fullmatch(alts[0]):
                return alts[0].strip()
            return "0" if len(alts) == 1 and (alts[0] is UNSET or alts[0] == "") else None

        return arithmetic(text, integer)

    def substitute(self, env: E, text: str) -> tuple[str | None, ...]:
        """Candidates of `$(text)`: the output of a pure builtin (`printf`, `echo`, `dirname`, `basename`), an
        unknown argument an unknown part of it (`%s` of it) or all of it; else `run_substitution`."""
        words = substitution_command(text)
        if words is None:
            return self.run_substitution(env, text)
        inner = self.nested(env)
        if inner is None:
            return (None,)
        args = [self.text(inner, w.parts, strict if self.whole_args else mark) for w in words]
        if self.whole_args and any(c is None or "$" in c for a in args for c in a):
            return (None,)  # (a value the line readers fix may hold an unknown variable as written: `$N`)
        candidates = [[UNKNOWN if c is None else c for c in a] for a in args]
        out = [pure_output(list(combo)) for combo in itertools.islice(itertools.product(*candidates), MAX_ALTS)]
        return dedupe(None if o is None or UNKNOWN in o and not o.strip(UNKNOWN) else o for o in out) or (None,)

    def expand(self, env: E, word: Word, split: bool = True, hole: Hole = mark) -> list[Token]:
        """The fields of `word`; when branches left candidates, one Token per field with every candidate.

        A literal word and a lone `"$X"` are expanded directly (as `_expand_parts` would): kept, with the
        shortcuts of `param` and `text`, because the engine goal needs them (see `syntax.Builder.statement`)."""
        parts = word.parts
        if len(parts) == 1 and parts[0].kind == "lit":  # most words: literal text, one field or none
            text, quoted = parts[0].text, parts[0].quoted
        elif len(parts) == 1 and parts[0].kind == "param" and hole is mark and (parts[0].quoted or not split):
            # `"$X"`, `"${X:-d}"`: each candidate text one field (unknown: None), as `_fields` makes it
            values = self.param(env, parts[0], hole)
            if values and all(type(v) is str or v is None for v in values):
                texts = cast("tuple[str | None, ...]", values)  # (as just tested)
                found = [None if v is None or v and not v.strip(UNKNOWN) else v for v in texts]
                return [Token(tuple(found) if len(found) == 1 else dedupe(found), word.line)]
            return self._expand_parts(env, word, split, hole, values)
        elif all(p.kind == "lit" for p in parts):
            text, quoted = "".join(p.text for p in parts), any(p.quoted for p in parts)
        else:
            text = None
        if text is not None:
            return [Token((None if text and not text.strip(UNKNOWN) else text,), word.line)] if text or quoted else []
        return self._expand_parts(env, word, split, hole)

    def _expand_parts(self, env: E, word: Word, split: bool, hole: Hole, first: tuple[Value, ...] | None = None
                      ) -> list[Token]:
        """`expand`, part by part (`first`: the candidates of the first part, when already worked out)."""
        per_part: list[tuple[Piece, ...]] = []
        single = True  # every part has one candidate: the word has one expansion
        lits: list[Part] = []  # literal parts not yet added: a run of them is one piece of text (`\"` is a part)
        for p in word.parts:
            kind = p.kind
            if kind == "lit":
                lits.append(p)
                continue
            if lits:
                per_part.append(_literal_run(lits))
                lits = []
            if first is not None:
                values, first = first, None
            elif kind == "param":
                values = self.param(env, p, hole)
            elif kind == "arith":
                per_part.append((("val", self.arith(env, p.text), True, p),))
                continue
            else:  # command substitution: its output when it is a pure builtin, else unknown
                values = self.substitute(env, p.text)
            if len(values) == 1:  # most parts
                per_part.append((("val", values[0], p.quoted, p),))
                continue
            per_part.append(tuple(("val", v, p.quoted, p) for v in values))
            single = False
        if lits:
            per_part.append(_literal_run(lits))
        if single:
            return _fields([c[0] for c in per_part], word.line, split, hole)
        # The first MAX_ALTS candidates in order, built once each: extending every partial candidate part by
        # part copied it per part, quadratic in a word of 100,000 escaped characters.
        combos = [list(c) for c in itertools.islice(itertools.product(*per_part), MAX_ALTS)]
        results = [_fields(combo, word.line, split, hole) for combo in combos]
        if len(results) == 1:
            return results[0]
        if all(len(r) == 1 for r in results):
            return [Token(dedupe(v for r in results for v in r[0].values), results[0][0].line)]
        merged: list[Token] = []
        for r in results:  # candidates of different shapes: every field of every candidate
            merged.extend(t for t in r if t not in merged)
        return merged


def _literal_run(lits: list[Part]) -> tuple[Piece, ...]:
    """The one candidate of consecutive literal parts, as `_fields` reads it: their text, quoted if any is."""
    if len(lits) == 1:
        return (("lit", lits[0].text, lits[0].quoted, lits[0]),)
    return (("lit", "".join(p.text for p in lits), any(p.quoted for p in lits), lits[0]),)


def _fields(combo: list[Piece], line: int, split: bool, hole: Hole) -> list[Token]:
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

    for kind, value, quoted, part in combo:
        if kind == "lit":
            cur.append(value)  # type: ignore[arg-type]  # a literal's value is its text (`_literal_run`)
            present = present or quoted
        elif value is None:
            stand_in = hole(part)
            if stand_in is None:
                return [Token((None,), line)]
            cur.append(stand_in)
            present = present or stand_in != UNKNOWN
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
