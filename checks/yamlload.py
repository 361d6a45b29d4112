"""Safe YAML loading that keeps line numbers, for files of a pull request.

PR content is hostile input. `load` parses with libyaml's safe composer and
builds plain Python values itself, so it can bound the work: a size cap, a
nesting cap (checked before parsing, so libyaml never recurses deeply) and a
node budget that defuses alias bombs ("billion laughs"). Every mapping and
list remembers the 1-based line of itself and of each key or item, which is
what line-anchored findings need.

Errors never escape as exceptions of PyYAML: they are `YamlProblem` with the
line PyYAML reports, so a malformed file becomes a finding, not a crash.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # libyaml is in every PyYAML wheel; the pure-Python parser is a fallback.
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

MAX_BYTES = 5_000_000
MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_ALIASES = 1_000

_CONSTRUCTOR = yaml.constructor.SafeConstructor()


class YamlProblem(Exception):
    """A file that is not acceptable YAML; `line` is 1-based."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class LineDict(dict):
    """A mapping that knows its own line and the line of each key."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: Any, default: int | None = None) -> int:
        return self.key_lines.get(key, self.line if default is None else default)


class LineList(list):
    """A sequence that knows its own line and the line of each item."""

    line: int = 0
    item_lines: list

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


_FLOW_OPEN = re.compile(r"[\[{]")


def _check_depth(text: str) -> None:
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
    if len(text) > MAX_BYTES:
        raise YamlProblem(1 + line_offset, f"file is larger than {MAX_BYTES // 1_000_000} MB; not parsed")
    try:
        _check_depth(text)
    except YamlProblem as exc:
        raise YamlProblem(exc.line + line_offset, exc.message) from None
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
        result.key_lines = key_lines = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1 + offset
            if key_node.tag == "tag:yaml.org,2002:merge":
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

    def _sequence(self, node: yaml.SequenceNode, line: int, depth: int) -> LineList:
        offset = self.offset
        result = LineList()
        result.line = line
        result.item_lines = item_lines = []
        for item in node.value:
            result.append(self.build(item, depth + 1))
            item_lines.append(item.start_mark.line + 1 + offset)
        return result


_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


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
    try:
        value = constructor(_CONSTRUCTOR, node)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise YamlProblem(line, f"bad scalar: {exc}") from None
    if hasattr(value, "__next__"):  # set/omap constructors are generators
        return node.value
    return value
