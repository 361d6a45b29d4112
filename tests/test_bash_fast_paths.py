"""The fast paths of checks/facts/bash that remain give what the general paths give: a run of literal parts as one
text (a bound as much as a speed-up: `values._literal_run`), leaving the words of a command unexpanded when the
interpreter (or a trace's watch) reads none of them, merging states by the bindings that differ, not running a
script none of whose commands can launch, not parsing a `$(...)` body that cannot be a pure builtin or that is
one quiet command, recording a call by its name when that is all the caller reads, and building a record from
the tuple of its fields (`record.builder`)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from checks.facts.bash import Script
from checks.facts.bash.builtins import PURE, UNKNOWN, lone_command, substitution_command
from checks.facts.bash.commands import launch_at, launched_at, may_become_launch, run_at, scripts_run_at
from checks.facts.bash.interpreter import (
    Binding,
    Interpreter,
    State,
    _substitutes,
    merge,
    reads_call_names,
    reads_first_field,
)
from checks.facts.bash.lines import ShellLine, _new_line
from checks.facts.bash.reading import statements
from checks.facts.bash.syntax import Simple
from checks.facts.bash.values import Evaluator, _fields, dedupe, mark, written
from checks.facts.bash.words import Part, Word, new_word

_WORDS = ["echo", "vllm", "serve", "nohup", "python3", "-m", "sglang.launch_server", "f", "export", "local",
          "declare", "unset", "[", "]", "[[", "]]", "=", "test", "true", "exit", "return", "cd", "eval", "bash",
          "run.sh", "$X", '"$Y"', "${Z:-d}", "${X%/*}", "'q'", '"a b"', "a\\ b", "--tp=8", "$(echo a)", "$((1+2))",
          "X=1", "Y=$X", "Z=(a $X)", "X+=2", "a[1]=x", "2>&1", ">", "log", "<<<", "$X/$Y/", "}", "{", "\\\n",
          "vllm serve m", "nohup vllm serve m", "timeout 5 vllm serve m", "/usr/bin/env A=1 vllm serve $X",
          "python3 -m sglang.launch_server", "export A=1 B", "local -a Z=(a $X) Y+=2", "declare -x", "readonly Q", "f() { vllm serve m; }\nf", "V=vllm\n$V serve m"]
_SEPARATORS = [" ", " ", " ", "  ", "\t", "", "\n", "; ", " && ", " || ", " | ", " \\\n  "]
_COMPOUND = ["if [ \"$X\" = 1 ]; then ", "fi\n", "else ", "f() { ", "}\n", "while true; do ", "done\n",
             "case $X in a) ", ";; esac\n"]

scripts = st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS), st.sampled_from(_COMPOUND)),
                   max_size=40).map("".join)


class _Values(Evaluator):
    """An evaluator over a plain mapping of candidates."""

    def lookup(self, env, name):
        return env.get(name, (None,))


_PIECES = st.lists(st.one_of(st.tuples(st.just("lit"), st.sampled_from(["", "a", " ", "b c ", '"', UNKNOWN]),
                                       st.booleans()),
                             st.tuples(st.just("param"), st.sampled_from(["X", "Y", "Z"]), st.booleans())),
                   min_size=1, max_size=6)


@settings(max_examples=500, deadline=None)
@given(_PIECES, st.booleans(), st.sampled_from([mark, written]))
def test_a_run_of_literal_parts_expands_as_its_parts_one_by_one(pieces, split, hole):
    evaluator = _Values()
    env = {"X": ("a b",), "Y": (None,), "Z": ("",)}  # one candidate each: the word has one expansion
    parts = tuple(Part("lit", text, quoted) if kind == "lit" else Part("param", "$" + text, quoted, name=text)
                  for kind, text, quoted in pieces)
    one_by_one = [("lit", p.text, p.quoted, p) if p.kind == "lit" else ("val", env[p.name][0], p.quoted, p)
                  for p in parts]
    assert evaluator.expand(env, Word(parts, 3), split, hole) == _fields(one_by_one, 3, split, hole)


class _Expanding(Interpreter):
    """The interpreter expanding every word of every command (no command's words left unread)."""

    def reads_no_fields(self, command, node, state, plan=None):
        return False


known_values = st.dictionaries(st.sampled_from(["X", "Y", "Z", "TP"]), st.sampled_from(["1", "a b", ""]))


def _launches(interp: Interpreter, script: Script):
    script._run(interp, uncalled=True)
    return interp.launches


@settings(max_examples=300, deadline=None)
@given(scripts, known_values)
def test_words_left_unread_change_no_launch_and_ask_nothing_more(text, known):
    script = Script(text)
    fast, general = Interpreter(known), _Expanding(known)
    assert _launches(fast, script) == _launches(general, script)
    assert set(fast.known.asked) <= set(general.known.asked)
    assert fast.run(script.statements, State({}, set())).vars == general.run(script.statements, State({}, set())).vars


_TRACED = ["$(bash run.sh)", "${Z:-$(f)}", "$(echo a; echo b)", "X=$(vllm serve m)", "source lib.sh", "sbatch $X",
           "eval $X", "eval 'vllm serve m'", "bash -c 'f'", "cd $X", "printf %s $X", "python3 $X", "client $Y"]
traced_scripts = st.lists(st.one_of(st.sampled_from(_WORDS + _TRACED), st.sampled_from(_SEPARATORS),
                                    st.sampled_from(_COMPOUND)), max_size=40).map("".join)


@reads_first_field
def _first(values):
    return bool(values) and values[0] in ("f", "python3", "client", "echo")


@settings(max_examples=300, deadline=None)
@given(traced_scripts, known_values)
def test_a_trace_whose_watch_reads_the_first_field_finds_what_expanding_every_word_finds(text, known):
    script = Script(text)
    fast, general = Interpreter(known, _first), _Expanding(known, _first)
    assert _launches(fast, script) == _launches(general, script)
    assert (fast.calls, fast.runs) == (general.calls, general.runs)
    assert set(fast.known.asked) <= set(general.known.asked)


_HEADS = st.sampled_from([[], ["docker", "run", "img"], ["docker", "run", "--entrypoint=/bin/bash", "img"],
                           ["nohup"], ["env", "A=1"], ["timeout", "5m"], ["srun", "-N", "2"]])
_ARGS = st.tuples(_HEADS, st.lists(st.one_of(st.none(), st.sampled_from(
    ["vllm", "serve", "sglang", "python3", "python3.12", "-m", "sglang.launch_server", "/usr/bin/nohup", "env",
     "A=1", "-n", "5", "2m", "timeout", "srun", "docker", "run", "--entrypoint=/bin/bash", "img", "bash", "-c",
     "sh", "source", ".", "sbatch", "job.sh", "echo", "x", ""])), max_size=5)).map(lambda t: t[0] + t[1])


@settings(max_examples=500, deadline=None)
@given(_ARGS)
def test_what_a_command_runs_is_found_as_reading_it_all_finds_it(values):
    assert run_at(values) == scripts_run_at(values)
    assert launch_at(values) == launched_at(values)


_LAUNCH_FIELDS = st.lists(st.one_of(st.none(), st.sampled_from(
    ["vllm", "/opt/bin/vllm", "serve", "x/serve", "sglang", "python3", "python", "py", "-m", "-",
     "sglang.launch_server", "vllm.entrypoints.openai.api_server", "nohup", "env", "A=1", "timeout", "5", "x", ""])),
    max_size=6)


@settings(max_examples=1000, deadline=None)
@given(_LAUNCH_FIELDS)
def test_first_fields_said_to_rule_a_launch_out_rule_it_out_whatever_follows(values):
    for n in range(len(values) + 1):
        assert may_become_launch(values[:n]) or launch_at(values) is None


_LAUNCHING = ["$V serve m", "python3 $X -m sglang.launch_server", "python -m py_compile $X", "python - $X",
              "${CMD[@]}", "CMD=(vllm serve m)", "python3 -m pip install x", "python -m $M", "nohup $X",
              "env A=1 python3 -m sglang.launch_server", "'vllm' serve", "vllm \"serve\" m", "sglang serve"]
launch_scripts = st.lists(st.one_of(st.sampled_from(_WORDS + _LAUNCHING), st.sampled_from(_SEPARATORS),
                                    st.sampled_from(_COMPOUND)), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@example('CMD=(vllm serve m)\n"${CMD[@]}"', {})
@example("python -m pip install x\npython3 - $X\n$V serve m", {"V": "vllm"})
@example("f() { python3 $X -m sglang.launch_server; }", {"X": ""})
@given(launch_scripts, st.dictionaries(st.sampled_from(["X", "Y", "Z", "V", "M", "CMD"]),
                                       st.sampled_from(["1", "a b", "", "vllm", "sglang.launch_server"])))
def test_a_script_said_to_reach_no_launch_reaches_none(text, known):
    script = Script(text)
    if not script._may_launch:
        assert _launches(Interpreter(known), script) == []
        assert script.launches(known) == ()


def _merged(a: State, b: State, known) -> dict:
    """What merging gives, name by name: a's names, then b's new ones; a name bound alike on both sides keeps
    its binding, any other gets the candidates of both (the runner's value, or unknown, where unbound)."""
    out = {}
    for name in list(a.vars) + [n for n in b.vars if n not in a.vars]:
        x, y = a.vars.get(name), b.vars.get(name)
        if x == y:
            out[name] = x
            continue
        before = (known[name],) if name in known else (None,)
        out[name] = Binding(dedupe((x.alts if x else before) + (y.alts if y else before)),
                            max(x.line if x else 0, y.line if y else 0))
    return out


_BINDINGS = st.dictionaries(st.sampled_from(["A", "B", "C", "D", "E"]),
                            st.builds(Binding, st.lists(st.sampled_from(["1", "2", None]), min_size=1,
                                                        max_size=2).map(tuple), st.sampled_from([1, 2])))


@settings(max_examples=500, deadline=None)
@given(_BINDINGS, _BINDINGS, st.dictionaries(st.sampled_from(["A", "C", "F"]), st.sampled_from(["k", ""])))
def test_merging_two_states_gives_each_variable_the_candidates_of_both(ours, theirs, known):
    a = State(dict(ours), {"A"})
    b = State({**theirs, **{n: ours[n] for n in ours if n < "C"}}, {"B"})  # some bindings the very same
    out = merge(a, b, known)
    assert list(out.vars.items()) == list(_merged(a, b, known).items())
    assert out.exported == {"A", "B"} and out.alive


_BODY_HEADS = ["echo", "printf", "dirname", "basename", " echo", "ech\\o", "echox", "grep", "X=1 echo", "if", "e"]
_BODY_PIECES = [" ", "|", "||", "|&", "a", "$X", '"', "'", "\\", "$", "x|y", '"a|b"', "'a|b'", "$'", "-n", "=", "*",
                "é", "\r", "\n", "#", "`", "$(", "${", ";", "&", "(", ")", "<", ">", "sed", "'s/[\\/:@#]/_/g'", '"$X|"']


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(_BODY_HEADS), st.lists(st.sampled_from(_BODY_PIECES), max_size=10).map("".join))
def test_a_body_left_unparsed_is_no_pure_builtin(head, rest):
    text = head + rest
    substitution_command.cache_clear()
    nodes = statements(text)
    general = (nodes[0].words if len(nodes) == 1 and isinstance(nodes[0], Simple) and not nodes[0].assigns
               and nodes[0].words and nodes[0].words[0].unquoted_literal in PURE else None)
    assert substitution_command(text) == general


_LONE_HEADS = ["grep", "seq", " stat", "f", "echo", "if", "X=1", "a-b", "python3", "eval", "cd", "bash", "vllm",
               "e\\cho", "[", "done", "é"]
_LONE_WORDS = [" ", "\t", " a", " -c", " $X", ' "$X/a b"', " 'x $Y|;'", " 2>/dev/null", " >>log", " 2>&1", " > f",
               " %s", " a=b", ' "é"']  # each ends a word
_LONE_PIECES = ['"', "'", ">", ">&", "|", ";", "&", "&&", "\n", "#", "`", "$(", "${X}", "$1", "\\", "=", "*", "(",
                ")", "<", "{", "}", "é", "!", "$", "x"]


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(_LONE_HEADS), st.lists(st.one_of(st.sampled_from(_LONE_WORDS), st.sampled_from(_LONE_WORDS),
                                                        st.sampled_from(_LONE_PIECES)), max_size=8).map("".join))
@example("grep", " ==")  # a last `==`: tree-sitter-bash reads an ERROR there, not an argument
def test_a_body_said_to_be_one_command_is_one_command_of_that_name(head, rest):
    text = head + rest
    name = lone_command(text)
    if name is None:
        return
    nodes = statements(text)
    assert len(nodes) == 1 and isinstance(nodes[0], Simple) and not nodes[0].assigns and nodes[0].line == 1
    first = nodes[0].words[0].parts
    assert len(first) == 1 and first[0] == Part("lit", name)
    assert not any(_substitutes(w.parts) for w in nodes[0].words[1:])


class _Parsing(Interpreter):
    """The interpreter parsing and running every `$(...)` body it meets."""

    def _runs_quietly(self, command):
        return False


_BODIES = ["$(grep -c x \"$X\" 2>/dev/null)", "$(seq 1 $Y)", "$(python3 $X)", "$(f)", "$(client a)", "$(echo a)",
           "$(date)", "$(cd $X)", "$(grep x | wc -l)", "$(exit 1)", "$(true)", "$(vllm serve m)", "$(bash x.sh)"]
body_scripts = st.lists(st.one_of(st.sampled_from(_WORDS + _TRACED), st.sampled_from(_BODIES),
                                  st.sampled_from(_SEPARATORS), st.sampled_from(_COMPOUND)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(body_scripts, known_values)
def test_a_body_left_unparsed_changes_nothing_a_trace_finds(text, known):
    script = Script(text)
    fast, general = Interpreter(known, _first), _Parsing(known, _first)
    assert _launches(fast, script) == _launches(general, script)
    assert (fast.calls, fast.runs, fast.steps, fast.known.asked) == (general.calls, general.runs, general.steps,
                                                                     general.known.asked)


@reads_call_names
@reads_first_field
def _first_named(values):
    return _first(values)


@settings(max_examples=300, deadline=None)
@given(body_scripts, known_values)
def test_calls_read_for_their_names_are_the_calls_with_their_first_word(text, known):
    script = Script(text)
    named, full = Interpreter(known, _first_named), Interpreter(known, _first)
    assert _launches(named, script) == _launches(full, script)
    assert [(c.words, c.line) for c in named.calls] == [(c.words[:1], c.line) for c in full.calls]
    assert (named.runs, named.steps) == (full.runs, full.steps)
    assert set(named.known.asked) <= set(full.known.asked)


@settings(max_examples=200, deadline=None)
@given(scripts)
def test_records_built_from_their_fields_are_the_records_their_classes_build(text):
    script = Script(text)
    for ln in script.lines:
        built = _new_line(tuple(ln))
        assert built == ShellLine(*ln) and type(built) is ShellLine and hash(built) == hash(ShellLine(*ln))
    for node in script.statements:
        for word in getattr(node, "words", ()):
            assert new_word(tuple(word)) == Word(*word) and type(new_word(tuple(word))) is Word
