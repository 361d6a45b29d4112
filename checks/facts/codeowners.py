"""CODEOWNERS, parsed and matched the way GitHub documents it.

Syntax (https://docs.github.com/articles/about-code-owners):

- One rule per line: a path pattern, then owners separated by whitespace.
  Blank lines and lines starting with `#` are ignored; a `#` token after the
  pattern starts an inline comment. `\\#` escapes a pattern that begins with
  `#`, and `\\ ` escapes a space inside a pattern.
- Owners are `@user`, `@org/team` or an email address. Logins and team slugs
  are case-insensitive; paths are case-sensitive.
- A pattern with no owners makes the paths it matches un-owned.
- The LAST matching line wins; owners never accumulate across lines.

Patterns follow gitignore:

- A `/` at the start or in the middle anchors the pattern at the repository
  root; otherwise it matches at any depth (`*.js`, `apps/`).
- `*` matches within one path segment, `?` one character of a segment, `**`
  any number of segments (`**/logs`, `a/**/b`); a trailing `/**` matches
  everything inside a directory.
- A pattern that matches a directory owns everything beneath it; a trailing
  `/` restricts the pattern to directories.

Lines GitHub rejects (negation `!`, character ranges `[...]`, an owner that
is neither `@user`, `@org/team` nor an email, an oversized file) are skipped,
as GitHub skips them, and reported as `Problem`s with their line numbers.

Matching is segment by segment with no regular expressions: a segment glob is
its `*`-separated chunks placed leftmost-first, and `**` runs as a small NFA
over segments, so the work is polynomial in the pattern and path lengths and
catastrophic backtracking cannot happen, even for `*a*a*a*a*a*a*a*b`.
Polynomial is not small, though: 10,000 wildcard rules against the 3,000
paths of a large PR are 30 million pattern runs. A `Budget` counts the NFA
steps of one evaluation and raises `TooComplex` past `MAX_STEPS`, so the
caller fails closed within seconds instead of working for minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from checks import memo

MAX_BYTES = 3 * 1024 * 1024  # GitHub does not load a larger CODEOWNERS file

_USER = re.compile(r"@[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")
_TEAM = re.compile(r"@[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?/[A-Za-z0-9_][A-Za-z0-9._-]*")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

_ANY_CHAR = "\x00"  # a `?` inside a chunk; git paths never contain NUL
_GLOBSTAR = None  # `**`: zero or more whole segments
MAX_STEPS = 2_000_000  # NFA steps (rule runs and state updates) of one evaluation


class TooComplex(Exception):
    """Matching would take more than MAX_STEPS steps."""


class Budget:
    """The NFA steps left for one evaluation (every changed path against every rule it reaches)."""

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise TooComplex(f"matching it against the changed paths takes more than {MAX_STEPS:,} steps")


@dataclass(frozen=True)
class Problem:
    """A CODEOWNERS line GitHub would skip; `line` is 1-based."""

    line: int
    message: str


@dataclass(frozen=True)
class _Glob:
    """One segment pattern: literal chunks between `*`s (`?` as `_ANY_CHAR`)."""

    chunks: tuple[str, ...]

    @property
    def any_segment(self) -> bool:
        return all(c == "" for c in self.chunks) and len(self.chunks) > 1

    def matches(self, text: str) -> bool:
        chunks = self.chunks
        if len(chunks) == 1:
            return len(text) == len(chunks[0]) and _at(chunks[0], text, 0)
        first, last = chunks[0], chunks[-1]
        if len(first) + len(last) > len(text) or not _at(first, text, 0):
            return False
        end = len(text) - len(last)
        if not _at(last, text, end):
            return False
        pos = len(first)
        for chunk in chunks[1:-1]:
            found = _find(chunk, text, pos, end)
            if found < 0:
                return False
            pos = found + len(chunk)
        return True


_ANY = _Glob(("", ""))


def _at(chunk: str, text: str, pos: int) -> bool:
    if _ANY_CHAR not in chunk:
        return text.startswith(chunk, pos)
    return _chunk_re(chunk).match(text, pos) is not None


def _find(chunk: str, text: str, start: int, end: int) -> int:
    """Leftmost position >= start where `chunk` fits entirely before `end`; -1 if none."""
    if _ANY_CHAR not in chunk:
        return text.find(chunk, start, end)
    m = _chunk_re(chunk).search(text, start, end)
    return m.start() if m else -1


@memo.reading(maxsize=4096)
def _chunk_re(chunk: str) -> re.Pattern[str]:
    """A fixed-length chunk with `?` wildcards; no quantifiers, so the search is O(len(text) * len(chunk))."""
    return re.compile(".".join(re.escape(part) for part in chunk.split(_ANY_CHAR)), re.DOTALL)


@dataclass(frozen=True)
class Pattern:  # cached_property here: a reading of what it was built from, which never changes
    """A compiled path pattern: segment globs and `**` (None), implicit prefix and suffix included."""

    text: str
    elements: tuple[_Glob | None, ...]

    @property
    def catch_all(self) -> bool:
        """Whether the pattern matches every path (`*`, `**`, `/*`, `/**`, ...)."""
        anys = 0
        for e in self.elements:
            if e is _GLOBSTAR:
                continue
            if not e.any_segment:
                return False
            anys += 1
        return anys <= 1

    def matches(self, path: str, budget: Budget | None = None) -> bool:
        segments = _segments(path)
        return self._match(segments, "/".join(segments), budget)

    @cached_property
    def _start(self) -> set[int]:
        return self._closure({0})

    @cached_property
    def _literals(self) -> tuple[str, ...]:
        """Text every matching path contains: the glob chunks without `?`, longest first."""
        chunks = {c for e in self.elements if e is not _GLOBSTAR for c in e.chunks if c and _ANY_CHAR not in c}
        return tuple(sorted(chunks, key=len, reverse=True))

    def _match(self, segments: list[str], joined: str, budget: Budget | None) -> bool:
        for chunk in self._literals:  # a cheap no before the NFA
            if chunk not in joined:
                return False
        if not segments:
            return False
        elements = self.elements
        states = self._start
        for seg in segments:
            if budget is not None:
                budget.spend(len(states))
            nxt: set[int] = set()
            for i in states:
                if i == len(elements):
                    continue
                e = elements[i]
                if e is _GLOBSTAR:
                    nxt.add(i)
                elif e.matches(seg):
                    nxt.add(i + 1)
            if not nxt:
                return False
            states = self._closure(nxt)
        return len(elements) in states

    def _closure(self, states: set[int]) -> set[int]:
        out = set(states)
        for i in sorted(states):
            while i < len(self.elements) and self.elements[i] is _GLOBSTAR:
                i += 1
                out.add(i)
        return out


def _segments(path: str) -> list[str]:
    return [s for s in path.strip("/").split("/") if s]


def compile_pattern(text: str) -> Pattern:
    """Compile a gitignore-style pattern (escapes still in place); ValueError if GitHub rejects it."""
    if text.startswith("!"):
        raise ValueError("negation (!) is not supported in CODEOWNERS")
    chars = _unescape(text)
    if any(c in "[]" and not escaped for c, escaped in chars):
        raise ValueError("character ranges ([...]) are not supported in CODEOWNERS")
    if not chars:
        raise ValueError("empty pattern")
    dir_only = chars[-1] == ("/", False)
    if dir_only:
        chars.pop()
    anchored = ("/", False) in chars
    if chars and chars[0] == ("/", False):
        chars.pop(0)
    if not chars:
        raise ValueError("empty pattern")
    segments: list[list[tuple[str, bool]]] = [[]]
    for c, escaped in chars:
        if c == "/" and not escaped:
            segments.append([])
        else:
            segments[-1].append((c, escaped))
    elements: list[_Glob | None] = [] if anchored else [_GLOBSTAR]
    for seg in segments:
        if len(seg) >= 2 and all(part == ("*", False) for part in seg):
            elements.append(_GLOBSTAR)
        else:
            elements.append(_glob(seg))  # an empty segment (`a//b`) matches nothing, as in git
    if elements[-1] is _GLOBSTAR:  # trailing `/**`: everything inside, not the directory itself
        elements[-1:] = [_ANY, _GLOBSTAR]
    if dir_only:  # the match must be a directory: something lies beneath it
        elements.append(_ANY)
    elements.append(_GLOBSTAR)  # a matched directory owns everything beneath it
    collapsed: list[_Glob | None] = []
    for e in elements:
        if not (e is _GLOBSTAR and collapsed and collapsed[-1] is _GLOBSTAR):
            collapsed.append(e)
    return Pattern(text, tuple(collapsed))


def _unescape(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append((text[i + 1], True))
            i += 2
        else:
            out.append((text[i], False))
            i += 1
    return out


def _glob(seg: list[tuple[str, bool]]) -> _Glob:
    chunks = [""]
    for c, escaped in seg:
        if c == "*" and not escaped:
            if chunks[-1] != "" or len(chunks) == 1:
                chunks.append("")
            # consecutive stars are one star
        elif c == "?" and not escaped:
            chunks[-1] += _ANY_CHAR
        else:
            chunks[-1] += c
    return _Glob(tuple(chunks))


@dataclass(frozen=True)
class Rule:
    line: int
    pattern: Pattern
    owners: tuple[str, ...]  # as written: "@user", "@org/team", "name@example.com"

    @property
    def catch_all(self) -> bool:
        return self.pattern.catch_all

    @property
    def users(self) -> tuple[str, ...]:
        """Logins listed directly (without `@`)."""
        return tuple(o[1:] for o in self.owners if o.startswith("@") and "/" not in o)

    @property
    def teams(self) -> tuple[str, ...]:
        """Teams as "org/slug" (without `@`)."""
        return tuple(o[1:] for o in self.owners if o.startswith("@") and "/" in o)

    @property
    def emails(self) -> tuple[str, ...]:
        return tuple(o for o in self.owners if not o.startswith("@"))

    def names(self, login: str) -> bool:
        """Whether `login` is listed directly (case-insensitive)."""
        return login.lower() in {u.lower() for u in self.users}

    def __str__(self) -> str:
        return " ".join((self.pattern.text, *self.owners))


@dataclass(frozen=True)
class Codeowners:
    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...] = ()

    def owners_of(self, path: str, budget: Budget | None = None) -> Rule | None:
        """The last rule matching `path`, or None when no rule matches; TooComplex past the budget."""
        segments = _segments(path)
        joined = "/".join(segments)
        found = None
        tried = 0
        for rule in reversed(self.rules):
            tried += 1
            if rule.pattern._match(segments, joined, budget):
                found = rule
                break
        if budget is not None:
            budget.spend(tried)
        return found

    def names(self, login: str) -> tuple[Rule, ...]:
        """Every rule that lists `login` directly."""
        return tuple(r for r in self.rules if r.names(login))

    @property
    def teams(self) -> tuple[str, ...]:
        """Every team named anywhere, sorted case-insensitively, first spelling kept."""
        seen: dict[str, str] = {}
        for rule in self.rules:
            for team in rule.teams:
                seen.setdefault(team.lower(), team)
        return tuple(seen[k] for k in sorted(seen))


def parse(text: str) -> Codeowners:
    """Parse a CODEOWNERS file; never raises: rejected lines become `problems`."""
    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        return Codeowners((), (Problem(1, "CODEOWNERS is larger than 3 MB; GitHub does not load it"),))
    rules: list[Rule] = []
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern_text, tokens = _split(line)
        owners: list[str] = []
        bad: list[str] = []
        for token in tokens:
            if token.startswith("#"):
                break
            (owners if _valid_owner(token) else bad).append(token)
        if bad:
            problems.append(Problem(number, f"{bad[0]!r} is not a valid owner (@user, @org/team or email)"))
            continue
        try:
            pattern = compile_pattern(pattern_text)
        except ValueError as exc:
            problems.append(Problem(number, str(exc)))
            continue
        rules.append(Rule(number, pattern, tuple(owners)))
    return Codeowners(tuple(rules), tuple(problems))


def _split(line: str) -> tuple[str, list[str]]:
    """(pattern with escapes kept, owner tokens): the pattern ends at the first unescaped whitespace."""
    i = 0
    while i < len(line) and not line[i].isspace():
        i += 2 if line[i] == "\\" else 1
    return line[:i], line[i:].split()


def _valid_owner(token: str) -> bool:
    return bool(_USER.fullmatch(token) or _TEAM.fullmatch(token) or _EMAIL.fullmatch(token))
