"""Check 0 — the sign-off author is a CODEOWNER (checks/rules/check00_codeowner.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from checks.context import Context
from checks.evidence import Wanted
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check00_codeowner as codeowner
from checks.snapshot import ChangedFile
from tests.builders import SIGNOFF_HEAD, comment, ctx, needs, pr
from tests.conftest import world_params

CODEOWNERS = """\
* @InferenceX/core

# AMD master config
configs/amd-master.yaml @billishyahao @chunfangamd

# NVIDIA master config
configs/nvidia-master.yaml @ankur-singh @kedarpotdar-nv @InferenceX/core

experimental/operatorx/ @hbarclay @InferenceX/opx
"""

SIGNOFF = SIGNOFF_HEAD + "\n- [x] Verified ...\n\nSigned: `x`"


def files(*paths: str) -> list[ChangedFile]:
    return [ChangedFile(p, "modified") for p in paths]


def make(signer: str = "Ankur-singh", paths=("configs/nvidia-master.yaml", "perf-changelog.yaml"),
         codeowners: str | None = CODEOWNERS, teams=None, author: str = "contributor", policy=None, **kw) -> Context:
    policy_files = dict(policy or {})
    if codeowners is not None:
        policy_files.setdefault(".github/CODEOWNERS", codeowners)
    return ctx(files=kw.pop("files", files(*paths)), comments=[comment(SIGNOFF, author=signer)],
               policy=policy_files, teams=teams or {}, pr=pr(author=author), **kw)


def test_named_owner_of_specific_path_and_catch_all_for_the_rest():
    r = codeowner.check(make())
    assert r.status is Status.PASS
    assert r.reason == ("Ankur-singh is a named owner of configs/nvidia-master.yaml; all other changed paths fall "
                        "to the catch-all `* @InferenceX/core`, which a recognized CODEOWNER satisfies")
    assert (r.number, r.name) == (0, "CODEOWNER")


def test_amd_owner_signing_nvidia_change_fails():
    r = codeowner.check(make(signer="chunfangamd", teams={"InferenceX/core": ()}))
    assert r.status is Status.FAIL
    assert r.reason == ("chunfangamd is not an owner of configs/nvidia-master.yaml: .github/CODEOWNERS:7 "
                        "`configs/nvidia-master.yaml @ankur-singh @kedarpotdar-nv @InferenceX/core` assigns it to "
                        "@ankur-singh, @kedarpotdar-nv, @InferenceX/core; one of them must sign off")


def test_team_member_owns_specific_path():
    r = codeowner.check(make(signer="functionstackx", teams={"InferenceX/core": ("functionstackx",)}))
    assert r.status is Status.PASS
    assert "functionstackx owns configs/nvidia-master.yaml as a member of @InferenceX/core" in r.reason


def test_team_keys_are_case_insensitive():
    r = codeowner.check(make(signer="FunctionStackX", teams={"inferencex/CORE": ("functionstackx",)}))
    assert r.status is Status.PASS


def test_unknown_membership_accepted_when_signer_owns_another_changed_path():
    r = codeowner.check(make(signer="chunfangamd",
                             paths=("configs/amd-master.yaml", "configs/nvidia-master.yaml")))
    assert r.status is Status.PASS
    assert "chunfangamd is a named owner of configs/amd-master.yaml" in r.reason
    assert "configs/nvidia-master.yaml (team membership unreadable) accepted" in r.reason


def test_unknown_membership_fails_closed_when_signer_owns_no_changed_path():
    r = codeowner.check(make(signer="chunfangamd", paths=("configs/nvidia-master.yaml",)))
    assert r.status is Status.UNDECIDED
    assert r.reason.startswith("cannot decide: whether chunfangamd owns configs/nvidia-master.yaml: "
                               ".github/CODEOWNERS:7 lists only @ankur-singh")
    assert "whether they are in @InferenceX/core: GitHub does not tell these credentials" in r.reason


def test_unknown_membership_accepted_through_known_catch_all_membership():
    r = codeowner.check(make(signer="cquil11", paths=("configs/nvidia-master.yaml", "README.md"),
                             teams={"InferenceX/core": ("cquil11",)}))
    assert r.status is Status.PASS  # member of the catch-all team that owns README.md and nvidia-master


def test_catch_all_only_satisfied_by_named_codeowner_elsewhere():
    r = codeowner.check(make(signer="hbarclay", paths=("README.md",)))
    assert r.status is Status.PASS
    assert r.reason == ("the only changed path falls to the catch-all `* @InferenceX/core`, which hbarclay "
                        "(named at .github/CODEOWNERS:9) satisfies as a recognized CODEOWNER")


def test_catch_all_satisfied_by_known_team_member():
    r = codeowner.check(make(signer="cquil11", paths=("README.md", "utils/x.py"),
                             teams={"InferenceX/core": ("cquil11",)}))
    assert r.status is Status.PASS
    assert r.reason.startswith("every changed path falls to the catch-all")
    assert "(a member of @InferenceX/core)" in r.reason


def test_not_a_codeowner_at_all_fails():
    r = codeowner.check(make(signer="random-user", paths=("README.md",),
                             teams={"InferenceX/core": (), "InferenceX/opx": ()}))
    assert r.status is Status.FAIL
    assert r.reason == ("random-user is not a CODEOWNER: not named in .github/CODEOWNERS nor a known member of its "
                        "teams; a CODEOWNER must sign off")


def test_not_a_codeowner_with_unreadable_teams_names_them():
    r = codeowner.check(make(signer="random-user", paths=("README.md",)))
    assert r.status is Status.UNDECIDED
    assert "membership of @InferenceX/core, @InferenceX/opx could not be read (GitHub does not tell" in r.reason
    known = codeowner.check(make(signer="random-user", paths=("README.md",),
                                 teams={"InferenceX/core": (), "InferenceX/opx": ()}))
    assert known.status is Status.FAIL and known.reason.startswith("random-user is not a CODEOWNER")


def test_renamed_file_checks_both_paths():
    renamed = [ChangedFile("configs/x.yaml", "renamed", previous_path="configs/amd-master.yaml")]
    r = codeowner.check(make(signer="Ankur-singh", files=renamed, teams={"InferenceX/core": ()}))
    assert r.status is Status.FAIL
    assert "is not an owner of configs/amd-master.yaml" in r.reason


def test_removed_file_counts():
    removed = [ChangedFile("configs/amd-master.yaml", "removed")]
    assert codeowner.check(make(signer="chunfangamd", files=removed)).status is Status.PASS
    assert codeowner.check(make(signer="hbarclay", files=removed)).status is Status.FAIL


def test_several_denied_paths_are_counted():
    r = codeowner.check(make(signer="hbarclay", teams={"InferenceX/core": ()},
                             paths=("configs/amd-master.yaml", "configs/nvidia-master.yaml", "x/configs/z")))
    assert r.status is Status.FAIL
    assert r.reason.startswith("hbarclay is not an owner of configs/amd-master.yaml")
    assert "(+1 more path)" in r.reason


def test_pattern_without_owners_falls_to_default():
    r = codeowner.check(make(signer="chunfangamd", paths=("generated/a.json",),
                             codeowners=CODEOWNERS + "/generated/\n"))
    assert r.status is Status.PASS
    assert "falls to the catch-all" in r.reason


def test_email_owner_is_unverifiable():
    r = codeowner.check(make(signer="chunfangamd", paths=("docs/a.md",),
                             codeowners="* @core\ndocs/ docs@example.com\nconfigs/ @chunfangamd\n"))
    assert r.status is Status.UNDECIDED
    assert r.reason.startswith("cannot decide: whether chunfangamd owns docs/a.md")
    assert "docs@example.com is an email address, which GitHub does not match to a login" in r.reason


def test_no_signoff():
    c = ctx(files=files("a"), policy={".github/CODEOWNERS": CODEOWNERS})
    r = codeowner.check(c)
    assert r.status is Status.FAIL
    assert r.reason == 'no sign-off found: no comment begins with "As a PR reviewer and CODEOWNER"'


def test_no_codeowners_fails_closed():
    r = codeowner.check(make(codeowners=None))
    assert r.status is Status.FAIL
    assert r.reason.startswith("no CODEOWNERS on the base branch (.github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS)")


def test_first_present_codeowners_path_wins():
    r = codeowner.check(make(signer="x", codeowners=None, paths=("a.py",),
                             policy={"CODEOWNERS": "* @x\n", "docs/CODEOWNERS": "* @y\n"}))
    assert r.status is Status.PASS


def test_prs_own_codeowners_edit_never_counts():
    edited = [ChangedFile(".github/CODEOWNERS", "modified", base_text=CODEOWNERS,
                          head_text="* @random-user\n", patch="+* @random-user")]
    r = codeowner.check(make(signer="random-user", files=edited, teams={"InferenceX/core": (), "InferenceX/opx": ()}))
    assert r.status is Status.FAIL


def test_unusable_codeowners_fails_closed_with_line():
    r = codeowner.check(make(codeowners="!* @x\n"))
    assert r.status is Status.FAIL
    assert r.reason == ".github/CODEOWNERS:1 cannot be used: negation (!) is not supported in CODEOWNERS"


def test_skipped_lines_are_noted():
    r = codeowner.check(make(codeowners=CODEOWNERS + "docs/[ab] @x\n"))
    assert r.status is Status.PASS
    assert r.reason.endswith("; 1 invalid CODEOWNERS line skipped as GitHub does (first: .github/CODEOWNERS:10 "
                             "character ranges ([...]) are not supported in CODEOWNERS)")


def test_truncated_file_list_fails_closed():
    r = codeowner.check(make(truncated="GitHub lists at most 3000 files of a pull request; this one has more"))
    assert r.status is Status.FAIL
    assert r.reason.endswith("ownership of what GitHub did not list cannot be verified")


def test_self_signoff_is_noted():
    r = codeowner.check(make(author="ankur-singh"))
    assert r.status is Status.PASS
    assert r.reason.endswith("; note: Ankur-singh is also the PR's author (self sign-off)")
    assert r.findings == ()


def test_self_signoff_blocked_by_policy():
    r = codeowner.check(make(author="Ankur-singh", policy={".github/signoff-bot.yml": "block_self_signoff: true\n"}))
    assert r.status is Status.FAIL
    assert r.reason == "Ankur-singh signed off their own PR; block_self_signoff requires another CODEOWNER"


def test_no_changed_files():
    r = codeowner.check(make(signer="hbarclay", paths=()))
    assert r.status is Status.PASS
    assert r.reason == "the PR changes no files; hbarclay is a recognized CODEOWNER in .github/CODEOWNERS"


def test_deterministic():
    c1, c2 = make(signer="chunfangamd", paths=("b", "a", "configs/nvidia-master.yaml")), \
        make(signer="chunfangamd", paths=("configs/nvidia-master.yaml", "a", "b"))
    assert codeowner.check(c1) == codeowner.check(c2)


# --- evidence asked for ----------------------------------------------------------------------


def test_wants_teams_of_owning_rules():
    w = needs(codeowner, make(signer="Ankur-singh", paths=("configs/nvidia-master.yaml", "experimental/operatorx/a")))
    assert w == Wanted(teams=(("InferenceX/core", "Ankur-singh"), ("InferenceX/opx", "Ankur-singh")))


def test_wants_every_team_when_only_the_catch_all_decides_and_signer_is_not_named():
    w = needs(codeowner, make(signer="cquil11", paths=("README.md",)))
    assert w.teams == (("InferenceX/core", "cquil11"), ("InferenceX/opx", "cquil11"))


def test_wants_nothing_without_signoff_or_codeowners():
    assert needs(codeowner, ctx(files=files("a"), policy={".github/CODEOWNERS": CODEOWNERS})) == Wanted()
    assert needs(codeowner, make(codeowners=None)) == Wanted()


# --- shared worlds ------------------------------------------------------------------


@pytest.mark.parametrize("world", world_params())
def test_world(world: Path):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World

    expected = yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}
    want = (expected.get("checks") or {}).get(codeowner.NUMBER)
    if want is None:
        pytest.skip("check 0 not asserted in this world")
    snap = snapshot_from_world(World.load(world), rules=rules_of(codeowner))
    result = codeowner.check(Context(snap))
    assert result.status.value == want, result.reason
