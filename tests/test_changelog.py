"""checks.facts.changelog: the textual split, lazy parsing with file lines, and the base/head alignment."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts import changelog
from checks.facts.changelog import Changelog, diff, diff_texts, expand_keys
from checks.facts.yamlload import YamlProblem
from tests.conftest import SHARED_WORLDS


def entry(key: str, pr: int, *extra: str) -> str:
    lines = ["- config-keys:", f"    - {key}", "  description:", f'    - "change {pr}"',
             f"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/{pr}", *extra]
    return "\n".join(lines) + "\n"


BASE = entry("dsv4-fp4-b200-vllm", 1) + "\n" + entry("kimik3-*", 2)


def test_split_keeps_file_lines_and_drops_separator_blank_lines():
    log = Changelog("perf-changelog.yaml", BASE)
    assert [e.line for e in log.entries] == [1, 7]
    assert [e.end_line for e in log.entries] == [5, 11]
    assert log.entries[0].text.endswith("pull/1\n")
    assert log.problem is None


def test_data_is_parsed_lazily_with_file_line_numbers():
    second = Changelog("p", BASE).entries[1]
    assert second.data.line_of("pr-link") == 11
    assert second.config_keys() == [("kimik3-*", 8)]
    assert second.append_only is False


@pytest.mark.parametrize("value, expected", [("true", True), ('"true"', True), ("false", False), ("yes please", False)])
def test_append_only_flag(value, expected):
    log = Changelog("p", entry("k", 3, f"  append-only: {value}"))
    assert log.entries[0].append_only is expected


def test_config_keys_as_a_single_string():
    log = Changelog("p", "- config-keys: dsv4-fp4-b200-vllm\n  pr-link: x\n")
    assert log.entries[0].config_keys() == [("dsv4-fp4-b200-vllm", 1)]


def test_malformed_entry_raises_with_its_file_line():
    log = Changelog("p", BASE + "- config-keys: [unclosed\n  pr-link: x\n")
    broken = log.entries[2]
    with pytest.raises(YamlProblem) as exc:
        broken.data
    assert exc.value.line >= broken.line == 12


def test_an_item_that_is_not_a_mapping_is_a_problem_of_that_entry():
    log = Changelog("p", "- just text\n")
    with pytest.raises(YamlProblem) as exc:
        log.entries[0].data
    assert exc.value.line == 1


def test_preamble_comments_and_document_marker_are_allowed():
    log = Changelog("p", "# history\n---\n\n" + BASE)
    assert log.problem is None
    assert log.entries[0].line == 4


@pytest.mark.parametrize("text, line", [
    ("entries:\n  - config-keys: [a]\n", 1),              # a mapping, not a list
    ("  - config-keys: [a]\n", 1),                        # an indented list
    (BASE + "oops: true\n", 12),                          # text at column 0 between entries
    (BASE + "-bad\n", 12),                                # a dash that is not an item
])
def test_text_that_is_not_a_block_list_is_reported_with_its_line(text, line):
    problem = Changelog("p", text).problem
    assert problem is not None and problem.line == line


def test_appending_at_the_end_is_append_only():
    head = BASE + "\n" + entry("new-config", 3, "  append-only: true")
    d = diff_texts("perf-changelog.yaml", BASE, head)
    assert [e.line for e in d.new] == [13]
    assert d.new[0].append_only
    assert d.removed == () and d.misplaced == ()
    assert d.append_only_file


def test_inserting_between_historical_entries_is_misplaced():
    first, second = Changelog("p", BASE).entries
    head = first.text + "\n" + entry("new-config", 3) + "\n" + second.text
    d = diff_texts("p", BASE, head)
    assert [e.line for e in d.new] == [7]
    assert d.misplaced == d.new
    assert not d.append_only_file


def test_editing_a_historical_entry_is_removed_plus_new():
    head = BASE.replace("change 1", "change one")
    d = diff_texts("p", BASE, head)
    assert [e.line for e in d.removed] == [1]
    assert [e.line for e in d.new] == [1]
    assert d.misplaced == d.new
    assert not d.append_only_file


def test_deleting_a_historical_entry_is_removed():
    d = diff_texts("p", BASE, Changelog("p", BASE).entries[1].text)
    assert [e.line for e in d.removed] == [1]
    assert d.new == ()
    assert not d.append_only_file


def test_trailing_spaces_and_separator_lines_do_not_make_an_entry_new():
    head = BASE.replace("pull/1\n", "pull/1   \n").replace("\n\n", "\n\n\n")
    d = diff_texts("p", BASE, head)
    assert d.new == () and d.removed == ()


def test_absent_file_on_one_side():
    d = diff_texts("p", None, BASE)
    assert len(d.new) == 2 and d.append_only_file
    assert diff_texts("p", BASE, None).removed == Changelog("p", BASE).entries


def test_expand_keys_matches_names_and_globs_sorted():
    keys = ["kimik3-fp4-mi355x-vllm", "kimik3-fp4-b300-vllm", "dsv4-fp4-b200-vllm"]
    assert expand_keys(["kimik3-*"], keys) == ["kimik3-fp4-b300-vllm", "kimik3-fp4-mi355x-vllm"]
    assert expand_keys(["dsv4-fp4-b200-vllm", "nope"], keys) == ["dsv4-fp4-b200-vllm"]


@given(st.lists(st.integers(0, 10**6), unique=True, max_size=12), st.lists(st.integers(0, 10**6), max_size=4))
def test_appended_entries_are_exactly_the_new_ones(old, added):
    base = "\n".join(entry(f"k{n}", n) for n in old)
    head = "\n".join(entry(f"k{n}", n) for n in old + [m + 10**7 for m in added])
    d = diff(Changelog("p", base), Changelog("p", head))
    assert [e.index for e in d.new] == list(range(len(old), len(old) + len(added)))
    assert d.append_only_file


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="- :#\n\t\rabc.", max_size=300), st.text(alphabet="- :#\n\tabc.", max_size=300))
def test_never_raises_and_lines_increase(base, head):
    d = diff_texts("p", base, head)
    lines = [e.line for e in d.head.entries]
    assert lines == sorted(set(lines))
    assert all(e.line <= e.end_line for e in d.head.entries)
    for e in d.new:
        try:
            e.data
        except YamlProblem:
            pass


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["", "  x: é\n", "- k: ü\n", "-\n", "# c\n", " \n"]), max_size=6),
       st.integers(0, 400), st.integers(0, 400), st.integers(0, 3))
def test_a_change_among_long_entries_reads_as_the_whole_files_do(edit, at, count, gap):
    """The diff cuts only the entries around the change (the ends shared by the texts are skipped, in chunks
    of thousands of characters): what it finds is what aligning every entry of both files finds."""
    entries = [entry(f"k{n}-é", n) + "\n" * gap for n in range(count + 20)]
    base = "".join(entries)
    head = "".join(entries[:at] + edit + entries[at:])
    d = diff_texts("p", base, head)
    b, h = Changelog("p", base).entries, Changelog("p", head).entries
    bk, hk = [e.key for e in b], [e.key for e in h]
    ops = difflib.SequenceMatcher(None, bk, hk, autojunk=False).get_opcodes()
    assert list(d.removed) == [e for tag, i1, i2, _j1, _j2 in ops if tag in ("delete", "replace") for e in b[i1:i2]]
    assert list(d.new) == [e for tag, _i1, _i2, j1, j2 in ops if tag in ("insert", "replace") for e in h[j1:j2]]
    assert d.head.entries == h and d.base.entries == b


def test_deterministic():
    head = BASE + "\n" + entry("new-config", 3)
    one, two = diff_texts("p", BASE, head), diff_texts("p", BASE, head)
    assert (one.new, one.removed, one.misplaced) == (two.new, two.removed, two.misplaced)


@pytest.mark.skipif(not SHARED_WORLDS.is_dir(), reason="../shared/fixtures/worlds not present")
@pytest.mark.parametrize("world, line, misplaced", [
    ("pr2554-dsv4-b200-sglang-mtp", 5898, False),
    ("pr2508-kimik3-mi355x-waiver", 5429, True),  # inserted before two historical entries
])
def test_real_changelogs(world, line, misplaced):
    trees = SHARED_WORLDS / world / "trees"
    base = (trees / "base" / "perf-changelog.yaml").read_text()
    head = (trees / "head" / "perf-changelog.yaml").read_text()
    d = changelog.diff_texts("perf-changelog.yaml", base, head)
    assert d.base.problem is None and d.head.problem is None
    assert [e.line for e in d.new] == [line]
    assert bool(d.misplaced) is misplaced
    assert d.removed == ()
    assert d.new[0].data["pr-link"].endswith(world[2:6])
