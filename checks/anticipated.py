"""The evidence the first evidence round will most likely ask for, named by the checks that will ask.

The evidence round starts only once the first snapshot is complete and judged, a round trip or two after
the conversation and the policy files are in; the reads it then makes are the last in a verification's
chain of round trips. Two of them are known from those first reads already, by the checks' own readers:
whether the sign-off's author is in the teams CODEOWNERS names (check 0 asks for the teams owning the
changed paths, or for all of them), and the upstream recipes its additional detail section links (the
recipe-link check reads each). The checks name them here, next to the readers that decide them, so a
fetcher (app/github/gather.py) can read them ahead; the round then shares those reads. A guess that the round
does not make costs its requests, nothing else: what the snapshot holds is what the round asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from checks.evidence import UpstreamTarget
from checks.facts import codeowners, signoff, upstream_recipes
from checks.policy import Policy
from checks.snapshot import Comment

MAX_TEAMS = 3  # a CODEOWNERS naming more teams is read ahead for none: check 0 may ask for one of them


def find_signoff(comments: Iterable[Comment], policy: Policy, bot_login: str) -> signoff.SignOff | None:
    """The sign-off, as the checks will find it."""
    return signoff.find(tuple(comments), policy.signoff_phrase, bot_login)


def memberships(sign: signoff.SignOff | None, policy: Policy, policy_texts: Mapping[str, str]) -> list[tuple[str, str]]:
    """(team, login) of the sign-off's author in each team of the base branch's CODEOWNERS."""
    text = next((policy_texts[p] for p in policy.codeowners_paths if p in policy_texts), None)
    if sign is None or text is None:
        return []
    teams = codeowners.parse(text).teams
    return [(team, sign.author) for team in teams] if len(teams) <= MAX_TEAMS else []


def upstream(sign: signoff.SignOff | None) -> tuple[UpstreamTarget, ...]:
    """The upstream recipes the sign-off's additional detail section links."""
    return upstream_recipes.targets(sign.detail_links) if sign is not None and sign.has_detail_section else ()
