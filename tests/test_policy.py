"""The repository's configuration (checks/policy.py) and what the verdict concludes from it (checks/result.py)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from app.github import render
from app.offline.replay import DEMO_WORLD
from app.offline.snapshot import judge_world
from app.offline.world import World
from checks.policy import CONFIG_PATH, Policy
from checks.result import CheckResult, Status, Verdict

from .conftest import shared_worlds


def test_no_file_or_an_empty_one_is_the_defaults_without_a_word():
    assert Policy.from_yaml(None) == (Policy(), ())
    assert Policy.from_yaml("") == (Policy(), ())
    assert Policy.from_yaml("# nothing set\n") == (Policy(), ())


def test_a_mistyped_key_costs_only_itself():
    policy, problems = Policy.from_yaml("advisroy: false\nadvisory: true\nlint: blocking\n")
    assert policy == Policy(advisory=True, lint="blocking")
    assert problems == (f"{CONFIG_PATH}:1: unknown setting 'advisroy' (did you mean advisory?); ignored",)


def test_a_bad_value_costs_only_its_setting_and_every_problem_is_named_in_file_order():
    policy, problems = Policy.from_yaml(
        "lint: sometimes\n"
        "established-skus: h100\n"  # a dash is an underscore; one string is a list of one
        "block_self_signoff: 'yes'\n"
        "upstream_image_orgs: [vllm, 3]\n"
        "zzz: 1\n"
        "sweep_workflow: sweep.yml\n")
    assert policy == Policy(established_skus=("h100",), sweep_workflow="sweep.yml")
    assert problems == (
        f"{CONFIG_PATH}:1: lint must be one of advice, blocking; ignored, the default applies",
        f"{CONFIG_PATH}:3: block_self_signoff must be a bool; ignored, the default applies",
        f"{CONFIG_PATH}:4: upstream_image_orgs must be a list of strings; ignored, the default applies",
        f"{CONFIG_PATH}:5: unknown setting 'zzz'; ignored",
    )


@pytest.mark.parametrize("text,problem", [
    ("advisory: true\nlint: [advice\n", f"{CONFIG_PATH}:2: does not parse"),
    ("- advisory\n", f"{CONFIG_PATH}: must be a mapping of settings"),
])
def test_a_file_that_is_no_mapping_of_settings_leaves_every_setting_at_its_default(text, problem):
    policy, problems = Policy.from_yaml(text)
    assert policy == Policy()
    assert len(problems) == 1 and problems[0].startswith(problem) and problems[0].endswith(
        "every setting is the default")


def test_the_sweep_workflow_is_one_file_exactly():
    assert Policy().sweep_workflow_path == ".github/workflows/run-sweep.yml"
    assert Policy().is_sweep_workflow(".github/workflows/run-sweep.yml")
    assert not Policy().is_sweep_workflow(".github/workflows/dry-run-sweep.yml")
    assert not Policy().is_sweep_workflow(None)
    assert Policy(sweep_workflow=".github/workflows/x.yml").is_sweep_workflow(".github/workflows/x.yml")


def verdict(status: Status, advisory: bool = False, signer: str | None = "owner") -> Verdict:
    return Verdict("a" * 40, signer, None, (CheckResult(0, "CODEOWNER", status, "r"),), policy=Policy(advisory=advisory))


@pytest.mark.parametrize("status,advisory,signer,conclusion,state", [
    (Status.PASS, False, "owner", "success", "success"),
    (Status.PASS, True, "owner", "success", "success"),
    (Status.FAIL, False, "owner", "failure", "failure"),
    (Status.FAIL, True, "owner", "neutral", "success"),  # advisory: REJECTED is said, never blocks
    (Status.PASS, False, None, "failure", "failure"),  # no sign-off: nothing passes
])
def test_what_the_check_run_and_the_commit_status_conclude(status, advisory, signer, conclusion, state):
    v = verdict(status, advisory, signer)
    assert (v.conclusion, v.commit_state) == (conclusion, state)


def test_directory_settings_are_compared_one_way_however_they_are_written():
    for written in ("golden_al_distribution/", "./golden_al_distribution", "golden_al_distribution"):
        policy, problems = Policy.from_yaml(f"golden_al_dir: {written}\nwaiver_dir: docs/waiver/\n"
                                            "recipe_root: ./benchmarks/multi_node/srt-slurm-recipes/\n")
        assert not problems and policy.golden_al_dir == "golden_al_distribution"
        assert policy.waiver_dir == "docs/waiver" and policy.is_policy_file("docs/waiver/12.md")
        assert policy.is_golden_curve("golden_al_distribution/kimik3_dspark.yaml", "kimik3_dspark")
        assert policy.is_recipe("benchmarks/multi_node/srt-slurm-recipes/sglang/x.yaml")


WORLDS = [DEMO_WORLD, *shared_worlds()]


# Every setting that names a directory of the repository, and the ways a repository may write one.
PATH_SETTINGS = ("golden_al_dir", "waiver_dir", "recipe_root")
SPELLINGS = {"plain": "{}", "trailing slash": "{}/", "leading ./ and trailing slash": "./{}/"}


def test_the_path_settings_are_every_directory_setting():
    assert {f.name for f in fields(Policy) if f.name.endswith(("_dir", "_root"))} == set(PATH_SETTINGS)


@pytest.mark.parametrize("world", WORLDS, ids=[w.name for w in WORLDS])
def test_a_trailing_slash_in_the_path_settings_changes_no_verdict(world):
    """Every directory setting written with a trailing slash, or none (and with a leading ./), in the base
    branch's .github/signoff-bot.yml gives byte for byte the same verdict: the comment, the check run's
    summary with every finding, and both check runs' conclusions."""
    def verdict_with(spelling: str):
        settings = "".join(f"{name}: {spelling.format(getattr(Policy(), name))}\n" for name in PATH_SETTINGS)
        w = World.load(world)
        for repo in w.repos.values():
            for pr in repo.pulls.values():
                tip = repo.commit(pr["base"]["ref"])
                old = tip.files.get(CONFIG_PATH, b"").decode()
                tip.files[CONFIG_PATH] = (old + "\n" + settings).encode()
        v = judge_world(w).verdict
        assert v.notes == (), v.notes  # every spelling is read, none ignored
        return render.summary(v), v.conclusion, v.lint_conclusion

    plain, *others = (verdict_with(spelling) for spelling in SPELLINGS.values())
    assert others == [plain] * len(others)
