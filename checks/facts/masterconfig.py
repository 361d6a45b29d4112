"""Master configs (`configs/*-master.yaml`): a top-level mapping of config key -> entry.

These files run to 12,000 lines; parsing all of them at base and head would
cost more than the whole verdict may. They are split textually into one block
per top-level key (a key starts at column 0), and only the blocks a check asks
for are parsed, with line numbers offset to the file. The file at head is split
only where it differs from base: elsewhere it has the same blocks. The block
split assumes what InferenceX's files are: a flat top-level mapping without
anchors shared across entries; a block that does not parse on its own is
reported with its line like any malformed YAML.

A key defined twice is read as the configs' consumer reads it (PyYAML: the
last definition wins), and an entry the PR changes whose key is defined more
than once is reported as malformed, with the line of every definition: a
reader that took the first (as this one once did) would judge an entry the
benchmark never runs.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from checks.snapshot import Snapshot

from .changelog import shared_ends
from .yamlload import LineDict, LineList, YamlProblem, load

# Linear on any line: a plain key runs to its first colon (blanks before it are stripped by the caller), a
# field's value to the end of its line (stripped too); no part gives back what it took.
_TOP_KEY = re.compile(r"""^(?:"([^"]+)"\s*+|'([^']+)'\s*+|([^\s#'"\-][^:#]*+)):(?:\s|$)""")
_FIELD = re.compile(r"""^  ([A-Za-z][\w.-]*+)\s*+:(.*)$""")
_COMMENT_START = re.compile(r"\s#")
# Lines that may hold a top-level key (the first, or one after a "\n"), and field lines (`_FIELD` after their
# "\n", the value not yet stripped of blanks: the caller strips it), found by one scan of the text when "\n" is
# its only line break; else every line is read, as `str.splitlines` cuts them.
_KEY_LINE = re.compile(r"\n[^ \t#\n\r-][^\n]*")
_FIRST_KEY_LINE = re.compile(r"[^ \t#\n\r-][^\n]*")
_FIELD_LINE = re.compile(r"\n  ([A-Za-z][\w.-]*)[^\S\n]*:[^\S\n]*([^\n]*)")
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _other_breaks(text: str) -> bool:
    """Whether `text` breaks lines otherwise than with "\n" (as `str.splitlines` sees it)."""
    return any(c in text for c in _OTHER_BREAKS)


def _scan(text: str, offset: int, counted: int, line: int, stop: int | None) -> list[tuple[int, int, str]]:
    """(offset of the line, its 0-based number, key) of the key lines of `text` from the line at `offset` (0, or
    just after a "\n") to the one at `stop`; `line` is the number of the line at offset `counted`."""
    starts: list[tuple[int, int, str]] = []
    for begin, candidate in _key_lines(text, offset):
        if stop is not None and begin >= stop:
            break
        m = _TOP_KEY.match(candidate)
        if m:
            line += text.count("\n", counted, begin)
            counted = begin
            starts.append((begin, line, m.group(m.lastindex or 0).strip()))  # the one alternative that matched
    return starts


def _key_lines(text: str, offset: int) -> Iterator[tuple[int, str]]:
    """(offset, text) of each line of `text` from the line at `offset` on that may hold a top-level key."""
    first = _FIRST_KEY_LINE.match(text) if offset == 0 else None
    if first is not None:
        yield 0, first.group()
    for found in _KEY_LINE.finditer(text, offset - 1 if offset else 0):
        yield found.start() + 1, found.group()[1:]


class Block(NamedTuple):  # a tuple: one is made per entry of a 12,000-line file, at base and at head
    key: str
    line: int  # 1-based line of the key
    text: str  # the key line through the line before the next key


def _without_comment(value: str) -> str:
    """`value` up to the blanks before its first " #" (a YAML comment), in one pass."""
    m = _COMMENT_START.search(value)
    return value if m is None else value[:m.start() + 1].rstrip()


def _last_wins(blocks: Iterable[Block]) -> dict[str, Block]:
    out: dict[str, Block] = {}
    for block in blocks:
        out[block.key] = block
    return out


def _repeated(keys: Iterable[tuple[str, int]]) -> dict[str, tuple[int, ...]]:
    lines: dict[str, list[int]] = {}
    for key, line in keys:
        lines.setdefault(key, []).append(line)
    return {key: tuple(found) for key, found in lines.items() if len(found) > 1}


class MasterConfig:  # cached_property here: a reading of what it was built from, which never changes
    """One master-config file at one commit; `twin`, the same file at the other commit, whose split this one
    takes where the two texts agree (a PR changes a few of its entries)."""

    def __init__(self, path: str, text: str, twin: MasterConfig | None = None):
        self.path = path
        self.text = text
        self._twin = twin
        self._parsed: dict[str, LineDict] = {}
        self._fields: dict[str, dict[str, str]] = {}

    @cached_property
    def blocks(self) -> dict[str, Block]:
        """Each key's block: its last definition, as YAML reads a key defined twice (`duplicates`)."""
        if self._other_breaks:
            return self._blocks_by_line()
        return _last_wins(Block(key, i + 1, text) for (_offset, i, key), text in zip(*self._split))

    @cached_property
    def duplicates(self) -> dict[str, tuple[int, ...]]:
        """Key -> the line of each of its definitions, for the keys defined more than once."""
        if self._other_breaks:
            starts, _lines = self._by_line()
            return _repeated((key, i + 1) for i, key in starts)
        return _repeated((key, i + 1) for _offset, i, key in self._split[0])

    @cached_property
    def _other_breaks(self) -> bool:
        """Whether the file breaks lines otherwise than with "\n" (then so may its blocks)."""
        return _other_breaks(self.text)

    @cached_property
    def _split(self) -> tuple[list[tuple[int, int, str]], list[str]]:
        """(offset of the line in the file, its 0-based number, key) of every top-level key line, and the text
        from each to the next, when "\n" is the only line break."""
        twin = self._twin
        if twin is not None and not twin._other_breaks:
            return self._shared_split(twin)
        starts = _scan(self.text, 0, 0, 0, None)
        return starts, self._texts(starts, 0, len(starts))

    def _texts(self, starts: list[tuple[int, int, str]], begin: int, end: int) -> list[str]:
        """The texts of the blocks `begin` to `end` of `starts` (each up to the next start)."""
        cuts = [offset for offset, _i, _key in starts[begin:end + 1]] + [len(self.text)] * (end + 1 > len(starts))
        return [self.text[cuts[n]:cuts[n + 1]] for n in range(end - begin)]

    def _shared_split(self, twin: MasterConfig) -> tuple[list[tuple[int, int, str]], list[str]]:
        """`twin`'s key lines and block texts where the texts agree, this text scanned only between. A key
        line is read from its newline to the next one, so a line that ends before the last newline of the
        shared start is the same in both, as is a line whose newline is in the shared end (shifted by what
        the middle adds); so is the text of a block between two such lines, or after the last."""
        a, b = twin.text, self.text
        prefix, suffix = shared_ends(a, b)
        cut = a.rfind("\n", 0, prefix) + 1  # the line after the last newline of the shared start
        theirs, their_texts = twin._split
        first = bisect.bisect_left(theirs, (cut,))
        last = bisect.bisect_left(theirs, (len(a) + 1 - suffix,))  # lines whose newline is in the shared end
        offset, line = theirs[first - 1][:2] if first else (0, 0)
        middle = _scan(b, cut, offset, line, len(b) + 1 - suffix)
        shift = len(b) - len(a)
        lines = b.count("\n", max(cut - 1, 0), len(b) - suffix) - a.count("\n", max(cut - 1, 0), len(a) - suffix)
        starts = theirs[:first] + middle + [(o + shift, i + lines, key) for o, i, key in theirs[last:]]
        kept = max(first - 1, 0)  # the last block of the shared start runs into the middle
        texts = their_texts[:kept] + self._texts(starts, kept, first + len(middle)) + their_texts[last:]
        return starts, texts

    def _by_line(self) -> tuple[list[tuple[int, str]], list[str]]:
        """(0-based line, key) of every key line, and the lines, of a file with other line breaks."""
        lines = self.text.splitlines(keepends=True)
        starts: list[tuple[int, str]] = []
        for i, line in enumerate(lines):
            if line[:1] in ("", " ", "\t", "#", "\n", "\r", "-"):
                continue
            m = _TOP_KEY.match(line)
            if m:
                starts.append((i, next(g for g in m.groups() if g is not None).strip()))
        return starts, lines

    def _blocks_by_line(self) -> dict[str, Block]:
        starts, lines = self._by_line()
        return _last_wins(Block(key, i + 1, "".join(lines[i:starts[n + 1][0] if n + 1 < len(starts) else None]))
                          for n, (i, key) in enumerate(starts))

    def keys(self) -> list[str]:
        return list(self.blocks)

    def lines(self, numbers: Iterable[int]) -> dict[int, str]:
        """Line -> text of the lines `numbers` (1-based) as `str.splitlines` cuts the file, those it has. Each is
        cut from the text between the key lines around it (their offsets and lines are known from the split),
        not from a split of the whole file."""
        if self._other_breaks:
            raw = self.text.splitlines()
            return {n: raw[n - 1] for n in numbers if 0 < n <= len(raw)}
        starts = self._split[0]
        bounds = [(0, 0)] * (not starts or starts[0][0] > 0) + [(offset, i) for offset, i, _key in starts]
        cuts = [i for _offset, i in bounds]  # the 0-based line each stretch of text starts on
        pieces: dict[int, list[str]] = {}
        out: dict[int, str] = {}
        for n in numbers:
            k = bisect.bisect_right(cuts, n - 1) - 1
            if n < 1 or k < 0:
                continue
            if k not in pieces:
                end = bounds[k + 1][0] if k + 1 < len(bounds) else len(self.text)
                pieces[k] = self.text[bounds[k][0]:end].splitlines()
            if n - 1 - cuts[k] < len(pieces[k]):
                out[n] = pieces[k][n - 1 - cuts[k]]
        return out

    def entry(self, key: str) -> LineDict | None:
        """The parsed entry of `key` (line numbers are the file's); raise YamlProblem if malformed."""
        if key in self._parsed:
            return self._parsed[key]
        block = self.blocks.get(key)
        if block is None:
            return None
        data = load(block.text, line_offset=block.line - 1)
        value = data.get(key) if isinstance(data, dict) else None
        if not isinstance(value, LineDict):  # (`load` builds every mapping as a LineDict)
            raise YamlProblem(block.line, f"config {key!r} is not a mapping")
        self._parsed[key] = value
        return value

    def fields(self, key: str) -> dict[str, str]:
        """Top-level scalar fields of an entry (image, runner, framework, model-prefix, ...), cheaply.

        Read from the block's 2-space-indented `field: value` lines without a full
        parse; used to scan every entry of a file (engine-first ordering), so read once per entry.
        """
        if key in self._fields:
            return self._fields[key]
        block = self.blocks.get(key)
        out: dict[str, str] = {}
        if block is None:
            return out
        text = block.text
        if self._other_breaks and _other_breaks(text):  # (a block of a file that has none has none)
            found = [m.groups() for m in map(_FIELD.match, text.splitlines()[1:]) if m]
        else:
            found = _FIELD_LINE.findall(text)
        for name, value in found:
            if name not in out:
                value = value.lstrip()
                out[name] = (_without_comment(value) if "#" in value else value).strip().strip("'\"")
        self._fields[key] = out
        return out


@dataclass(frozen=True)
class EntryChange:
    """A master-config entry the PR adds, changes or removes."""

    path: str
    key: str
    status: str  # added | modified | removed
    base: LineDict | None
    head: LineDict | None
    line: int  # line of the key at head (at base for removed entries)
    error: YamlProblem | None = None


def configs(snap: Snapshot, at: str, known: dict[str, MasterConfig] | None = None) -> dict[str, MasterConfig]:
    """Every master config at "base" or "head", by path; a file whose text is that of its config in `known` (the
    other side's, for a file the PR leaves alone) is that config, so it is split and read once, and a file that
    differs is split where it differs only."""
    source = snap.master_base if at == "base" else snap.master_head
    known = known or {}
    return {path: known[path] if path in known and known[path].text == text else
            MasterConfig(path, text, known.get(path)) for path, text in source.items()}


def changed_entries(base_cfgs: dict[str, MasterConfig], head_cfgs: dict[str, MasterConfig]) -> list[EntryChange]:
    """Entries that differ between the PR's base and head, in file and line order.

    An entry counts as changed when its parsed value differs (comments and
    blank lines do not count). A block that does not parse is returned with
    `error` set so the caller reports it on its line.
    """
    out: list[EntryChange] = []
    for path in sorted(set(base_cfgs) | set(head_cfgs)):
        base = base_cfgs.get(path)
        head = head_cfgs.get(path)
        if base is not None and head is not None and base.text == head.text:
            continue
        base_blocks = base.blocks if base else {}
        head_blocks = head.blocks if head else {}
        for key in _ordered_keys(base_blocks, head_blocks):
            b, h = base_blocks.get(key), head_blocks.get(key)
            if b is not None and h is not None and (b.text is h.text or b.text.rstrip() == h.text.rstrip()):
                continue  # (a head split where it differs from base has the base's texts elsewhere)
            line = h.line if h else b.line if b else 0  # (the key is in one of them)
            again = head.duplicates.get(key) if h and head else None
            if again:
                where = ", ".join(map(str, again))
                out.append(EntryChange(path, key, "modified" if b else "added", None, None, again[-1], YamlProblem(
                    again[-1], f"config {key!r} is defined {len(again)} times (lines {where}); YAML keeps the last, "
                               "a reader that takes the first sees another entry: keep one")))
                continue
            try:
                head_entry = head.entry(key) if h and head else None
            except YamlProblem as exc:
                out.append(EntryChange(path, key, "modified" if b else "added", None, None, line, exc))
                continue
            try:
                base_entry = base.entry(key) if b and base else None
            except YamlProblem:
                base_entry = None  # a malformed base is the base's problem, not this PR's
            if h is None:
                out.append(EntryChange(path, key, "removed", base_entry, None, line))
            elif b is None or base_entry is None:
                out.append(EntryChange(path, key, "added", None, head_entry, line))
            elif base_entry != head_entry:  # as plain dicts and lists: LineDict and LineList compare so
                out.append(EntryChange(path, key, "modified", base_entry, head_entry, line))
    return out


def find_entry(cfgs: dict[str, MasterConfig], key: str) -> tuple[str, LineDict] | None:
    """(path, entry) of config `key` in any of `cfgs`; None if absent or malformed."""
    for path, cfg in cfgs.items():
        if key in cfg.blocks:
            try:
                entry = cfg.entry(key)
            except YamlProblem:
                return None
            if entry is not None:
                return path, entry
    return None


def iter_fields(cfgs: dict[str, MasterConfig]) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(path, key, top-level scalar fields) of every entry of every master config in `cfgs`."""
    for path, cfg in cfgs.items():
        for key in cfg.keys():
            yield path, key, cfg.fields(key)


def iter_points(entry: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any], int]]:
    """(scenario, group, point mapping, line of the point) of every search-space point under `scenarios`."""
    scenarios = entry.get("scenarios")
    if not isinstance(scenarios, dict):
        return
    for scenario, groups in scenarios.items():
        for group in groups if isinstance(groups, list) else ():
            space = group.get("search-space") if isinstance(group, dict) else None
            for i, point in enumerate(space if isinstance(space, list) else ()):
                if isinstance(point, dict):
                    yield scenario, group, point, space.line_of(i) if isinstance(space, LineList) else 0


def search_points(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Flatten `scenarios` into one dict per search-space point, with its scenario and sequence lengths.

    Each point carries `scenario` (e.g. fixed-seq-len, agentic-coding), `isl`,
    `osl` (None for agentic) and `line` (the point's line), plus its own keys.
    """
    points: list[dict[str, Any]] = []
    for scenario, group, point, line in iter_points(entry):
        shared = {k: v for k, v in group.items() if k != "search-space"}
        points.append({**shared, **point, "scenario": scenario,
                       "isl": group.get("isl"), "osl": group.get("osl"), "line": line})
    return points


def _ordered_keys(base: Mapping[str, object], head: Mapping[str, object]) -> list[str]:
    keys = list(head)
    keys += [k for k in base if k not in head]
    return keys
