"""Every reader of PR content takes time at most linear in its input (issue 28): each is fed adversarial shapes
(deep nesting, long runs of one character, long lines, many lines) at n and 4n, and the CPU time of the larger
may be at most `RATIO` times that of the smaller (linear: 4; quadratic: 16). Ratios within one run, never
absolute timings: the machine is shared. A run too quick to measure says nothing either way, so each n is
chosen so that the quadratic readers these shapes were written for took well past `FLOOR` at 4n (and no more
than seconds: a regression fails, it does not hang)."""

from __future__ import annotations

import time
from dataclasses import replace
from types import MappingProxyType

import pytest

from app.offline import snapshot
from app.offline.replay import DEMO_WORLD
from app.offline.world import World
from checks.engine import Completion
from checks.facts import launchers, patch_sites, pycode, waivers
from checks.facts.bash import Script
from checks.facts.bash.builtins import pure_output
from checks.facts.masterconfig import MasterConfig
from checks.facts.yamlload import YamlProblem, load
from checks.rules import check03_recipe_link, check08_architecture
from checks.snapshot import ChangedFile

RATIO = 9.0  # generous: between linear (4) and quadratic (16), for a noisy machine
FLOOR = 0.05  # seconds: below this at 4n, no verdict on the shape


def _cost(read, text) -> float:
    """The least CPU time of three reads, each of a text of its own (readers keep what they read before)."""
    best = float("inf")
    for salt in range(3):
        text = text + "\n" * (salt > 0)
        start = time.process_time()
        read(text)
        best = min(best, time.process_time() - start)
    return best


def _linear(read, shape, n: int) -> None:
    small, large = _cost(read, shape(n)), _cost(read, shape(4 * n))
    assert large <= max(RATIO * small, FLOOR), f"{small:.4f} s at n={n}, {large:.4f} s at 4n"


def _script(text: str) -> None:
    Script(text).launches()


def _yaml(text: str) -> None:
    try:
        load(text)
    except YamlProblem:
        pass


def _master(text: str) -> None:
    config = MasterConfig("configs/nvidia-master.yaml", text)
    for key in config.keys():
        config.fields(key)


SHAPES = [
    # bash: tree-sitter queries on deep nesting, the interpreter on long and many lines
    ("bash parens", _script, lambda n: "echo " + "(" * n + "\n", 10_000),
    ("bash substitutions", _script, lambda n: "x=" + "$(" * n + "\n", 10_000),
    ("bash braces", _script, lambda n: "{ " * n + "\n", 10_000),
    ("bash many lines", _script, lambda n: "vllm serve m --tp 8\n" * n, 2_000),
    ("bash long line", _script, lambda n: "echo " + "a " * n + "\n", 20_000),
    ("printf format", lambda t: pure_output(["printf", t]), lambda n: "%" + "0" * n, 3_000),
    ("printf flags", lambda t: pure_output(["printf", t, "x"]), lambda n: "%" + "-" * n + "5" * n, 3_000),
    # Python programs read by patterns (not parsed: a syntax error)
    ("python newlines", pycode.read, lambda n: "(\n" + "\n" * n + "import os\n", 50_000),
    ("python open(", pycode.read, lambda n: "(" + "open(" * n, 20_000),
    ("python paths", pycode.read, lambda n: "(" + "'" + "a" * n + "'", 50_000),
    # YAML: long scalars, deep flow nesting, many keys
    ("yaml long int", _yaml, lambda n: "a: 0x" + "f" * n + "\n", 50_000),
    ("yaml sexagesimal", _yaml, lambda n: "a: 1" + ":0" * n + "\n", 20_000),
    ("yaml nesting", _yaml, lambda n: "a: " + "[" * n + "\n", 50_000),
    ("yaml many keys", _yaml, lambda n: "".join(f"k{i}: {i}\n" for i in range(n)), 5_000),
    # master configs: key and field lines
    ("master key blanks", _master, lambda n: "a" + " " * n + "x\n", 3_000),
    ("master field blanks", _master, lambda n: "k:\n  image: a" + " " * n + "x\n", 3_000),
    ("master comment blanks", _master, lambda n: "k:\n  image: a#" + " " * n + "x\n", 3_000),
    # launcher container maps, shell writes, waivers, recipe-link names, substitutions
    ("launcher entry", launchers._entry, lambda n: "  a" + " " * n + "x", 3_000),
    ("launcher value", launchers._entry, lambda n: "  a: x" + " " * n + "y", 3_000),
    ("shell jq", check08_architecture._shell_write, lambda n: "jq " * n, 1_000),
    ("shell redirections", check08_architecture._shell_write, lambda n: ">" * n + " config.jso", 3_000),
    ("shell config words", check08_architecture._shell_write, lambda n: "config.json " * n, 1_000),
    ("waiver comments", lambda t: waivers._without_html_comments(t), lambda n: "<!--" * n, 3_000),
    ("recipe names", lambda t: check03_recipe_link._NAME_SEPARATORS.split(t), lambda n: "a" + " " * n + "b", 3_000),
    ("substitution", patch_sites._outer_substitution, lambda n: "$(" * n, 50_000),
    ("shell words", patch_sites.split_words, lambda n: "python -c 'import vllm" + "1+" * n + "'", 20_000),
    ("shell quoted words", patch_sites.split_words, lambda n: 'pip show "' + "\\x" * n + '"', 20_000),
]


@pytest.mark.parametrize("read, shape, n", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_a_reader_takes_time_linear_in_its_input(read, shape, n):
    _linear(read, shape, n)


@pytest.fixture(scope="module")
def demo():
    world = World.load(DEMO_WORLD)
    repo, pr = world.pull_repo(None)
    return snapshot._base_snapshot(world, repo, pr)


@pytest.mark.parametrize("path, shape, n", [
    ("benchmarks/single_node/dsv4_fp8_b200.sh", lambda n: "echo " + "(" * n + "\n", 10_000),
    ("benchmarks/single_node/dsv4_fp8_b200.sh", lambda n: "python3 - <<EOF\n" + "open(" * n + "\nEOF\n", 5_000),
    ("benchmarks/single_node/dsv4_fp8_b200.sh", lambda n: "printf '%" + "0" * n + "'\n", 20_000),
    ("benchmarks/single_node/dsv4_fp8_b200.sh", lambda n: "x=$((" + "1+" * n + "1))\nvllm serve $x\n", 20_000),
    ("configs/nvidia-master.yaml", lambda n: "a" + " " * n + "x\n", 20_000),
], ids=["parens", "heredoc open(", "printf", "arithmetic", "master blanks"])
def test_the_whole_verification_takes_time_linear_in_a_file(demo, path, shape, n):
    def judge(text: str) -> None:
        Completion(replace(demo, files=demo.files + (ChangedFile(path, "added", None, None, None, text),)))

    _linear(judge, shape, n)


# Readers issue 25 rewrote: the shapes that were quadratic in them.
def test_spec_settings_placeholder_is_linear():
    from checks.facts import spec_settings

    _linear(lambda t: spec_settings._PLACEHOLDER.match(t), lambda n: "%" + "0" * n, 2_000)


def test_specdecode_heredoc_target_is_linear():
    from checks.facts import specdecode

    _linear(specdecode.heredoc_target, lambda n: "; cat x" * n, 2_000)


def test_specdecode_client_module_is_linear():
    from checks.facts import specdecode

    _linear(lambda t: specdecode._CLIENT_MODULE.search(t), lambda n: "\n" * n + "x", 3_000)


def test_many_new_master_entries_take_linear_time(demo):
    master = "configs/nvidia-master.yaml"
    head = demo.master_head[master]

    def judge(extra: str) -> None:
        text = head + "\n" + extra
        files = tuple(replace(f, head_text=text, patch=None) if f.path == master else f for f in demo.files)
        Completion(replace(demo, master_head=MappingProxyType({**demo.master_head, master: text}), files=files))

    _linear(judge, lambda n: "".join(f"e{i}:\n  image: x/y:{i}\n  runner: b200\n  framework: vllm\n"
                                     for i in range(n)), 1_000)
