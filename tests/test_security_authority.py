"""Authority: nothing but a CODEOWNER's sign-off, a maintainer's command and the base branch's policy
can turn a verdict green.

Each test starts from a world whose PR passes (tests/variants.py), changes one
thing an attacker controls (who signs, who commands, what the PR's own files
say, where the PR comes from) and asserts the verdict is no longer PASS, for
the reason that thing should cause. The App's command handler is exercised
through app.jobs.runner against the fake GitHub, and the bot's own comments never
count as a sign-off or a command.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.fake_github import FakeGitHub
from app.github.client import CallStats, installation_client
from app.github.gather import Gatherer
from app.jobs.runner import Clients, JobRunner
from app.observability import Metrics
from app.offline.replay import REPLAY_APP_ID, throwaway_key
from app.settings import Settings
from app.store.sql import Job, SqliteStore
from checks.rules import check00_codeowner, check02_evals, check04_reuse_command

from .variants import (
    BASE_SHA,
    EVAL_ARTIFACT,
    HEAD_SHA,
    MASTER,
    PR,
    RECIPE,
    REPO,
    REUSE_ID,
    SIGNOFF_ID,
    base,
    comment_of,
    edit_world,
    failing,
    green_world,
    head,
    pull_of,
    replayed,
    repo_of,
    verdict,
)

KEY = throwaway_key()


@pytest.fixture
def world(tmp_path) -> Path:
    return green_world(tmp_path)


def test_the_green_world_passes(world):
    """The baseline every test below breaks in one way."""
    v = verdict(world)
    assert v.label == "PASS", failing(v)
    assert v.signer == "nv-owner"


# --- who signs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("login,association", [
    ("random-user", "NONE"),
    ("drive-by", "CONTRIBUTOR"),
    ("amd-owner", "COLLABORATOR"),  # a CODEOWNER, of configs/amd-master.yaml only
    ("contributor", "CONTRIBUTOR"),  # the PR's own author
])
def test_a_sign_off_by_someone_who_owns_none_of_the_changed_files_is_rejected(world, login, association):
    def sign_as(data):
        comment_of(data, SIGNOFF_ID).update(user=login, author_association=association)

    v = verdict(edit_world(world, sign_as))
    assert v.label == "REJECTED"
    assert v.signer == login
    assert check00_codeowner.NUMBER in failing(v)
    assert login in failing(v)[check00_codeowner.NUMBER]


def test_an_owners_older_sign_off_does_not_survive_a_strangers_newer_one(world):
    """The newest sign-off is the one judged: a stranger cannot ride on an owner's earlier comment."""
    def later(data):
        owner = comment_of(data, SIGNOFF_ID)
        pull_of(data)["issue_comments"].append({**owner, "id": 5003, "user": "random-user",
                                                 "author_association": "NONE",
                                                 "created_at": "2026-09-02T11:30:00Z"})

    v = verdict(edit_world(world, later))
    assert v.label == "REJECTED" and v.signer == "random-user"


@pytest.mark.parametrize("login", ["signoff-bot[bot]", "github-actions[bot]", "SignOff-Bot[bot]", "renovate[bot]"])
def test_the_phrase_in_a_bots_comment_is_no_sign_off(world, login):
    """Bots (by type or by a [bot] login, the App itself in any case) never sign off."""
    def bot_signs(data):
        comment_of(data, SIGNOFF_ID).update(user=login, author_association="NONE")

    v = verdict(edit_world(world, bot_signs))
    assert v.label == "REJECTED"
    assert v.signer is None


@pytest.mark.parametrize("mangle", [
    pytest.param(lambda body: "\n".join("> " + line for line in body.splitlines()), id="quoted-reply"),
    pytest.param(lambda body: "I agree with the following:\n" + body, id="phrase-not-first"),
    pytest.param(lambda body: "`" + body + "`", id="in-code"),
    pytest.param(lambda body: body.replace("As a PR reviewer and CODEOWNER", "As a PR reviewer and codeowner"),
                 id="different-case"),
])
def test_the_phrase_anywhere_but_the_start_of_a_users_comment_is_no_sign_off(world, mangle):
    def quote(data):
        c = comment_of(data, SIGNOFF_ID)
        c["body"] = mangle(c["body"])

    v = verdict(edit_world(world, quote))
    assert v.label == "REJECTED" and v.signer is None


def test_the_bots_own_verdict_comment_neither_signs_off_nor_commands(world):
    """A verdict comment quoting the checklist and the command, posted by the App: no sign-off, no command."""
    def only_the_bot(data):
        signoff = comment_of(data, SIGNOFF_ID)["body"]
        comments = pull_of(data)["issue_comments"]
        comments.clear()
        comments.append({"id": 7001, "user": "signoff-bot[bot]", "author_association": "NONE",
                         "created_at": "2026-09-02T11:00:00Z", "body": signoff + "\n/reuse-sweep-run 9001\n"})

    v = verdict(edit_world(world, only_the_bot))
    assert v.label == "REJECTED" and v.signer is None
    assert check04_reuse_command.NUMBER in failing(v)


# --- who commands ----------------------------------------------------------------------------------


@pytest.mark.parametrize("login,association", [("drive-by", "CONTRIBUTOR"), ("random-user", "NONE"),
                                               ("contributor", "CONTRIBUTOR"), ("github-actions[bot]", "NONE")])
def test_reuse_from_anyone_but_a_maintainer_does_not_count(world, login, association):
    def command_by(data):
        comment_of(data, REUSE_ID).update(user=login, author_association=association)

    v = verdict(edit_world(world, command_by))
    assert v.label == "REJECTED"
    assert check04_reuse_command.NUMBER in failing(v)


def test_a_bare_reuse_in_a_review_summary_or_inline_comment_does_not_count(world):
    """Commands live in conversation comments only, as the merge script reads them."""
    def elsewhere(data):
        pr = pull_of(data)
        pr["issue_comments"] = [c for c in pr["issue_comments"] if c["id"] != REUSE_ID]
        pr["reviews"] = [{"id": 7101, "user": "core-maintainer", "author_association": "MEMBER",
                          "state": "COMMENTED", "submitted_at": "2026-09-02T11:00:00Z",
                          "body": "/reuse-sweep-run 9001"}]

    v = verdict(edit_world(world, elsewhere))
    assert check04_reuse_command.NUMBER in failing(v)


# --- what the PR's own files say ---------------------------------------------------------------------


def test_a_pr_that_makes_its_signer_a_codeowner_is_judged_by_the_base_codeowners(world):
    (head(world) / ".github" / "CODEOWNERS").write_text("* @amd-owner\n", encoding="utf-8")

    def amd_signs(data):
        comment_of(data, SIGNOFF_ID).update(user="amd-owner")

    v = verdict(edit_world(world, amd_signs))
    assert v.label == "REJECTED"
    assert "amd-owner is not an owner" in failing(v)[check00_codeowner.NUMBER]
    assert "assigns it to @nv-owner" in failing(v)[check00_codeowner.NUMBER]  # the base file's rule


def test_a_pr_that_lowers_the_eval_bar_is_judged_by_the_base_thresholds(world):
    rows = json.loads((world / "artifacts" / str(EVAL_ARTIFACT) / "agg_eval_all.json").read_text())
    for row in rows:
        row["score"] = row["em_strict"] = 0.85  # below the base bar of 0.91
    (world / "artifacts" / str(EVAL_ARTIFACT) / "agg_eval_all.json").write_text(json.dumps(rows))
    (head(world) / "utils" / "evals" / "thresholds.yaml").write_text(
        "default:\n  gsm8k: 0.5\nmodels:\n  dsv4:\n    gsm8k: 0.5\n", encoding="utf-8")
    v = verdict(world)
    assert v.label == "REJECTED"
    assert "0.91" in failing(v)[check02_evals.NUMBER]


def test_a_pr_that_revives_a_deprecated_scenario_in_models_md_is_judged_by_the_base_file(world):
    master = head(world) / MASTER
    master.write_text(master.read_text().replace("isl: 8192\n      osl: 1024", "isl: 1024\n      osl: 1024"))
    models = head(world) / "MODELS.md"
    models.write_text(models.read_text().replace("**Deprecated for all models** since 2026-07-17.", "Active.")
                      .replace("Agentic coding, Single-turn 8k1k | Single-turn 1k1k",
                               "Agentic coding, Single-turn 8k1k, Single-turn 1k1k | "))
    v = verdict(world)
    assert v.label == "REJECTED"
    assert 7 in failing(v) and "1k1k" in failing(v)[7]


def test_a_pr_that_trims_the_checklist_template_is_judged_by_the_base_template(world):
    checklist = head(world) / "docs" / "PR_REVIEW_CHECKLIST.md"
    lines = checklist.read_text().splitlines()
    checklist.write_text("\n".join(line for line in lines if "passes evals" not in line) + "\n")

    def drop_item(data):
        c = comment_of(data, SIGNOFF_ID)
        c["body"] = "\n".join(line for line in c["body"].splitlines() if "passes evals" not in line)

    v = verdict(edit_world(world, drop_item))
    assert v.label == "REJECTED"
    assert 5 in failing(v) and "passes evals" in failing(v)[5]


def test_a_pr_that_rewrites_the_bots_policy_file_changes_nothing(world):
    """The head's .github/signoff-bot.yml would accept any phrase, any commander and report only neutral."""
    (head(world) / ".github" / "signoff-bot.yml").write_text(
        "signoff_phrase: LGTM\nauthorized_associations: [NONE, CONTRIBUTOR]\nadvisory: true\n"
        "codeowners_paths: [docs/OWNERS]\n", encoding="utf-8")
    (head(world) / "docs" / "OWNERS").write_text("* @random-user\n", encoding="utf-8")

    def as_a_stranger(data):
        comment_of(data, SIGNOFF_ID).update(user="random-user", author_association="NONE")
        comment_of(data, REUSE_ID).update(user="random-user", author_association="NONE",
                                          body="LGTM\n/reuse-sweep-run 9001")

    v = verdict(edit_world(world, as_a_stranger))
    assert v.label == "REJECTED"
    assert {check00_codeowner.NUMBER, check04_reuse_command.NUMBER} <= set(failing(v))


@pytest.mark.parametrize("path", [".github/workflows/run-sweep.yml", ".github/workflows/benchmark-tmpl.yml",
                                  ".github/actions/collect/action.yml"])
def test_a_pr_that_changes_the_workflows_producing_its_evidence_is_named_and_can_be_blocked(world, path):
    """On pull_request GitHub runs the PR's own workflow files: a sweep they report green is self-attested.
    The spec has no rule against such a PR, so check 1 notes it; the base's `workflow_changes: blocking`
    (never the head's) turns the note into a FAIL."""
    target = head(world) / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("on: pull_request\njobs:\n  eval:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "    - run: echo '[{\"score\": 1.0}]' > agg_eval_all.json\n", encoding="utf-8")
    (head(world) / ".github" / "signoff-bot.yml").write_text("workflow_changes: note\n", encoding="utf-8")
    v = verdict(world)
    assert v.result(1).passed and f"Note: this PR changes {path}" in v.result(1).reason
    (base(world) / ".github").mkdir(parents=True, exist_ok=True)
    (base(world) / ".github" / "signoff-bot.yml").write_text("workflow_changes: blocking\n", encoding="utf-8")
    v = verdict(world)
    assert v.label == "REJECTED"
    assert path in failing(v)[1]


# --- where the PR comes from ---------------------------------------------------------------------


def test_a_fork_cannot_pass_on_runs_and_claims_of_its_own(world):
    """A fork's head repository has its own 'Run Sweep' runs and check runs on the head commit, and the
    sign-off links them: the base repository holds none of them, so checks 1, 2 and 4 fail."""
    def fork(data):
        upstream = repo_of(data)
        fork_repo = {"full_name": "attacker/InferenceX-demo", "default_branch": "main",
                     "commits": upstream["commits"], "branches": {"main": BASE_SHA, "evil": HEAD_SHA},
                     "check_runs": upstream.pop("check_runs"), "workflow_runs": upstream.pop("workflow_runs")}
        for run in fork_repo["workflow_runs"]:
            run.update(event="push", pull_requests=[])
        data["repos"].append(fork_repo)
        pr = pull_of(data)
        pr["head"]["repo"] = "attacker/InferenceX-demo"
        pr["body"] = "Sweep passed: https://github.com/attacker/InferenceX-demo/actions/runs/9001 (evals green)."
        c = comment_of(data, SIGNOFF_ID)
        c["body"] = c["body"].replace("demo-org/InferenceX-demo/actions", "attacker/InferenceX-demo/actions")

    fork_world = edit_world(world, fork)
    v = verdict(fork_world)
    assert v.label == "REJECTED"
    assert {1, 2, check04_reuse_command.NUMBER} <= set(failing(v))
    assert replayed(fork_world).label == "REJECTED"


# --- PR content is never executed ----------------------------------------------------------------------


def test_nothing_in_the_pr_is_ever_executed(world, tmp_path):
    """Scripts, hooks and YAML tags that would create a marker file if anything ran them: after a full
    replay (gather over HTTP, checks, publish) the marker does not exist."""
    marker = tmp_path / "executed"
    touch = f"touch {marker}"
    py = f"open({str(marker)!r}, 'w').close()"
    files = {
        "benchmarks/single_node/run.sh": f"#!/bin/bash\n{touch}\n$({touch})\n`{touch}`\neval \"{touch}\"\n",
        "setup.py": py + "\n", "conftest.py": py + "\n", "sitecustomize.py": py + "\n",
        "benchmarks/evil.pth": f"import os; os.system({touch!r})\n",
        ".github/workflows/pwn.yml": f"on: pull_request_target\njobs:\n  x:\n    steps:\n    - run: {touch}\n",
        "Makefile": f"all:\n\t{touch}\n",
    }
    for path, text in files.items():
        target = head(world) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    tag = f"!!python/object/apply:os.system [{touch!r}]"
    recipe = head(world) / RECIPE
    recipe.write_text(recipe.read_text() + f"\nextra: {tag}\n")
    master = head(world) / MASTER
    master.write_text(master.read_text() + f"\nevil-entry:\n  image: {tag}\n")
    changelog = head(world) / "perf-changelog.yaml"
    changelog.write_text(changelog.read_text() + f"\n- config-keys: [{tag}]\n")
    v = replayed(world)
    assert not marker.exists()
    assert v.label == "REJECTED"  # the files are judged as text: the evil entry fails its checks


# --- the App's command handler --------------------------------------------------------------------------


def _runner(fake: FakeGitHub, tmp_path: Path) -> tuple[JobRunner, SqliteStore]:
    settings = Settings(app_id=REPLAY_APP_ID, private_key=KEY, webhook_secret="unused", github_url=fake.url,
                        db_path=str(tmp_path / "bot.db"))
    store = SqliteStore(settings.db_path)
    metrics = Metrics()
    return JobRunner(settings, store, Clients(settings, metrics), metrics), store


def _comment_job(comment_id: int) -> Job:
    return Job(id=1, kind="comment", repo=REPO, pr=PR, key=f"issue_comment:{comment_id}", installation_id=1,
               payload={"comment_kind": "issue_comment", "comment_id": comment_id, "action": "created",
                        "event": "issue_comment", "delivery": "d"}, attempts=1, created_at=0.0)


@pytest.mark.parametrize("login,association,body", [
    ("drive-by", "CONTRIBUTOR", "/reuse-sweep-run 9001"),
    ("random-user", "NONE", "/reuse-sweep-run"),
    ("drive-by", "CONTRIBUTOR", "/signoff-recheck"),
    ("random-user", "NONE", "thanks!\n/signoff-recheck"),
])
def test_the_app_refuses_commands_from_contributors_and_strangers(world, tmp_path, login, association, body):
    """Through app.jobs.runner against the fake GitHub: a -1 reaction, a reply naming the author and the reason,
    and no verification queued."""
    def command(data):
        pull_of(data)["issue_comments"].append({"id": 5100, "user": login, "author_association": association,
                                                "created_at": "2026-09-02T11:30:00Z", "body": body})

    with FakeGitHub(edit_world(world, command)) as fake:
        runner, store = _runner(fake, tmp_path)
        asyncio.run(runner.run(_comment_job(5100)))
        repo = fake.state.repo(*REPO.split("/"))
        reactions = [r["content"] for r in repo.reactions.get(("issue_comment", 5100), [])]
        replies = [c["body"] for c in repo.comments_on(PR) if c["user"] == fake.state.bot_login]
    assert reactions == ["-1"]
    assert len(replies) == 1 and login in replies[0] and "not" in replies[0]
    assert store.jobs("queued") == []


def test_the_app_ignores_its_own_comment_even_if_it_reads_as_a_sign_off_and_a_command(world, tmp_path):
    """No loops: a comment job for the bot's own verdict comment writes nothing and queues nothing."""
    def own(data):
        signoff = comment_of(data, SIGNOFF_ID)["body"]
        pull_of(data)["issue_comments"].append({"id": 5200, "user": "signoff-bot[bot]", "author_association": "NONE",
                                                "created_at": "2026-09-02T11:30:00Z",
                                                "body": signoff + "\n/reuse-sweep-run 9001\n/signoff-recheck"})

    with FakeGitHub(edit_world(world, own)) as fake:
        runner, store = _runner(fake, tmp_path)
        asyncio.run(runner.run(_comment_job(5200)))
        writes = [w.route for w in fake.state.ledger.writes if not w.route.endswith("/access_tokens")]
    assert store.jobs("queued") == []
    assert writes == []


def test_forked_head_repositories_are_read_from_the_base_repository_only(world, tmp_path):
    """Gathering never reads the fork: every API call the replay makes names the base repository."""
    def fork(data):
        data["repos"].append({"full_name": "attacker/InferenceX-demo", "default_branch": "main",
                              "commits": repo_of(data)["commits"], "branches": {"main": BASE_SHA}})
        pull_of(data)["head"]["repo"] = "attacker/InferenceX-demo"

    with FakeGitHub(edit_world(world, fork)) as fake:
        stats = CallStats()
        gh = installation_client(REPLAY_APP_ID, KEY, 1, fake.url, stats)
        snap = asyncio.run(Gatherer(gh, REPO).snapshot(PR, "2026-09-02T12:00:00Z"))
    assert snap.pr.head_repo == "attacker/InferenceX-demo"
    repos = {route.split("/")[2] + "/" + route.split("/")[3] for route in stats.by_route if "/repos/" in route}
    assert repos == {REPO}
