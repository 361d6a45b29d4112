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
`diff` aligns the entries of base and head by their text: entries the PR
adds (`ChangelogDiff.new`), entries it edits or deletes
(`ChangelogDiff.removed`), and whether every new entry sits after the last
historical one (`ChangelogDiff.misplaced`). The split needs what
InferenceX's file is, a block list at column 0; anything else at column 0
is reported as `Changelog.problem`, with its line.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

from .yamlload import LineDict, LineList, YamlProblem, load

# Matched in the text with a newline prepended, so that every line starts after "\n".
_ITEM = re.compile(r"\n-(?=[ \t\r\n]|\Z)")
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
            if not isinstance(item, dict):
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


class Changelog:
    """perf-changelog.yaml at one commit."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text

    @cached_property
    def _split(self) -> tuple[tuple[Entry, ...], YamlProblem | None]:
        text = "\n" + self.text  # every line, the first too, starts after a newline
        starts = [m.start() + 1 for m in _ITEM.finditer(text)]
        cut = starts[0] if starts else len(text)
        problem = None
        bad = _BAD_PREAMBLE.search(text[:cut - 1] if starts else text)
        if bad is not None:
            problem = YamlProblem(text.count("\n", 0, bad.start() + 1), "expected a list of `- ` entries at column 0")
        else:
            bad = _BAD_BETWEEN.search(text, cut - 1)
            if bad is not None:
                problem = YamlProblem(text.count("\n", 0, bad.start() + 1),
                                      "unexpected text at column 0 between changelog entries")
        entries = []
        line = text.count("\n", 0, cut)
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(text)
            body = text[start:end].rstrip()
            entries.append(Entry(n, line, line + body.count("\n"), body + "\n"))
            line += text.count("\n", start, end)
        return tuple(entries), problem

    @property
    def entries(self) -> tuple[Entry, ...]:
        return self._split[0]

    @property
    def problem(self) -> YamlProblem | None:
        """Why the text is not a plain block list of entries (first offending line), if it is not."""
        return self._split[1]


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
    b, h = base.entries, head.entries
    bk, hk = [e.key for e in b], [e.key for e in h]
    lo = 0  # the common head and tail are kept as they are; only the middle is aligned
    while lo < len(bk) and lo < len(hk) and bk[lo] == hk[lo]:
        lo += 1
    hi = 0
    while hi < len(bk) - lo and hi < len(hk) - lo and bk[-1 - hi] == hk[-1 - hi]:
        hi += 1
    matcher = difflib.SequenceMatcher(None, bk[lo:len(bk) - hi], hk[lo:len(hk) - hi], autojunk=False)
    new: list[Entry] = []
    removed: list[Entry] = []
    last_kept = len(h) - 1 if hi else lo - 1
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" and not hi:
            last_kept = lo + j2 - 1
        if tag in ("delete", "replace"):
            removed.extend(b[lo + i1:lo + i2])
        if tag in ("insert", "replace"):
            new.extend(h[lo + j1:lo + j2])
    misplaced = tuple(e for e in new if e.index < last_kept)
    return ChangelogDiff(base, head, tuple(new), tuple(removed), misplaced)


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
