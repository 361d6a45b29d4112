"""MODELS.md: which models, scenarios and recipe variants are deprecated, and from which day.

MODELS.md is prose for people; this parser reads the parts that state
deprecations, each as a `Deprecation` with the line that states it. It reads
the Markdown as the one reader does (`checks.facts.markdown`): headings, tables and
the lines of text; what is in a code block is not stated.

- The Scenarios table (`| Scenario | ISL/OSL | Status |`): a status that
  says "Deprecated" deprecates the scenario for every model (or for the
  models it names as (`prefix`)), from the first ISO date in it ("since
  2026-07-17"). The ISL/OSL column ("8192 / 1024") names fixed-length
  scenarios.
- The model support matrix (header with `Prefix`): every item of the
  "Deprecated scenarios" cell (comma-separated, parentheses kept together)
  deprecates a scenario, a precision ("all bf16 recipes") or a
  non-spec-decode arm ("Agentic coding non-DSpark arm") for the row's
  prefixes, from the ISO date in the item ("removed 2026-08-04"), else
  already. An "Active scenarios" cell that starts with "None" or a dash
  retires the model (every scenario) from its date ("retired 2026-07-18").
  Qualifiers such as "(GLM-5 only)" are not interpreted: the item applies to
  every prefix of the row.
- Dated notices (a `###` heading that is a date, e.g. "### Monday, August
  3, 2026"): the section's last day is the date of its "is the last day"
  sentence, else of the heading. Tables with a `Deprecated...` column
  deprecate, per (`prefix`) row, what that cell names, from the day after
  the last day. A "Status: not yet enacted" paragraph after such a table
  makes that table's rows pending (not in force), except rows deprecated
  "from day 0". A "last day" sentence that names a scenario and a
  (`prefix`) deprecates it; "fully retired after <date>" retires the
  section's (`prefix`) models from the day after.

A deprecation row the parser cannot interpret is kept as `Unreadable`, so a
check can fail closed for the models it concerns rather than miss it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from itertools import islice

from . import markdown

AGENTIC = "Agentic coding"

_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"), 1)}
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_LONG = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2}),?\s+(\d{4})\b", re.IGNORECASE)
_SCENARIO = re.compile(r"\bsingle[- ]turn\s+(\d+k\d+k)\b|\bagentic[- ]coding\b", re.IGNORECASE)
_PRECISION = re.compile(r"\ball\s+([a-z0-9]+)\s+recipes\b", re.IGNORECASE)
_ARM = re.compile(r"\bnon-[a-z0-9][\w.-]*", re.IGNORECASE)
_PAREN_PREFIX = re.compile(r"\(`([^`]+)`\)")
_TICKED = re.compile(r"`([^`]+)`")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z*`(])")
_NOT_ENACTED = re.compile(r"^status:\s*not yet enacted", re.IGNORECASE)
_ISL_OSL = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_RETIRED = re.compile(r"^(?:none\b|[-—–]+(?:\s|$))", re.IGNORECASE)  # an "Active scenarios" cell of a retired model


@dataclass(frozen=True)
class Deprecation:
    """One deprecation MODELS.md states."""

    line: int  # 1-based line of MODELS.md that states it
    text: str  # that row or sentence, markdown removed
    prefixes: tuple[str, ...] = ()  # model prefixes it concerns; () = every model
    scenario: str | None = None  # e.g. "Single-turn 8k1k", "Agentic coding"; None = every scenario
    precision: str | None = None  # only recipes of this precision (e.g. "bf16")
    non_spec_arm: bool = False  # only the arm without speculative decoding
    since: date | None = None  # first day it applies; None = already
    pending: bool = False  # announced but "not yet enacted": not in force

    def applies(self, prefix: str, scenario: str | None, precision: str, spec_decoding: bool, on: date) -> bool:
        """Whether a recipe (model prefix, scenario, precision, spec decoding on?) is deprecated on `on`."""
        if self.pending or (self.since is not None and on < self.since):
            return False
        if self.prefixes and prefix.lower() not in self.prefixes:
            return False
        if self.scenario is not None and (scenario is None or _norm(scenario) != _norm(self.scenario)):
            return False
        if self.precision is not None and precision.lower() != self.precision:
            return False
        return not (self.non_spec_arm and spec_decoding)


@dataclass(frozen=True)
class Unreadable:
    """A deprecation statement the parser could not interpret."""

    line: int
    text: str
    prefixes: tuple[str, ...] = ()  # () = it may concern any model


@dataclass(frozen=True)
class ModelsMd:
    deprecations: tuple[Deprecation, ...]
    unreadable: tuple[Unreadable, ...]
    prefixes: frozenset[str]  # every model prefix MODELS.md names (support matrix, notices)
    seq_scenarios: dict[tuple[int, int], str] = field(default_factory=dict)  # (isl, osl) -> scenario name

    def scenario_name(self, scenario: str, isl: object, osl: object) -> str:
        """The MODELS.md name of a master-config scenario (`fixed-seq-len` 8192/1024 -> "Single-turn 8k1k")."""
        if scenario == "agentic-coding":
            return AGENTIC
        if scenario == "fixed-seq-len" and isinstance(isl, int) and isinstance(osl, int):
            if (isl, osl) in self.seq_scenarios:
                return self.seq_scenarios[(isl, osl)]
            if isl % 1024 == 0 and osl % 1024 == 0:
                return f"Single-turn {isl // 1024}k{osl // 1024}k"
            return f"Single-turn {isl}/{osl}"
        return scenario


def parse(text: str) -> ModelsMd:
    """Read the deprecations of a MODELS.md text; never raises."""
    return _Parser(text).run()


class _Parser:
    def __init__(self, text: str):
        self.doc = markdown.read(text)
        self.out: list[Deprecation] = []
        self.unreadable: list[Unreadable] = []
        self.prefixes: set[str] = set()
        self.seq: dict[tuple[int, int], str] = {}
        self.last_day: date | None = None  # of the current dated notice section
        self.section_prefixes: list[str] = []
        self.retire_after: list[tuple[int, str, date]] = []
        self.last_table: list[int] = []  # indices into self.out of the last notice table's rows

    def run(self) -> ModelsMd:
        blocks = self.doc.blocks
        for n, block in enumerate(blocks):
            if block.kind == "heading":
                self._close_section()
                self._open_section(block.level, block.text, n + 1)
            elif block.kind == "table":
                self._table(block.rows)
            elif block.kind in ("paragraph", "html"):
                for line, text in enumerate(self.doc.source(block), block.line):
                    self._prose(line - 1, text)
        self._close_section()
        named = self.prefixes.union(*(d.prefixes for d in self.out), *(u.prefixes for u in self.unreadable))
        return ModelsMd(tuple(self.out), tuple(self.unreadable), frozenset(named), dict(self.seq))

    # --- sections -----------------------------------------------------------

    def _open_section(self, level: int, title: str, after: int) -> None:
        self.last_day = None
        self.section_prefixes = []
        self.retire_after = []
        self.last_table = []
        if level >= 3:
            day = _date_in(title)
            if day is not None and _LONG.search(title):
                self.last_day = day
                # The "is the last day" sentence, if any, refines it.
                for line in self._section_lines(after):
                    clean = _clean(line)
                    if "last day" in clean.lower() and _date_in(clean):
                        self.last_day = _date_in(clean)
                        break

    def _section_lines(self, after: int) -> Iterator[str]:
        """The lines of text (tables too) of the blocks from `after` up to the next heading."""
        for block in islice(self.doc.blocks, after, None):
            if block.kind == "heading":
                return
            if block.kind not in ("fence", "code"):
                yield from self.doc.source(block)

    def _close_section(self) -> None:
        prefixes = tuple(dict.fromkeys(self.section_prefixes))
        for line, text, day in self.retire_after:
            if prefixes:
                self.out.append(Deprecation(line, text, prefixes, since=day + timedelta(days=1)))
            else:
                self.unreadable.append(Unreadable(line, text))
        self.retire_after = []

    def _prose(self, i: int, line: str) -> None:
        if self.last_day is None and not self.last_table:
            return  # outside a dated notice, with no notice table to mark pending: nothing to read
        marked = " ".join(_ticks(line).split())  # backticks kept: they mark prefixes
        if not marked:
            return
        if _NOT_ENACTED.match(marked.replace("`", "")):
            for n in self.last_table:
                self.out[n] = replace(self.out[n], pending=True)
            self.last_table = []
            return
        if self.last_day is None:
            return
        for sentence in _SENTENCE.split(marked):
            named = [p.lower() for p in _PAREN_PREFIX.findall(sentence)]
            text = _clean(sentence)
            low = text.lower()
            if "last day" in low:
                self.section_prefixes += named
                for scenario in _scenarios(text) if named else ():
                    self.out.append(Deprecation(i + 1, text, tuple(named), scenario,
                                                since=self.last_day + timedelta(days=1)))
            if "fully retired after" in low:
                day = _date_in(text[low.index("fully retired after"):])
                if day is not None:
                    self.retire_after.append((i + 1, text, day))

    # --- tables -------------------------------------------------------------

    def _table(self, rows: tuple[tuple[int, tuple[str, ...]], ...]) -> None:
        header = [c.lower() for c in rows[0][1]]
        body = rows[1:]
        col = {name: k for k, name in enumerate(header)}
        if "scenario" in col and "status" in col:
            self._scenarios_table(body, col)
        elif "prefix" in col:
            self._matrix(body, col)
        elif "model" in col and any(h.startswith("deprecated") for h in header):
            self._notice_table(body, col["model"], next(k for k, h in enumerate(header) if h.startswith("deprecated")))

    def _scenarios_table(self, body: tuple[tuple[int, tuple[str, ...]], ...], col: dict[str, int]) -> None:
        for line, cells in body:
            name = _clean(_at(cells, col["scenario"]))
            if "isl/osl" in col:
                m = _ISL_OSL.match(_clean(_at(cells, col["isl/osl"])))
                if m:
                    self.seq[(int(m.group(1)), int(m.group(2)))] = name
            status_raw = _at(cells, col["status"])
            status = _clean(status_raw)
            if "deprecated" not in status.lower():
                continue
            scenarios = _scenarios(name)
            prefixes = tuple(p.lower() for p in _PAREN_PREFIX.findall(_ticks(status_raw)))
            if not scenarios:
                self.unreadable.append(Unreadable(line, f"{name}: {status}", prefixes))
                continue
            iso = _ISO.search(status)
            since = _iso(iso) if iso else None
            self.out.append(Deprecation(line, f"{name}: {status}", prefixes, scenarios[0], since=since))

    def _matrix(self, body: tuple[tuple[int, tuple[str, ...]], ...], col: dict[str, int]) -> None:
        active_col = next((k for name, k in col.items() if name.startswith("active")), None)
        deprecated_col = next((k for name, k in col.items() if name.startswith("deprecated")), None)
        for line, cells in body:
            prefixes = tuple(p.lower() for p in _TICKED.findall(_at(cells, col["prefix"])))
            if not prefixes:
                continue
            self.prefixes.update(prefixes)
            if active_col is not None:
                active = _clean(_at(cells, active_col))
                if _RETIRED.match(active):
                    iso = _ISO.search(active)
                    self.out.append(Deprecation(line, f"{', '.join(prefixes)}: active scenarios: {active}",
                                                prefixes, since=_iso(iso) if iso else None))
            if deprecated_col is None:
                continue
            for item in _items(_clean(_at(cells, deprecated_col))):
                iso = _ISO.search(item)
                dep = _interpret(item, line, f"{', '.join(prefixes)}: deprecated {item}", prefixes,
                                 _iso(iso) if iso else None)
                if dep is None:
                    self.unreadable.append(Unreadable(line, f"{', '.join(prefixes)}: deprecated {item}", prefixes))
                    continue
                self.out.append(dep)

    def _notice_table(self, body: tuple[tuple[int, tuple[str, ...]], ...], model_col: int,
                      deprecated_col: int) -> None:
        self.last_table = []
        for line, cells in body:
            model_raw = _at(cells, model_col)
            prefixes = tuple(p.lower() for p in _PAREN_PREFIX.findall(_ticks(model_raw)))
            deprecated = _clean(_at(cells, deprecated_col))
            text = f"{_clean(model_raw)}: deprecated {deprecated}"
            if not prefixes:
                self.unreadable.append(Unreadable(line, text))
                continue
            self.section_prefixes += prefixes
            day0 = "day 0" in deprecated.lower()
            since = None if day0 or self.last_day is None else self.last_day + timedelta(days=1)
            dep = _interpret(deprecated, line, text, prefixes, since)
            if dep is None:
                self.unreadable.append(Unreadable(line, text, prefixes))
                continue
            self.out.append(dep)
            if not day0:
                self.last_table.append(len(self.out) - 1)


def _interpret(item: str, line: int, text: str, prefixes: tuple[str, ...], since: date | None) -> Deprecation | None:
    """A deprecation (from `since`) from a cell or list item naming a scenario, a precision and/or a non-X arm."""
    scenarios = _scenarios(item)
    precision = _PRECISION.search(item)
    if not scenarios and not precision:
        return None
    return Deprecation(line, text, prefixes, scenarios[0] if scenarios else None,
                       precision.group(1).lower() if precision else None, bool(_ARM.search(item)), since)


def _scenarios(text: str) -> list[str]:
    out = []
    for m in _SCENARIO.finditer(text):
        out.append(f"Single-turn {m.group(1).lower()}" if m.group(1) else AGENTIC)
    return list(dict.fromkeys(out))


def _items(cell: str) -> list[str]:
    """Split a cell on commas outside parentheses."""
    if "(" not in cell and ")" not in cell:
        return [i for i in (part.strip() for part in cell.split(",")) if i]
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in cell:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth <= 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    items.append("".join(current).strip())
    return [i for i in items if i]


def _at(cells: Sequence[str], k: int) -> str:
    return cells[k] if k < len(cells) else ""


def _ticks(text: str) -> str:
    """`text` with links and emphasis removed but backticks kept (they mark prefixes)."""
    return markdown.unlink(text).replace("**", "").replace("__", "")


def _clean(text: str) -> str:
    """Markdown removed: links to their text, emphasis and backticks dropped, spaces collapsed."""
    return " ".join(_ticks(text).replace("`", "").split())


def _date_in(text: str) -> date | None:
    m = _LONG.search(text)
    if m:
        try:
            return date(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
        except ValueError:
            return None
    iso = _ISO.search(text)
    return _iso(iso) if iso else None


def _iso(m: re.Match[str]) -> date | None:
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _norm(scenario: str) -> str:
    return re.sub(r"[\s-]+", " ", scenario.strip().lower())
