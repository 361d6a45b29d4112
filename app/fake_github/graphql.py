"""A small GraphQL executor for the fake's `POST /graphql`: queries over the objects the fake models.

It parses what GitHub's GraphQL API accepts from clients like ours (named or
anonymous queries, variables, aliases, arguments, inline fragments on types
and interfaces, `__typename`) and answers as GitHub does: the selected fields
only; a field the type lacks is a validation error (`undefinedField`, and no
`data`; checked on the objects the answer holds); a node id that resolves to
nothing is `null` with a `NOT_FOUND` error beside the data. Fragment spreads,
directives and mutations are not served (an error says so): nothing of ours
sends them.

The schema is the part of GitHub's that the fake holds: `node(id:)` and
`nodes(ids:)` at the root, and the objects app/fake_github/graphql_objects.py
builds (comments and their edit history).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

_TOKEN = re.compile(r"""
    (?P<skip>[\s,\ufeff]+|\#[^\n]*)
  | (?P<spread>\.\.\.)
  | (?P<punct>[{}()\[\]:!$=@])
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<name>[_A-Za-z][_0-9A-Za-z]*)
""", re.VERBOSE)


class QueryError(Exception):
    """A query GitHub would refuse before running it (answered as `errors`, without `data`)."""

    def __init__(self, message: str, code: str = "parseError", **extensions: Any):
        super().__init__(message)
        self.message = message
        self.extensions = {"code": code, **extensions}


@dataclass
class Obj:
    """A GraphQL object: its type, the interfaces it implements, and a resolver per field."""

    typename: str
    fields: dict[str, Callable[[dict[str, Any]], Any]]
    interfaces: tuple[str, ...] = ()


@dataclass
class NotFound:
    """A node id that resolves to nothing: `null` in the data, a NOT_FOUND error beside it."""

    message: str


@dataclass
class Field:
    name: str
    alias: str
    args: dict[str, Any]
    selections: list[Any] | None


@dataclass
class Fragment:
    on: str
    selections: list[Any]


@dataclass
class _Parser:
    tokens: list[tuple[str, str]]
    pos: int = 0
    variables: dict[str, Any] = field(default_factory=dict)

    def peek(self, value: str | None = None) -> bool:
        return self.pos < len(self.tokens) and (value is None or self.tokens[self.pos][1] == value)

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        if self.pos >= len(self.tokens):
            raise QueryError(f"Parse error: expected {value or kind or 'more'} at the end of the query")
        tkind, text = self.tokens[self.pos]
        if (value is not None and text != value) or (kind is not None and tkind != kind):
            raise QueryError(f'Parse error on "{text}" ({tkind.upper()})')
        self.pos += 1
        return text

    def document(self) -> list[Any]:
        if self.peek("{"):
            selections = self.selection_set()
        else:
            keyword = self.take(kind="name")
            if keyword != "query":
                raise QueryError(f"only queries are served, not {keyword}", "unsupported")
            if self.peek() and self.tokens[self.pos][0] == "name":
                self.take(kind="name")
            if self.peek("("):
                self.variable_definitions()
            selections = self.selection_set()
        if self.peek():
            raise QueryError("only one operation per document is served", "unsupported")
        return selections

    def variable_definitions(self) -> None:
        self.take("(")
        while not self.peek(")"):
            self.take("$")
            self.take(kind="name")
            self.take(":")
            self.type_ref()
            if self.peek("="):
                self.take("=")
                self.value(const=True)
        self.take(")")

    def type_ref(self) -> None:
        if self.peek("["):
            self.take("[")
            self.type_ref()
            self.take("]")
        else:
            self.take(kind="name")
        if self.peek("!"):
            self.take("!")

    def selection_set(self) -> list[Any]:
        self.take("{")
        selections = []
        while not self.peek("}"):
            selections.append(self.selection())
        self.take("}")
        if not selections:
            raise QueryError("Parse error: an empty selection set")
        return selections

    def selection(self) -> Any:
        if self.peek("..."):
            self.take("...")
            if not self.peek("on"):
                raise QueryError("fragment spreads are not served", "unsupported")
            self.take("on")
            return Fragment(self.take(kind="name"), self.selection_set())
        if self.peek("@"):
            raise QueryError("directives are not served", "unsupported")
        name = self.take(kind="name")
        alias = name
        if self.peek(":"):
            self.take(":")
            name = self.take(kind="name")
        args = self.arguments() if self.peek("(") else {}
        if self.peek("@"):
            raise QueryError("directives are not served", "unsupported")
        selections = self.selection_set() if self.peek("{") else None
        return Field(name, alias, args, selections)

    def arguments(self) -> dict[str, Any]:
        self.take("(")
        args = {}
        while not self.peek(")"):
            name = self.take(kind="name")
            self.take(":")
            args[name] = self.value()
        self.take(")")
        return args

    def value(self, const: bool = False) -> Any:
        kind, text = self.tokens[self.pos] if self.pos < len(self.tokens) else ("", "")
        if text == "$" and not const:
            self.take("$")
            return self.variables.get(self.take(kind="name"))
        if text == "[":
            self.take("[")
            items = []
            while not self.peek("]"):
                items.append(self.value(const))
            self.take("]")
            return items
        if text == "{":
            self.take("{")
            obj = {}
            while not self.peek("}"):
                key = self.take(kind="name")
                self.take(":")
                obj[key] = self.value(const)
            self.take("}")
            return obj
        self.pos += 1
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "string":
            return json.loads(text)
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(text, text)
        raise QueryError(f'Parse error on "{text}"')


def parse(query: str, variables: dict[str, Any] | None = None) -> list[Any]:
    """The root selection set of `query`, with `variables` substituted."""
    tokens, pos = [], 0
    while pos < len(query):
        m = _TOKEN.match(query, pos)
        if m is None:
            raise QueryError(f'Parse error on "{query[pos:pos + 10]}"')
        pos = m.end()
        if m.lastgroup != "skip":
            tokens.append((m.lastgroup, m.group()))
    return _Parser(tokens, variables=dict(variables or {})).document()


def execute(query: str, variables: dict[str, Any] | None, root: Obj) -> dict[str, Any]:
    """GitHub's answer to `query`: {"data": ...} and, when something was not found, "errors"."""
    try:
        selections = parse(query, variables)
        errors: list[dict[str, Any]] = []
        data = _select(root, selections, [], errors)
    except QueryError as exc:
        return {"errors": [{"message": exc.message, "extensions": exc.extensions}]}
    return {"data": data, **({"errors": errors} if errors else {})}


def _applies(obj: Obj, fragment: Fragment) -> bool:
    return fragment.on == obj.typename or fragment.on in obj.interfaces


def _fields(obj: Obj, selections: list[Any]) -> list[Field]:
    out = []
    for s in selections:
        if isinstance(s, Fragment):
            if _applies(obj, s):
                out.extend(_fields(obj, s.selections))
        else:
            out.append(s)
    return out


def _select(obj: Obj, selections: list[Any], path: list[Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in _fields(obj, selections):
        if f.name == "__typename":
            data[f.alias] = obj.typename
            continue
        resolver = obj.fields.get(f.name)
        if resolver is None:
            raise QueryError(f"Field '{f.name}' doesn't exist on type '{obj.typename}'", "undefinedField",
                             typeName=obj.typename, fieldName=f.name)
        data[f.alias] = _value(resolver(f.args), f, [*path, f.alias], errors)
    return data


def _value(value: Any, f: Field, path: list[Any], errors: list[dict[str, Any]]) -> Any:
    if isinstance(value, NotFound):
        errors.append({"type": "NOT_FOUND", "path": path, "locations": [], "message": value.message})
        return None
    if isinstance(value, list):
        return [_value(v, f, [*path, i], errors) for i, v in enumerate(value)]
    if isinstance(value, Obj):
        if f.selections is None:
            raise QueryError(f"Field must have selections (field '{f.name}' returns {value.typename} but has "
                             "no selections)", "selectionMismatch")
        return _select(value, f.selections, path, errors)
    if f.selections is not None and value is not None:
        raise QueryError(f"Selections can't be made on scalars (field '{f.name}')", "selectionMismatch")
    return value
