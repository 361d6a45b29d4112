"""Hostile pull request content: every case ends as a FAIL or a finding with a reason, in bounded memory and time.

"Bounded" is shown without timing assertions: the hostile evaluations run in
a child process under RLIMIT_AS and RLIMIT_CPU (generous limits a hang or a
blow-up would still exceed), over worlds built at test time from the passing
demo variant (tests/variants.py), or through the whole pipeline over HTTP
where what matters is that the bot never downloads what it must not read.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.fake_github import FakeGitHub
from app.fake_github.ids import blob_sha
from app.files import MAX_TEXT_BYTES
from app.github.client import CallStats, installation_client
from app.jobs.pipeline import verify
from app.offline.replay import REPLAY_APP_ID, throwaway_key
from checks.facts import codeowners
from checks.rule import LINT_ROW as LINT_NUMBER
from checks.rules import check00_codeowner
from checks.rules.extra14_complete_evidence import NUMBER as COMPLETENESS_NUMBER
from checks.rules.extra14_complete_evidence import UNREADABLE_RULE

from .test_replay import assert_same_snapshot, gathered
from .variants import (
    MASTER,
    PR,
    RECIPE,
    REPO,
    SIGNOFF_ID,
    comment_of,
    edit_world,
    failing,
    green_world,
    head,
    verdict,
)

ROOT = Path(__file__).resolve().parent.parent
KEY = throwaway_key()
MEMORY_LIMIT = 1_500_000_000  # bytes of address space for a child evaluation
CPU_LIMIT = 120  # seconds of CPU for a child evaluation

# A child process: evaluate the world's PR offline and print what the tests assert on.
CHILD = """
import json, sys
from app.offline.snapshot import judge_world
from app.offline.world import World
v = judge_world(World.load(sys.argv[1])).verdict
print(json.dumps({"label": v.label, "failing": {r.number: r.reason for r in v.rows if not r.passed},
                  "lint": v.lint.status.value, "findings": [f.to_json() for f in v.findings]}))
"""


def bounded(world: Path) -> dict:
    """The verdict of `world`, computed in a child process that may not exceed the memory and CPU limits."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT))

    done = subprocess.run([sys.executable, "-c", CHILD, str(world)], cwd=ROOT, capture_output=True, text=True,
                          preexec_fn=limits, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, f"the evaluation did not finish within its limits ({done.returncode}): " \
                                 f"{done.stderr[-2000:]}"
    result = json.loads(done.stdout)
    result["failing"] = {int(k): v for k, v in result["failing"].items()}
    return result


@pytest.fixture
def world(tmp_path) -> Path:
    return green_world(tmp_path)


def _alias_bomb(indent: str = "") -> str:
    """Ten levels of ten aliases each: 10^10 nodes if expanded."""
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def _nested(indent: str = "", depth: int = 200) -> str:
    return "".join(f"{indent}{'  ' * i}k{i}:\n" for i in range(depth)) + f"{indent}{'  ' * depth}v: 1\n"


def _flow(indent: str = "", depth: int = 200) -> str:
    return f"{indent}x: " + "[" * depth + "]" * depth + "\n"


YAML_BOMBS = {"alias-bomb": _alias_bomb, "nested-200": _nested, "flow-nested-200": _flow}


def _line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


# --- YAML bombs ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(YAML_BOMBS))
def test_a_yaml_bomb_in_a_recipe_is_a_finding_on_its_line(world, bomb):
    recipe = head(world) / RECIPE
    before = recipe.read_text()
    recipe.write_text(before + "\nbomb:\n" + YAML_BOMBS[bomb]("  "))
    result = bounded(world)
    assert result["label"] == "REJECTED"
    syntax = [f for f in result["findings"] if f["path"] == RECIPE and f["rule"] == "yaml-syntax"]
    assert syntax and syntax[0]["line"] >= _line_of(recipe.read_text(), "bomb:")


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(YAML_BOMBS))
def test_a_yaml_bomb_in_a_master_config_entry_fails_the_checks_that_read_it(world, bomb):
    master = head(world) / MASTER
    master.write_text(master.read_text() + "\nevil-config:\n" + YAML_BOMBS[bomb]("  "))
    text = master.read_text()
    block = range(_line_of(text, "evil-config:"), text.count("\n") + 1)  # the line where a limit was crossed
    result = bounded(world)
    assert result["label"] == "REJECTED"
    lines = {int(n) for reason in result["failing"].values() for n in re.findall(rf"{MASTER}:(\d+)", reason)}
    assert lines and lines <= set(block), result["failing"]


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(YAML_BOMBS))
def test_a_yaml_bomb_in_a_new_changelog_entry_is_a_finding_on_its_line(world, bomb):
    """No sign-off check reads an entry that is not append-only: the bomb is recipe lint's FAIL (advice)."""
    changelog = head(world) / "perf-changelog.yaml"
    changelog.write_text(changelog.read_text() + "\n- config-keys: [dsv4-fp4-gb300-dynamo-sglang-mtp]\n"
                         + YAML_BOMBS[bomb]("  "))
    result = bounded(world)
    assert result["lint"] == "FAIL"
    assert any(f["path"] == "perf-changelog.yaml" and f["rule"] == "yaml-syntax" and f["severity"] == "error"
               for f in result["findings"]), result["findings"]


# --- files the checks cannot read ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,data,reason", [
    ("latin-1", b"#!/bin/bash\n# caf\xe9\nsed -i 's/a/b/' /usr/lib/python3/dist-packages/vllm/envs.py\n", "not UTF-8"),
    ("nul-byte", b"#!/bin/bash\n# \x00\nsed -i 's/a/b/' /usr/lib/python3/dist-packages/vllm/envs.py\n", "binary"),
    ("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary"),
])
def test_a_binary_or_non_utf8_file_fails_closed_with_its_reason(world, name, data, reason):
    """The engine patch in these scripts is invisible to check 10 once the file cannot be decoded: the PR
    must not pass on what the checks could not read."""
    (head(world) / "benchmarks" / "multi_node" / f"{name}.sh").write_bytes(data)
    v = verdict(world)
    assert v.label == "NEEDS A MAINTAINER"  # never PASS: a maintainer is asked what was not read
    assert reason in failing(v)[COMPLETENESS_NUMBER]
    assert any(f.rule == UNREADABLE_RULE and f.path.endswith(f"{name}.sh") for f in v.findings)


@pytest.mark.slow
def test_a_50_mb_file_is_refused_unread_through_the_whole_pipeline(world):
    """Over HTTP: the file is listed, never downloaded (its blob is never requested), and the verdict says why."""
    big = head(world) / "benchmarks" / "multi_node" / "weights.bin"
    chunk = b"0123456789abcdef" * 65_536
    with big.open("wb") as out:
        for _ in range(50):
            out.write(chunk)
    sha = blob_sha(big.read_bytes())
    with FakeGitHub(world) as fake:
        stats = CallStats()
        gh = installation_client(REPLAY_APP_ID, KEY, 1, fake.url, stats)
        outcome = asyncio.run(verify(gh, REPO, PR, "2026-09-02T12:00:00Z"))
    v = outcome.verdict
    assert v.label == "NEEDS A MAINTAINER"  # never PASS: a maintainer is asked what was not read
    reason = failing(v)[COMPLETENESS_NUMBER]
    assert "weights.bin" in reason and f"over the {MAX_TEXT_BYTES:,}-byte limit" in reason
    assert not [route for route in stats.by_route if sha in route]


def test_a_master_config_padded_past_the_size_limit_cannot_hide_its_entries(world):
    """Unreadable, it would drop out of the snapshot and its new entries would never be judged."""
    master = head(world) / MASTER
    master.write_text(master.read_text().replace("lmsysorg/sglang:v0.5.17-cu130", "someone/sglang:evil")
                      + "#" + "x" * MAX_TEXT_BYTES + "\n")
    v = verdict(world)
    assert v.label == "NEEDS A MAINTAINER"  # never PASS: a maintainer is asked what was not read
    assert MASTER in failing(v)[COMPLETENESS_NUMBER]


def test_symlinks_are_reported_never_followed_and_gathered_as_the_world_holds_them(world):
    """A symlink to /etc/passwd and a master config swapped for a link: over HTTP and offline alike, both
    are 'symbolic link; not followed', nothing outside the world is read, and the PR cannot pass."""
    os.symlink("/etc/passwd", head(world) / "benchmarks" / "multi_node" / "passwd.yaml")
    os.symlink("../configs", head(world) / "benchmarks" / "configs-link")
    master = head(world) / MASTER
    master.rename(master.with_name("real-master.yaml"))
    os.symlink("real-master.yaml", master)
    over_http, offline = gathered(world)
    assert_same_snapshot(over_http, offline)
    links = {f.path: f for f in over_http.files if f.error and "symbolic link" in f.error}
    assert set(links) == {"benchmarks/multi_node/passwd.yaml", "benchmarks/configs-link", MASTER}
    assert all(f.head_text is None for f in links.values())
    assert "root:" not in repr(over_http)
    v = verdict(world)
    assert v.label == "REJECTED"
    assert "symbolic link; not followed" in failing(v)[COMPLETENESS_NUMBER]


def test_the_fake_answers_a_symlink_with_its_target_as_github_does(world):
    os.symlink("/etc/passwd", head(world) / "benchmarks" / "passwd")
    with FakeGitHub(world) as fake:
        item = httpx.get(f"{fake.url}/repos/{REPO}/contents/benchmarks/passwd", params={"ref": "b2" * 20}).json()
        tree = httpx.get(f"{fake.url}/repos/{REPO}/git/trees/{'b2' * 20}", params={"recursive": "1"}).json()
    assert item["type"] == "symlink" and item["target"] == "/etc/passwd" and "content" not in item
    entry = next(e for e in tree["tree"] if e["path"] == "benchmarks/passwd")
    assert entry["mode"] == "120000" and entry["type"] == "blob" and entry["size"] == len("/etc/passwd")


# --- scripts built to make the readers work hard -------------------------------------------------------------


SCRIPT = "benchmarks/single_node/dsv4_fp4_gb300.sh"
RUNNER = "runners/launch_gb300.sh"


@pytest.mark.slow
@pytest.mark.parametrize("path,text", [
    pytest.param(SCRIPT, "|\n" * 10_000, id="10k-pipes"),
    pytest.param(SCRIPT, "vllm serve " + "a\\ " * 150_000 + "\n", id="escaped-word"),
    pytest.param(SCRIPT, "'" * 200_001 + "\n", id="open-quote"),
    pytest.param(SCRIPT, "cat <<EOF\n" * 20_000, id="heredoc-openers"),
    pytest.param(SCRIPT, "vllm serve m --speculative-config '" + "[" * 50_000 + "'\n", id="deep-json-arg"),
    pytest.param(SCRIPT, "if true; then\n" * 5_000 + "vllm serve m\n" + "fi\n" * 5_000, id="nested-ifs"),
    pytest.param(RUNNER, "if [ \"$EVAL_ONLY\" = true ]; then\n" * 50_000, id="50k-unclosed-ifs"),
    pytest.param(SCRIPT, "$(" * 100_000 + "\n", id="open-substitutions"),
    pytest.param(SCRIPT, "".join(f"V{i}=$V{i - 1}$V{i - 1}\n" for i in range(1, 20_000)), id="doubling-variables"),
    pytest.param(SCRIPT, "A=" + "x" * 19_000 + "\n" + 'echo "$A"\n' * 50_000, id="wide-expansions"),
])
def test_scripts_that_stress_the_readers_end_in_a_verdict(world, path, text):
    """Recursion, quadratic expansion, deep JSON and unclosed branches in scripts: the evaluation
    (evidence requests included) finishes within its limits with a verdict, not an internal error."""
    script = head(world) / path
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    result = bounded(world)
    assert result["label"] in ("PASS", "REJECTED", "NEEDS A MAINTAINER")  # (a line nested too deep is not read)
    assert not any("internal error" in reason for reason in result["failing"].values()), result["failing"]


# --- CODEOWNERS ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_10000_wildcard_codeowners_rules_against_3000_paths_fail_closed_within_the_step_budget(world):
    """Quadratic in rules x paths, not exponential; the step budget keeps even that bounded: check 0 fails
    closed naming the sizes, and the whole evaluation stays within the child's limits."""
    rules = "".join(f"*a*a*a*a*a*a*a*a*a*a*b{i % 7} @owner{i}\n" for i in range(10_000))
    (Path(world) / "trees" / "base" / ".github" / "CODEOWNERS").write_text("* @nv-owner\n" + rules)
    folder = head(world) / "b0b1b2b3b4b5b6"
    folder.mkdir()
    for n in range(3_000):
        (folder / f"{'a' * 20}{n}.txt").write_text("a\n")
    result = bounded(world)
    assert result["label"] == "REJECTED"
    reason = result["failing"][check00_codeowner.NUMBER]
    assert f"more than {codeowners.MAX_STEPS:,} steps" in reason and "10,001 rules" in reason


def test_the_step_budget_is_deterministic_and_leaves_real_codeowners_alone():
    """The InferenceX-sized case spends a sliver of the budget; the same input always spends the same."""
    owners = codeowners.parse("* @org/core\nconfigs/nvidia-master.yaml @nv\nconfigs/amd-master.yaml @amd\n"
                              "benchmarks/multi_node/ @nv\n/docs/ @org/docs\n*.md @org/docs\n")
    paths = [f"benchmarks/multi_node/srt-slurm-recipes/sglang/m{n}/8k1k/r{n}.yaml" for n in range(3_000)]
    spent = []
    for _ in range(2):
        budget = codeowners.Budget()
        for path in paths:
            owners.owners_of(path, budget)
        spent.append(codeowners.MAX_STEPS - budget.left)
    assert spent[0] == spent[1] < codeowners.MAX_STEPS // 20


# --- sign-off bodies of a megabyte ---------------------------------------------------------------------------


P = "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n"
MB = 1_000_000
BODIES = {
    "one-item-of-1mb": P + "- [x] " + "a" * MB,
    "100k-items": P + "- [x] Verified word\n" * (MB // 20),
    "brackets": P + "- [x] " + "[" * MB,
    "links": P + "- [x] " + "[a](" * (MB // 4),
    "detail-heading-then-spaces": P + "### Additional detail section" + " " * MB + "x",
    "typos": P + "".join(f"- [x] Verifed thsi PR pases evals numbr{n}\n" for n in range(MB // 45)),
    "urls-in-detail": P + "### Additional detail section:\n" + "https://github.com/a/b/pull/1 " * (MB // 30),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(BODIES))
def test_a_one_megabyte_sign_off_is_judged_with_a_reason(world, shape):
    def body(data):
        comment_of(data, SIGNOFF_ID)["body"] = BODIES[shape]

    result = bounded(edit_world(world, body))
    assert result["label"] == "REJECTED"
    assert 5 in result["failing"]  # the checklist does not match the template


@pytest.mark.slow
def test_a_real_sign_off_padded_to_a_megabyte_still_passes(world):
    """Size alone is no reason to fail: the checks read it and pass it on its merits."""
    def pad(data):
        c = comment_of(data, SIGNOFF_ID)
        c["body"] = c["body"].replace("Signed:", "- detail " * (MB // 9) + "\n\nSigned:")

    result = bounded(edit_world(world, pad))
    assert result["label"] == "PASS", result["failing"]


def test_lint_reports_unreadable_files_only_through_the_evidence_row(world):
    """A binary file is one finding on one row, not a cascade of lint errors on every rule."""
    (head(world) / "benchmarks" / "multi_node" / "blob.yaml").write_bytes(b"\x00\x01\x02")
    v = verdict(world)
    assert set(failing(v)) == {COMPLETENESS_NUMBER}
    assert LINT_NUMBER not in failing(v)
