"""Statements: the commands of a script, built from tree-sitter's syntax tree for the evaluator.

Compound commands (`if`, `case`, loops, `{ }`, `( )`, functions, `&&`/`||`, pipelines, `!`) are taken
from tree-sitter's nodes. A simple command is assembled from its leaves in the order written, the way
bash reads one (assignments first, then words; an operator takes the next word as its target), because
tree-sitter-bash hangs some leaves on the wrong node: the words after a redirection become more
"destinations" of it (tree-sitter/tree-sitter-bash#233), and what follows a heredoc's delimiter on its
line (`| python3 -`, `|| true`, `2>&1 | tee log`, a second `<<B`) becomes part of the heredoc
(#346). Text no leaf covers (tree-sitter-bash drops a lone `-` before a redirection) is read as words.
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple, cast

from tree_sitter import Node

from .record import record
from .tree import Source
from .words import WORD_NODES, Part, Word, WordReader, delimiter, join, literal, new_word

MAX_DEPTH = 60  # compound commands nested deeper are not read

_CONTROL = frozenset({"|", "|&", "&&", "||", ";", "&", ";;", ";&", ";;&", "\n"})
_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&", "<<<", "<<", "<<-"})
_COMPOUND = frozenset({"list", "pipeline", "negated_command", "if_statement", "case_statement", "for_statement",
                       "c_style_for_statement", "while_statement", "compound_statement", "subshell",
                       "function_definition", "do_group"})
_SKIP = frozenset({"comment", "heredoc_body", "heredoc_end", "file_descriptor"})
_TERMINATORS = frozenset({";;", ";&", ";;&"})
_UNCOVERED = re.compile(rb"(?:[^ \t\r\n\\]|\\[^\n])+")  # a word in text between leaves
_BLANKS = re.compile(rb"(?<!\\)[ \t]")
_BLANK_BYTES = frozenset(b" \t\r\n")


Assign = tuple[str, bool, Word | None, tuple[Word, ...] | None]  # name, append, scalar value, array items

# The syntax tree. A statement list is a tuple of these nodes, each a record (compared as a frozen dataclass,
# built as one tuple: a script has hundreds).

@record
class Simple(NamedTuple):
    """A simple command: leading assignments, the command's words and its redirections (a record: a script
    has hundreds, each built as one tuple)."""

    line: int
    assigns: tuple[Assign, ...]
    words: tuple[Word, ...]
    redirects: tuple[tuple[str, Word], ...] = ()  # (operator, target word), e.g. (">", file), ("<<", delimiter)


@record
class AndOr(NamedTuple):
    first: Statement
    rest: tuple[tuple[str, Statement], ...]  # ("&&" | "||", node)


@record
class Not(NamedTuple):
    node: Statement


@record
class If(NamedTuple):
    clauses: tuple[tuple[Statements, Statements], ...]  # (condition statements, body statements)
    orelse: Statements


@record
class Case(NamedTuple):
    word: Word
    items: tuple[tuple[tuple[Word, ...], Statements], ...]


@record
class Loop(NamedTuple):
    body: Statements


@record
class Group(NamedTuple):
    body: Statements


@record
class Func(NamedTuple):
    name: str
    body: Statements
    line: int  # where the definition starts
    end: int  # the line of its last token


Statement = Simple | AndOr | Not | If | Case | Loop | Group | Func
Statements = tuple[Statement, ...]
_END = object()


def walk(nodes: Statements) -> Iterator[Statement]:
    """Every statement of `nodes` and every statement inside them, in order (without recursion: hostile
    scripts nest deep)."""
    stack: list[Iterator[Statement | None]] = [iter(nodes)]
    while stack:
        node = next(stack[-1], _END)
        if node is _END:
            stack.pop()
        elif node is not None:
            yield cast(Statement, node)  # (neither the end nor None)
            stack.append(iter(children(cast(Statement, node))))


def children(node: Statement) -> Statements:
    """The statements directly inside a compound command."""
    if isinstance(node, Simple):  # the most common: none
        return ()
    if isinstance(node, AndOr):
        return (node.first, *(n for _op, n in node.rest))
    if isinstance(node, Not):
        return (node.node,)
    if isinstance(node, If):
        return (*(n for cond, body in node.clauses for n in (*cond, *body)), *node.orelse)
    if isinstance(node, Case):
        return tuple(n for _patterns, body in node.items for n in body)
    if isinstance(node, (Loop, Group, Func)):
        return node.body
    return ()


class _Piece(NamedTuple):
    """A piece of a simple command, in the order written: a word, an assignment, a redirection (its operator
    and target word), a control operator, or a compound command met among the leaves. `start`/`end`
    are byte offsets: words with nothing between them are one word (see `Builder._add`). (A tuple: a
    script has tens of thousands.)"""

    kind: str  # word | assign | redir | op | node
    line: int
    start: int
    end: int
    word: Word | None = None  # the word; an assignment's scalar value; a redirection's target
    op: str = ""  # a redirection's or control operator
    name: str = ""  # an assignment's variable
    append: bool = False
    items: tuple[Word, ...] | None = None  # an array assignment's items
    node: Statement | None = None  # a compound command's
    joins: bool = True  # False for an operator of `[[ ]]` read as a word: nothing continues it


class Builder:
    """Builds statements from the nodes of one parsed text."""

    def __init__(self, src: Source):
        self.src = src
        self.words = WordReader(src)

    def statements(self, nodes: list[Node], depth: int) -> Statements:
        out: list[Statement] = []
        for node in nodes:
            out.extend(self.statement(node, depth))
        return tuple(out)

    def statement(self, node: Node, depth: int) -> list[Statement]:
        """The statements `node` is: usually one; none for a comment, several for a broken line."""
        kind = node.type
        if depth > MAX_DEPTH or kind in _SKIP or not node.is_named:
            return []
        if kind == "command":  # the most common: a simple command, from its leaves
            # Plain commands and declarations are built directly (`_plain`, `_declared`), the same `Simple` the
            # pieces make: kept because the engine goal needs them (bench/engine.py, pr2508: 47.6-48.7 ms with
            # them, 49.6-50.6 ms without, goal 50 ms, one machine, the same hour).
            plain = self._plain(node) if depth < MAX_DEPTH else None
            if plain is not None:
                return [plain]
            pieces: list[_Piece] = []
            self._pieces(node, pieces, depth + 1)
            return self._assemble(pieces)
        if kind == "list":
            found = self._and_or(node, depth)
            return [found] if found is not None else []
        if kind == "pipeline":
            commands = [c for c in (self.one(child, depth) for child in node.children if child.is_named)
                        if c is not None]
            return [Group(tuple(commands))] if len(commands) > 1 else commands
        if kind == "negated_command":
            inner = self.one(next((c for c in node.children if c.is_named), None), depth)
            return [Not(inner)] if inner is not None else []
        if kind == "if_statement":
            return [self._if(node, depth)]
        if kind == "case_statement":
            return [self._case(node, depth)]
        if kind in ("for_statement", "c_style_for_statement", "while_statement"):
            return [Loop(self._body(node.child_by_field_name("body"), depth))]
        if kind == "compound_statement" and node.child_count and node.children[0].type == "((":
            line = self.src.line(node.start_byte)
            return [Simple(line, (), (literal("((", line),))]
        if kind in ("compound_statement", "subshell", "do_group", "process_substitution"):
            return [Group(self._body(node, depth))]
        if kind == "function_definition":
            return [self._function(node, depth)]
        if kind == "test_command":
            return self._tested(node)
        if kind == "declaration_command":
            declared = self._declared(node)
            if declared is not None:
                return [declared]
        if kind == "variable_assignment":  # `NAME=value` alone: what `_assemble` makes of its one piece
            piece = self._assignment(node, self.src.line(node.start_byte))
            if piece.kind == "assign":
                return [Simple(piece.line, ((piece.name, piece.append, piece.word, piece.items),), ())]
            return [Simple(piece.line, (), (piece.word,))]  # type: ignore[arg-type]  # a word piece holds its word
        pieces = []
        self._piece(node, pieces, depth)
        return self._assemble(pieces)

    def one(self, node: Node | None, depth: int) -> Statement | None:
        """`node` as one statement (several made a group); None for nothing."""
        found = self.statement(node, depth) if node is not None else []
        return found[0] if len(found) == 1 else Group(tuple(found)) if found else None

    def _body(self, node: Node | None, depth: int) -> Statements:
        """The statements inside a `{ }`, `( )`, `do ... done` or the like."""
        return self.statements(node.children, depth + 1) if node is not None else ()

    # --- compound commands ---
    def _and_or(self, node: Node, depth: int) -> Statement | None:
        """`a && b || c` (tree-sitter nests it to the left; read without recursion: a script may chain
        thousands)."""
        chain: list[tuple[str, Node]] = []
        while node.type == "list":
            kids = [c for c in node.children if c.type != "comment"]
            operands = [c for c in kids if c.is_named]
            ops = [c.type for c in kids if not c.is_named and c.type in ("&&", "||")]
            if not operands:
                return None
            chain.extend(reversed(list(zip(ops, operands[1:]))))
            node = operands[0]
        first = self.one(node, depth)
        rest = []
        for op, operand in reversed(chain):
            found = self.one(operand, depth)
            if found is None:
                break
            rest.append((op, found))
        if first is None:
            return None
        return AndOr(first, tuple(rest)) if rest else first

    def _if(self, node: Node, depth: int) -> If:
        clauses: list[tuple[Statements, Statements]] = []
        orelse: Statements = ()
        kids = node.children
        for part in (node, *(c for c in kids if c.type == "elif_clause")):
            cond: list[Node] = []
            body: list[Node] = []
            into = None
            for child in kids if part is node else part.children:
                kind = child.type
                if kind == "if" or kind == "elif":
                    into = cond
                elif kind == "then":
                    into = body
                elif kind == "else_clause":
                    orelse = self.statements(child.children, depth + 1)
                elif into is not None and kind != "elif_clause":
                    into.append(child)
            clauses.append((self.statements(cond, depth + 1), self.statements(body, depth + 1)))
        return If(tuple(clauses), orelse)

    def _case(self, node: Node, depth: int) -> Case:
        line = self.src.line(node.start_byte)
        subject = next((c for c in node.children if c.type in WORD_NODES), None)
        items = []
        for item in (c for c in node.children if c.type == "case_item"):
            patterns: list[Word] = []
            body: list[Node] = []
            opened = False
            for child in item.children:
                if opened:
                    if child.type not in _TERMINATORS:
                        body.append(child)
                elif child.type == ")":
                    opened = True
                elif child.type in WORD_NODES:
                    patterns.append(self.words.word(child))
            items.append((tuple(patterns), self.statements(body, depth + 1)))
        return Case(self.words.word(subject) if subject is not None else Word((), line), tuple(items))

    def _function(self, node: Node, depth: int) -> Func:
        name = node.child_by_field_name("name")
        body = self.one(node.child_by_field_name("body"), depth + 1)
        last = node
        while last.child_count:
            last = last.children[-1]
        return Func(self.src.of_node(name) if name is not None else "", (body,) if body is not None else (),
                    self.src.line(node.start_byte), self.src.line(last.start_byte))

    # --- simple commands, from their leaves ---
    def _plain(self, node: Node) -> Simple | None:
        """A command of words alone (`mkdir -p "$DIR"`), each after one blank, its name a word alone: the
        `Simple` the pieces would make (no assignment, redirection or operator; no word that continues
        another or holds a blank or a backslash); None for any other command."""
        raw = self.src.raw
        words: list[Word] = []
        at = node.start_byte
        for child in node.children:
            begin, end = child.start_byte, child.end_byte
            if (begin != at) if not words else (begin != at + 1 or raw[at] not in _BLANK_BYTES):
                return None  # (words with nothing between them are one word: `_add` joins them)
            kind = child.type
            if kind == "command_name":
                if words or child.child_count != 1:
                    return None
                child = child.children[0]
                if child.start_byte != begin or child.end_byte != end:
                    return None
                kind = child.type
            word = self._lone_word(child, kind)
            if word is None:
                return None
            words.append(word)
            at = end
        if not words or at != node.end_byte:
            return None
        return Simple(self.src.line(node.start_byte), (), tuple(words))

    def _plain_word(self, start: int, end: int) -> Word | None:
        """The word of a `word` node's text when it is plain (no backslash, no blank): the literal
        WordReader.word reads it as; None otherwise."""
        text = self.src.text(start, end)
        if "\\" in text or " " in text or "\t" in text:
            return None
        return new_word((self.words.plain(text), self.src.line(start)))

    def _lone_word(self, node: Node, kind: str) -> Word | None:
        """The word a leaf of kind `kind` is among words each after one blank; None for a `word` holding a
        blank or a backslash (the pieces read those otherwise) and for any leaf that is no word."""
        if kind == "word":
            return self._plain_word(node.start_byte, node.end_byte)
        return self.words.word(node) if kind in WORD_NODES else None

    def _declared(self, node: Node) -> Simple | None:
        """`export A=1 B`, `local -a X=(a b)`: a declaration's keyword, then assignments and words, each after
        one blank: the `Simple` the pieces would make (its keyword and words its words, a scalar assignment
        the word `NAME=value`, an array one an assignment); None for any other declaration."""
        kids = node.children
        if not kids or kids[0].is_named or kids[0].start_byte != node.start_byte:
            return None
        raw = self.src.raw
        keyword = kids[0]
        line = self.src.line(keyword.start_byte)
        words: list[Word] = [Word((Part("lit", self.src.of_node(keyword)),), line)]
        assigns: list[Assign] = []
        at = keyword.end_byte
        for child in kids[1:]:
            begin, end = child.start_byte, child.end_byte
            if begin != at + 1 or raw[at] not in _BLANK_BYTES:
                return None  # (words with nothing between them are one word: `_add` joins them)
            kind = child.type
            if kind == "variable_assignment":
                piece = self._assignment(child, self.src.line(begin))
                if piece.kind != "assign":
                    words.append(piece.word)  # type: ignore[arg-type]  # a word piece holds its word
                elif piece.items is not None:
                    assigns.append((piece.name, piece.append, piece.word, piece.items))
                else:
                    sign = Part("lit", piece.name + ("+=" if piece.append else "="))
                    words.append(Word((sign, *piece.word.parts), piece.line))  # type: ignore[union-attr]  # (a scalar's)
            else:
                word = self._lone_word(child, kind)
                if word is None:
                    return None
                words.append(word)
            at = end
        if at != node.end_byte or "\\" in words[0].parts[0].text:
            return None
        return Simple(line, tuple(assigns), tuple(words))

    def _pieces(self, node: Node, out: list[_Piece], depth: int) -> None:
        """The pieces of a command-like node, in the order written, with any text no node covers."""
        at = node.start_byte
        raw = self.src.raw
        split: Node | None = None  # `<<<` after a redirection: tree-sitter-bash reads an ERROR `<<`, then `<`
        for child in node.children:
            begin = child.start_byte
            if begin > at and (begin - at > 1 or raw[at] not in _BLANK_BYTES):  # (most gaps: one blank)
                self._uncovered(at, begin, out)
            if split is not None and child.type == "file_redirect" and child.start_byte == split.end_byte:
                self._redirect(child, out, depth, "<<")
            else:
                if split is not None:
                    self._piece(split, out, depth)
                if child.type == "ERROR" and self.src.of_node(child) == "<<":
                    split = child
                    at = max(at, child.end_byte)
                    continue
                self._piece(child, out, depth)
            split = None
            end = child.end_byte
            if end > at:
                at = end
        if split is not None:
            self._piece(split, out, depth)
        if node.end_byte > at:
            self._uncovered(at, node.end_byte, out)

    def _piece(self, node: Node, out: list[_Piece], depth: int) -> None:
        kind = node.type
        start, end = node.start_byte, node.end_byte
        if kind == "word":
            word = self._plain_word(start, end)
            if word is not None:  # most words
                self._add(out, _Piece("word", word.line, start, end, word))
            elif _BLANKS.search(self.src.raw, start, end):
                self._uncovered(start, end, out)  # tree-sitter-bash reads `} }` as one word
            else:
                self._add(out, _Piece("word", self.src.line(start), start, end, self.words.word(node)))
        elif kind in WORD_NODES:
            self._add(out, _Piece("word", self.src.line(start), start, end, self.words.word(node)))
        elif kind == "command_name":
            if depth <= MAX_DEPTH:
                self._pieces(node, out, depth + 1)
        elif kind in _SKIP:
            return
        elif kind == "variable_assignment":
            self._add(out, self._assignment(node, self.src.line(start)))
        elif kind == "file_redirect" or kind == "herestring_redirect":
            self._redirect(node, out, depth)
        elif kind == "heredoc_redirect":
            self._heredoc(node, out, depth)
        elif kind == "test_command":
            self._test(node, out)
        elif kind in ("pipeline", "list"):  # among leaves only after a heredoc's delimiter (#346): its pieces
            if depth <= MAX_DEPTH:
                self._pieces(node, out, depth + 1)
        elif kind in _COMPOUND or kind == "process_substitution":  # `<(cmd)` runs cmd: a group after the
            found = self.one(node, depth + 1)  # command, no word of it
            if found is not None:
                out.append(_Piece("node", self.src.line(start), start, end, node=found))
        elif node.is_named:  # command, command_name, declaration/unset commands, ERROR, ...
            if depth <= MAX_DEPTH:
                self._pieces(node, out, depth + 1)
        elif kind in _CONTROL:
            out.append(_Piece("op", self.src.line(start), start, end, op=kind))
        elif kind in _REDIRECTS:
            out.append(_Piece("redir", self.src.line(start), start, end, op=kind))
        else:  # a keyword (`export`, `local`, `unset`), a `$` tree-sitter-bash left alone: a word
            self._add(out, _Piece("word", self.src.line(start), start, end, self.words.word(node)))

    @staticmethod
    def _add(out: list[_Piece], piece: _Piece) -> None:
        """Add a piece; a word right after a word, a scalar assignment or a redirection's target, with
        nothing between them, continues it: bash ends a word only at a blank or an operator, and
        tree-sitter-bash splits some (`$A/$B/` as `$A/$` and `B/`, tree-sitter/tree-sitter-bash#315)."""
        last = out[-1] if out else None
        if piece.kind == "word" and last is not None and last.end == piece.start and last.word is not None \
                and last.kind in ("word", "assign", "redir") and last.joins and piece.joins:
            out[-1] = last._replace(end=piece.end, word=join(last.word, piece.word))  # type: ignore[arg-type]  # a word piece holds its word
        else:
            out.append(piece)

    def _uncovered(self, start: int, end: int, out: list[_Piece]) -> None:
        """Text between leaves (blanks, line continuations; a word tree-sitter dropped): its words."""
        if end - start == 1 and self.src.raw[start] in _BLANK_BYTES:
            return  # the usual gap: one blank
        for m in _UNCOVERED.finditer(self.src.raw, start, end):
            if not m.group().startswith(b"#"):
                line = self.src.line(m.start())
                text = self.src.text(m.start(), m.end())
                self._add(out, _Piece("word", line, m.start(), m.end(), literal(text, line)))

    def _assignment(self, node: Node, line: int) -> _Piece:
        name = node.child_by_field_name("name")
        if name is None or name.type != "variable_name":  # `a[1]=x`: an element, read as the word it is
            parts: list[Part] = []
            self.words.sequence(node, node.start_byte, node.end_byte, parts)
            return _Piece("word", line, node.start_byte, node.end_byte, Word(tuple(parts), line))
        start, end = node.start_byte, node.end_byte
        append, after = False, None  # `+=` anywhere; where the first `=` / `+=` ends
        for child in node.children:
            kind = child.type
            if kind == "+=" or kind == "=":
                append = append or kind == "+="
                after = child.end_byte if after is None else after
        value = node.child_by_field_name("value")
        if value is not None and value.type == "array":
            items: list[_Piece] = []
            for child in value.children:
                if child.type in WORD_NODES:
                    self._add(items, _Piece("word", line, child.start_byte, child.end_byte,
                                            self.words.word(child)))
            return _Piece("assign", line, start, end, name=self.src.of_node(name), append=append,
                          items=tuple(p.word for p in items))  # type: ignore[misc]  # word pieces hold their words
        parts = []
        if value is not None:
            self.words.sequence(node, end if after is None else after, end, parts)
        return _Piece("assign", line, start, end, Word(tuple(parts), line), name=self.src.of_node(name),
                      append=append)

    def _redirect(self, node: Node, out: list[_Piece], depth: int, before: str = "") -> None:
        """`2>&1`, `> file`, `<<< word`: the operator (after `before`) takes the first word; any further words
        are the command's (tree-sitter/tree-sitter-bash#233)."""
        op: Node | None = None
        taken = False
        for child in node.children:
            if child.type == "file_descriptor":
                continue
            if op is None and not child.is_named and child.type not in _CONTROL:
                op = child
                if child.type in (">&-", "<&-"):  # closing a descriptor: the operator and its target `-`
                    line = self.src.line(child.start_byte)
                    out.append(_Piece("redir", line, child.start_byte, child.end_byte, literal("-", line),
                                      op=child.type[:2]))
                    taken = True
            elif op is not None and not taken and child.type in WORD_NODES:
                out.append(_Piece("redir", self.src.line(op.start_byte), op.start_byte, child.end_byte,
                                  self.words.word(child), op=before + op.type))
                taken = True
            else:
                self._piece(child, out, depth)
        if op is not None and not taken:
            out.append(_Piece("redir", self.src.line(op.start_byte), op.start_byte, op.end_byte,
                              op=before + op.type))

    def _heredoc(self, node: Node, out: list[_Piece], depth: int) -> None:
        """`<<EOF` and what tree-sitter-bash hangs on it: the rest of the line (#346), a second heredoc read
        as an ERROR `<` and a `<` redirection."""
        kids = node.children
        i = 0
        while i < len(kids):
            child = kids[i]
            found = heredoc_operator(self.src, kids, i)
            if found is not None:
                op, text, quoted = found
                line = self.src.line(child.start_byte)
                out.append(_Piece("redir", line, child.start_byte, kids[i + 1].end_byte,
                                  Word((Part("lit", text, quoted),), line), op=op))
                i += 2
                continue
            self._piece(child, out, depth)
            i += 1

    def _test(self, node: Node, out: list[_Piece]) -> None:
        """`[ ... ]` / `[[ ... ]]` among a command's pieces: its leaves' words; `(( ... ))` as the command `((`."""
        kids = node.children
        if kids and kids[0].type == "((":
            line = self.src.line(node.start_byte)
            out.append(_Piece("word", line, node.start_byte, node.end_byte, literal("((", line)))
            return
        for line, start, end, word, joins in self._leaves(kids):
            piece = _Piece("word", line, start, end, word, joins=joins)
            if joins:
                self._add(out, piece)
            else:
                out.append(piece)

    def _tested(self, node: Node) -> list[Statement]:
        """A `[ ... ]` / `[[ ... ]]` / `(( ... ))` statement: the `Simple` `_test`'s pieces make, without them."""
        kids = node.children
        if kids and kids[0].type == "((":
            line = self.src.line(node.start_byte)
            return [Simple(line, (), (literal("((", line),))]
        words: list[Word] = []
        first = 0
        after, joins_after = -1, False  # where the leaf before ends; whether a word right after continues it
        for line, start, end, word, joins in self._leaves(kids):
            if joins and joins_after and start == after:
                words[-1] = join(words[-1], word)
            else:
                if not words:
                    first = line
                words.append(word)
            after, joins_after = end, joins
        return [Simple(first, (), tuple(words))] if words else []

    def _leaves(self, kids: list[Node]) -> list[tuple[int, int, int, Word, bool]]:
        """(line, start, end, word, joins) of each leaf of a test, as bash passes them to `test`: `[[` and its
        operators too (their words continue nothing)."""
        line, word = self.src.line, self.words.word
        out = []
        stack = [iter(kids)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                continue
            kind = child.type
            if kind in WORD_NODES:
                start = child.start_byte
                out.append((line(start), start, child.end_byte, word(child), True))
            elif child.child_count and len(stack) < MAX_DEPTH:
                stack.append(iter(child.children))
            elif kind != "comment":
                start = child.start_byte
                at = line(start)
                text = self.src.of_node(child)  # an operator: its parts built once for each text
                out.append((at, start, child.end_byte, new_word((self.words.plain(text), at)) if text else literal(text, at),
                            False))
        return out

    def _assemble(self, pieces: list[_Piece]) -> list[Statement]:
        """Statements from pieces: `;`/`&` end one, `&&`/`||` chain pipelines, `|` chains commands."""
        if not any(piece.kind == "op" for piece in pieces):  # most commands: one, with no operator
            found = self._command(pieces) if pieces else []
            return [Group(tuple(found))] if len(found) > 1 else found
        out: list[Statement] = []
        chain: list[tuple[str, Statement]] = []
        pipe: list[Statement] = []
        cur: list[_Piece] = []
        pending = ""

        def end_pipeline() -> Statement | None:
            if cur:
                pipe.extend(self._command(cur))
                cur.clear()
            node = Group(tuple(pipe)) if len(pipe) > 1 else pipe[0] if pipe else None
            pipe.clear()
            return node

        def end_statement() -> None:
            nonlocal pending
            node = end_pipeline()
            if node is not None:
                chain.append((pending, node))
            pending = ""
            if chain:
                first, rest = chain[0][1], tuple(chain[1:])
                out.append(AndOr(first, rest) if rest else first)
            chain.clear()

        for piece in pieces:
            if piece.kind != "op":
                cur.append(piece)
            elif piece.op in ("|", "|&"):
                if cur:
                    pipe.extend(self._command(cur))
                    cur.clear()
            elif piece.op in ("&&", "||"):
                node = end_pipeline()
                if node is not None:
                    chain.append((pending, node))
                pending = piece.op
            else:
                end_statement()
        end_statement()
        return out

    @staticmethod
    def _command(pieces: list[_Piece]) -> list[Statement]:
        """A simple command from its pieces (and any compound command met among them)."""
        nodes: list[Statement] = []
        assigns: list[Assign] = []
        words: list[Word] = []
        redirects: list[tuple[str, Word]] = []
        target_of: str | None = None
        for piece in pieces:
            if piece.kind == "node":
                nodes.append(piece.node)  # type: ignore[arg-type]  # a node piece holds its statement
            elif piece.kind == "assign":
                if piece.items is not None or not words:
                    assigns.append((piece.name, piece.append, piece.word, piece.items))
                else:  # an argument of `export` / `local` ...: a word, as bash passes it
                    sign = Part("lit", piece.name + ("+=" if piece.append else "="))
                    words.append(Word((sign, *piece.word.parts), piece.line))  # type: ignore[union-attr]  # (a scalar's)
            elif piece.kind == "redir":
                if piece.word is None:
                    target_of = piece.op
                else:
                    redirects.append((piece.op, piece.word))
            elif target_of is not None:
                redirects.append((target_of, piece.word))  # type: ignore[arg-type]  # a word piece holds its word
                target_of = None
            else:
                words.append(piece.word)  # type: ignore[arg-type]  # a word piece holds its word
        if assigns or words:
            return [Simple(pieces[0].line, tuple(assigns), tuple(words), tuple(redirects)), *nodes]
        if len(nodes) == 1 and redirects:  # `! cmd 2>/dev/null`: tree-sitter-bash hangs them on the `!`
            return [_redirected(nodes[0], tuple(redirects))]
        return nodes  # redirections alone (`> file`, or after a compound command) make no command


def _redirected(node: Statement, redirects: tuple[tuple[str, Word], ...]) -> Statement:
    """A simple command (negated or not) with more redirections; any other statement as it is."""
    if isinstance(node, Simple):
        return node._replace(redirects=node.redirects + redirects)
    if isinstance(node, Not):
        return Not(_redirected(node.node, redirects))
    return node


def heredoc_operator(src: Source, kids: list[Node], i: int) -> tuple[str, str, bool] | None:
    """(operator, delimiter, quoted) when `kids[i:i+2]`, children of a `heredoc_redirect`, open a heredoc:
    `<<`/`<<-` and its start, or a second heredoc on the line as tree-sitter-bash reads it: an ERROR `<`,
    then a `<` redirection right after it."""
    if i + 1 >= len(kids):
        return None
    kind, nxt = kids[i].type, kids[i + 1]
    if kind in ("<<", "<<-") and nxt.type == "heredoc_start":
        return (kind, *delimiter(src.of_node(nxt)))
    if kind == "ERROR" and src.of_node(kids[i]) == "<" and nxt.type == "file_redirect" \
            and nxt.start_byte == kids[i].end_byte and nxt.child_count > 1:
        target = src.text(nxt.children[0].end_byte, nxt.end_byte).strip()
        return ("<<-" if target.startswith("-") else "<<", *delimiter(target.removeprefix("-").strip()))
    return None
