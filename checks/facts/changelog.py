"""perf-changelog.yaml: its entries at base and head, and which of them the PR adds.

The changelog is a YAML list of ~700 entries (~6,000 lines), one per
benchmark change:

    - config-keys:
        - dsv4-fp4-b200-dynamo-sglang-mtp
      description:
        - "Add a DeepSeek-V4-Pro FP4 Dynamo-SGLang MTP configuration ..."
      pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2554
      append-only: true          # optional

Parsing it whole costs more than a verdict may, so `Changelog` splits the
text into one block per top-level `- ` item (an item starts at column 0)
and parses an entry only when asked, with line numbers offset to the file.
`diff` aligns the entries of base and head by their text, cutting only those
between the start and end the two texts share (a PR touches a few of ~700
entries): entries the PR
adds (`ChangelogDiff.new`), entries it edits or deletes
(`ChangelogDiff.removed`), and whether every new entry sits after the last
historical one (`ChangelogDiff.misplaced`). The split needs what
InferenceX's file is, a block list at column 0; anything else at column 0
is reported as `Changelog.problem`, with its line.
"""

from __future__ import annotations

import bisect
import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable

from .yamlload import LineDict, LineList, YamlProblem, load

# An item's `-`, at the start of the text or after a "\n" (its "\n" matched).
_FIRST_ITEM = re.compile(r"-(?=[ \t\r\n]|\Z)")
_ITEM = re.compile(r"\n-(?=[ \t\r\n]|\Z)")
# Matched in the text with a newline prepended, so that every line starts after "\n".
# Before the first entry: only comments, blank lines and document markers.
_BAD_PREAMBLE = re.compile(r"\n(?![#\s]|\Z|---[ \t\r]*(?:\n|\Z)|\.\.\.[ \t\r]*(?:\n|\Z))|\n[ \t]+[^\s#]")
# Between entries: at column 0 only another entry or a comment.
_BAD_BETWEEN = re.compile(r"\n(?![-#\s]|\Z)|\n-(?![ \t\r\n]|\Z)")


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    """One top-level item of the changelog, as text; parsed on first use of `data`.

    Not frozen only so that the parse can be cached (and entries built
    cheaply): treat it as read-only; equality and hash ignore the cache.
    """

    index: int  # position among the file's entries, 0-based
    line: int  # 1-based line of its `- `
    end_line: int  # its last non-blank line
    text: str  # its lines, trailing blank lines dropped
    _data: LineDict | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def data(self) -> LineDict:
        """The entry as a mapping, line numbers the file's; raises YamlProblem if malformed."""
        if self._data is None:
            value = load(self.text, line_offset=self.line - 1)
            item = value[0] if isinstance(value, list) and len(value) == 1 else None
            if not isinstance(item, LineDict):  # (`load` builds every mapping as a LineDict)
                raise YamlProblem(self.line, "changelog entry is not a mapping")
            self._data = item
        return self._data

    def config_keys(self) -> list[tuple[str, int]]:
        """(config key or glob, line) of each `config-keys` item; raises YamlProblem if malformed."""
        keys = self.data.get("config-keys")
        if isinstance(keys, str):
            return [(keys, self.data.line_of("config-keys"))]
        if not isinstance(keys, list):
            return []
        lines = keys if isinstance(keys, LineList) else None
        return [(str(k), lines.line_of(i) if lines is not None else self.line) for i, k in enumerate(keys)
                if isinstance(k, (str, int, float))]

    @property
    def append_only(self) -> bool:
        """Whether the entry sets `append-only: true` (the YAML boolean, or the string "true")."""
        value = self.data.get("append-only")
        return value is True or (isinstance(value, str) and value.strip().lower() == "true")

    @property
    def key(self) -> str:
        """The text the entries of base and head are aligned by (trailing spaces ignored)."""
        text = self.text
        if " \n" in text or "\t\n" in text or "\r" in text:
            text = "\n".join(line.rstrip() for line in text.split("\n"))
        return text


class Changelog:  # cached_property here: a reading of what it was built from, which never changes
    """perf-changelog.yaml at one commit. Its entries are cut from the text when asked for (`entry`), so a
    diff reads only those around what the PR changed."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self._built: dict[int, Entry] = {}
        self._mark = (0, 1)  # (offset, the 1-based line there): lines are counted from there
        self._twin: tuple[Changelog, int] | None = None  # another text, and how many first characters it shares

    @cached_property
    def starts(self) -> list[int]:
        """Where each entry's `- ` is in the text (an item starts at column 0)."""
        text = self.text
        return [0] * bool(_FIRST_ITEM.match(text)) + [m.start() + 1 for m in _ITEM.finditer(text)]

    def __len__(self) -> int:
        return len(self.starts)

    def entry(self, n: int, line: int | None = None) -> Entry:
        """The `n`th entry (0-based); `line`, when the caller knows it, is the line of its `- `."""
        if n not in self._built:
            text, starts = self.text, self.starts
            start = starts[n]
            end = starts[n + 1] if n + 1 < len(starts) else len(text)
            body = text[start:end].rstrip()
            line = self._line_at(start) if line is None else line
            self._built[n] = Entry(n, line, line + body.count("\n"), body + "\n")
        return self._built[n]

    def _line_at(self, offset: int) -> int:
        """The 1-based line at `offset`, counted from the offset last asked about (a diff asks about a few
        entries side by side, ~6,000 lines into the file)."""
        text, (at, line) = self.text, self._mark
        if self._twin is not None and self._twin[0]._mark[0] <= self._twin[1]:
            there, its = self._twin[0]._mark  # in the shared start, a line is the same in both texts
            if abs(offset - there) < abs(offset - at):
                at, line = there, its
        line = line + text.count("\n", at, offset) if offset >= at else line - text.count("\n", offset, at)
        self._mark = (offset, line)
        return line

    def share(self, other: "Changelog", prefix: int, suffix: int) -> None:
        """Take what `other` knows where the two texts agree: their first `prefix` and last `suffix` characters
        (not overlapping). Where an item starts is decided by the newline before its `-` (or the start of the
        text) and the character after it, so the starts of `other` whose characters are all in the shared
        start or end are this text's too (shifted at the end), and only the middle is scanned; the line of
        an offset in the shared start is the same in both."""
        if "starts" not in self.__dict__:
            b, theirs = self.text, other.starts
            shift, tail = len(b) - len(other.text), len(b) - suffix
            ours = theirs[:bisect.bisect_left(theirs, prefix - 1)]
            if prefix <= 1 and _FIRST_ITEM.match(b):
                ours.append(0)
            for m in _ITEM.finditer(b, max(0, prefix - 2)):
                if m.start() >= tail:
                    break
                ours.append(m.start() + 1)
            ours += [p + shift for p in theirs[bisect.bisect_left(theirs, len(other.text) - suffix + 1):]]
            self.__dict__["starts"] = ours
        self._twin = (other, prefix)

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        text, starts, out = self.text, self.starts, []
        line = 1 + text.count("\n", 0, starts[0]) if starts else 0
        for n, start in enumerate(starts):
            out.append(self.entry(n, line))
            line += text.count("\n", start, starts[n + 1] if n + 1 < len(starts) else len(text))
        return tuple(out)

    @cached_property
    def problem(self) -> YamlProblem | None:
        """Why the text is not a plain block list of entries (first offending line), if it is not."""
        text, starts = "\n" + self.text, self.starts  # every line, the first too, starts after a newline
        cut = starts[0] + 1 if starts else len(text)
        bad = _BAD_PREAMBLE.search(text[:cut - 1] if starts else text)
        if bad is not None:
            return YamlProblem(text.count("\n", 0, bad.start() + 1), "expected a list of `- ` entries at column 0")
        bad = _BAD_BETWEEN.search(text, cut - 1)
        if bad is not None:
            return YamlProblem(text.count("\n", 0, bad.start() + 1),
                               "unexpected text at column 0 between changelog entries")
        return None


@dataclass(frozen=True)
class ChangelogDiff:
    """How the PR changes the changelog. Entries match when their text is equal."""

    base: Changelog
    head: Changelog
    new: tuple[Entry, ...]  # head entries not at base (added, or edited versions of base entries), head order
    removed: tuple[Entry, ...]  # base entries not at head (deleted, or edited), base order
    misplaced: tuple[Entry, ...]  # new entries placed before a historical entry instead of after the last one

    @property
    def append_only_file(self) -> bool:
        """The file only grew at its end: history unchanged and in order, new entries appended."""
        return not self.removed and not self.misplaced


def diff(base: Changelog, head: Changelog) -> ChangelogDiff:
    """Align the entries of `base` and `head` by text (a diff over entries, not lines)."""
    same_first, same_last = _same_ends(base, head)
    nb, nh = len(base), len(head)
    lo = min(same_first, nb, nh)  # the common head and tail are kept as they are; only the middle is aligned
    while lo < nb and lo < nh and base.entry(lo).key == head.entry(lo).key:
        lo += 1
    hi = min(same_last, nb - lo, nh - lo)
    while hi < nb - lo and hi < nh - lo and base.entry(nb - 1 - hi).key == head.entry(nh - 1 - hi).key:
        hi += 1
    b = base.entries[lo:nb - hi] if nb - hi - lo > _FEW else [base.entry(i) for i in range(lo, nb - hi)]
    h = head.entries[lo:nh - hi] if nh - hi - lo > _FEW else [head.entry(i) for i in range(lo, nh - hi)]
    matcher = difflib.SequenceMatcher(None, [e.key for e in b], [e.key for e in h], autojunk=False)
    new: list[Entry] = []
    removed: list[Entry] = []
    last_kept = nh - 1 if hi else lo - 1
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" and not hi:
            last_kept = lo + j2 - 1
        if tag in ("delete", "replace"):
            removed.extend(b[i1:i2])
        if tag in ("insert", "replace"):
            new.extend(h[j1:j2])
    misplaced = tuple(e for e in new if e.index < last_kept)
    return ChangelogDiff(base, head, tuple(new), tuple(removed), misplaced)


_FEW = 64  # entries cut one by one; more are cut in one pass over the file


def _same_ends(base: Changelog, head: Changelog) -> tuple[int, int]:
    """How many entries at the start and at the end of the two files are the same text, found from the
    longest common prefix and suffix of the texts (an entry starts where a line starts with `- `, which the
    line and the two characters after its newline decide)."""
    a, b = base.text, head.text
    la = len(a)
    prefix, suffix = shared_ends(a, b)
    head.share(base, prefix, suffix)
    starts = base.starts
    first = max(0, bisect.bisect_left(starts, prefix - 1) - 1)  # entries followed by a start both files have
    last = len(starts) - bisect.bisect_left(starts, la - suffix + 1)  # entries whose newline is shared
    return first, last


def shared_ends(a: str, b: str) -> tuple[int, int]:
    """How many first and how many last characters `a` and `b` share, the two not overlapping in either."""
    n = min(len(a), len(b))
    prefix = _common(n, lambda k, m: a[k:m] == b[k:m])
    suffix = _common(n - prefix, lambda k, m: a[len(a) - m:len(a) - k] == b[len(b) - m:len(b) - k])
    return prefix, suffix


_CHUNK = 4096  # characters compared at a time: a slice of a long non-ASCII text costs as much as the text


def _common(n: int, same: Callable[[int, int], bool]) -> int:
    """The largest m <= n whose first m characters agree, for a `same(k, m)` that compares characters k to m
    (k already known to agree): chunk by chunk, then halving the chunk that differs."""
    k = m = 0
    while k < n:
        m = min(k + _CHUNK, n)
        if not same(k, m):
            break
        k = m
    else:
        return n
    lo, hi = k, m - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(k, mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def diff_texts(path: str, base_text: str | None, head_text: str | None) -> ChangelogDiff:
    """`diff` of two texts of the changelog (None: the file is absent on that side)."""
    return diff(Changelog(path, base_text or ""), Changelog(path, head_text or ""))


def expand_keys(patterns: Iterable[str], keys: Iterable[str]) -> list[str]:
    """Config keys matched by changelog `config-keys` items (exact names or shell globs), sorted."""
    known = sorted(set(keys))
    out: set[str] = set()
    for pattern in patterns:
        out.update(k for k in known if fnmatch.fnmatchcase(k, pattern))
    return sorted(out)
