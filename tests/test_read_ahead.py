"""What checks/anticipated.py names to read ahead of the first evidence round: the sign-off author's team memberships and
the upstream recipes the sign-off links, and nothing the round would not ask for in the shared worlds."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.offline.snapshot import judge_world
from app.offline.world import World
from checks import anticipated
from checks.evidence import UpstreamTarget
from checks.policy import CONFIG_PATH, Policy
from tests.builders import SIGNOFF_HEAD, comment

from .conftest import world_params

POLICY = Policy()
RECIPE = "https://github.com/vllm-project/recipes/pull/788"
SIGNOFF = SIGNOFF_HEAD + f"\n- [x] Recipe\n\n### Additional detail section:\n- recipe: {RECIPE}\n"


def _sign(*comments):
    return anticipated.find_signoff(comments, POLICY, "signoff-bot[bot]")


def test_the_signoff_authors_membership_in_each_codeowners_team_is_read_ahead() -> None:
    sign = _sign(comment("looks fine", author="someone", cid=1), comment(SIGNOFF, author="Ankur-singh", cid=2))
    codeowners = "* @InferenceX/core\nconfigs/nvidia-master.yaml @ankur-singh @InferenceX/nvidia\n"
    texts = {POLICY.codeowners_paths[0]: codeowners}
    assert anticipated.memberships(sign, POLICY, texts) == [("InferenceX/core", "Ankur-singh"),
                                                           ("InferenceX/nvidia", "Ankur-singh")]


def test_no_membership_is_read_ahead_without_a_signoff_a_codeowners_or_past_max_teams() -> None:
    sign = _sign(comment(SIGNOFF, author="Ankur-singh"))
    many = "".join(f"dir{i}/ @org/team{i}\n" for i in range(anticipated.MAX_TEAMS + 1))
    assert anticipated.memberships(_sign(comment("no sign-off here")), POLICY,
                                  {POLICY.codeowners_paths[0]: "* @org/core\n"}) == []
    assert anticipated.memberships(sign, POLICY, {}) == []
    assert anticipated.memberships(sign, POLICY, {POLICY.codeowners_paths[0]: many}) == []


def test_the_recipes_the_signoffs_detail_section_links_are_read_ahead() -> None:
    assert anticipated.upstream(_sign(comment(SIGNOFF))) == (
        UpstreamTarget(RECIPE, "pull", "vllm-project/recipes", 788),)
    above_the_section = SIGNOFF_HEAD + f"\n- [x] Recipe {RECIPE}\n"
    assert anticipated.upstream(_sign(comment(above_the_section))) == ()
    assert anticipated.upstream(None) == ()


@pytest.mark.parametrize("world", world_params())
def test_what_is_read_ahead_is_what_the_evidence_rounds_ask_for(world: Path) -> None:
    """A guess the rounds do not make would cost a request for nothing; one they make starts a round trip
    early. In every shared world each guess is asked for."""
    done = judge_world(World.load(world))
    snap, asked = done.snapshot, done.asked
    policy = Policy.from_yaml(snap.policy.get(CONFIG_PATH))[0]
    sign = anticipated.find_signoff(snap.comments, policy, snap.bot_login)
    assert set(anticipated.memberships(sign, policy, snap.policy)) <= set(asked.teams)
    assert set(anticipated.upstream(sign)) <= set(asked.upstream)
