"""Running a script without running anything: a small, total interpreter over its statements.

It follows assignments, arrays, `export`, `if`/`case`/loops, functions, `&&`/`||`, `cd`, and records the
server launches, the commands a caller watches for, and the scripts run, it reaches. Variables the
runner gives (`known`) are known; any other variable the script does not assign is unknown, and a
condition on an unknown value runs both branches, a variable they set differently keeping every
candidate value. Work, nesting and recursion are capped.
"""

from __future__ import annotations

import fnmatch
import itertools
import posixpath
import re
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterator, Mapping, NamedTuple, TypeVar, cast

from checks import memo

from .builtins import CALCULATORS, UNKNOWN, calculate, decided, lone_command, pure_output, test
from .commands import ENGINE_COMMANDS, engine_launch_at, launch_at, may_become_launch, may_launch, may_run, run_at
from .reading import statements
from .record import record
from .syntax import AndOr, Case, Func, Group, If, Loop, Not, Simple, Statement, Statements, walk
from .tree import MAX_SCRIPT
from .values import MAX_ALTS, UNSET, Alt, Evaluator, Hole, Token, Value, dedupe, mark
from .words import Part, Word, assignment, is_name

_MAX_STEPS = 50_000
T = TypeVar("T")
_OUT = "\x00out"  # inside `$(...)`: what its body has printed so far (a variable no script can name)
_IMPURE = "\x00impure"  # set when the body of a `$(...)` ran a command whose output is not known
_ELEMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[([^\]\x00]+)\]=(.*)", re.S)  # `T[k]=v`
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_EXPORT_FLAG = re.compile(r"-[a-zA-Z]*x[a-zA-Z]*")  # `declare -x`, `-gx`, ...
DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})  # builtins taking NAME=value


class _NotGiven(Enum):
    NOT_GIVEN = "not given"


NOT_GIVEN = _NotGiven.NOT_GIVEN  # what `Given` records for a variable the runner does not give
Sources = Callable[[Token], "tuple[str, Statements] | None"]  # a sourced file's (path, statements), or None
_BUILTINS = DECLARATIONS | {"unset", "exit", "return", "true", ":", "false", "[", "test", "[["}  # `simple` runs these


def reads_first_field(watch: Callable[[list[str | None]], bool]) -> Callable[[list[str | None]], bool]:
    """Declare that `watch` reads a command's first field only: a trace then leaves the other words of a
    command it does not otherwise read unexpanded (`Interpreter.reads_no_fields`)."""
    watch.first_field_only = True  # type: ignore[attr-defined]  # (a mark on the function, read by `getattr`)
    return watch


def reads_call_names(watch: Callable[[list[str | None]], bool]) -> Callable[[list[str | None]], bool]:
    """Declare that the caller reads of the calls `watch` selects their first word and line only: a trace then
    records each with its first word alone (`Interpreter._call`)."""
    watch.call_names_only = True  # type: ignore[attr-defined]  # (as above)
    return watch


def _substitutes(parts: tuple[Part, ...]) -> bool:
    """Whether a word holds a command substitution (also inside `${X:-$(...)}`): expanding it may run code."""
    for p in parts:
        if p.kind == "cmd" or p.arg and _substitutes(p.arg):
            return True
    return False


@memo.reading(maxsize=1024)
def _by_name(command: str | None) -> tuple[bool, bool, bool, bool]:
    """What `Interpreter.reads_no_fields` knows of a command from its name: whether it is a declaration;
    none of the builtins `simple` runs (an array element's assignment, `T[k]=v`, is one), no launch; no script
    run (`run_at`), `eval` or `cd`; `echo`/`printf`."""
    element = command is not None and "[" in command and _ELEMENT.fullmatch(command) is not None
    return (command in DECLARATIONS, command not in _BUILTINS and not element and not may_launch(command),
            not may_run(command) and command not in ("eval", "cd"), command in ("echo", "printf"))


def _literal(word: Word) -> str | None:
    """The one field a word of literal text alone gives, its text; None for any other word (an empty one too)."""
    parts = word.parts
    if len(parts) == 1:  # most words
        return parts[0].text or None if parts[0].kind == "lit" else None
    if not all(p.kind == "lit" for p in parts):
        return None
    return "".join(p.text for p in parts) or None


# What `declare` reads of one word: its `assignment` or None, the name it sets or marks, whether that is a name, its line
Declared = tuple[tuple[str, bool, Word] | None, str, bool, int]


def _declared(node: Simple, command: str | None) -> tuple[bool, tuple[Declared, ...]]:
    """What `declare` reads of a declaration's words after the first, which its runs do not change: whether it
    exports, and each word as (its `assignment` or None, the name it sets or marks, whether that is a name,
    its line)."""
    export = command == "export" or any(
        w.unquoted_literal and _EXPORT_FLAG.fullmatch(w.unquoted_literal) for w in node.words[1:])
    words: list[Declared] = []
    for w in node.words[1:]:
        found = assignment(w)
        name = found[0] if found is not None else w.unquoted_literal or ""
        words.append((found, name, is_name(name), w.line))
    return export, tuple(words)


def may_launch_untraced(nodes: Statements) -> bool:
    """Whether running `nodes` without tracing may record a launch, for some runner variables: False when
    no simple command may be one. Without tracing only the script's own commands run (a string run as
    code, `$(...)` included, is not), and `simple` records a launch only where `launch_at` finds one in
    the fields of a command's words. A word of literal text is one field, its text; so the words before
    a command's first other word give its first fields, which may rule a launch out (`may_become_launch`)
    whatever that word expands to; when every word is literal, they are all its fields."""
    for node in walk(nodes):
        if type(node) is not Simple or not node.words:
            continue
        first = _literal(node.words[0])
        if first is None:
            return True
        if not may_launch(first if first.strip(UNKNOWN) else None):  # most commands
            continue
        fields: list[str | None] = []
        for w in node.words:
            text = _literal(w)
            if text is None:
                break
            fields.append(text if text.strip(UNKNOWN) else None)
        else:
            if launch_at(fields) is not None:
                return True
            continue
        if may_become_launch(fields):
            return True
    return False


@record
class Binding(NamedTuple):
    """What a variable holds: every assignment and merge builds one (a record: built as cheaply as a tuple)."""

    alts: tuple[Alt, ...]  # each: str | None (unknown) | tuple[Token, ...] (array) | UNSET
    line: int


class _Plan:
    """What `simple` reads of a simple command alone: worked out once per statement for every run of a Script
    (`Interpreter.shared`)."""

    __slots__ = ("node", "command", "by_name", "declared", "substitutes")

    def __init__(self, node: Simple):
        parts = node.words[0].parts
        command = parts[0].text if len(parts) == 1 and parts[0].kind == "lit" and parts[0].text.strip(UNKNOWN) \
            else None
        self.node = node
        self.command = command  # its first word when that is literal text (a name), else None
        self.by_name = _by_name(command)
        self.declared = _declared(node, command) if command in DECLARATIONS else None  # what `declare` reads
        self.substitutes: bool | None = None  # a word after the first holds a `$(...)`; None: not asked yet


@dataclass
class State:
    vars: dict[str, Binding]
    exported: set[str]
    alive: bool = True

    def copy(self) -> State:
        return State(dict(self.vars), set(self.exported), self.alive)


class Given:
    """The variables the runner gives, recording each one a run asks about and what it answered. Nothing
    else of the environment reaches a run, so another run of the same script whose variables answer the
    same takes the same path to the same result (`Script` reuses it). A run that goes over every variable
    (a script it runs is passed them all) depends on all of them: `whole`. Only asking (`in`, `[]`, `get`)
    and going over them are offered, so no other read can go unrecorded."""

    def __init__(self, values: Mapping[str, str]):
        self._values = dict(values)
        self.asked: dict[str, str | _NotGiven] = {}  # name -> its value, or NOT_GIVEN
        self.whole = False

    def __contains__(self, name: str) -> bool:
        return self._ask(name) is not NOT_GIVEN

    def __getitem__(self, name: str) -> str:
        self._ask(name)
        return self._values[name]

    def get(self, name: str, default: T) -> str | T:
        value = self._ask(name)
        return default if value is NOT_GIVEN else value

    def __iter__(self) -> Iterator[str]:
        self.whole = True
        return iter(self._values)

    def _ask(self, name: str) -> str | _NotGiven:
        value = self._values.get(name, NOT_GIVEN)
        self.asked[name] = value
        return value

    def answers(self, env: Mapping[str, str]) -> bool:
        """Whether `env` answers every question this run asked as it was answered."""
        return all(env.get(name, NOT_GIVEN) == value for name, value in self.asked.items())


def merge(a: State, b: State, known: Given | Mapping[str, str]) -> State:
    """The state after a branch that may or may not have run: each variable keeps every candidate."""
    if not a.alive:
        return b
    if not b.alive:
        return a
    ours, theirs = a.vars, b.vars
    out = dict(ours)  # most variables are the same binding on both sides: kept, in the order they came
    get = ours.get
    differ = [n for n, y in theirs.items() if get(n) is not y]  # (in their order: new names come in it)
    only_ours = ours.keys() - theirs.keys()
    for name in [n for n in ours if n in only_ours] + differ if only_ours else differ:
        x, y = ours.get(name), theirs.get(name)
        if x == y:
            continue
        before = (known[name],) if name in known else (None,)
        alts = (x.alts if x else before) + (y.alts if y else before)
        out[name] = Binding(dedupe(alts), max(x.line if x else 0, y.line if y else 0))
    return State(out, a.exported | b.exported, True)


def exported_token(binding: Binding) -> Token:
    alts = binding.alts
    if len(alts) == 1 and (type(alts[0]) is str or alts[0] is None):  # most variables: one text
        return Token(cast("tuple[str | None]", alts), binding.line)  # (as just tested)
    return Token(tuple(a if isinstance(a, str) or a is None else "" for a in binding.alts), binding.line)


@dataclass(frozen=True)
class Launch:
    """A server launch the interpreter reached."""

    engine: str  # vllm | sglang (and, for a trace of every engine, trtllm | atom)
    argv: tuple[Token, ...]  # the args after `vllm serve` / `-m sglang.launch_server`
    env: tuple[tuple[str, Token], ...]  # variables the script exported (or set on the command) for it
    line: int


@dataclass(frozen=True)
class Write:
    """A file a script writes from a heredoc (or by `echo` / `printf`): where (its candidates), the line of the
    command, and what each variable held there (a heredoc's body is expanded with them)."""

    path: Token
    line: int
    vars: Mapping[str, tuple[Alt, ...]]  # the variables a heredoc's body uses that are set or given there
    text: str | None = None  # what `echo` / `printf` wrote (None: a heredoc's body, read from the script)


@dataclass(frozen=True)
class Call:
    """A command the interpreter reached that the caller watches for (`Script.trace(watch=...)`).

    `words` holds every word as written, each with its candidate texts (a word is not split into
    fields: `$FLAGS` is one word whose candidates are the values FLAGS may have there); the first only for a
    watch whose caller reads the names (`reads_call_names`).
    """

    words: tuple[tuple[str | None, ...], ...]
    line: int


@dataclass(frozen=True)
class Run:
    """Another script this one runs: `bash FILE`, `sh FILE`, `source FILE` / `. FILE`, `sbatch FILE` (also
    behind `srun`, `nohup`, `exec`, `timeout`, ...). `path` holds the candidates of FILE as written, `cwd` those
    of PWD after the script's `cd`s, `env` the variables the script runs it with (known, exported, prefixed)."""

    how: str  # bash | source | sbatch
    path: Token
    cwd: Token | None
    env: tuple[tuple[str, Token], ...]
    line: int


@dataclass(frozen=True)
class Trace:
    """What `Script.trace` reached: server launches, watched commands and scripts run."""

    launches: tuple[Launch, ...]
    calls: tuple[Call, ...]
    runs: tuple[Run, ...]


class Interpreter(Evaluator["State"]):
    """Runs statements over a `State`, recording every server launch it reaches.

    `known` are the variables the runner provides; any other variable the
    script does not assign is unknown (None).
    """

    def __init__(self, known: Mapping[str, str], watch: Callable[[list[str | None]], bool] | None = None,
                 exists: Callable[[str], bool | None] | None = None, defaults: bool = False,
                 shared: dict[int, _Plan] | None = None, sources: Sources | None = None,
                 every_engine: bool = False, heredoc_names: Mapping[int, tuple[str, ...]] | None = None):
        self.known = Given(known)
        self.sources = sources  # reads the file a `source` names, to run it in place (None: recorded only)
        self.sourcing: list[str] = []  # the files being sourced, innermost last (no file sources itself)
        self.library_funcs: set[str] = set()  # functions a sourced file defines (run only where called)
        self.visited: set[int] = set()  # the lines of the simple commands run
        self.launch_at = engine_launch_at if every_engine else launch_at  # which servers count as launches
        self.writes: list[Write] | None = [] if every_engine else None  # files written from heredocs
        self.heredoc_names = heredoc_names or {}  # line of a command opening a heredoc -> the variables its body uses
        self.shared = {} if shared is None else shared  # what is read of a statement alone, by id (`Script`'s runs share it)
        self.exists = exists
        self.defaults = defaults  # `known` is every variable the script is given: `${X:-d}` of another X is d
        self.funcs: dict[str, Statements] = {}
        self.called: set[str] = set()
        self.stack: list[str] = []
        self.args: list[tuple[Token, ...]] = []  # per active function call: its positional parameters
        self.returned: list[list[State]] = []  # per active function call: states at each `return`
        self.launches: list[Launch] = []
        self.steps = 0
        self.tracing = watch is not None  # also follow `eval`, `bash -c` and `$(...)`; record calls and runs
        self.watch = watch
        self.first_field_watch = getattr(watch, "first_field_only", False)
        self.call_names_only = getattr(watch, "call_names_only", False)
        self.calls: list[Call] = []
        self.runs: list[Run] = []
        self.nested_code = 0  # depth of strings run as code
        self.at: int | None = None  # while running a string as code: the line of the command that runs it
        self.current = 0  # the line of the simple command being run

    # --- variables ---
    def lookup(self, state: State, name: str) -> tuple[Alt, ...]:
        if name.isdigit() and name != "0" or name in ("@", "*", "#"):
            return self._positional(name)
        binding = state.vars.get(name)
        if binding is not None:
            return binding.alts
        given = self.known.get(name, NOT_GIVEN)
        return (given,) if given is not NOT_GIVEN else (None,)

    def passed(self, state: State, name: str) -> bool:
        return name in self.known or name.isdigit() or name in state.vars

    def _positional(self, name: str) -> tuple[Alt, ...]:
        """`$1`.. / `$@` / `$#` inside a function call (a script's own arguments are not known)."""
        if not self.args:
            return (None,)
        args = self.args[-1]
        if name in ("@", "*"):
            return (args,)
        if name == "#":
            return (str(len(args)),)
        n = int(name)
        return (args[n - 1].values[0] if len(args[n - 1].values) == 1 else None,) if n <= len(args) else ("",)

    def words(self, state: State, parts: tuple[Part, ...]) -> list[str | None]:
        """Candidates of a word as one string, unknown parts marked."""
        return self.text(state, parts, mark)

    def run_substitution(self, state: State, text: str) -> tuple[str | None, ...]:
        """When tracing, the body of a `$(...)` is run in a subshell (a copy of the state): the scripts and
        commands it reaches are recorded, and what its `echo`s and `printf`s print is its value when nothing
        else in it prints (`$(f 2)` of a function that echoes its result, `$([[ $X ]] && printf a || printf
        b)`)."""
        if not self.tracing:
            return (None,)
        if state.alive and self.nested_code < 4 and self.first_field_watch and self._runs_quietly(lone_command(text)):
            self.steps += 1  # what running the body comes to, without parsing it: `node` runs its one command,
            if self.steps > _MAX_STEPS:  # which `simple` leaves to `_other`, which makes the output unknown
                return ("",)
            self.current = 1
            return (None,)
        inner = state.copy()
        inner.vars[_OUT] = Binding(("",), 0)
        after = self.subshell(inner, text, self.current, inline=True)
        if after.vars.get(_IMPURE) is not None or _OUT not in after.vars:
            return (None,)
        return tuple(a.rstrip("\n") if isinstance(a, str) else None for a in after.vars[_OUT].alts)

    def _runs_quietly(self, command: str | None) -> bool:
        """Whether a body of one command named `command`, with no `$(...)` in its words (`lone_command`), does
        nothing when run inside `$(...)` by a trace whose watch reads the first field only, but make the output
        unknown: `reads_no_fields` leaves it to `_other`, and the watch does not select it."""
        if command is None:
            return False
        declares, plain, quiet, prints = _by_name(command)
        if self.writes is not None and command.rsplit("/", 1)[-1] in CALCULATORS:
            return False  # the reader works out arithmetic handed to awk / bc / python
        return plain and quiet and not prints and command not in self.funcs and not (
            self.watch is not None and self.watch([command]))

    def _calculate(self, state: State, values: list[str | None], node: Simple) -> bool:
        """Inside `$(...)`: what awk, bc or `python3 -c` prints for arithmetic on literals (`calculate`), which
        replaces the output so far when it reads it (`echo "$AL - 1" | bc`, `bc <<< "$AL - 1"`); False when it
        cannot be worked out."""
        if None in values:
            return False
        before = state.vars[_OUT]
        stdin = before.alts[0] if len(before.alts) == 1 and isinstance(before.alts[0], str) else None
        here = next((w for op, w in node.redirects if op == "<<<"), None)
        if here is not None:
            texts = self.words(state, here.parts)
            stdin = texts[0] + "\n" if len(texts) == 1 and isinstance(texts[0], str) else None
            before = Binding(("",), before.line)
        out = calculate([v for v in values if v is not None], stdin)
        if out is None:
            return False
        reads = (values[0] or "").rsplit("/", 1)[-1] == "bc"
        printed = before.alts[0] if isinstance(before.alts[0], str) else ""
        state.vars[_OUT] = Binding((out + "\n" if reads else printed + out + "\n",), before.line)
        return True

    def _print(self, state: State, fields: list[Token]) -> None:
        """Inside `$(...)`: what an `echo` / `printf` adds to the substitution's output."""
        combos = itertools.islice(itertools.product(*(t.values for t in fields)), MAX_ALTS)
        outs = [None if None in combo else pure_output(list(cast("tuple[str, ...]", combo))) for combo in combos]
        outs = [None if o is None else o + ("\n" if fields[0].first == "echo" else "") for o in outs]
        before = state.vars[_OUT]
        alts = [None if a is None or not isinstance(a, str) or o is None else a + o for a in before.alts for o in outs]
        state.vars[_OUT] = Binding(dedupe(alts), before.line)

    def subshell(self, state: State, text: str | None, line: int, inline: bool = False) -> State:
        """Run a string as shell code: in `state` itself (`eval`) or in a copy (`bash -c`, `$(...)`)."""
        if text is None or self.nested_code >= 4 or len(text) > MAX_SCRIPT // 4:
            return state
        self.nested_code += 1
        outer, self.at = self.at, self.at or line
        try:
            after = self.run(statements(text), state if inline else state.copy())
        finally:
            self.nested_code -= 1
            self.at = outer
        if not inline:
            return state
        after.alive = True
        return after

    # --- execution ---
    def run(self, nodes: Statements, state: State) -> State:
        for node in nodes:
            if not state.alive:
                break
            state = self.node(node, state)[1]
        return state

    def node(self, node: Statement, state: State) -> tuple[bool | None, State]:
        """Execute `node`: (its exit status as True/False, None when unknown; the state after it)."""
        self.steps += 1
        if self.steps > _MAX_STEPS:
            return None, state
        if isinstance(node, Simple):
            return self.simple(node, state)
        if isinstance(node, AndOr):
            return self.and_or(node, state)
        if isinstance(node, Not):
            status, state = self.node(node.node, state)
            return (None if status is None else not status), state
        if isinstance(node, If):
            return None, self.if_(node.clauses, node.orelse, state)
        if isinstance(node, Case):
            return None, self.case(node, state)
        if isinstance(node, Loop):  # runs zero or more times: both
            return None, merge(self.run(node.body, state.copy()), state, self.known)
        if isinstance(node, Group):
            status = True
            for child in node.body:
                if not state.alive:
                    break
                status, state = self.node(child, state)
            return status, state
        if isinstance(node, Func):
            self.funcs[node.name] = node.body
            if self.sourcing:
                self.library_funcs.add(node.name)
            return True, state
        return None, state

    def if_(self, clauses: tuple[tuple[Statements, Statements], ...], orelse: Statements, state: State) -> State:
        if not clauses:
            return self.run(orelse, state)
        (cond, body), rest = clauses[0], clauses[1:]
        status: bool | None = True
        for node in cond:
            status, state = self.node(node, state)
        if status is True:
            return self.run(body, state)
        if status is False:
            return self.if_(rest, orelse, state)
        # undecided: the body runs on a copy, the rest on `state` itself (as when decided; no one reads it after)
        return merge(self.run(body, state.copy()), self.if_(rest, orelse, state), self.known)

    def case(self, node: Case, state: State) -> State:
        subject = self.expand(state, node.word, split=False)
        values = tuple(decided(v) for v in subject[0].values) if subject else ("",)
        patterns_of = [[decided(v) for pat in patterns for t in self.expand(state, pat, split=False)
                        for v in t.values] for patterns, _body in node.items]
        branches: list[State] = []
        for (patterns, body), texts in zip(node.items, patterns_of):
            per_value = set()
            for value in values:
                hits = {None if value is None or text is None else fnmatch.fnmatchcase(value, text)
                        for text in texts}
                per_value.add(True if True in hits else (None if None in hits else False))
            if per_value == {True}:
                branches.append(self.run(body, state.copy()))
                break
            if per_value != {False}:
                branches.append(self.run(body, state.copy()))
        else:
            branches.append(state.copy())  # no item matched (for some candidate)
        out = branches[0]
        for other in branches[1:]:
            out = merge(out, other, self.known)
        return out

    def and_or(self, node: AndOr, state: State) -> tuple[bool | None, State]:
        status, state = self.node(node.first, state)
        for op, nxt in node.rest:
            if not state.alive:
                break
            if status is None:
                _s, after = self.node(nxt, state.copy())
                state = merge(after, state, self.known)
            elif status is (op == "&&"):
                status, state = self.node(nxt, state)
        return status, state

    def simple(self, node: Simple, state: State) -> tuple[bool | None, State]:
        self.current = node.line
        self.visited.add(node.line)
        if not node.words:
            for name, append, scalar, array in node.assigns:
                self.assign(state, name, append, scalar, array, node.line)
            return True, state
        first = node.words[0]
        plan = self._plan(node)
        command = plan.command
        if command is not None:  # most commands: a name
            if self.reads_no_fields(command, node, state, plan):
                return (True, self.declare(node, state, command, plan)) if plan.declared is not None else \
                    self._other(node, state, command)
            split = command != "[[" or first.parts[0].quoted
            fields: list[Token] = [Token((command,), first.line)]  # (what `expand` makes of the word)
            for w in node.words[1:]:
                fields.extend(self.expand(state, w, split=split))
        else:
            split = first.unquoted_literal != "[["
            fields = self.expand(state, first, split=split)
            if not (fields and self.reads_no_fields(fields[0].first, node, state)):
                for w in node.words[1:]:
                    fields.extend(self.expand(state, w, split=split))
        values = [t.values[0] if t.values else None for t in fields]  # (each `first`)
        command = values[0] if values else None
        element = _ELEMENT.fullmatch(command) if command and "[" in command and len(values) == 1 else None
        if element is not None:  # `T[k]=v`: an array's element (tree-sitter reads it as a command word)
            key = element.group(2).strip("'\"")
            state.vars[f"{element.group(1)}[{key}]"] = Binding((element.group(3),), node.line)
            return True, state
        if command in DECLARATIONS:
            return True, self.declare(node, state, command)
        if command == "unset":
            for unset in values[1:]:
                if unset and is_name(unset):
                    state.vars[unset] = Binding((UNSET,), node.line)
                    state.exported.discard(unset)
            return True, state
        if command == "exit":
            state.alive = False
            return False, state
        if command == "return" and self.returned:
            self.returned[-1].append(state.copy())
            state.alive = False
            return None, state
        if self.writes is not None and command in ("printf", "read") and self._assigns(node, state, values):
            return True, state
        if command in ("true", ":"):
            return True, state
        if command == "false":
            return False, state
        if command in ("[", "test", "[["):
            args = fields[1:]
            if args and args[-1].first in ("]", "]]"):
                args = args[:-1]
            return test([t.values for t in args], command == "[[", self.exists, MAX_ALTS * 4), state
        if command in self.funcs and command not in self.stack:
            if self.watch is not None and self.watch(values):
                self.calls.append(self._call(node, state))
            return None, self.call(command, state, tuple(fields[1:]))
        if self.writes is not None and node.redirects:
            self._heredoc_write(node, state, values)
        found = self.launch_at(values)
        if found is not None:
            self.launches.append(self._launch(node, state, fields, *found))
        if not self.tracing:
            return None, state
        if _OUT in state.vars:  # inside `$(...)`
            if command in ("echo", "printf") and len(fields) > (command == "printf"):
                self._print(state, fields)
                return True, state
            if command is not None and command.rsplit("/", 1)[-1] in CALCULATORS and self._calculate(state, values,
                                                                                               node):
                return True, state
            if command not in ("eval", "cd"):
                state.vars[_IMPURE] = Binding(("1",), node.line)
        if self.watch is not None and self.watch(values):
            self.calls.append(self._call(node, state))
        if command == "eval":
            return None, self.subshell(state, " ".join(UNKNOWN if t.first is None else t.first for t in fields[1:]),
                                       node.line, inline=True)
        if command == "cd" and len(fields) > 1:
            self._cd(state, fields[1], node.line)
            return None, state
        ran = run_at(values)
        if ran is not None:
            how, at = ran
            if how == "source" and self.sources is not None:
                state = self._source(state, fields[at], node.line)
            if how == "-c":
                self.subshell(state, values[at], node.line)
            else:
                env = dict(self._env(node, state, fields, at))
                for name in self.known:
                    env.setdefault(name, Token((self.known[name],), 0))
                cwd = state.vars.get("PWD")
                self.runs.append(Run(how, fields[at], Token(tuple(a if isinstance(a, str) else None for a in cwd.alts),
                                                            cwd.line) if cwd else None,
                                     tuple(sorted(env.items())), self.at or node.line))
        return None, state

    def _source(self, state: State, target: Token, line: int) -> State:
        """`source FILE` run in place, when `sources` reads FILE: its assignments, exports and functions are the
        caller's from there on (a library's defaults, tables and helpers)."""
        if len(self.sourcing) >= 4 or self.sources is None:  # (`simple` sources only with `sources`)
            return state
        found = self.sources(target)
        if found is None or found[0] in self.sourcing:
            return state
        path, nodes = found
        self.sourcing.append(path)
        try:
            after = self.run(nodes, state)
        finally:
            self.sourcing.pop()
        after.alive = True  # a `return` / `exit` at a library's top level ends the sourcing only
        return after

    def _heredoc_write(self, node: Simple, state: State, values: list[str | None]) -> None:
        """A file the command writes that an engine may read as its options: `cat > FILE <<EOF` / `tee FILE
        <<EOF` (the body is expanded with the variables of that moment), `echo ... > FILE` / `printf ... >
        FILE` (what it prints)."""
        name = (values[0] or "").rsplit("/", 1)[-1] if values else ""
        heredoc = any(op.startswith("<<") and op != "<<<" for op, _w in node.redirects)
        targets = [w for op, w in node.redirects if op in (">", ">>", ">|")]
        token = None
        if name == "tee" and heredoc:
            token = next((Token((v,), node.line) for v in values[1:] if v and not v.startswith("-")), None)
        elif targets and (name == "cat" and heredoc or name in ("echo", "printf") and len(values) > 1):
            token = Token(tuple(self.words(state, targets[-1].parts)), node.line)
        if token is None:
            return
        text = None
        if not heredoc:
            if None in values:
                return
            text = pure_output([v for v in values if v is not None])
            if text is None or UNKNOWN in text:
                return
        names = self.heredoc_names.get(node.line, ()) if heredoc else ()
        held = {n: self.lookup(state, n) for n in names if self.passed(state, n)}
        if self.writes is not None:  # (`simple` asks only then)
            self.writes.append(Write(token, node.line, held, text))

    def _other(self, node: Simple, state: State, command: str) -> tuple[bool | None, State]:
        """What `simple` does with a command named by a literal word whose other words it reads none of
        (`reads_no_fields`) and that is no declaration: nothing but, when tracing, record it for the watch
        and, inside `$(...)`, mark the output unknown (`reads_no_fields` ruled out all else it reads)."""
        if not self.tracing:
            return None, state
        if _OUT in state.vars:
            state.vars[_IMPURE] = Binding(("1",), node.line)
        if self.watch is not None and self.watch([command]):
            self.calls.append(self._call(node, state))
        return None, state

    def reads_no_fields(self, command: str | None, node: Simple, state: State, plan: _Plan | None = None) -> bool:
        """Whether `simple` needs no field of a command beyond its first (`command`), so its other words are
        left unexpanded (the runner's variables they would ask about are not asked, so `Given` still records
        what the run depends on): for a declaration (`declare` reads its words itself) and for any command
        that is no builtin `simple` runs, no function and no launch (`launch_at` reads the fields of those
        only). When tracing, also only if expanding has no effect (no word holds a `$(...)`, which is run) and,
        but for a declaration, the watch reads the first field only (`reads_first_field`) and the command is
        none that tracing reads: no script run (`run_at`), `eval`, `cd`, or inside `$(...)` `echo`/`printf`."""
        plan = plan or self._plan(node)  # (`plan`: the node's, when the caller has it)
        declares, plain, quiet, prints = plan.by_name if command == plan.command else _by_name(command)
        if not (declares or plain and command not in self.funcs):
            return False
        if self.writes is not None and self._reads_for_engines(command, node, state):
            return False
        if not self.tracing:
            return True
        if plan.substitutes is None:
            plan.substitutes = any(_substitutes(w.parts) for w in node.words[1:])
        if plan.substitutes:
            return False
        return declares or (self.first_field_watch and quiet and not (prints and _OUT in state.vars))

    def _assigns(self, node: Simple, state: State, values: list[str | None]) -> bool:
        """For the reader: `printf -v NAME FMT ARGS...` and `read [-r] NAME... <<< WORD` assign what they print /
        read (an argument not known: unknown). False for any other form."""
        if values[0] == "printf":
            if len(values) < 4 or values[1] != "-v" or not values[2] or not is_name(values[2]):
                return False
            out = pure_output(["printf", *cast("list[str]", values[3:])]) if None not in values[3:] else None
            state.vars[values[2]] = Binding((None if out is None or UNKNOWN in out else out,), node.line)
            return True
        here = next((w for op, w in node.redirects if op == "<<<"), None)
        names = [v for v in values[1:] if v != "-r"]
        if here is None or not names or not all(n and is_name(n) for n in names):
            return False
        texts = self.words(state, here.parts)
        text = texts[0] if len(texts) == 1 and isinstance(texts[0], str) and UNKNOWN not in texts[0] else None
        fields = text.split(None, len(names) - 1) if text is not None else []
        for i, name in enumerate(cast("list[str]", names)):  # (names: tested just above)
            state.vars[name] = Binding((None if text is None else fields[i] if i < len(fields) else "",), node.line)
        return True

    def param(self, env: State, part: Part, hole: Hole) -> tuple[Value, ...]:
        """A parameter expansion; for the reader, `${NAME:=word}` / `${NAME=word}` also assign NAME where they
        give the word (NAME unset or, with `:=`, empty), as bash does."""
        out = super().param(env, part, hole)
        if self.writes is not None and part.op in (":=", "=") and not part.subscript and is_name(part.name) \
                and isinstance(env, State):
            before = self.lookup(env, part.name)
            unset = before == (None,) and not self.passed(env, part.name) or before == (UNSET,)
            if unset or part.op == ":=" and before == ("",):
                env.vars[part.name] = Binding(tuple(out), self.current)
        return out

    def _reads_for_engines(self, command: str | None, node: Simple, state: State) -> bool:
        """What the speculative-decoding reader's run (`every_engine`) reads of a command beyond its name: a
        launch of an engine `launch_at` does not know, a file it writes (an options file), arithmetic handed to
        awk / bc / python inside `$(...)`."""
        name = (command or "").rsplit("/", 1)[-1]
        return (name in ENGINE_COMMANDS or bool(node.redirects) or name == "printf"
                or _OUT in state.vars and name in CALCULATORS)

    def _plan(self, node: Simple) -> _Plan:
        """What `simple` reads of `node` alone, read once per statement (`shared`)."""
        found = self.shared.get(id(node))
        if found is None or found.node is not node:
            found = self.shared[id(node)] = _Plan(node)
        return found

    def _cd(self, state: State, target: Token, line: int) -> None:
        """`cd DIR`: PWD becomes DIR (joined to the PWD before when DIR is relative)."""
        before = self.lookup(state, "PWD")
        alts: list[str | None] = []
        for value in target.values:
            for old in before:
                if value is not None and value.startswith(("/", UNKNOWN)):
                    alts.append(posixpath.normpath(value))
                elif value is None or not isinstance(old, str):
                    alts.append(None)
                else:
                    alts.append(posixpath.normpath(posixpath.join(old, value)))
        state.vars["PWD"] = Binding(dedupe(alts), line)

    def _call(self, node: Simple, state: State) -> Call:
        """The call `node` makes: each word's candidate texts (the first only, for a watch whose calls are read
        for their names: `reads_call_names`). Of the words left and the command's own assignments, only those
        holding a `$(...)` are worked out, in order, for what running it records (the others record nothing)."""
        read = node.words[:1] if self.call_names_only else node.words
        words = tuple(tuple(dedupe(self.words(state, w.parts))) for w in read)
        for w in node.words[len(read):]:
            if _substitutes(w.parts):
                self.words(state, w.parts)
        for _name, _append, scalar, _array in node.assigns:
            if scalar is not None and _substitutes(scalar.parts):
                self._scalar(state, scalar)
        return Call(words, self.at or node.line)

    def _launch(self, node: Simple, state: State, fields: list[Token], engine: str, start: int,
                after: int) -> Launch:
        env = self._env(node, state, fields, start)
        return Launch(engine, tuple(fields[after:]), tuple(sorted(env.items())), fields[start].line)

    def _env(self, node: Simple, state: State, fields: list[Token], start: int) -> dict[str, Token]:
        """The variables a command runs with beyond the runner's: exported ones, and its own assignments."""
        env: dict[str, Token] = {}
        for name in sorted(n for n in state.exported if n not in self.known):
            binding = state.vars.get(name)
            if binding is not None:
                env[name] = exported_token(binding)
        for name, _append, scalar, _array in node.assigns:  # `VAR=1 vllm serve ...`
            env[name] = Token(self._scalar(state, scalar), node.line)
        for t in fields[:start]:  # `env VAR=1 vllm serve ...`
            m = _ASSIGN.match(t.first or "")
            if m:
                env[m.group(1)] = Token(((t.first or "")[len(m.group(0)):],), t.line)
        return env

    def declare(self, node: Simple, state: State, command: str, plan: _Plan | None = None) -> State:
        """`export` / `declare` / `local` / `readonly`: assignments, and marks for export."""
        plan = plan or self._plan(node)
        export, words = plan.declared if command == plan.command and plan.declared is not None \
            else _declared(node, command)
        for name, append, scalar, array in node.assigns:
            self.assign(state, name, append, scalar, array, node.line)
            if export:
                state.exported.add(name)
        for found, name, exportable, line in words:
            if found is not None:
                self.assign(state, name, found[1], found[2], None, line)
            if export and exportable:
                state.exported.add(name)
        return state

    def call(self, name: str, state: State, args: tuple[Token, ...] = ()) -> State:
        if len(self.stack) >= 8:
            return state
        self.called.add(name)
        self.stack.append(name)
        self.args.append(args)
        self.returned.append([])
        try:
            out = self.run(self.funcs[name], state)
        finally:
            self.stack.pop()
            self.args.pop()
            frames = self.returned.pop()
        for back in frames:  # every `return` resumes the caller
            back.alive = True
            out = merge(out, back, self.known)
        return out

    def _scalar(self, state: State, scalar: Word | None) -> tuple[str | None, ...]:
        if scalar is None:
            return ("",)
        return tuple(self.words(state, scalar.parts))

    def assign(self, state: State, name: str, append: bool, scalar: Word | None,
               array: tuple[Word, ...] | None, line: int) -> None:
        if array and all(w.parts[0].kind == "lit" and w.parts[0].text == "[" for w in array if w.parts):
            for w in array:  # `declare -A T=([k]=v ...)`: each element a variable of its own, `T[k]`
                found = _ELEMENT.fullmatch(name + (self.text(state, w.parts, mark)[0] or "") if w.parts else "")
                if found is not None:
                    state.vars[f"{name}[{found.group(2).strip(chr(34) + chr(39))}]"] = Binding((found.group(3),), line)
            state.vars[name] = Binding(((),), line)
            return
        alts: tuple[Alt, ...]
        if array is not None:
            items: list[Token] = []
            for w in array:
                items.extend(self.expand(state, w))
            old = [a for a in self.lookup(state, name) if isinstance(a, tuple)] if append else []
            alts = tuple(o + tuple(items) for o in old) if old else (tuple(items),)
        else:
            texts = self._scalar(state, scalar)
            alts = texts
            if append:
                alts = tuple(None if o is None or a is None else (o if isinstance(o, str) else "") + a
                             for o in self.lookup(state, name) for a in texts)
        state.vars[name] = Binding(dedupe(alts), line)

