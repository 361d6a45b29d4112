"""CODEOWNERS parsing and gitignore-style matching (checks/facts/codeowners.py)."""

from __future__ import annotations

import re
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts.codeowners import Problem, compile_pattern, parse

# --- patterns -----------------------------------------------------------------

CASES = [
    # pattern, matching paths, non-matching paths
    ("*", ["a", "x/y/z.md"], []),
    ("/*", ["a", "x/y/z.md"], []),
    ("**", ["a", "x/y/z.md"], []),
    ("/**", ["a", "x/y/z.md"], []),
    ("*.js", ["a.js", "src/deep/b.js"], ["a.jsx", "js", "a.js.map"]),
    ("/*.js", ["a.js"], ["src/a.js"]),
    ("docs", ["docs", "docs/a.md", "x/docs/a.md"], ["docs2/a.md", "mydocs/a"]),
    ("/docs", ["docs", "docs/a.md"], ["x/docs/a.md"]),
    ("docs/", ["docs/a.md", "x/docs/a.md", "docs/x/y"], ["docs", "x/docs"]),
    ("/docs/", ["docs/a.md", "docs/x/y"], ["x/docs/a.md", "docs"]),
    ("docs/*", ["docs/a.md", "docs/x/y.md"], ["x/docs/a.md", "docs"]),
    ("apps/", ["apps/a", "x/apps/y/z"], ["apps"]),
    ("**/logs", ["logs", "logs/a", "x/y/logs/a"], ["logs2/a"]),
    ("/build/logs/", ["build/logs/a", "build/logs/x/y"], ["x/build/logs/a", "build/logs"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b", "a/b/c"], ["b", "x/a/b", "a/bb"]),
    ("a/**", ["a/b", "a/b/c"], ["a", "b/a/c"]),
    ("a/**/", ["a/x/f", "a/x/y/f"], ["a/f", "a"]),
    ("x/**/f", ["x/f", "x/a/f", "x/a/b/f"], ["x/a/g"]),
    ("a?c", ["abc", "x/aXc"], ["ac", "abbc", "a/c"]),
    ("a*c", ["ac", "abc", "x/abbbc"], ["a/c", "ab"]),
    ("*/b", ["a/b", "a/b/c"], ["b", "x/y/b"]),
    ("configs/nvidia-master.yaml", ["configs/nvidia-master.yaml"], ["x/configs/nvidia-master.yaml",
                                                                   "configs/NVIDIA-master.yaml"]),
    ("MODELS.md", ["MODELS.md", "x/MODELS.md"], ["models.md"]),
    ("a\\*c", ["a*c"], ["abc"]),
    ("\\#notes", ["#notes"], ["notes"]),
    ("my\\ dir/", ["my dir/a"], ["my/a"]),
    ("***", ["a", "x/y"], []),
    ("a//b", [], ["a/b", "a//b"]),
]


@pytest.mark.parametrize("pattern,good,bad", CASES, ids=[c[0] for c in CASES])
def test_pattern_semantics(pattern, good, bad):
    p = compile_pattern(pattern)
    for path in good:
        assert p.matches(path), f"{pattern!r} should match {path!r}"
    for path in bad:
        assert not p.matches(path), f"{pattern!r} should not match {path!r}"


@pytest.mark.parametrize("pattern,expected", [
    ("*", True), ("**", True), ("/*", True), ("/**", True), ("**/*", True),
    ("*/", False), ("*/*", False), ("*/**", False), ("*.md", False), ("docs/", False), ("/a", False),
])
def test_catch_all(pattern, expected):
    assert compile_pattern(pattern).catch_all is expected


@pytest.mark.parametrize("pattern,message", [
    ("!docs/", "negation"),
    ("docs/[ab].md", "character ranges"),
    ("/", "empty pattern"),
])
def test_patterns_github_rejects(pattern, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        compile_pattern(pattern)


# --- files ----------------------------------------------------------------------

INFERENCEX = """\
* @InferenceX/core

# AMD master config
configs/amd-master.yaml @billishyahao @chunfangamd

# NVIDIA master config
configs/nvidia-master.yaml @ankur-singh @kedarpotdar-nv @InferenceX/core

experimental/operatorx/ @hbarclay
"""


def test_last_matching_line_wins_and_owners_do_not_accumulate():
    co = parse(INFERENCEX)
    rule = co.owners_of("configs/nvidia-master.yaml")
    assert rule.line == 7
    assert rule.owners == ("@ankur-singh", "@kedarpotdar-nv", "@InferenceX/core")
    assert rule.users == ("ankur-singh", "kedarpotdar-nv")
    assert rule.teams == ("InferenceX/core",)
    assert not rule.catch_all
    assert co.owners_of("configs/amd-master.yaml").owners == ("@billishyahao", "@chunfangamd")
    fallback = co.owners_of("benchmarks/x.sh")
    assert fallback.line == 1 and fallback.catch_all
    assert co.owners_of("experimental/operatorx/a/b.py").users == ("hbarclay",)


def test_logins_are_case_insensitive():
    rule = parse(INFERENCEX).owners_of("configs/nvidia-master.yaml")
    assert rule.names("Ankur-Singh")
    assert not rule.names("ankur")


def test_no_rule_matches():
    co = parse("docs/ @a\n")
    assert co.owners_of("src/x.py") is None


def test_pattern_without_owners_unowns_the_path():
    co = parse("* @org/core\n/generated/\n")
    rule = co.owners_of("generated/a.json")
    assert rule.line == 2 and rule.owners == ()
    assert co.owners_of("src/a.py").owners == ("@org/core",)


def test_comments_blank_lines_and_inline_comments():
    co = parse("# a comment\n\n   # indented comment\n*.md @docs # owners of docs\n")
    assert len(co.rules) == 1
    assert co.rules[0].owners == ("@docs",)
    assert co.rules[0].line == 4
    assert co.problems == ()


def test_email_owner():
    rule = parse("*.go docs@example.com @Org/Team-1\n").owners_of("a.go")
    assert rule.emails == ("docs@example.com",)
    assert rule.teams == ("Org/Team-1",)
    assert rule.users == ()


def test_invalid_lines_are_skipped_and_reported():
    co = parse("* @core\n!secret @x\ndocs/[ab] @y\nsrc/ owner-without-at\nok/ @z\n")
    assert co.problems == (
        Problem(2, "negation (!) is not supported in CODEOWNERS"),
        Problem(3, "character ranges ([...]) are not supported in CODEOWNERS"),
        Problem(4, "'owner-without-at' is not a valid owner (@user, @org/team or email)"),
    )
    assert [r.line for r in co.rules] == [1, 5]
    assert co.owners_of("src/a.py").line == 1  # the skipped line does not own src/


def test_oversized_file_is_not_loaded():
    co = parse("* @a\n" + "#" * (3 * 1024 * 1024))
    assert co.rules == ()
    assert co.problems[0].line == 1


def test_teams_listed_sorted_and_deduplicated():
    co = parse("* @Org/b\nx @org/A @org/B @user\n")
    assert co.teams == ("org/A", "Org/b")
    assert [r.line for r in co.names("USER")] == [2]


def test_crlf_and_unicode():
    co = parse("* @core\r\ndocs/é.md @a\r\n")
    assert co.owners_of("docs/é.md").users == ("a",)


# --- linear time ----------------------------------------------------------------------


def _finishes(fn, seconds: float = 120) -> bool:
    """Run `fn` in a daemon thread; False if it is still running after `seconds` (a bound for a hang:
    a backtracking matcher takes exponential time on HOSTILE, years, not seconds)."""
    done = threading.Event()

    def run():
        fn()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(seconds)


HOSTILE = [
    ("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 50_000),
    ("*a*a*a*a*a*a*a*a*b", "/".join(["a" * 200] * 200)),
    ("**/" * 100 + "*a*a*a*a*a*b/**", "/".join(["a" * 40] * 300)),
    ("?a" * 500 + "*" + "a?" * 500 + "b", "a" * 20_000),
    ("a/**/" * 50 + "b", "/".join(["a"] * 2_000)),
]


@pytest.mark.parametrize("pattern,path", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_patterns_cannot_backtrack(pattern, path):
    p = compile_pattern(pattern)
    result = []
    assert _finishes(lambda: result.append(p.matches(path))), f"{pattern[:30]}... did not finish: it backtracks"
    assert result == [False]


def test_many_rules_against_many_paths_stay_fast():
    """200 look-ups through 2,000 rules cost about what compiling the rules once does (CPU time, the same on
    a busy machine); a matcher that compiled or re-read the patterns at each look-up would cost 200 times."""
    text = "".join(f"dir{i}/**/*.{i}x*y*z @u{i}\n" for i in range(2_000))
    start = time.thread_time()
    co = parse(text)
    parsing = time.thread_time() - start
    start = time.thread_time()
    for j in range(200):
        co.owners_of(f"dir{j}/a/b/c/file{j}.{j}xyz")
    looking_up = time.thread_time() - start
    assert looking_up < 20 * parsing, f"{looking_up:.3f} s of CPU to look up, {parsing:.3f} s to parse"


# --- against a reference implementation ---------------------------------------------


def _reference(pattern: str, path: str) -> bool:
    """Backtracking regex reference for small inputs (no escapes, ranges or negation)."""
    dir_only = pattern.endswith("/")
    body = pattern[:-1] if dir_only else pattern
    anchored = "/" in body
    body = body[1:] if body.startswith("/") else body
    if not body:
        return False
    segs = body.split("/")
    rx = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if len(seg) >= 2 and set(seg) == {"*"}:
            rx += "[^/]+(?:/[^/]+)*" if last else "(?:[^/]+/)*"
            continue
        part = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in re.sub(r"\*+", "*", seg))
        rx += part + ("" if last else "/")
    prefix = "" if anchored else "(?:[^/]+/)*"
    suffix = "/.+" if dir_only else "(?:/.+)?"
    return re.fullmatch(prefix + rx + suffix, path) is not None


_segment = st.text(alphabet="ab*?", min_size=1, max_size=4)
_pattern = st.builds(
    lambda lead, segs, trail: ("/" if lead else "") + "/".join(segs) + ("/" if trail else ""),
    st.booleans(), st.lists(st.one_of(_segment, st.just("**")), min_size=1, max_size=4), st.booleans())
_path = st.lists(st.text(alphabet="ab", min_size=1, max_size=3), min_size=1, max_size=5).map("/".join)


@settings(max_examples=400, deadline=None)
@given(_pattern, _path)
def test_matches_reference(pattern, path):
    assert compile_pattern(pattern).matches(path) == _reference(pattern, path)
