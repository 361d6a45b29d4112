"""`Script`: a bash script read once, then read as a program and as lines."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator, Mapping, NamedTuple, TypeVar, cast

from checks import progress
from checks.progress import fingerprint

from .builtins import MAX_RESOLVED, PATTERN_OPS, UNKNOWN
from .interpreter import (
    DECLARATIONS,
    NOT_GIVEN,
    Given,
    Interpreter,
    Launch,
    State,
    Trace,
    Write,
    _Plan,
    exported_token,
    may_launch_untraced,
)
from .lines import ShellCommand, ShellLine, logical, physical
from .reading import read, read_lines, read_whole
from .record import record
from .syntax import Func, Simple, Statement, Statements, children, walk
from .tree import MAX_SCRIPT
from .values import Alt, Evaluator, Hole, Token, Value, written
from .words import Part, Word, as_written, assignment, is_name

MAX_EXPANDED = 1_000_000  # characters all of a script's values and line expansions may come to
_MAX_CHAIN = 8  # a value is worked out through at most this many other variables
_FIXED_OPS = frozenset({"", ":-", "-", ":=", "=", *PATTERN_OPS})  # what a fixed value answers
_END = object()
R = TypeVar("R")


@record
class Assignment(NamedTuple):
    """A variable the script sets: `NAME=value`, `NAME+=value`, `NAME=(items)`, alone or as an argument of
    `export` / `declare` / `local` / `readonly` / `typeset`. Prefix assignments (`NAME=value cmd`) only set
    the command's environment and are not listed."""

    name: str
    line: int
    value: Word | None  # None for an array
    items: tuple[Word, ...] | None  # the items of an array
    append: bool

    @property
    def text(self) -> str:
        """The value as written, quotes removed; expansions and command substitutions kept as source."""
        if self.items is not None:
            return "(" + " ".join(as_written(w.parts) for w in self.items) + ")"
        return as_written(self.value.parts if self.value is not None else ())


@record
class SimpleCommand(NamedTuple):
    """One simple command as bash reads it, for readers that judge what a command does (a record: one is made
    per command of every script a reader judges).

    `words` are the command's words with each variable the script fixes substituted; an unknown value stays
    as written (`$X`), a command substitution as `$(...)` (never run). `quoted` says which words were
    written in quotes. `redirects` are (operator, target). `function` is the function the command is
    written in ("" at the top level).
    """

    line: int
    words: tuple[str, ...]
    quoted: tuple[bool, ...]
    redirects: tuple[tuple[str, str], ...]
    function: str
    substitutions: tuple[str, ...]  # the source of every `$(...)` in its words and redirections

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""


class FixedValues(Evaluator[tuple[str, int]]):
    """The variables a script fixes, for the line readers, which need one value per variable wherever it
    is used (in any line, heredoc body or JSON string): a variable is fixed when every assignment in the
    script gives it the same value, whatever branch it sits in. In its own assignment a variable is taken
    as not set by the runner (`N="${N:-2}"`: N is 2), as is a variable the script never sets (`${Y:-7}` is
    7). Unknown variables inside a value stay as written (`{"n": $N}`); a command substitution that is not
    a pure builtin on fixed arguments makes the value unknown.

    The env of a lookup is (owner, depth): the variable being worked out, and how many others deep.
    """

    defaults = True
    whole_args = True

    def __init__(self, assigned: dict[str, list[Assignment]]):
        self.assigned = assigned
        self.values: dict[str, str | None] = {}
        self.room = MAX_EXPANDED  # what values and expansions may still add; past it, variables stay as written
        self.resolving: set[str] = set()
        self.expanded: dict[Part, str | None] = {}

    def lookup(self, env: tuple[str, int], name: str) -> tuple[Alt, ...]:
        owner, depth = env
        if name == owner or name not in self.assigned:
            return (None,)
        return (self.value(name, depth + 1),)

    def passed(self, env: tuple[str, int], name: str) -> bool:
        """A variable the script assigns, or a positional parameter (an argument: nothing says it is unset)."""
        return name != env[0] and name in self.assigned or not is_name(name)

    def nested(self, env: tuple[str, int]) -> tuple[str, int] | None:
        return None if env[1] > _MAX_CHAIN else (env[0], env[1] + 1)

    def param(self, env: tuple[str, int], part: Part, hole: Hole) -> tuple[Value, ...]:
        if part.subscript or part.op not in _FIXED_OPS:
            return (None,)  # an array's elements have no one value; `:+`, `+` and lengths ask what the
            # variable holds where it is used, which only the interpreter follows
        found = super().param(env, part, hole)
        return found if len(found) == 1 and isinstance(found[0], str) else (None,)

    def value(self, name: str, depth: int) -> str | None:
        """The value every assignment of `name` gives it, when they all give the same one; None otherwise."""
        if name in self.values:
            return self.values[name]
        if depth > _MAX_CHAIN or name in self.resolving or self.room <= 0:
            return None
        self.resolving.add(name)
        found: set[str | None] = set()
        for a in self.assigned[name]:
            found.add(None if a.value is None or a.append else self.render(a.value.parts, name, depth))
            if None in found or len(found) > 1:
                break
        self.resolving.discard(name)
        value = found.pop() if len(found) == 1 else None
        self.room -= len(value or "")
        self.values[name] = value
        return value

    def render(self, parts: tuple[Part, ...], owner: str = "", depth: int = 0) -> str | None:
        """The text of a word, expansions worked out where fixed (kept as written where not); None when a
        command substitution or an undecidable arithmetic makes it unknown."""
        found = self.text((owner, depth), parts, written)
        text = found[0] if len(found) == 1 else None
        return text if text is None or len(text) <= MAX_RESOLVED else None

    def expansion(self, part: Part) -> str | None:
        """What one parameter expansion comes to; None when not fixed. Worked out once per part (a script uses
        its few variables on many lines): the values it reads are kept once found, and one not found for
        want of `room` stays not found, as `room` only shrinks."""
        if part.kind != "param":
            return None
        found = self.expanded.get(part, _END)
        if found is _END:  # (`param` gives one text or None)
            found = self.expanded[part] = cast("str | None", self.param(("", 0), part, written)[0])
        return cast("str | None", found)  # (as just set, or kept)


@dataclass(frozen=True)
class Reading:
    """What `Script.run_every_engine` reached: the server launches, and the lines of the commands run."""

    launches: tuple[Launch, ...]
    visited: frozenset[int]
    writes: tuple[Write, ...] = ()
    asked: Mapping[str, object] | None = None  # the variables the run asked about, with their answers (None: all)

    def answers(self, env: Mapping[str, str]) -> bool:
        """Whether a run with `env` takes the same path (it answers every question this one asked the same)."""
        return self.asked is not None and all(env.get(k, NOT_GIVEN) == v for k, v in self.asked.items())


_HEREDOC_PARAM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


MAX_WRITTEN = 8  # texts one write is expanded to


def _param(m: re.Match[str], values: Mapping[str, tuple[Alt, ...]], absent: set[str]) -> str:
    """One `$NAME` / `${NAME}` / `${NAME:-default}` of a heredoc body, from a variable of one known text (a
    variable the script never set takes the default)."""
    name = m.group(1) or m.group(3)
    alts = values.get(name)
    if alts is not None and len(alts) == 1 and isinstance(alts[0], str) and UNKNOWN not in alts[0] and alts[0]:
        return alts[0]
    if name in absent and m.group(2) is not None:
        return str(m.group(2))
    return str(m.group(0))


def _no_call(values: list[str | None]) -> bool:
    """The reader's watch: it records no call; of the commands it neither runs nor launches it reads the names
    only (`Interpreter._reads_for_engines` says which others it reads)."""
    return False


_no_call.first_field_only = True  # type: ignore[attr-defined]  # (as `reads_first_field` marks a watch)


class Script:  # cached_property here: a reading of what it was built from, which never changes
    """A bash script, parsed once, then read two ways.

    As a program: `launches(env)`, `trace(...)` and `exports()` run the interpreter over its statements.
    As lines: `lines`, `commands`, `assignments`, `functions`, `simple_commands` and `array_items`, for
    checks that look for settings with patterns. Both come from the one syntax tree, so quoting, comments,
    heredocs and `$(...)` mean the same to every reader.

    Lines are those of `str.splitlines`, so their numbers are the diff's. With `embedded`, the text is
    shell inside YAML (a workflow's `run:` blocks): each line is parsed on its own, since YAML text
    around the commands may hold quotes that do not pair up, and a heredoc ends at a line that is its
    delimiter once indentation is stripped (YAML removes the block's indentation before bash reads it).
    """

    def __init__(self, text: str, embedded: bool = False):
        self.raw = text.splitlines()
        self.embedded = embedded
        self.mark = fingerprint(text)  # for `checks.progress`, while the interpreter runs it
        self._read = read(text, embedded) if len(text) <= MAX_SCRIPT else (
            read_lines(self.raw, True) if embedded else read_whole(self.raw))
        self.statements = self._read.statements
        self._runs: dict[tuple[object, ...], list[tuple[Given, dict[str, bool | None], object]]] = {}
        self._shared: dict[int, _Plan] = {}  # what the interpreter reads of a statement alone, for every run (`_Plan`s)

    @property
    def unread(self) -> tuple[tuple[int, int], ...]:
        """(first, last) lines whose commands no reader saw: past the read cut (`MAX_SCRIPT` characters), or
        lines tree-sitter could not read (nesting deeper than `MAX_NESTING`, or past its read budget). What
        they run is not known: a check that depends on it cannot pass."""
        return self._read.unread

    # --- as a program ---
    def launches(self, env: Mapping[str, str] | None = None) -> tuple[Launch, ...]:
        """Every vLLM/SGLang server launch the script reaches with `env` as the known variables.

        Functions the script defines but never calls are run last, so a launch
        wrapped in an uncalled helper is still found.
        """
        if not self._may_launch:
            return ()
        known = dict(env or {})
        found = self._reuse(("launches",), known, None)
        if isinstance(found, tuple):  # (what `launches` kept)
            return found
        interp = Interpreter(known, shared=self._shared)
        self._run(interp, uncalled=True)
        return self._keep(("launches",), interp, {}, tuple(dict.fromkeys(interp.launches)))

    def trace(self, env: Mapping[str, str] | None = None, path: str = "",
              watch: Callable[[list[str | None]], bool] = lambda values: False,
              exists: Callable[[str], bool | None] | None = None, uncalled: bool = True,
              defaults: bool = False) -> Trace:
        """Run the script with `env` as the known variables (and `path` as `$0`), as `launches` does, and also
        follow `eval`, `bash -c` strings and the bodies of `$(...)`; return the launches reached, every
        command for which `watch(its field values)` is true, and every script it runs or sources.
        `exists(path)` answers file tests (`[ -f "$SCRIPT" ]`): True, False, or None where not known.
        With `uncalled`, functions the script defines but never calls are run last (as `launches` does);
        a library that is sourced is traced without (its callers call what they use). With `defaults`, `env`
        is every variable the script is given: one it neither gets nor sets takes the default the script
        gives it (`${DRAFT_PATH:-/models/x}`), as the line readers take it.

        Sourced files are not read (the caller resolves `Run.path` and traces them in turn).
        """
        known = dict(env or {})
        if path:
            known["0"] = path
        how = ("trace", watch, exists is None, uncalled, defaults)
        found = self._reuse(how, known, exists)
        if isinstance(found, Trace):  # (what `trace` kept)
            return found
        tested: dict[str, bool | None] = {}

        def test(target: str) -> bool | None:
            tested[target] = answer = exists(target) if exists is not None else None
            return answer

        interp = Interpreter(known, watch, test if exists is not None else None, defaults, self._shared)
        self._run(interp, uncalled)
        return self._keep(how, interp, tested, Trace(tuple(dict.fromkeys(interp.launches)),
                                                     tuple(dict.fromkeys(interp.calls)),
                                                     tuple(dict.fromkeys(interp.runs))))

    def run_every_engine(self, env: Mapping[str, str], path: str, exists: Callable[[str], bool | None] | None,
                         sources: Callable[[Token], tuple[str, Statements] | None] | None) -> Reading:
        """The run the speculative-decoding reader takes (`checks.facts.specmodel`): as `trace` with `defaults`, but
        every engine's server launch is recorded (TRT-LLM, ATOM too), a sourced file `sources` reads is run in
        place (its defaults, tables and helpers are the caller's), and the lines of the commands it ran are
        kept. Functions a library defines run only where called. Not reused: what `sources` reads varies."""
        known = dict(env)
        if path:
            known["0"] = path
        interp = Interpreter(known, _no_call, exists, True, self._shared, sources, every_engine=True,
                             heredoc_names=self._heredoc_names)
        progress.reading_again(self.mark)
        state = interp.run(self.statements, State({}, set()))
        for name in list(interp.funcs):
            if name not in interp.called and name not in interp.library_funcs:
                interp.call(name, state.copy() if state.alive else State({}, set()))
        return Reading(tuple(dict.fromkeys(interp.launches)), frozenset(interp.visited), tuple(interp.writes or ()),
                       None if interp.known.whole else dict(interp.known.asked))

    @cached_property
    def _heredoc_names(self) -> dict[int, tuple[str, ...]]:
        """The variables each unquoted heredoc's body uses, by the line of the command opening it."""
        out: dict[int, dict[str, None]] = {}
        for ln in self.lines:
            if ln.heredoc is not None and not ln.heredoc.quoted and not ln.heredoc.diff:
                found = out.setdefault(ln.heredoc.start, {})
                found.update(dict.fromkeys(m.group(1) or m.group(3) for m in _HEREDOC_PARAM.finditer(ln.text)))
        return {line: tuple(names) for line, names in out.items()}

    def written(self, write: Write) -> tuple[tuple[tuple[int, str], ...], ...]:
        """What `write` wrote, as (line, text) lines: the lines `echo` / `printf` printed (each on the command's
        line), or the body of the heredoc the command on `write.line` opens, variables expanded as bash expands
        them in an unquoted heredoc (`$NAME`, `${NAME}`, `${NAME:-d}`; a quoted delimiter keeps the text as
        written) from what they held there: one text per combination of the candidates branches the variables
        do not decide left (at most MAX_WRITTEN)."""
        if write.text is not None:
            return (tuple((write.line, t) for t in write.text.split("\n")),)
        body = [ln for ln in self.lines if ln.heredoc is not None and ln.heredoc.start == write.line
                and not ln.heredoc.diff]
        if not body:
            return ()
        if body[0].heredoc is not None and body[0].heredoc.quoted:
            return (tuple((ln.number, ln.text) for ln in body),)
        used = dict.fromkeys(m.group(1) or m.group(3) for ln in body for m in _HEREDOC_PARAM.finditer(ln.text))
        choices = [[(n, a) for a in dict.fromkeys(write.vars.get(n, (None,)))
                    if a is None or isinstance(a, str)] or [(n, None)] for n in used]
        absent = {n for n in used if n not in write.vars}  # neither set nor given: `${X:-d}` is d
        out = []
        for combo in itertools.islice(itertools.product(*choices), MAX_WRITTEN):
            values = {n: (a,) for n, a in combo if a is not None}
            out.append(tuple((ln.number, _HEREDOC_PARAM.sub(lambda m: _param(m, values, absent), ln.text))
                             for ln in body))
        return tuple(dict.fromkeys(out))

    def exports(self) -> tuple[tuple[str, Token], ...]:
        """The variables the script exports (a guide's env block), in the order they were set (by name within
        a line: the interpreter keeps them in a set)."""
        state = Interpreter({}).run(self.statements, State({}, set()))
        out = []
        for name in sorted(state.exported, key=lambda n: (state.vars[n].line if n in state.vars else 0, n)):
            binding = state.vars.get(name)
            if binding is not None:
                out.append((name, exported_token(binding)))
        return tuple(out)

    def _reuse(self, how: tuple[object, ...], known: Mapping[str, str], exists: Callable[[str], bool | None] | None
               ) -> object:
        """The result of an earlier run (`how`: launches, or trace with its settings) whose every question
        `known` and `exists` answer as they answered it then; None when there is none. A script is often
        run again with variables it never reads (a patch script reached from each point of a config)."""
        for given, tested, result in self._runs.get(how, ()):
            if given.answers(known) and all(exists is not None and exists(target) == answer
                                            for target, answer in tested.items()):
                return result
        return None

    def _keep(self, how: tuple[object, ...], interp: Interpreter, tested: dict[str, bool | None], result: R) -> R:
        """`result` of `interp`'s run, kept for `_reuse` unless it depends on every variable."""
        if not interp.known.whole:
            self._runs.setdefault(how, []).append((interp.known, tested, result))
        return result

    @cached_property
    def _may_launch(self) -> bool:
        """Whether `launches` may find a launch for some env (`may_launch_untraced`): a script whose commands
        cannot launch, as many a changed helper script, is not run at all."""
        return may_launch_untraced(self.statements)

    def _run(self, interp: Interpreter, uncalled: bool) -> None:
        progress.reading_again(self.mark)
        state = interp.run(self.statements, State({}, set()))
        for name in list(interp.funcs) if uncalled else ():
            if name not in interp.called:
                interp.call(name, state.copy() if state.alive else State({}, set()))

    # --- as lines ---
    @cached_property
    def lines(self) -> tuple[ShellLine, ...]:
        """Every line, classified: code without comments, heredoc bodies, variables expanded."""
        return physical(self.raw, self._read, self.embedded, self._expand_line)

    @cached_property
    def commands(self) -> tuple[ShellCommand, ...]:
        """The logical lines outside heredoc bodies that hold code."""
        return logical(self.lines, self._read)

    @cached_property
    def assignments(self) -> tuple[Assignment, ...]:
        """Every variable the script sets, anywhere (in functions, branches, loops), in order."""
        out: list[Assignment] = []
        for node in walk(self.statements):
            if not isinstance(node, Simple):
                continue
            declares = bool(node.words) and node.words[0].unquoted_literal in DECLARATIONS
            if not node.words or declares:
                out.extend(Assignment(name, scalar.line if scalar is not None else node.line, scalar, array, append)
                           for name, append, scalar, array in node.assigns)
            for w in node.words[1:] if declares else ():
                found = assignment(w)
                if found is not None:
                    name, append, value = found
                    out.append(Assignment(name, w.line, value, None, append))
        return tuple(out)

    @cached_property
    def functions(self) -> dict[str, tuple[ShellLine, ...]]:
        """The lines of each function the script defines (its last definition), from `name() {` to `}`."""
        return {node.name: self.lines[node.line - 1:node.end] for node in walk(self.statements)
                if isinstance(node, Func)}

    @cached_property
    def simple_commands(self) -> tuple[SimpleCommand, ...]:
        """Every simple command of the script, in the order written (inside functions, branches and loops
        too), with its words and redirections as `SimpleCommand` gives them."""
        out: list[SimpleCommand] = []
        stack: list[tuple[Iterator[Statement | None], str]] = [(iter(self.statements), "")]
        while stack:
            node = next(stack[-1][0], _END)
            if node is _END:
                stack.pop()
                continue
            function = stack[-1][1]
            if not isinstance(node, Simple):  # (a simple command holds no other: nothing to go into)
                if node is not None:
                    statement = cast(Statement, node)  # (neither the end nor None)
                    stack.append((iter(children(statement)), node.name if isinstance(node, Func) else function))
                continue
            if node.words or node.redirects:
                words: list[str] = []
                quoted: list[bool] = []
                subs: list[str] = []
                for w in node.words:
                    parts = w.parts
                    if len(parts) == 1 and parts[0].kind == "lit":  # most words
                        words.append(parts[0].text)
                        quoted.append(parts[0].quoted)
                        continue
                    words.append(self.text_of(parts))
                    quoted.append(bool(parts) and all(p.quoted for p in parts))
                    subs.extend(p.text for p in parts if p.kind == "cmd")
                for _op, target in node.redirects:
                    subs.extend(p.text for p in target.parts if p.kind == "cmd")
                redirects = tuple((op, self.text_of(t.parts)) for op, t in node.redirects) if node.redirects else ()
                out.append(SimpleCommand(node.line, tuple(words), tuple(quoted), redirects, function, tuple(subs)))
        return tuple(out)

    def text_of(self, parts: tuple[Part, ...]) -> str:
        """A word's text: variables the script fixes substituted, anything else as written."""
        if len(parts) == 1 and parts[0].kind == "lit":  # most words
            return parts[0].text
        out = []
        for p in parts:
            if p.kind == "lit":
                out.append(p.text)
                continue
            value = self._fixed.expansion(p)
            out.append(value if value is not None and len(value) <= MAX_RESOLVED else as_written((p,)))
        return "".join(out)

    def value_of(self, a: Assignment) -> str | None:
        """The value an assignment gives, variables the script fixes expanded (others kept as written); None
        for an array, or a value a command substitution or undecidable arithmetic makes unknown."""
        return self._fixed.render(a.value.parts, a.name) if a.value is not None and not a.append else None

    def array_items(self, name: str) -> tuple[str, ...]:
        """The items of every `name=(...)` / `name+=(...)`, with the variables the script fixes expanded."""
        return tuple(self._fixed.render(w.parts) or as_written(w.parts)
                     for a in self._fixed.assigned.get(name, ()) if a.items is not None for w in a.items)

    @cached_property
    def _fixed(self) -> FixedValues:
        assigned: dict[str, list[Assignment]] = {}
        for a in self.assignments:
            assigned.setdefault(a.name, []).append(a)
        return FixedValues(assigned)

    def _expand_line(self, code: str, refs: list[tuple[int, int, Part]]) -> str:
        """`code` with its expansions replaced where their value is fixed (values put on one line)."""
        fixed = self._fixed
        out: list[str] = []
        at = added = 0
        for begin, end, part in refs:
            value = fixed.expansion(part) if end <= len(code) else None
            if value is None or added + len(value) > MAX_RESOLVED or len(value) > fixed.room:
                continue
            added += len(value)
            fixed.room -= len(value)
            out += (code[at:begin], value.replace("\n", " "))
            at = end
        out.append(code[at:])
        return "".join(out)
