"""NEEDS A MAINTAINER and `/signoff-accept` end to end: `signoff-bot serve` and the fake GitHub on loopback.

The PR of the e2e world, made to pass every check but one it cannot decide (a recipe overrides the model
config with a variable, check 8), is signed off. The verdict asks a maintainer; an acceptance counts only
from a user with write permission who is neither the PR's author nor the signer, and only for the content
it was given on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .apphost import Stack
from .variants import E2E_WORLD, PR, RECIPE, REUSE_ID, SIGNOFF_ID, edit_world, pull_of

pytestmark = pytest.mark.slow

HEAD, FIXED = "b2" * 20, "d4" * 20
UNREADABLE = '      json-model-override-args: "$OVERRIDES"\n'


def world(tmp: Path) -> Path:
    """The e2e world with the fixed recipe at the head, an override check 8 cannot read in it, a maintainer's
    `/reuse-sweep-run 9001`, and a push (FIXED) that changes the recipe again."""
    root = tmp / "world"
    shutil.copytree(E2E_WORLD, root)
    shutil.rmtree(root / "trees" / "head")
    shutil.copytree(root / "trees" / "fixed", root / "trees" / "head")
    for tree, extra in (("head", ""), ("fixed", "      mem-fraction-static: 0.8\n")):
        recipe = root / "trees" / tree / RECIPE
        text = recipe.read_text()
        recipe.write_text(text.replace("      speculative-algo", UNREADABLE + extra + "      speculative-algo", 1))

    def reuse(data: dict) -> None:
        pull_of(data)["issue_comments"].append({
            "id": REUSE_ID, "user": "core-maintainer", "author_association": "MEMBER",
            "created_at": "2026-09-02T11:00:00Z", "body": "/reuse-sweep-run 9001"})

    return edit_world(root, reuse)


def row(stack: Stack, number: int) -> str:
    body = stack.verdict_comments(PR)[0]["body"]
    return next(line for line in body.splitlines() if line.startswith(("✅", "❌", "❔", "➖"))
                and f"Check {number} (" in line)


def test_only_a_maintainer_who_neither_wrote_nor_signed_it_can_accept_and_a_push_voids_it(tmp_path):
    with Stack(tmp_path, world(tmp_path)) as stack:
        stack.deliver("issue_comment", SIGNOFF_ID)
        stack.wait(lambda: stack.verdict_comments(PR) and "**NEEDS A MAINTAINER**" in
                   stack.verdict_comments(PR)[0]["body"], 60, "a NEEDS A MAINTAINER verdict")
        comment = stack.verdict_comments(PR)[0]["body"]
        assert "@nv-owner" not in comment.split("\n\n", 1)[0]  # the signer is not blamed
        assert row(stack, 8).startswith("❔ Check 8 (no architecture hacks): UNDECIDED — cannot decide:")
        runs = stack.wait(lambda: stack.check_runs(HEAD), 30, "the check run")
        assert runs[0]["conclusion"] == "action_required"

        refusals = 0
        for login, why in (("contributor", "the PR's author"), ("random-user", "needs write permission")):
            c = stack.comment(login, PR, "/signoff-accept 8 I checked the override by hand")
            stack.wait(lambda c=c: stack.reactions(c["id"]) == ["-1"], 60, f"{login}'s refusal")
            refusals += 1
            stack.wait(lambda n=refusals: sum("refused" in x["body"] for x in stack.issue_comments(PR)) == n, 30,
                       "a refusal reply")
            assert any(why in x["body"] and login in x["body"] for x in stack.issue_comments(PR))
        by_signer = stack.comment("nv-owner", PR, "/signoff-accept 8 I signed off, so it is fine")
        stack.wait(lambda: stack.reactions(by_signer["id"]) == ["eyes"], 60, "the signer's command seen")
        accepted = stack.comment("core-maintainer", PR, "/signoff-accept 8 OVERRIDES is unset in every launch, "
                                                        "so no override applies")
        stack.wait(lambda: "**Verdict: PASS**" in stack.verdict_comments(PR)[0]["body"], 90, "the accepted verdict")
        line = row(stack, 8)
        assert line.startswith("✅ Check 8 (no architecture hacks): PASS — accepted by @core-maintainer: "
                               "OVERRIDES is unset in every launch, so no override applies")
        assert "nv-owner" not in line and str(accepted["id"]) in line
        assert stack.wait(lambda: stack.check_runs(HEAD)[0]["conclusion"] == "success", 30, "a green check run")
        audit = stack.wait(lambda: [r for r in stack.store().audit(pr=PR) if "accepted" in json.loads(r["published"])],
                           30, "the acceptance in the audit trail")  # recorded just after it is published
        assert json.loads(audit[-1]["published"])["accepted"][0]["by"] == "core-maintainer"

        stack.admin("push", number=PR, sha=FIXED)  # the recipe changes: the sign-off and the acceptance are void
        runs = stack.wait(lambda: stack.check_runs(FIXED), 60, "a check run on the new head")
        assert runs[0]["conclusion"] == "action_required"
        body = next(c for c in stack.issue_comments(PR) if c["id"] == SIGNOFF_ID)["body"]
        stack.edit_comment("nv-owner", SIGNOFF_ID, body + "\n\nRe-checked on the new recipe.")  # a fresh sign-off
        stack.wait(lambda: f"sha={FIXED}" in stack.verdict_comments(PR)[0]["body"], 90, "a verdict on the new head")
        assert row(stack, 8).startswith("❔ Check 8 (no architecture hacks): UNDECIDED")
        assert stack.check_runs(FIXED)[0]["conclusion"] != "success"
