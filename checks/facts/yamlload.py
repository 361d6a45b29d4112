"""Safe YAML loading that keeps line numbers, for files of a pull request.

PR content is hostile input. `load` parses with libyaml's safe composer and
builds plain Python values itself, so it can bound the work: a size cap, a
nesting cap (checked before parsing, so libyaml never recurses deeply) and a
node budget that defuses alias bombs ("billion laughs"). Every mapping and
list remembers the 1-based line of itself and of each key or item, which is
what line-anchored findings need. A plain document (no anchors, aliases,
merge keys or collections as keys: recipes and master configs) is built
straight from libyaml's events instead, which costs a third less; anything
else, and every error, goes the composer's way.

Errors never escape as exceptions of PyYAML: they are `YamlProblem` with the
line PyYAML reports, so a malformed file becomes a finding, not a crash.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import yaml

from checks import progress

_Loader: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:  # libyaml is in every PyYAML wheel; the pure-Python parser is a fallback.
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

MAX_BYTES = 5_000_000
MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_ALIASES = 1_000
# Characters of a number, a date or a time: PyYAML makes `0x` and a million digits an int of 4 million
# bits, and sexagesimal `1:0:0:...` an int of 60 ** parts, with time and memory to match; no value a config
# or recipe holds comes near.
MAX_NUMBER = 100

_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class YamlProblem(Exception):
    """A file that is not acceptable YAML; `line` is 1-based."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class LineDict(dict[Any, Any]):
    """A mapping that knows its own line and the line of each key."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any, default: int | None = None) -> int:
        return self.key_lines.get(key, self.line if default is None else default)


class LineList(list[Any]):
    """A sequence that knows its own line and the line of each item."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


_FLOW_OPEN = re.compile(r"[\[{]")


def _check_depth(text: str) -> None:
    if " " * (MAX_DEPTH * 8 + 1) not in text and text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # no line is indented that deep, and there are too few `[` and `{` to nest that deep
    depth = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) > MAX_DEPTH * 8:
            raise YamlProblem(lineno, f"indentation nests deeper than {MAX_DEPTH} levels")
        if "[" in line or "{" in line or depth:
            for ch in line:
                if ch in "[{":
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise YamlProblem(lineno, f"flow collections nest deeper than {MAX_DEPTH} levels")
                elif ch in "]}":
                    depth = max(0, depth - 1)
                elif ch == "#":
                    break


def load(text: str, line_offset: int = 0) -> Any:
    """Parse one YAML document into LineDict/LineList/scalars; raise YamlProblem.

    `line_offset` is added to every line (for a block cut out of a larger file).
    """
    progress.reading(text)
    try:
        return _load(text, line_offset)
    finally:
        progress.reading(None)


def _load(text: str, line_offset: int) -> Any:
    if len(text) > MAX_BYTES:
        raise YamlProblem(1 + line_offset, f"file is larger than {MAX_BYTES // 1_000_000} MB; not parsed")
    try:
        _check_depth(text)
    except YamlProblem as exc:
        raise YamlProblem(exc.line + line_offset, exc.message) from None
    try:
        return _Plain(text, line_offset).document()
    except Exception:  # noqa: BLE001 - not a plain document, or not one at all: the composer answers as before
        pass
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # PyYAML marks a problem at the end of the stream past the last line; a finding goes on a line that exists.
        line = min(mark.line + 1 if mark else 1, max(1, len(text.splitlines()))) + line_offset
        raise YamlProblem(line, (exc.problem or exc.context or "invalid YAML").strip()) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(1 + line_offset, str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    except (ValueError, UnicodeError) as exc:  # e.g. control characters
        raise YamlProblem(1 + line_offset, str(exc)) from None
    if node is None:
        return None
    return _Builder(line_offset).build(node, 0)


class _Unusual(Exception):
    """The document holds what `_Plain` leaves to the composer."""


_RESOLVER = yaml.resolver.Resolver()  # the safe loader's: which tag a plain scalar has
# The first characters for which the safe resolver has implicit resolvers. It has no path resolver and none
# for every character, so a plain scalar starting otherwise, and every quoted one, is a string.
_RESOLVED_FIRST = frozenset(_RESOLVER.yaml_implicit_resolvers)
_SCALAR_EVENT = yaml.ScalarEvent
_MAPPING_END = yaml.MappingEndEvent
_SEQUENCE_END = yaml.SequenceEndEvent


class _Plain:
    """Builds the values of a plain document (no anchor, alias, merge key or collection as a key) straight from
    libyaml's events, without composing nodes first. It raises on anything else, and on any error, without a
    value: `load` then composes the document and `_Builder` reads it, so a value is only ever returned when the
    composer would build the same, line for line, and every problem is reported as the composer finds it.

    A scalar without a tag that is quoted, or plain and starting with no character the resolver knows, is its
    text: that test is written out in the loops, which see most of a document's events. The nodes are
    counted against the budget as they are built and the count checked when the document is done: with no
    alias, nodes are no more than events, which the size cap bounds."""

    def __init__(self, text: str, offset: int):
        self.text = text
        self.offset = offset
        self.nodes = 0
        self.typed: dict[str, tuple[str, Any]] = {}  # plain scalar text -> (tag, value): a document repeats them
        self.next: Callable[[], yaml.Event]

    def document(self) -> Any:
        loader = _Loader(self.text)
        try:
            self.next = loader.get_event  # type: ignore[assignment]  # None only past the stream's end, never read
            self.next()  # the stream's start
            event = self.next()
            if isinstance(event, yaml.StreamEndEvent):
                return None
            value = self.value(self.next(), 0)
            if not isinstance(self.next(), yaml.DocumentEndEvent) or not isinstance(self.next(), yaml.StreamEndEvent):
                raise _Unusual("more than one document")
            if self.nodes > MAX_NODES:
                raise _Unusual("a budget is spent")
            return value
        finally:
            loader.dispose()

    def value(self, event: yaml.Event, depth: int) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH * 2 or getattr(event, "anchor", None) is not None:
            raise _Unusual("too deep, or an anchor")
        kind = type(event)
        if isinstance(event, _SCALAR_EVENT):
            return self.scalar(event)[1]
        line = event.start_mark.line + 1 + self.offset  # type: ignore[union-attr]  # libyaml marks every event
        if kind is yaml.MappingStartEvent:
            return self.mapping(line, depth)
        if kind is yaml.SequenceStartEvent:
            return self.sequence(line, depth)
        raise _Unusual("an alias")  # the only other event a node can be

    def scalar(self, event: yaml.ScalarEvent) -> tuple[str, Any]:
        """(tag, value) of a scalar, its tag resolved as the composer resolves it."""
        tag, text = event.tag, event.value
        if tag is not None and tag != "!":
            return tag, self.construct(event, tag)
        if not event.implicit[0]:
            return _STR, text
        found = self.typed.get(text)
        if found is None:
            tag = _RESOLVER.resolve(yaml.ScalarNode, text, event.implicit)  # type: ignore[no-untyped-call]  # unannotated in PyYAML's stubs
            found = self.typed[text] = (tag, self.construct(event, tag))  # a scalar's value is immutable
        return found

    def construct(self, event: yaml.ScalarEvent, tag: str) -> Any:
        value = event.value
        if tag == _STR:
            return value
        if tag == _NULL:
            return None
        if tag == _INT and len(value) <= MAX_NUMBER and value.isascii() and value.isdigit() and value[0] != "0":
            return int(value)  # what the constructor makes of a decimal (a leading 0 is octal, "_" is dropped)
        # (libyaml's marks stand for PyYAML's, which the stubs type apart; libyaml marks every event)
        node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)  # type: ignore[arg-type]
        return _scalar(node, event.start_mark.line + 1 + self.offset)  # type: ignore[union-attr]

    def mapping(self, line: int, depth: int) -> LineDict:
        result = LineDict()
        result.line = line
        result.key_lines = key_lines = dict[Any, int]()
        step, scalar, offset, inner, first = self.next, self.scalar, self.offset + 1, depth + 1, _RESOLVED_FIRST
        nodes = 0
        while type(event := step()) is not _MAPPING_END:
            if type(event) is not _SCALAR_EVENT or event.anchor is not None:
                raise _Unusual("a key that is no plain scalar")
            nodes += 1
            text = event.value
            if event.tag is None and (not event.implicit[0] or text[:1] not in first):
                key = text
            else:
                tag, key = scalar(event)
                if tag == _MERGE:
                    raise _Unusual("a merge key")
            item = step()
            if type(item) is _SCALAR_EVENT and item.anchor is None:  # `value`'s work for a scalar, inline
                nodes += 1
                text = item.value
                result[key] = text if item.tag is None and (not item.implicit[0] or text[:1] not in first) \
                    else scalar(item)[1]
            else:
                result[key] = self.value(item, inner)
            key_lines[key] = event.start_mark.line + offset  # type: ignore[union-attr]  # libyaml marks every event
        if nodes and inner > MAX_DEPTH * 2:
            raise _Unusual("too deep")
        self.nodes += nodes
        return result

    def sequence(self, line: int, depth: int) -> LineList:
        result = LineList()
        result.line = line
        result.item_lines = item_lines = list[int]()
        step, scalar, offset, inner, first = self.next, self.scalar, self.offset + 1, depth + 1, _RESOLVED_FIRST
        nodes = 0
        while type(event := step()) is not _SEQUENCE_END:
            if type(event) is _SCALAR_EVENT and event.anchor is None:  # `value`'s work for a scalar, inline
                nodes += 1
                text = event.value
                result.append(text if event.tag is None and (not event.implicit[0] or text[:1] not in first)
                              else scalar(event)[1])
            else:
                result.append(self.value(event, inner))
            item_lines.append(event.start_mark.line + offset)  # type: ignore[union-attr]  # libyaml marks every event
        if nodes and inner > MAX_DEPTH * 2:
            raise _Unusual("too deep")
        self.nodes += nodes
        return result


class _Builder:
    """Turns composed nodes into values; an aliased node is built once and shared, as PyYAML does."""

    def __init__(self, offset: int):
        self.offset = offset
        self.nodes = MAX_NODES
        self.aliases = MAX_ALIASES
        self.built: dict[int, Any] = {}
        self.sizes: dict[int, int] = {}

    def build(self, node: yaml.Node, depth: int) -> Any:
        line = node.start_mark.line + 1 + self.offset
        if id(node) in self.built:  # only collections are kept: a scalar is built again, as cheaply
            self.aliases -= 1
            if self.aliases < 0:
                raise YamlProblem(line, f"more than {MAX_ALIASES} alias references; not parsed")
            return self.built[id(node)]
        self.nodes -= 1
        if self.nodes < 0:
            raise YamlProblem(line, f"more than {MAX_NODES} nodes; not parsed")
        if depth > MAX_DEPTH * 2:
            raise YamlProblem(line, "nesting too deep")
        if isinstance(node, yaml.ScalarNode):
            return _scalar(node, line)
        value = self._mapping(node, line, depth) if isinstance(node, yaml.MappingNode) else \
            self._sequence(node, line, depth)
        self.built[id(node)] = value
        # Size as a naive walk would see it, aliases expanded: bounded so no consumer can blow up.
        sizes = self.sizes
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        size = 1 + sum(sizes.get(id(child), 1) for child in children)
        if size > MAX_NODES:
            raise YamlProblem(line, f"expands to more than {MAX_NODES} nodes through aliases; not parsed")
        sizes[id(node)] = size
        return value

    def _mapping(self, node: yaml.MappingNode, line: int, depth: int) -> LineDict:
        offset = self.offset
        result = LineDict()
        result.line = line
        result.key_lines = key_lines = dict[Any, int]()
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1 + offset
            if key_node.tag == _MERGE:
                merged = self.build(value_node, depth + 1)
                for part in merged if isinstance(merged, list) else [merged]:
                    if isinstance(part, dict):
                        for k, v in part.items():
                            result.setdefault(k, v)
                            key_lines.setdefault(k, key_line)
                continue
            key = self.build(key_node, depth + 1)
            if isinstance(key, (dict, list)):
                raise YamlProblem(key_line, "a mapping key must be a scalar")
            result[key] = self.build(value_node, depth + 1)
            key_lines[key] = key_line
        return result

    def _sequence(self, node: yaml.Node, line: int, depth: int) -> LineList:
        offset = self.offset
        result = LineList()
        result.line = line
        result.item_lines = item_lines = list[int]()
        for item in node.value:
            result.append(self.build(item, depth + 1))
            item_lines.append(item.start_mark.line + 1 + offset)
        return result


_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"
_NUMERIC = frozenset({_INT, "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"})


def _scalar(node: yaml.ScalarNode, line: int) -> Any:
    """The value of a scalar node, as PyYAML's safe constructor makes it (a string is its text)."""
    tag = node.tag
    if tag == _STR:
        return node.value
    if tag == _NULL:
        return None
    constructor = _CONSTRUCTOR.yaml_constructors.get(tag)
    if constructor is None:
        return node.value  # unknown tag: keep the text
    if tag in _NUMERIC and len(node.value) > MAX_NUMBER:
        raise YamlProblem(line, f"{len(node.value):,} characters for one {tag.rsplit(':', 1)[1]} (at most "
                                f"{MAX_NUMBER}); not read")
    try:
        value = constructor(_CONSTRUCTOR, node)
    except Exception:  # noqa: BLE001 - PyYAML's constructors fail in many ways on text they do not
        # expect (`!!timestamp x`: AttributeError on a failed match): each is a scalar its tag does not fit
        raise YamlProblem(line, f"bad scalar for {tag.rsplit(':', 1)[1]}: {node.value[:40]!r}") from None
    if hasattr(value, "__next__"):  # set/omap constructors are generators
        return node.value
    return value
