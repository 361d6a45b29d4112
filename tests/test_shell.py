"""Reading bash scripts as lines (checks/facts/bash): comments, heredocs, logical lines and variables, as bash
reads them. The interpreter (`Script.launches`) is tested with the server args in test_serverargs."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts.bash import MAX_SCRIPT, Script, ShellLine, line_code
from checks.facts.bash.tree import parse
from checks.facts.bash.words import ansi_c


def test_comments_are_stripped_outside_quotes():
    assert line_code('echo "a # b" # trailing') == 'echo "a # b"'
    assert line_code("# whole line") == ""
    assert line_code("echo ${#ARR[@]}") == "echo ${#ARR[@]}"


def test_a_comment_starts_a_word_after_any_operator_and_not_inside_one():
    assert line_code("a|#b") == "a|"
    assert line_code("(x)#y") == "(x)"
    assert line_code("echo a#b $((16#ff))") == "echo a#b $((16#ff))"
    assert line_code('echo "$(printf "%s" "# no")" # yes') == 'echo "$(printf "%s" "# no")"'


def test_quotes_carry_over_lines_in_a_script():
    lines = Script("X='a\n# inside the quote\n'  # a comment\necho $X\n").lines
    assert [ln.code for ln in lines] == ["X='a", "# inside the quote", "'", "echo $X"]


def test_heredocs_are_marked_diff_or_python():
    text = "\n".join([
        "cat > /tmp/x.diff <<'EOF'",
        "diff --git a/vllm/x.py b/vllm/x.py",
        "EOF",
        'python3 - "$ROOT/vllm/envs.py" <<PY',
        "open(sys.argv[1], 'w').write('x')",
        "PY",
        "echo done",
    ])
    lines = Script(text).lines
    assert [ln.number for ln in lines] == list(range(1, 8))
    diff_doc = lines[1].heredoc
    assert diff_doc is not None and diff_doc.diff and not diff_doc.python
    assert (diff_doc.start, diff_doc.end) == (1, 3)
    py_doc = lines[4].heredoc
    assert py_doc is not None and py_doc.python and not py_doc.diff
    assert lines[6].heredoc is None and lines[6].code == "echo done"


def test_heredoc_terminators_are_read_as_bash_reads_them():
    """`<<` ends at a line that is exactly the delimiter, `<<-` after leading tabs; two heredocs on one line
    take their bodies in turn; a `<<` inside quotes or arithmetic opens none."""
    lines = Script("cat <<A <<-'B'\n  A\nA\n\tx\n\tB\necho \"<<C\" $((1<<2))\nrun\n").lines
    first, second = lines[1].heredoc, lines[3].heredoc
    assert first is not None and (first.start, first.end, first.delimiter, first.quoted) == (1, 3, "A", False)
    assert lines[2].heredoc is None and lines[2].code == ""
    assert second is not None and (second.end, second.delimiter, second.quoted) == (5, "B", True)
    assert [ln.heredoc for ln in lines[5:]] == [None, None]


def test_a_heredoc_inside_a_command_substitution_is_one():
    lines = Script("ROOT=$(python3 - <<'PY'\nprint('x')  # no comment)\nPY\n)\nvllm serve m\n").lines
    assert lines[1].heredoc is not None and lines[1].heredoc.python
    assert lines[1].code == "print('x')  # no comment)"
    assert lines[4].code == "vllm serve m"


def test_continuations_join_into_commands():
    cmds = Script("run_benchmark_serving \\\n  --model m \\\n  --use-chat-template\necho").commands
    assert cmds[0].line == 1 and cmds[0].end == 3 and "--use-chat-template" in cmds[0].text
    assert cmds[1].text == "echo"


def test_a_logical_line_spans_open_quotes_and_arrays_not_heredoc_bodies():
    cmds = Script("ARGS=(\n  --a  # first\n  --b\n)\ncat <<EOF | grep x\nbody\nEOF\nCFG='{\n}'\n").commands
    assert [(c.line, c.end, c.text) for c in cmds] == [
        (1, 4, "ARGS=( --a --b )"), (5, 5, "cat <<EOF | grep x"), (8, 9, "CFG='{ }'")]


def test_variables_resolve_only_when_unambiguous():
    lines = Script('N="${N:-2}"\nAL=2.51\nX=1\nX=2\n$N ${AL} $X ${Y:-7}\n').lines
    assert lines[4].expanded == "2 2.51 $X 7"


def test_variables_expand_as_bash_expands_them():
    """Not in single quotes, nor in a heredoc with a quoted delimiter; through other variables and
    arithmetic; not through a command substitution; multi-line values on one line."""
    text = "\n".join([
        "SPEC=3",
        "NEXT=$((SPEC + 1))",
        'CFG="{\\"n\\": $NEXT,',
        ' \\"m\\": \\"mtp\\"}"',
        "WHO=$(whoami)",
        "echo '$SPEC' \"$SPEC\" $CFG $WHO",
        "cat <<'EOF'",
        "$SPEC",
        "EOF",
        "cat <<EOF",
        "'$SPEC'",
        "EOF",
    ])
    lines = Script(text).lines
    assert lines[5].expanded == "echo '$SPEC' \"3\" {\"n\": 4,  \"m\": \"mtp\"} $WHO"
    assert lines[7].expanded == "$SPEC"
    assert lines[10].expanded == "'3'"


def test_assignments_and_arrays():
    script = Script("export A=1 B\nlocal C=\"x y\"\nD=2 cmd\nf() { E=$(nproc); }\nARGS=(--x \"$A\")\nARGS+=(--y)\n")
    assert [(a.name, a.line, a.text) for a in script.assignments] == [
        ("A", 1, "1"), ("C", 2, "x y"), ("E", 4, "$(nproc)"), ("ARGS", 5, '(--x $A)'), ("ARGS", 6, "(--y)")]
    assert script.array_items("ARGS") == ("--x", "1", "--y")


def test_functions_span_their_definition():
    script = Script("f() {\n  a  # c\n  { b; }\n}\nfunction g { x; }\nf() ( y )\n")
    assert {name: [ln.code for ln in lines] for name, lines in script.functions.items()} == {
        "f": ["f() ( y )"], "g": ["function g { x; }"]}
    assert [ln.code for ln in Script("f() {\n  a  # c\n  { b; }\n}\n").functions["f"]] == ["f() {", "  a", "  { b; }", "}"]


def test_embedded_shell_is_read_line_by_line():
    """A workflow's `run:` block: an apostrophe in the YAML around it opens no quote, and an indented
    delimiter ends a heredoc and an indented diff is one (YAML strips the block's indentation)."""
    text = "name: Don't patch\nrun: |\n  cat > x.diff <<EOF\n  --- a/vllm/x.py\n  EOF\n  VLLM=$(pip show vllm) # loc\n"
    script = Script(text, embedded=True)
    lines = script.lines
    assert lines[3].heredoc is not None and lines[3].heredoc.diff
    assert lines[4].code == "" and lines[5].code == "  VLLM=$(pip show vllm)"
    assert [(a.name, a.line) for a in script.assignments] == [("VLLM", 6)]
    assert ShellLine.alone(1, "x: 1  # c") == ShellLine(1, "x: 1  # c", "x: 1", None, "x: 1")


def test_line_numbers_are_those_of_splitlines():
    """A carriage return or form feed ends a line for the diff, so it ends one for the reader too."""
    lines = Script("A=1\rvllm serve m # c\x0cB=$A\r\n").lines
    assert [(ln.number, ln.code, ln.expanded) for ln in lines] == [
        (1, "A=1", "A=1"), (2, "vllm serve m", "vllm serve m"), (3, "B=$A", "B=1")]


_PIECES = list("ab$()[]{}\"'`\\;&|<>=-#\n \t!*:+0123456789") + [
    "vllm serve ", "if ", "then ", "fi ", "case ", "esac ", "in ", ";;", "$((", "${", "<<EOF\n", "EOF\n",
    "<<-'EOF'\n", "\tEOF\n", "$(", "() {", "[[ ", " ]]", "export ", "X=(", "X=", "function ", "f", "$X", "${X:-4}", "é", "€"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80).map("".join), st.booleans())
def test_reading_lines_never_raises_on_hostile_text(text, embedded):
    script = Script(text, embedded=embedded)
    assert [ln.number for ln in script.lines] == list(range(1, len(text.splitlines()) + 1))
    assert all(c.line <= c.end for c in script.commands)
    assert all(a.line <= len(script.lines) for a in script.assignments)
    assert all(lines for lines in script.functions.values())
    script.array_items("X")
    script.launches()


def test_a_character_tree_sitter_cuts_in_two_reads_as_a_replacement_character():
    """An unpaired quote before a non-ASCII character: tree-sitter's error recovery ends a node inside the
    character; the reader goes on instead of raising (hostile text fails no rule)."""
    script = Script('echo \\"a|b"é\n')
    assert [ln.code for ln in script.lines] == ['echo \\"a|b"é']
    assert script.launches() == ()


def test_pattern_operators_are_worked_out_where_the_value_is_fixed():
    lines = Script('D="Inferact/MiniMax-M3-EAGLE3-GQA"\nP="/data/${D##*/}"\nN="dsv4_1k1k"\n'
                   'echo $P ${N%%_*} ${N#*_} ${P/data/models}\n').lines
    assert lines[3].expanded == "echo /data/MiniMax-M3-EAGLE3-GQA dsv4 1k1k /models/MiniMax-M3-EAGLE3-GQA"


def test_printf_and_dirname_substitutions_are_their_output():
    script = Script("N=3\nAL=2.78\nC=$(printf \\\n  '{\"n\":%d,\"al\":%.2f,\"m\":\"%s\"}' \"$N\" \"$AL\" x)\n"
                    "vllm serve m --speculative-config \"$C\"\nD=$(dirname /a/b/c.sh)\necho $D $(date)\n")
    assert script.lines[4].expanded == 'vllm serve m --speculative-config "{"n":3,"al":2.78,"m":"x"}"'
    assert script.lines[6].expanded == "echo /a/b $(date)"


def test_printf_of_a_number_with_no_argument_left_prints_zero():
    """bash's `printf '%d'` with its arguments used up prints 0 (it once raised: `int(0, 0)`)."""
    script = Script("X=$(printf '%d-%d' 7)\nvllm serve m --port $X\n")
    assert script.launches()[0].argv[-1].values == ("7-0",)


def test_trace_follows_branches_for_the_given_variables():
    """A client's flags are read where the runner's variables decide the branch; function arguments,
    `eval`, `bash -c` and `$(...)` bodies are followed; the scripts run are listed with their PWD."""
    text = "\n".join([
        'f() { local n=$1; [ "$n" -gt 0 ] && echo yes; }',
        'if [ "$IS_MTP" = "true" ]; then extra="--use-chat-template"; else extra="--trust-remote-code"; fi',
        'run_benchmark_serving --model m $extra $(f 2)',
        'cd "$GITHUB_WORKSPACE/benchmarks/multi_node/amd_utils"',
        'JOB=$(bash ./submit.sh 1)',
        'CMD="bash $WS/bench.sh 1"',
        'eval "$CMD"',
        'srun --jobid=1 bash -c "bash /workspace/run_node.sh"',
        'source "$(dirname "$0")/../benchmark_lib.sh"',
    ])
    watch = lambda values: values[:1] == ["run_benchmark_serving"]  # noqa: E731
    mtp = Script(text).trace({"IS_MTP": "true"}, path="benchmarks/multi_node/x.sh", watch=watch)
    (call,) = mtp.calls
    assert call.words[3] == ("--use-chat-template",) and call.line == 3
    (off,) = Script(text).trace({"IS_MTP": "false"}, watch=watch).calls
    assert off.words[3] == ("--trust-remote-code",)
    either = Script(text).trace({}, watch=watch).calls[0]
    assert set(either.words[3]) == {"--use-chat-template", "--trust-remote-code"}
    runs = [(r.how, r.path.values[0], r.line) for r in mtp.runs]
    assert runs == [("bash", "./submit.sh", 5), ("bash", "\x00/bench.sh", 7), ("bash", "/workspace/run_node.sh", 8),
                    ("source", "benchmarks/multi_node/../benchmark_lib.sh", 9)]
    assert mtp.runs[0].cwd.values == ("\x00/benchmarks/multi_node/amd_utils",)


def test_a_run_serves_another_whose_variables_answer_alike_and_file_tests_are_asked_again():
    """A script traced again with variables it does not read is not run again; one it reads, a file test
    answered otherwise, or a run that passes every variable on (to a script it runs) is."""
    text = "\n".join([
        'if [ "$MODE" = "fast" ]; then F=--fast; else F=--slow; fi',
        'if [ -f "$CFG" ]; then C=--config; fi',
        'vllm serve m $F $C',
    ])
    script = Script(text)
    present = {"/cfg": True}
    exists = present.get
    watch = lambda values: True  # noqa: E731  (a run is reused for the same watch)
    first = script.trace({"MODE": "fast", "CFG": "/cfg", "UNREAD": "1"}, watch=watch, exists=exists)
    again = script.trace({"MODE": "fast", "CFG": "/cfg", "UNREAD": "2"}, watch=watch, exists=exists)
    assert again is first
    slow = script.trace({"MODE": "slow", "CFG": "/cfg"}, watch=watch, exists=exists)
    assert [t.values for t in slow.launches[0].argv] == [("m",), ("--slow",), ("--config",)]
    present["/cfg"] = False
    gone = script.trace({"MODE": "fast", "CFG": "/cfg", "UNREAD": "1"}, watch=watch, exists=exists)
    assert [t.values for t in gone.launches[0].argv] == [("m",), ("--fast",), (None,)]  # C unset: unknown
    assert script.launches({"MODE": "fast", "UNREAD": "1"}) is script.launches({"MODE": "fast"})

    runs = Script('bash ./next.sh\n')
    one = runs.trace({"A": "1"}, watch=watch)
    more = runs.trace({"A": "1", "B": "2"}, watch=watch)
    assert set(dict(one.runs[0].env)) == {"A"} and set(dict(more.runs[0].env)) == {"A", "B"}


def test_trace_is_bounded_on_self_evaluating_strings():
    text = 'X=\'eval "$X"\'\neval "$X"\nY=$(echo $(echo $(echo $(echo $(echo a)))))\n'
    assert Script(text).trace({}, watch=lambda v: True).launches == ()


def test_lengths_job_scripts_containers_and_assigned_values():
    text = "\n".join([
        "A=(x y)",
        'echo ${#A[@]} $( [[ ${#A[@]} -gt 0 ]] && echo yes )',
        'sbatch -N "$NODES" --parsable "$(dirname "$0")/job.slurm"',
        'docker run --rm -v "$W:/workspace" --entrypoint=/bin/bash "$IMAGE" benchmarks/x.sh',
        'docker run -d img bash -c "bash /workspace/y.sh"',
        'RUN_FILE="$WS/server.sh"',
    ])
    script = Script(text)
    trace = script.trace({}, path="benchmarks/m/submit.sh", watch=lambda v: v[:1] == ["echo"])
    assert trace.calls[0].words[1:] == (("2",), ("yes",))
    assert [(r.how, r.path.values[0]) for r in trace.runs] == [
        ("sbatch", "benchmarks/m/job.slurm"), ("bash", "benchmarks/x.sh"), ("bash", "/workspace/y.sh")]
    assert script.value_of(script.assignments[-1]) == "$WS/server.sh"


def test_text_tree_sitter_would_recover_from_slowly_is_read_line_by_line():
    """tree-sitter's error recovery can take time quadratic in broken text (`x=(` repeated): the parse stops at
    its read budget, and each line is read on its own, so the lines after the broken one are still read."""
    broken = "x=(" * 4000
    assert parse(broken.encode()) is None
    script = Script(broken + "\nvllm serve m --tp 2\necho a # b\n")
    assert len(script.launches()) == 1
    assert [ln.code for ln in script.lines[1:]] == ["vllm serve m --tp 2", "echo a"]


def test_text_past_the_limit_is_still_read_as_lines():
    text = "echo a # x\n" * (MAX_SCRIPT // 11 + 10) + "vllm serve m\n"
    script = Script(text)
    assert len(script.lines) == text.count("\n")
    assert [ln.code for ln in script.lines[-2:]] == ["echo a", "vllm serve m"]


# $'...' strings as bash 5.2 gives them (printf '%s' $'...' | od), its bytes read as UTF-8 with U+FFFD for the rest.
ANSI_C = {r"\n\t\e\E\?": "\n\t\x1b\x1b?", r"\x41\x4\xg\x": "A\x04\\xg\\x", r"\u41\u00e9\U1F600\u": "Aé😀\\u",
          r"\cA\c?\ca\c[": "\x01\x7f\x01\x1b", "\\c\\\\": "\x1c", "\\c\\a": "\x1ca", "x\\c": "x\\c",
          r"\101\1234\0101\8": "AS4\x081\\8", r"a\0b": "a", r"\400": "", r"\777\xFFF": "\ufffd\ufffdF",
          r"\/\q\N{DASH}": "\\/\\q\\N{DASH}", "é\\n": "é\n", r"\cé": "\x03\ufffd", r"\U7FFFFFFF": "\ufffd" * 6,
          r"\UFFFFFFFF": "", r"\ud800": "\ufffd" * 3, r"\"\'": "\"'", r"\x{41}B\x{4142}\x{41zz}": "ABBAzz}",
          r"a\x{}b": "a"}


def test_an_ansi_c_string_reads_as_bash_reads_it():
    for text, value in ANSI_C.items():
        assert ansi_c(text) == value, text
    script = Script("X=$'a\\tb\\u00e9'\n")
    assert script.value_of(script.assignments[0]) == "a\tbé"


_ESCAPES = st.sampled_from(list("abeEfnrtvxuUcq0178?N\\'\"é/[{}"))
_PLAIN = st.sampled_from(list("aA0F7{}é ;x"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_ESCAPES, st.booleans()).map(lambda t: "\\" + t[0] if t[1] else t[0].strip("\\'"))
                | _PLAIN.map(str), max_size=12).map("".join))
def test_an_ansi_c_string_reads_as_the_installed_bash_reads_it(text):
    code = "printf '%s' $'" + text + "'"
    out = subprocess.run(["bash", "-c", code], capture_output=True, check=True, env={"LC_ALL": "C.UTF-8"}).stdout
    assert ansi_c(text) == out.decode("utf-8", "replace")


# --- the speculative-decoding reader's run (checks.facts.specmodel) ---------------------------------------------

def test_arithmetic_on_literals_handed_to_awk_bc_and_python():
    from checks.facts.bash.builtins import calculate
    assert calculate(["awk", "BEGIN { print 2.99 }"], None) == "2.99"
    assert calculate(["awk", "-v", "a=3.61", 'BEGIN { printf "%.2f", a - 1 }'], None) == "2.61"
    assert calculate(["bc"], "2.99 - 1\n") == "1.99"
    assert calculate(["bc", "-l"], "scale=2; 5.22 / 2\n") == "2.61"
    assert calculate(["python3", "-c", 'print(f"{3.61 - 1:.2f}")'], None) == "2.61"
    assert calculate(["python3", "-c", "import os; print(os.environ['AL'])"], None) is None  # not arithmetic
    assert calculate(["awk", "{ print $1 }", "file"], None) is None
    assert calculate(["awk", "BEGIN { print " + " " * 20_000], None) is None  # read in linear time


def test_the_readers_run_records_every_engine_sources_in_place_and_tables():
    lib = "declare -A GOLDEN=([glm5.2]=2.99)\nsim() { export SGLANG_SIMULATE_ACC_LEN=\"${GOLDEN[$1]}\"; }\n"
    text = ('source ./lib.sh\nsim glm5.2\nK=3\nALS=(1 2 3 3.39)\n'
            'trtllm-serve serve m --rate "${ALS[$K]}" &\n'
            'python3 -m atom.entrypoints.openai_server --spec-decode-acceptance-length "$(awk \'BEGIN{print 1.99+1}\')"\n')
    from checks.facts.bash.reading import statements

    def sources(target):
        return ("lib.sh", statements(lib, 1_000_000)) if "./lib.sh" in target.values else None

    run = Script(text).run_every_engine({}, "x.sh", None, sources)
    trt, atom = run.launches
    assert (trt.engine, atom.engine) == ("trtllm", "atom")
    assert [t.first for t in trt.argv][-1] == "3.39" and [t.first for t in atom.argv][-1] == "2.99"
    (name, token), = [e for e in trt.env if e[0] == "SGLANG_SIMULATE_ACC_LEN"]
    assert token.values == ("2.99",) and token.line == 1_000_001  # the library's line 2 (numbered from the base)
    assert Script(text).trace({}, "x.sh").launches == ()  # check 3's launches: vLLM and SGLang only
