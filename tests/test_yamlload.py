"""checks.facts.yamlload: values as PyYAML's safe loader builds them, with lines, and bounded work."""

import pytest
import yaml

from checks.facts.yamlload import MAX_DEPTH, YamlProblem, _Builder, _Loader, _Plain, load

DOCUMENTS = [
    "a: 1\nb: [1, 2, {c: d}]\n'q': \"1\"\n",
    "- <<\n- ~\n- null\n- ''\n- !!int '3'\n- ! 12\n- 012\n- 0x1f\n- 1_000\n- .5\n- .inf\n- yes\n- On\n- 2026-01-01\n",
    "a: <<\nb: !!str 12\nc: !foo bar\n1: one\n'1': quoted\nnext: x\ntp: 8\nfalse: n\n",
    "a: 1\na: 2\n",
    "a:\n  - [1, {b: [c, 2.5]}]\n  - {}\n",
]


def _typed(value):
    """`value` with the type and lines of every part, for an exact comparison."""
    if isinstance(value, dict):
        return ("map", value.line, sorted(value.key_lines.items(), key=repr),
                [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", value.line, value.item_lines, [_typed(v) for v in value])
    return type(value).__name__, value


@pytest.mark.parametrize("text", DOCUMENTS)
def test_a_plain_document_is_built_as_the_composer_builds_it(text):
    composed = _Builder(4).build(yaml.compose(text, Loader=_Loader), 0)
    assert _typed(_Plain(text, 4).document()) == _typed(composed) == _typed(load(text, line_offset=4))


def test_anchors_and_merge_keys_are_left_to_the_composer():
    assert load("a: &x {b: 1}\nc: *x\n<<: {d: 2}\n") == {"a": {"b": 1}, "c": {"b": 1}, "d": 2}


def test_lines_are_kept():
    data = load("a:\n  b: 1\n  c:\n    - x\n    - y\n", line_offset=10)
    assert (data.line_of("a"), data["a"].line_of("c"), data["a"]["c"].line_of(1)) == (11, 13, 15)


@pytest.mark.parametrize("text, line", [
    ("a:\n" + " " * (MAX_DEPTH * 8 + 1) + "b: 1\n", 2),
    ("a: 1\nb: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", 2),
])
def test_nesting_too_deep_is_a_problem_on_its_line(text, line):
    with pytest.raises(YamlProblem) as problem:
        load(text)
    assert problem.value.line == line


def test_as_many_brackets_as_allowed_nest():
    depth = MAX_DEPTH
    assert load("a: " + "[" * depth + "]" * depth + "\n")["a"] is not None
