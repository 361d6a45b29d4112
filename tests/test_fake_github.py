"""The fake GitHub server: every route parses through githubkit's typed models, and the
behaviour tests rely on (pagination, writes, faults, ETags, artifact downloads,
webhooks, admin routes, auth) works as GitHub's does."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub
from githubkit.exception import GraphQLFailed, RequestFailed
from githubkit.webhooks import verify
from githubkit_schemas.latest import models

from app.fake_github import FakeGitHub, WorldConflict
from app.fake_github.ids import blob_sha
from app.fake_github.server import ROUTES
from app.github import edits
from app.settings import CHECK_NAME
from app.offline.world import World, diff_trees
from app.web.webhooks import Routed, route

from .conftest import OWN_WORLDS, SHARED_WORLDS, world_params
from .variants import edit_world

MINI = OWN_WORLDS / "mini"
REPO = ("acme", "bench")
HEAD = "1000000000000000000000000000000000000003"
PUSHED = "1000000000000000000000000000000000000005"
SECRET = "s3cret"
APP_ID = 31337


@pytest.fixture
def fake():
    with FakeGitHub(MINI) as server:
        yield server


@pytest.fixture(scope="module")
def private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def readable(event: str, payload: dict[str, Any]) -> Routed:
    """The delivery as the App reads it; raises app.web.webhooks.Unusable if it lacks what the App needs."""
    return route(event, payload, "signoff-bot[bot]", CHECK_NAME)


def as_user(fake: FakeGitHub, login: str) -> GitHub:
    return GitHub(f"user:{login}", base_url=fake.url + "/", auto_retry=False)


def as_app(fake: FakeGitHub, key: str, installation_id: int) -> GitHub:
    auth = AppInstallationAuthStrategy(APP_ID, key, installation_id)
    return GitHub(auth, base_url=fake.url + "/", auto_retry=False)


class Receiver:
    """A tiny webhook endpoint that records what it receives and answers 202."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self) -> list[tuple[str, str]]:
        return [(h["x-github-event"], json.loads(b)["action"]) for h, b in self.received]


@pytest.fixture
def hooked():
    """The mini world's fake delivering signed webhooks to a receiver."""
    with Receiver() as receiver, FakeGitHub(MINI, webhook_url=receiver.url, webhook_secret=SECRET) as server:
        yield server, receiver


# --- every route through githubkit ------------------------------------------------------------


def walk_reads(gh: GitHub, world: World) -> int:
    """GET every route for every object of the world; parsed_data validates each response."""
    calls = 0

    def ok(response) -> Any:
        nonlocal calls
        calls += 1
        return response.parsed_data

    rest = gh.rest
    for full_name, repo in world.repos.items():
        o, r = full_name.split("/")
        ok(rest.repos.get(o, r))
        ok(rest.repos.list_branches(o, r))
        for branch, sha in repo.branches.items():
            assert ok(rest.repos.get_branch(o, r, branch)).commit.sha == sha
            assert ok(rest.git.get_ref(o, r, f"heads/{branch}")).object_.sha == sha
            legacy = gh.request("GET", f"/repos/{o}/{r}/git/refs/heads/{branch}", response_model=models.GitRef)
            assert ok(legacy).object_.sha == sha
        ok(rest.git.list_matching_refs(o, r, "heads/"))
        for sha, commit in repo.commits.items():
            detail = ok(rest.repos.get_commit(o, r, sha))
            ok(rest.git.get_commit(o, r, sha))
            tree = ok(rest.git.get_tree(o, r, detail.commit.tree.sha, recursive="1"))
            blobs = [e for e in tree.tree if e.type == "blob"]
            assert sorted(e.path for e in blobs) == sorted(commit.files)
            if blobs:
                ok(rest.git.get_blob(o, r, blobs[0].sha))
            ok(rest.repos.get_content(o, r, "", ref=sha))
        ok(gh.request("GET", f"/repos/{o}/{r}/contents", response_model=list[models.ContentDirectoryItems]))
        for number, pr in repo.pulls.items():
            ok(rest.pulls.get(o, r, number))
            files = ok(rest.pulls.list_files(o, r, number, per_page=100))
            base, head = repo.commits[pr["base"]["sha"]], repo.commits[pr["head"]["sha"]]
            assert [f.filename for f in files] == [d.path for d in diff_trees(base.files, head.files)]
            for f in files:
                if f.status != "removed":
                    ok(rest.repos.get_content(o, r, f.filename, ref=pr["head"]["sha"]))
            ok(rest.pulls.list_commits(o, r, number))
            ok(rest.issues.get(o, r, number))
            for c in ok(rest.issues.list_comments(o, r, number, per_page=100)):
                ok(rest.issues.get_comment(o, r, c.id))
                ok(rest.reactions.list_for_issue_comment(o, r, c.id))
            for rv in ok(rest.pulls.list_reviews(o, r, number)):
                ok(rest.pulls.get_review(o, r, number, rv.id))
            for c in ok(rest.pulls.list_review_comments(o, r, number)):
                ok(rest.pulls.get_review_comment(o, r, c.id))
                ok(rest.reactions.list_for_pull_request_review_comment(o, r, c.id))
        ok(rest.pulls.list(o, r, state="all"))
        ok(rest.pulls.list_review_comments_for_repo(o, r))
        for sha in {c["head_sha"] for c in repo.check_runs}:
            ok(rest.checks.list_for_ref(o, r, sha, filter_="all"))
        for cr in repo.check_runs:
            ok(rest.checks.get(o, r, cr["id"]))
            ok(rest.checks.list_annotations(o, r, cr["id"]))
        ok(rest.actions.list_workflow_runs_for_repo(o, r))
        for run in repo.workflow_runs:
            ok(rest.actions.get_workflow_run(o, r, run["id"]))
            ok(rest.actions.list_workflow_run_artifacts(o, r, run["id"]))
            for a in run.get("artifacts") or []:
                ok(rest.actions.get_artifact(o, r, a["id"]))
                if not a.get("expired"):
                    data = rest.actions.download_artifact(o, r, a["id"], "zip").content
                    assert set(zipfile.ZipFile(io.BytesIO(data)).namelist()) == set(world.artifact_files(a["id"]))
        for login in repo.collaborators:
            ok(rest.repos.get_collaborator_permission_level(o, r, login))
            ok(rest.users.get_by_username(login))
    for team, members in world.teams.items():
        org, slug = team.split("/")
        for login in members:
            ok(rest.teams.get_membership_for_user_in_org(org, slug, login))
    ok(rest.rate_limit.get())
    return calls


def walk_writes(gh: GitHub, world: World) -> None:
    """Every write route of the installed repository, as the app."""
    repo, pr = world.pull_repo()
    o, r = repo.full_name.split("/")
    n, head = pr["number"], pr["head"]["sha"]
    rest = gh.rest
    listed = rest.apps.list_repos_accessible_to_installation().parsed_data.repositories
    assert [x.full_name for x in listed] == [repo.full_name]
    comment = rest.issues.create_comment(o, r, n, body="verdict: pending").parsed_data
    assert comment.performed_via_github_app is not None
    rest.issues.update_comment(o, r, comment.id, body="verdict: PASS").parsed_data
    rest.reactions.create_for_issue_comment(o, r, comment.id, content="eyes").parsed_data
    files = rest.pulls.list_files(o, r, n).parsed_data
    patched = next(f for f in files if f.patch)
    line = int(re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", patched.patch).group(1))
    review = rest.pulls.create_review(o, r, n, body="notes", event="COMMENT", commit_id=head,
                                      comments=[{"path": patched.filename, "line": line, "body": "here"}]).parsed_data
    inline = rest.pulls.create_review_comment(o, r, n, body="and here", commit_id=head, path=patched.filename,
                                              line=line).parsed_data
    rest.pulls.update_review_comment(o, r, inline.id, body="and there").parsed_data
    assert rest.pulls.update_review(o, r, n, review.id, body="notes, revised").parsed_data.body == "notes, revised"
    edited = gh.graphql(edits.QUERY, {"ids": [comment.node_id, review.node_id, inline.node_id]})["nodes"]
    assert [(x["body"], x["editor"]) for x in edited] == [
        ("verdict: PASS", {"__typename": "Bot", "login": "signoff-bot"}),
        ("notes, revised", {"__typename": "Bot", "login": "signoff-bot"}),
        ("and there", {"__typename": "Bot", "login": "signoff-bot"})]
    assert all(x["userContentEdits"]["totalCount"] == 2 for x in edited)  # the creation, then the edit
    rest.reactions.create_for_pull_request_review_comment(o, r, inline.id, content="+1").parsed_data
    assert review.state == "COMMENTED"
    run = rest.checks.create(o, r, name="signoff", head_sha=head, status="in_progress").parsed_data
    rest.checks.update(o, r, run.id, conclusion="success",
                       output={"title": "PASS", "summary": "ok", "annotations": [
                           {"path": patched.filename, "start_line": line, "end_line": line,
                            "annotation_level": "warning", "message": "look"}]}).parsed_data
    assert rest.checks.list_annotations(o, r, run.id).parsed_data[0].message == "look"
    rest.repos.create_commit_status(o, r, head, state="success", context="signoff").parsed_data
    rest.repos.list_commit_statuses_for_ref(o, r, head).parsed_data
    assert rest.repos.get_combined_status_for_ref(o, r, head).parsed_data.state == "success"
    rest.issues.delete_comment(o, r, comment.id)


def walk_app_routes(fake: FakeGitHub, key: str, world: World) -> None:
    repo, _pr = world.pull_repo()
    o, r = repo.full_name.split("/")
    app = GitHub(AppAuthStrategy(APP_ID, key), base_url=fake.url + "/", auto_retry=False)
    assert app.rest.apps.get_authenticated().parsed_data.id == APP_ID
    assert app.rest.apps.get_repo_installation(o, r).parsed_data.id == repo.installation_id
    assert [i.id for i in app.rest.apps.list_installations().parsed_data] == [repo.installation_id]
    app.rest.apps.get_installation(repo.installation_id).parsed_data
    assert app.rest.apps.create_installation_access_token(repo.installation_id).parsed_data.token.startswith("ghs_")


@pytest.mark.parametrize("world_dir", [pytest.param(MINI, id="mini"), *world_params()])
def test_every_route_parses_through_githubkit(world_dir: Path, private_key: str) -> None:
    world = World.load(world_dir)
    repo, _pr = world.pull_repo()
    with FakeGitHub(world_dir) as fake:
        with as_user(fake, "someone") as reader, as_app(fake, private_key, repo.installation_id) as bot:
            assert walk_reads(reader, world) > 10
            walk_app_routes(fake, private_key, world)
            walk_writes(bot, world)
            assert walk_reads(reader, world) > 10  # and still after the writes
        if world_dir == MINI:  # the mini world has an object for every route: all were walked
            walked = set(fake.state.ledger.stats()["by_route"])
            assert api_routes() - walked == set()


def api_routes() -> set[str]:
    """"METHOD /template" of every GitHub API route the fake serves (not its /_fake/ admin routes)."""
    return {f"{method} {route.path_format}" for route in ROUTES
            if not route.path_format.startswith("/_fake/") for method in route.methods}


# --- pagination ----------------------------------------------------------------------------


def test_pagination_follows_link_headers(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench/pulls/7/files"
    everything = httpx.get(url).json()
    first = httpx.get(url, params={"per_page": 2})
    links = dict((rel, u) for u, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', first.headers["link"]))
    assert set(links) == {"next", "last"} and "page=4" in links["last"]
    pages, page = [first.json()], first
    while 'rel="next"' in page.headers.get("link", ""):
        page = httpx.get(re.search(r'<([^>]+)>; rel="next"', page.headers["link"]).group(1))
        pages.append(page.json())
    assert [f for p in pages for f in p] == everything and len(pages) == 4
    assert set(re.findall(r'rel="(\w+)"', page.headers["link"])) == {"prev", "first"}
    assert httpx.get(url, params={"per_page": 2, "page": 9}).json() == []


def test_githubkit_paginates_wrapped_lists(fake: FakeGitHub) -> None:
    gh = as_user(fake, "someone")
    runs = list(gh.rest.paginate(gh.rest.checks.list_for_ref, map_func=lambda r: r.parsed_data.check_runs,
                                 owner="acme", repo="bench", ref=HEAD, filter_="all", per_page=2))
    assert sorted(c.id for c in runs) == [6001, 6002, 6003, 6004, 6005]
    latest = gh.rest.checks.list_for_ref("acme", "bench", HEAD).parsed_data
    assert latest.total_count == 4 and 6002 not in {c.id for c in latest.check_runs}  # 6005 re-ran it
    named = gh.rest.checks.list_for_ref("acme", "bench", HEAD, check_name="setup").parsed_data
    assert [c.id for c in named.check_runs] == [6001]
    assert named.check_runs[0].details_url == "https://github.com/acme/bench/actions/runs/900/job/6001"


# --- state, refs and contents --------------------------------------------------------------


def test_base_branch_tip_and_commits_outside_the_pr(fake: FakeGitHub) -> None:
    gh = as_user(fake, "someone")
    pr = gh.rest.pulls.get(*REPO, 7).parsed_data
    tip = gh.rest.repos.get_branch(*REPO, "main").parsed_data.commit.sha
    assert pr.base.sha == "1000000000000000000000000000000000000001" != tip
    assert gh.rest.repos.get_commit(*REPO, PUSHED).parsed_data.sha == PUSHED
    assert [c.sha for c in gh.rest.pulls.list_commits(*REPO, 7).parsed_data] == [
        "1000000000000000000000000000000000000002", HEAD]
    files = {f.filename: f for f in gh.rest.pulls.list_files(*REPO, 7).parsed_data}
    assert files["docs/manual.md"].status == "renamed" and files["docs/manual.md"].previous_filename == "docs/guide.md"
    assert files["scripts/old.sh"].status == "removed" and not files["assets/logo.bin"].patch
    assert "+  image: vllm/vllm-openai:v0.11.1" in files["configs/nvidia-master.yaml"].patch
    upstream = gh.rest.pulls.get("acme", "recipes", 12)
    assert upstream.parsed_data.merged  # API version 2026-03-10's model drops merge_commit_sha; GitHub sends it
    assert upstream.json()["merge_commit_sha"] == "2000000000000000000000000000000000000003"
    assert [p.number for p in gh.rest.pulls.list("acme", "recipes").parsed_data] == []
    assert [p.number for p in gh.rest.pulls.list("acme", "recipes", state="closed").parsed_data] == [12]


def test_contents_trees_and_blobs_are_git_objects(fake: FakeGitHub) -> None:
    world = World.load(MINI)
    data = world.repos["acme/bench"].commits[HEAD].files["configs/nvidia-master.yaml"]
    gh = as_user(fake, "someone")
    content = gh.rest.repos.get_content(*REPO, "configs/nvidia-master.yaml", ref=HEAD).parsed_data
    assert "\n" in content.content and base64.b64decode(content.content) == data
    assert content.sha == blob_sha(data)
    if shutil.which("git"):
        git = subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True)
        assert git.stdout.decode().strip() == content.sha
    raw = httpx.get(f"{fake.url}/repos/acme/bench/contents/configs/nvidia-master.yaml",
                    params={"ref": HEAD}, headers={"Accept": "application/vnd.github.raw"})
    assert raw.content == data
    listing = gh.rest.repos.get_content(*REPO, "configs", ref="bob/bump-vllm").parsed_data
    assert [i.name for i in listing] == ["nvidia-master.yaml"]
    assert gh.rest.git.get_blob(*REPO, content.sha).parsed_data.sha == content.sha
    top = gh.rest.git.get_tree(*REPO, HEAD).parsed_data
    assert {e.path for e in top.tree} == {".github", "README.md", "assets", "benchmarks", "configs", "docs",
                                          "perf-changelog.yaml"}
    with pytest.raises(RequestFailed) as missing:
        gh.rest.repos.get_content(*REPO, "scripts/old.sh", ref=HEAD)
    assert missing.value.response.status_code == 404


# --- writes --------------------------------------------------------------------------------


def test_writes_are_visible_to_reads_and_logged(fake: FakeGitHub, private_key: str) -> None:
    alice, bob, bot = as_user(fake, "alice"), as_user(fake, "bob"), as_app(fake, private_key, 4242)
    mine = alice.rest.issues.create_comment(*REPO, 7, body="/signoff-recheck").parsed_data
    theirs = bob.rest.issues.create_comment(*REPO, 7, body="please review").parsed_data
    verdict = bot.rest.issues.create_comment(*REPO, 7, body="Verdict: PASS").parsed_data
    assert (mine.author_association, theirs.author_association) == ("COLLABORATOR", "NONE")
    assert verdict.user.login == "signoff-bot[bot]" and verdict.user.type == "Bot"
    assert mine.html_url == f"https://github.com/acme/bench/pull/7#issuecomment-{mine.id}"
    reader = as_user(fake, "someone")
    listed = reader.rest.issues.list_comments(*REPO, 7).parsed_data
    assert [c.id for c in listed][-3:] == [mine.id, theirs.id, verdict.id]
    assert listed[-1].created_at > listed[0].created_at

    run = bot.rest.checks.create(*REPO, name="signoff", head_sha=HEAD, status="in_progress").parsed_data
    bot.rest.checks.update(*REPO, run.id, conclusion="failure", output={"title": "REJECTED", "summary": "no"})
    got = alice.rest.checks.list_for_ref(*REPO, HEAD, check_name="signoff").parsed_data.check_runs
    assert [(c.id, c.status, c.conclusion, c.app.id) for c in got] == [(run.id, "completed", "failure", APP_ID)]

    writes = httpx.get(f"{fake.url}/_fake/writes").json()
    assert [(w["method"], w["route"]) for w in writes] == [
        ("POST", "POST /repos/{owner}/{repo}/issues/{number}/comments"),
        ("POST", "POST /repos/{owner}/{repo}/check-runs"),
        ("PATCH", "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}")]
    assert writes[0]["request"] == {"body": "Verdict: PASS"} and writes[0]["actor"] == "signoff-bot[bot]"
    everyone = httpx.get(f"{fake.url}/_fake/writes", params={"all": "1"}).json()
    assert [w["actor"] for w in everyone][:2] == ["alice", "bob"]
    assert len(fake.state.ledger.writes) == 5


def test_write_permissions_follow_github(fake: FakeGitHub, private_key: str) -> None:
    url = f"{fake.url}/repos/acme/bench"
    assert httpx.post(f"{url}/issues/7/comments", json={"body": "x"}).status_code == 401
    assert httpx.get(f"{url}/pulls/7", headers={"Authorization": "token nope"}).status_code == 401
    user = {"Authorization": "token user:bob"}
    assert httpx.post(f"{url}/check-runs", json={"name": "x", "head_sha": HEAD}, headers=user).status_code == 403
    assert httpx.post(f"{url}/statuses/{HEAD}", json={"state": "success"}, headers=user).status_code == 403
    assert httpx.patch(f"{url}/issues/comments/7102", json={"body": "x"}, headers=user).status_code == 403
    assert httpx.post(f"{url}/pulls/7/reviews", json={"event": "APPROVE"}, headers=user).status_code == 422
    assert httpx.post(f"{url}/issues/7/comments", json={"body": "x" * 70000}, headers=user).status_code == 422
    bad_line = {"path": "perf-changelog.yaml", "line": 1, "body": "x", "commit_id": HEAD}  # not in a hunk
    assert httpx.post(f"{url}/pulls/7/comments", json=bad_line, headers=user).status_code == 422
    bot = as_app(fake, private_key, 4242)
    with pytest.raises(RequestFailed) as denied:  # the installation is on acme/bench only
        bot.rest.issues.create_comment("acme", "recipes", 12, body="x")
    assert denied.value.response.status_code == 403
    claims = base64.urlsafe_b64encode(json.dumps({"iss": str(APP_ID)}).encode()).decode().rstrip("=")
    jwt = {"Authorization": f"Bearer eyJhbGciOiJSUzI1NiJ9.{claims}.c2ln"}
    assert httpx.get(f"{url}/pulls/7", headers=jwt).status_code == 401  # a JWT only works on app routes
    assert httpx.get(f"{fake.url}/app", headers=jwt).json()["id"] == APP_ID
    assert httpx.get(f"{fake.url}/app", headers=user).status_code == 401


def test_a_writer_may_edit_anothers_comment_and_the_delivery_names_the_editor(
        hooked: tuple[FakeGitHub, Receiver]) -> None:
    fake, receiver = hooked
    bob, carol, dave = as_user(fake, "bob"), as_user(fake, "carol"), as_user(fake, "dave")
    theirs = bob.rest.issues.create_comment(*REPO, 7, body="first words").parsed_data
    carol.rest.issues.update_comment(*REPO, theirs.id, body="edited by a maintainer")
    with pytest.raises(RequestFailed) as denied:  # dave (triage) may not
        dave.rest.issues.update_comment(*REPO, theirs.id, body="mine now")
    assert denied.value.response.status_code == 403
    fake.wait_deliveries(2)
    edited = next(e for e in map(json.loads, (body for _headers, body in receiver.received))
                  if e.get("action") == "edited")
    assert (edited["action"], edited["sender"]["login"], edited["comment"]["user"]["login"]) == (
        "edited", "carol", "bob")
    assert edited["changes"] == {"body": {"from": "first words"}}
    reader = as_user(fake, "x")
    assert reader.rest.issues.get_comment(*REPO, theirs.id).parsed_data.user.login == "bob"


def test_team_membership_and_permission(fake: FakeGitHub) -> None:
    gh = as_user(fake, "someone")
    assert gh.rest.teams.get_membership_for_user_in_org("acme", "core", "Carol").parsed_data.state == "active"
    with pytest.raises(RequestFailed) as missing:
        gh.rest.teams.get_membership_for_user_in_org("acme", "core", "alice")
    assert missing.value.response.status_code == 404
    perm = gh.rest.repos.get_collaborator_permission_level(*REPO, "dave").parsed_data
    assert (perm.permission, perm.role_name) == ("read", "triage")
    assert gh.rest.repos.get_collaborator_permission_level(*REPO, "eve").parsed_data.permission == "none"


def mini_variant(tmp_path: Path, change) -> Path:
    """A copy of the mini world with `change` applied to its parsed world.yaml."""
    shutil.copytree(MINI, tmp_path / "mini")
    return edit_world(tmp_path / "mini", change)


def test_a_forks_pr_is_in_no_runs_pull_requests(tmp_path: Path) -> None:
    """GitHub lists no fork's PR in a check run's, check suite's or workflow run's `pull_requests`."""
    def fork(data):
        pr = next(p for p in data["repos"][0]["pulls"] if p["number"] == 7)
        pr["head"]["repo"] = "bob/bench"

    with FakeGitHub(mini_variant(tmp_path, fork)) as fake:
        gh = as_user(fake, "someone")
        pull = gh.rest.pulls.get(*REPO, 7).parsed_data
        assert (pull.head.repo.full_name, pull.head.repo.fork, pull.head.label) == ("bob/bench", True,
                                                                                    "bob:bob/bump-vllm")
        assert gh.rest.checks.get(*REPO, 6002).parsed_data.pull_requests == []
        run = httpx.get(f"{fake.url}/repos/acme/bench/actions/runs/900").json()
        assert run["pull_requests"] == [] and run["head_repository"]["full_name"] == "bob/bench"
        assert [p.number for p in gh.rest.pulls.list(*REPO).parsed_data] == [7]  # still an open PR of the base


def test_another_apps_check_run_is_listed_beside_ours_and_refuses_our_update(tmp_path: Path, private_key: str) -> None:
    def foreign(data):
        data["repos"][0]["check_runs"].append({"id": 6100, "head_sha": HEAD, "name": "signoff", "app_id": 777,
                                               "status": "completed", "conclusion": "success",
                                               "started_at": "2026-08-12T18:00:00Z"})

    with FakeGitHub(mini_variant(tmp_path, foreign)) as fake, as_app(fake, private_key, 4242) as bot:
        ours = bot.rest.checks.create(*REPO, name="signoff", head_sha=HEAD, status="in_progress").parsed_data
        latest = bot.rest.checks.list_for_ref(*REPO, HEAD, check_name="signoff").parsed_data.check_runs
        assert sorted((c.id, c.app.id) for c in latest) == [(6100, 777), (ours.id, APP_ID)]
        mine = bot.rest.checks.list_for_ref(*REPO, HEAD, check_name="signoff", app_id=APP_ID).parsed_data
        assert [c.id for c in mine.check_runs] == [ours.id]
        with pytest.raises(RequestFailed) as refused:
            bot.rest.checks.update(*REPO, 6100, conclusion="failure")
        assert refused.value.response.status_code == 403


# --- faults --------------------------------------------------------------------------------


def test_fault_status_codes_for_the_next_n_calls(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench/pulls/7"
    fake.fault(route="GET /repos/{owner}/{repo}/pulls/{number}", status=502, times=2)
    assert [httpx.get(url).status_code for _ in range(3)] == [502, 502, 200]
    assert httpx.get(f"{url}/files").status_code == 200
    httpx.post(f"{fake.url}/_fake/faults", json={"route": "*/pulls/7", "status": 500}).raise_for_status()
    assert httpx.get(url).status_code == 500 and httpx.get(url).status_code == 200


def test_rate_limit_faults_carry_githubs_headers(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench"
    fake.fault(route="GET /repos/acme/bench", status=403, reset_in=5)
    limited = httpx.get(url)
    assert limited.status_code == 403 and limited.headers["x-ratelimit-remaining"] == "0"
    assert 0 < int(limited.headers["x-ratelimit-reset"]) - time.time() <= 6
    fake.fault(route="/repos/acme/bench", status=429, retry_after=7)
    secondary = httpx.get(url)
    assert secondary.status_code == 429 and secondary.headers["retry-after"] == "7"
    assert "secondary rate limit" in secondary.json()["message"]
    fake.fault(route="GET /repos/acme/bench", status=404)
    assert httpx.get(url).json()["message"] == "Not Found"


def test_a_secondary_limit_can_be_a_403_that_only_its_message_tells_apart(fake: FakeGitHub) -> None:
    """As GitHub documents it: no retry-after, the primary limit not exhausted."""
    url = f"{fake.url}/repos/acme/bench"
    fake.fault(route="GET /repos/acme/bench", status=403, secondary=True)
    limited = httpx.get(url)
    assert limited.status_code == 403 and "retry-after" not in limited.headers
    assert limited.headers["x-ratelimit-remaining"] != "0"
    assert "secondary rate limit" in limited.json()["message"]
    fake.fault(route="GET /repos/acme/bench", status=429, secondary=True, retry_after=3)
    assert httpx.get(url).headers["retry-after"] == "3"
    refused = httpx.post(f"{fake.url}/_fake/faults", json={"status": 502, "secondary": True})
    assert refused.status_code == 422


def test_latency_and_dropped_connections(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench"
    fake.fault(route="GET /repos/acme/bench", delay_ms=300)
    started = time.monotonic()
    assert httpx.get(url).status_code == 200 and time.monotonic() - started >= 0.3
    fake.fault(route="GET /repos/acme/bench", drop=True)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(url)
    assert httpx.get(url).status_code == 200
    httpx.post(f"{fake.url}/_fake/faults", json={"latency_ms": 150}).raise_for_status()
    started = time.monotonic()
    httpx.get(url)
    assert time.monotonic() - started >= 0.15
    assert httpx.delete(f"{fake.url}/_fake/faults").json() == {"latency_ms": 0, "faults": []}


def test_faults_by_chance_are_reproducible_with_a_seed(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench"

    def statuses() -> list[int]:
        fake.fault(route="GET /repos/acme/bench", status=502, times=1000, probability=0.3, seed=7)
        seen = [httpx.get(url).status_code for _ in range(60)]
        httpx.delete(f"{fake.url}/_fake/faults").raise_for_status()
        return seen

    first = statuses()
    assert first == statuses() and set(first) == {200, 502} and 5 <= first.count(502) <= 35
    for bad in ({"route": "*", "status": 502, "probability": 0}, {"route": "*", "status": 502, "probability": 1.5},
                {"route": "*", "status": 502, "seed": "x"}, {"route": "*", "status": 502, "_rng": 1}):
        assert httpx.post(f"{fake.url}/_fake/faults", json=bad).status_code == 422
    listed = httpx.post(f"{fake.url}/_fake/faults", json={"route": "*", "drop": True, "probability": 0.5}).json()
    assert listed["faults"][0]["probability"] == 0.5 and "_rng" not in listed["faults"][0]


def test_a_fault_for_one_actor_spares_the_others(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench"
    fake.fault(route="GET /repos/acme/bench", status=502, times=2, actor="Alice")
    assert httpx.get(url).status_code == 200
    assert httpx.get(url, headers={"Authorization": "token user:bob"}).status_code == 200
    assert httpx.get(url, headers={"Authorization": "token user:alice"}).status_code == 502
    assert httpx.post(f"{fake.url}/_fake/faults", json={"route": "*", "status": 502, "actor": 7}).status_code == 422


def test_the_call_log_times_every_call_and_names_its_job(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench"
    fake.fault(route="GET /repos/acme/bench", delay_ms=200)
    before = time.time()
    httpx.get(url, headers={"X-Signoff-Bot-Job": "7@worker-a", "Authorization": "token user:alice"})
    fake.fault(route="GET /repos/acme/bench", drop=True)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(url)
    fake.fault(route="GET /repos/acme/bench", status=403)
    httpx.get(url, headers={"Authorization": "token nonsense"})
    calls = httpx.get(f"{fake.url}/_fake/calls").json()
    assert [(c["seq"], c["status"], c["actor"], c["job"]) for c in calls] == [
        (1, 200, "alice", "7@worker-a"), (2, 0, "anonymous", None), (3, 403, "invalid", None)]
    assert before <= calls[0]["started"] and calls[0]["finished"] - calls[0]["started"] >= 0.2
    assert calls[0]["route"] == "GET /repos/{owner}/{repo}" and calls[0]["path"] == "/repos/acme/bench"
    assert [c["seq"] for c in httpx.get(f"{fake.url}/_fake/calls", params={"since": 2}).json()] == [3]
    httpx.delete(f"{fake.url}/_fake/stats").raise_for_status()
    assert httpx.get(f"{fake.url}/_fake/calls").json() == []


def test_githubkit_surfaces_rate_limits(fake: FakeGitHub) -> None:
    from githubkit.exception import PrimaryRateLimitExceeded, SecondaryRateLimitExceeded

    gh = as_user(fake, "someone")
    fake.fault(route="GET /repos/{owner}/{repo}", status=403, reset_in=30)
    with pytest.raises(PrimaryRateLimitExceeded):
        gh.rest.repos.get(*REPO)
    fake.fault(route="GET /repos/{owner}/{repo}", status=429, retry_after=3)
    with pytest.raises(SecondaryRateLimitExceeded) as exc:
        gh.rest.repos.get(*REPO)
    assert exc.value.retry_after.total_seconds() == 3


# --- artifacts, ETags, stats -----------------------------------------------------------------


def test_artifact_zip_redirects_to_a_storage_host_that_refuses_the_api_token(fake: FakeGitHub) -> None:
    """As GitHub redirects to blob storage: another origin, where the signed URL is the credential."""
    auth = {"Authorization": "token user:alice"}
    url = f"{fake.url}/repos/acme/bench/actions/artifacts/9901/zip"
    redirect = httpx.get(url, headers=auth)
    location = redirect.headers["location"]
    assert redirect.status_code == 302 and location.startswith(f"{fake.state.storage_url}/_fake/download/")
    assert httpx.URL(location).port != httpx.URL(fake.url).port
    refused = httpx.get(location, headers=auth)
    assert refused.status_code == 400 and "Authorization" in refused.json()["message"]
    archive = zipfile.ZipFile(io.BytesIO(httpx.get(location).content))
    assert {n: archive.read(n) for n in archive.namelist()} == World.load(MINI).artifact_files(9901)
    assert httpx.get(url).status_code == 401
    assert httpx.get(f"{fake.url}/repos/acme/bench/actions/artifacts/9903/zip", headers=auth).status_code == 410
    # each host serves only its own: no downloads from the API host, no API from the storage host
    assert httpx.get(location.replace(fake.state.storage_url, fake.url)).status_code == 404
    assert httpx.get(f"{fake.state.storage_url}/repos/acme/bench").status_code == 404
    # httpx (githubkit's transport) drops the Authorization header on a redirect to another origin
    with httpx.Client(headers=auth, follow_redirects=True) as client:
        assert zipfile.ZipFile(io.BytesIO(client.get(url).content)).namelist() == archive.namelist()


def test_etag_conditional_requests_and_stats(fake: FakeGitHub) -> None:
    url = f"{fake.url}/repos/acme/bench/pulls/7"
    first = httpx.get(url)
    etag = first.headers["etag"]
    again = httpx.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert again.headers["x-ratelimit-used"] == first.headers["x-ratelimit-used"] == "1"
    httpx.post(f"{url.replace('pulls', 'issues')}/comments", json={"body": "hi"},
               headers={"Authorization": "token user:bob"})
    changed = httpx.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    httpx.get(f"{fake.url}/rate_limit")
    stats = httpx.get(f"{fake.url}/_fake/stats").json()
    assert stats["requests"] == 5 and stats["not_modified"] == 1 and stats["rate_limited"] == 3
    assert stats["by_route"]["GET /repos/{owner}/{repo}/pulls/{number}"] == 3
    assert httpx.delete(f"{fake.url}/_fake/stats").json()["requests"] == 0
    assert httpx.get(f"{fake.url}/repos/acme/bench/unknown/route").json()["message"] == "Not Found"


# --- webhooks and admin routes -------------------------------------------------------------


def test_user_writes_deliver_signed_webhooks(hooked: tuple[FakeGitHub, Receiver], private_key: str) -> None:
    fake, receiver = hooked
    alice = as_user(fake, "alice")
    comment = alice.rest.issues.create_comment(*REPO, 7, body="/signoff-recheck").parsed_data
    alice.rest.issues.update_comment(*REPO, comment.id, body="/signoff-recheck please")
    alice.rest.pulls.create_review(*REPO, 7, event="COMMENT", body="two notes",
                                   comments=[{"path": "configs/nvidia-master.yaml", "line": 2, "body": "why?"}])
    bot = as_app(fake, private_key, 4242)
    bot.rest.issues.create_comment(*REPO, 7, body="Verdict")  # the app's own writes deliver nothing
    fake.wait_deliveries(4)
    time.sleep(0.1)  # room for a wrong fifth delivery (of the app's comment) to arrive
    # Each write delivers after its answer, so the deliveries of consecutive writes may arrive in either
    # order, as GitHub's may: what is compared is which were delivered.
    assert sorted(receiver.events()) == [("issue_comment", "created"), ("issue_comment", "edited"),
                                         ("pull_request_review", "submitted"),
                                         ("pull_request_review_comment", "created")]
    guids = set()
    for headers, body in receiver.received:
        assert verify(SECRET, body, headers["x-hub-signature-256"])
        assert headers["x-hub-signature-256"].startswith("sha256=")
        guids.add(headers["x-github-delivery"])
        event = json.loads(body)
        assert readable(headers["x-github-event"], event).jobs  # the App's own reader finds what it needs
        assert event["installation"]["id"] == 4242 and event["sender"]["login"] == "alice"
    assert len(guids) == 4
    edited = next(e for e in map(json.loads, (body for _headers, body in receiver.received))
                  if e.get("action") == "edited")
    assert edited["changes"] == {"body": {"from": "/signoff-recheck"}}
    assert edited["comment"]["author_association"] == "COLLABORATOR"


def test_an_edit_by_a_write_user_names_the_editor_as_sender_and_in_the_edit_history(
        hooked: tuple[FakeGitHub, Receiver]) -> None:
    """carol's sign-off (7103), edited by alice (write access): the edited delivery's sender is alice, the
    comment's author still carol; GraphQL's history holds the creation (carol) and the edit (alice). dave
    (triage) may not edit it at all."""
    fake, receiver = hooked
    url = f"{fake.url}/repos/acme/bench/issues/comments/7103"
    assert httpx.patch(url, json={"body": "x"}, headers={"Authorization": "token user:dave"}).status_code == 403
    alice = as_user(fake, "alice")
    alice.rest.issues.update_comment(*REPO, 7103, body="As a PR reviewer and CODEOWNER, ... (alice's words)")
    fake.wait_deliveries(1)
    delivered = json.loads(receiver.received[0][1])
    assert (delivered["action"], delivered["sender"]["login"], delivered["comment"]["user"]["login"]) == (
        "edited", "alice", "carol")
    node = alice.graphql(edits.QUERY, {"ids": [delivered["comment"]["node_id"]]})["nodes"][0]
    assert node["editor"] == {"__typename": "User", "login": "alice"} and node["lastEditedAt"]
    history = sorted(node["userContentEdits"]["nodes"], key=lambda e: e["editedAt"])
    assert [e["editor"]["login"] for e in history] == ["carol", "alice"]
    assert history[0]["editedAt"] == "2026-08-12T16:30:00Z"  # the creation, recorded by the first edit
    missing = alice.graphql.request  # an unknown id: null, and a NOT_FOUND error beside the data
    with pytest.raises(GraphQLFailed) as failed:
        missing(edits.QUERY, {"ids": ["MDEyOklzc3VlQ29tbWVudDE="]})
    assert failed.value.response.data == {"nodes": [None]} and failed.value.response.errors[0].type == "NOT_FOUND"
    with pytest.raises(GraphQLFailed) as invalid:  # a field GitHub's type lacks: no data at all
        missing("{ node(id: \"%s\") { ... on IssueComment { nonsense } } }" % delivered["comment"]["node_id"])
    assert invalid.value.response.data is None
    assert httpx.post(f"{fake.url}/graphql", json={"query": "{ node(id: \"x\") { id } }"}).status_code == 401


def test_admin_deliver_push_and_complete_run(hooked: tuple[FakeGitHub, Receiver]) -> None:
    fake, receiver = hooked
    deliver = f"{fake.url}/_fake/deliver"
    for event, object_id in [("issue_comment", 7102), ("pull_request_review", 7201),
                             ("pull_request_review_comment", 7301), ("pull_request", 7), ("check_run", 6002),
                             ("check_suite", 6002), ("workflow_run", 900)]:
        answer = httpx.post(deliver, json={"repo": "acme/bench", "event": event, "id": object_id}).json()
        assert answer["status"] == 202, answer
        headers, body = receiver.received[-1]
        assert headers["x-github-delivery"] == answer["delivery"]
        readable(event, json.loads(body))
    again = httpx.post(deliver, json={"repo": "acme/bench", "event": "issue_comment", "id": 7102,
                                      "delivery": answer["delivery"]}).json()
    assert again["delivery"] == answer["delivery"] == receiver.received[-1][0]["x-github-delivery"]
    assert httpx.post(deliver, json={"repo": "acme/bench", "event": "issue_comment", "id": 1}).status_code == 404

    pushed = httpx.post(f"{fake.url}/_fake/push", json={"repo": "acme/bench", "number": 7, "sha": PUSHED}).json()
    assert pushed["status"] == 202
    sync = json.loads(receiver.received[-1][1])
    assert (sync["action"], sync["before"], sync["after"]) == ("synchronize", HEAD, PUSHED)
    gh = as_user(fake, "someone")
    assert gh.rest.pulls.get(*REPO, 7).parsed_data.head.sha == PUSHED
    assert [c.sha for c in gh.rest.pulls.list_commits(*REPO, 7).parsed_data][-2:] == [HEAD, PUSHED]
    assert gh.rest.repos.get_branch(*REPO, "bob/bump-vllm").parsed_data.commit.sha == PUSHED

    done = httpx.post(f"{fake.url}/_fake/complete-run",
                      json={"repo": "acme/bench", "id": 901, "conclusion": "failure"}).json()
    assert done["status"] == 202
    completed = json.loads(receiver.received[-1][1])
    assert (completed["action"], completed["workflow_run"]["conclusion"]) == ("completed", "failure")
    assert gh.rest.checks.get(*REPO, 6005).parsed_data.conclusion == "failure"
    summaries = httpx.get(f"{fake.url}/_fake/deliveries").json()
    assert len(summaries) == len(receiver.received) == 10


def test_admin_redeliver_and_deliver_elsewhere(hooked: tuple[FakeGitHub, Receiver]) -> None:
    fake, receiver = hooked
    first = httpx.post(f"{fake.url}/_fake/push", json={"repo": "acme/bench", "number": 7, "sha": PUSHED}).json()
    again = httpx.post(f"{fake.url}/_fake/redeliver", json={"delivery": first["delivery"]}).json()
    assert again == {"delivery": first["delivery"], "status": 202, "error": None}
    (h1, b1), (h2, b2) = receiver.received
    assert h1["x-github-delivery"] == h2["x-github-delivery"] and b1 == b2
    assert httpx.post(f"{fake.url}/_fake/redeliver", json={"delivery": "nope"}).status_code == 404
    with Receiver() as other:
        sent = httpx.post(f"{fake.url}/_fake/deliver", json={"repo": "acme/bench", "event": "pull_request", "id": 7,
                                                             "url": other.url}).json()
        assert sent["status"] == 202 and len(other.received) == 1 and len(receiver.received) == 2
        assert httpx.post(f"{fake.url}/_fake/redeliver", json={"delivery": sent["delivery"], "url": other.url}
                          ).json()["status"] == 202
        assert len(other.received) == 2
    bad = {"repo": "acme/bench", "event": "pull_request", "id": 7, "url": "ftp://x"}
    assert httpx.post(f"{fake.url}/_fake/deliver", json=bad).status_code == 422


def test_admin_deliver_needs_a_webhook_url(fake: FakeGitHub) -> None:
    answer = httpx.post(f"{fake.url}/_fake/deliver", json={"repo": "acme/bench", "event": "pull_request", "id": 7})
    assert answer.status_code == 409


# --- loading and running -------------------------------------------------------------------


def test_worlds_merge_or_conflict() -> None:
    with FakeGitHub(MINI, MINI) as fake:
        assert httpx.get(f"{fake.url}/repos/acme/recipes/pulls/12").status_code == 200
    names = ("pr2508-kimik3-mi355x-kv-fp8-recipe-fail", "pr2508-kimik3-mi355x-waiver", "pr1676-gb200-sglang-mtp")
    kv_fp8, waiver, other = (SHARED_WORLDS / n for n in names)
    if not all(p.is_dir() for p in (kv_fp8, waiver, other)):
        pytest.skip("shared worlds not present")
    with FakeGitHub(kv_fp8, waiver) as fake:  # the same PR, one world adding an upstream repository
        assert httpx.get(f"{fake.url}/repos/vllm-project/recipes/pulls/788").status_code == 200
    with pytest.raises(WorldConflict):  # two PRs whose worlds disagree on main and on check run ids
        FakeGitHub(kv_fp8, other)


def test_unquoted_shas_and_timestamps_read_as_github_writes_them(tmp_path: Path) -> None:
    """WORLD_FORMAT.md's example SHAs are all digits: unquoted, YAML reads them as integers."""
    (tmp_path / "trees" / "base").mkdir(parents=True)
    (tmp_path / "trees" / "base" / "a.txt").write_text("a\n")
    shutil.copytree(tmp_path / "trees" / "base", tmp_path / "trees" / "head")
    (tmp_path / "trees" / "head" / "a.txt").write_text("b\n")
    base, head = "1" * 40, "2" * 40
    (tmp_path / "world.yaml").write_text(f"""now: 2026-08-12T18:00:00Z
repos:
  - full_name: o/r
    installation_id: 1
    commits:
      - {{sha: {base}, tree: base, parents: [], message: base, author: a}}
      - {{sha: {head}, tree: head, parents: [{base}], message: head, author: a}}
    branches: {{main: {base}}}
    pulls:
      - number: 1
        user: a
        base: {{ref: main, sha: {base}}}
        head: {{ref: f, sha: {head}}}
        issue_comments: [{{id: 5, user: b, created_at: 2026-08-12T17:00:00Z, body: hi}}]
""")
    with FakeGitHub(tmp_path) as fake, as_user(fake, "b") as gh:
        assert gh.rest.pulls.get("o", "r", 1).parsed_data.head.sha == head
        assert [f.filename for f in gh.rest.pulls.list_files("o", "r", 1).parsed_data] == ["a.txt"]
        assert gh.rest.repos.get_branch("o", "r", "main").parsed_data.commit.parents == []
        comments = httpx.get(f"{fake.url}/repos/o/r/issues/1/comments").json()
        assert comments[0]["created_at"] == "2026-08-12T17:00:00Z"
        assert httpx.get(f"{fake.url}/repos/o/r").json()["pushed_at"] == "2026-08-12T18:00:00Z"


def test_standalone_command_prints_its_url() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "app.fake_github", str(MINI), "--port", "0"],
                            cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        deadline = time.monotonic() + 120  # a bound for a hung start, not a speed
        while True:
            try:
                assert httpx.get(f"{url}/repos/acme/bench").json()["full_name"] == "acme/bench"
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(10)
