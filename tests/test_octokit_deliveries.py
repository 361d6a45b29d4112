"""GitHub's own webhook payload examples against the App, not our fake's picture of them.

`../shared/fixtures/webhooks/octokit/` holds real deliveries as the
octokit/webhooks project records them (the README there). Each, validly
signed, is answered 2xx by `signoff-bot serve`, as it is and rewritten to the
e2e world's repository, PR #42 and installation; rewritten, each queues the
work it implies. And the fake GitHub's own deliveries carry the fields these
carry, so the other tests see deliveries shaped as GitHub's.

Re-run: `pytest -q tests/test_octokit_deliveries.py` (the folder must exist).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.fake_github.payloads import Site
from app.fake_github.state import GitHubState
from app.fake_github.webhooks import stored_event
from app.offline.world import World
from app.settings import CHECK_NAME, Settings
from app.store.sql import SqliteStore
from app.web.server import create_app

from .apphost import E2E_WORLD, REPO, SECRET, Stack
from .conftest import OWN_WORLDS, ROOT, present, shared_files

OCTOKIT = ROOT.parent / "shared" / "fixtures" / "webhooks" / "octokit"
EXAMPLES = shared_files(OCTOKIT, "*/*.json")
PR, INSTALLATION, HEAD = 42, 1, "b2" * 20

# The jobs (kind, PR) each rewritten example queues: by event and action, a few by file.
# "commit" (PR 0) looks up the PRs whose head is the run's commit: octokit's runs there name no PR.
IMPLIED: dict[tuple[str, str], list[tuple[str, int]]] = {
    ("issue_comment", "created"): [("comment", PR)],
    ("issue_comment", "edited"): [("comment", PR)],
    ("pull_request_review", "submitted"): [("comment", PR)],
    ("pull_request_review_comment", "created"): [("comment", PR)],
    ("pull_request_review_comment", "edited"): [("comment", PR)],
    ("pull_request", "opened"): [("lint", PR), ("opened", PR)],
    ("pull_request", "reopened"): [("lint", PR), ("opened", PR)],
    ("pull_request", "ready_for_review"): [("lint", PR), ("opened", PR)],
    ("pull_request", "synchronize"): [("lint", PR), ("synchronize", PR)],
    ("check_run", "rerequested"): [("commit", 0)],
    ("check_suite", "rerequested"): [("verify", PR)],
    ("workflow_run", "completed"): [("commit", 0)],
}
IMPLIED_BY_FILE = {"workflow_run/completed.with-pull-requests.payload.json": [("sweep", PR)]}


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def event_of(path: Path) -> str:
    return path.parent.name


def headers(path: Path, body: bytes, guid: str) -> dict[str, str]:
    return {"X-GitHub-Event": event_of(path), "X-GitHub-Delivery": guid, "X-Hub-Signature-256": sign(body),
            "Content-Type": "application/json", "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-ID": "1"}


def rewritten(payload: dict[str, Any]) -> dict[str, Any]:
    """The example about the e2e world: its repository, installation and PR #42 (a commit of a run is
    #42's head; a comment's issue is the PR; a re-requested check run is the App's)."""
    data = copy.deepcopy(payload)
    if isinstance(data.get("repository"), dict):
        data["repository"].update(full_name=REPO, name=REPO.split("/")[1])
    data["installation"] = {"id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    if "number" in data:
        data["number"] = PR
    if isinstance(data.get("pull_request"), dict):
        data["pull_request"]["number"] = PR
    if isinstance(data.get("issue"), dict):
        data["issue"]["number"] = PR
        data["issue"].setdefault("pull_request", {"url": f"https://api.github.com/repos/{REPO}/pulls/{PR}"})
    for key in ("check_run", "check_suite", "workflow_run"):
        run = data.get(key)
        if isinstance(run, dict):
            run["head_sha"] = HEAD
            for linked in run.get("pull_requests") or []:
                linked["number"] = PR
    if isinstance(data.get("check_run"), dict):
        data["check_run"]["name"] = CHECK_NAME
    return data


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_example_counts() -> None:
    """The folder holds the 74 examples the issue counted; a test over none of them would prove nothing."""
    present(EXAMPLES[0].values[0], OCTOKIT)
    assert len(EXAMPLES) == 74


@pytest.mark.slow
def test_serve_answers_every_example_2xx_as_it_is_and_rewritten(tmp_path: Path) -> None:
    examples = [present(p.values[0], OCTOKIT) for p in EXAMPLES]
    with Stack(tmp_path) as stack:
        answers: dict[str, tuple[int, str]] = {}
        for n, path in enumerate(examples):
            name = str(path.relative_to(OCTOKIT))
            for label, payload in (("as sent", load(path)), ("rewritten", rewritten(load(path)))):
                body = json.dumps(payload).encode() if label == "rewritten" else path.read_bytes()
                r = httpx.post(f"{stack.app_url}/webhook", content=body,
                               headers=headers(path, body, f"octokit-{n}-{label[:2]}"), timeout=30)
                answers[f"{name} ({label})"] = (r.status_code, r.json().get("outcome", ""))
        metrics = httpx.get(f"{stack.app_url}/metrics", timeout=30).text
    refused = {k: v for k, v in answers.items() if not 200 <= v[0] < 300}
    assert refused == {}, stack.logs()
    assert not [k for k, (_status, outcome) in answers.items() if k.endswith("(rewritten)") and outcome == "unusable"]
    assert 'outcome="bad_' not in metrics


@pytest.fixture
def client(tmp_path):
    settings = Settings(app_id=1, private_key="-----BEGIN KEY-----", webhook_secret=SECRET,
                        db_path=str(tmp_path / "bot.db"))
    store = SqliteStore(settings.db_path)
    with TestClient(create_app(settings, store, run_workers=False)) as c:
        c.store = store
        yield c


@pytest.mark.parametrize("path", EXAMPLES)
def test_a_rewritten_example_queues_the_work_it_implies(client, path: Path | None) -> None:
    path = present(path, OCTOKIT)
    payload = rewritten(load(path))
    body = json.dumps(payload).encode()
    r = client.post("/webhook", content=body, headers=headers(path, body, "rewritten"))
    assert r.status_code == 202, r.text
    name = str(path.relative_to(OCTOKIT))
    expected = IMPLIED_BY_FILE.get(name, IMPLIED.get((event_of(path), payload.get("action", "")), []))
    jobs = client.store.jobs("queued")
    assert sorted((j["kind"], j["pr"]) for j in jobs) == sorted(expected), r.json()
    assert all((j["repo"], j["installation_id"]) == (REPO, INSTALLATION) for j in jobs)
    for job in jobs:
        fields = json.loads(job["payload"])
        if job["kind"] == "commit":  # what the lookup needs: the commit, and what to queue for its PRs
            assert fields["head_sha"] == HEAD and fields["then"] in ("verify", "sweep")


# --- the fake's deliveries, shaped as GitHub's ------------------------------------------------------------

# (event, object id in the world, action, the octokit example of that event and action)
FAKE_DELIVERIES = [
    ("issue_comment", 7102, "created", "issue_comment/created.payload.json"),
    ("issue_comment", 7102, "edited", "issue_comment/edited.payload.json"),
    ("pull_request_review", 7201, "submitted", "pull_request_review/submitted.payload.json"),
    ("pull_request_review_comment", 7301, "created", "pull_request_review_comment/created.payload.json"),
    ("pull_request", 7, "opened", "pull_request/opened.payload.json"),
    ("pull_request", 7, "synchronize", "pull_request/synchronize.payload.json"),
    ("check_run", 6002, "rerequested", "check_run/rerequested.payload.json"),
    ("check_suite", 6002, "rerequested", "check_suite/rerequested.payload.json"),
    ("workflow_run", 900, "completed", "workflow_run/completed.payload.json"),
]
SUBJECTS = ("issue", "comment", "review", "pull_request", "check_run", "check_suite", "workflow_run", "repository",
            "sender")
OPTIONAL = {"installation", "organization"}  # present as the repository and the App make them: the fake's are


def _labels(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [label for key in ("issue", "pull_request") for label in (payload.get(key) or {}).get("labels") or []]


@pytest.mark.parametrize("event,object_id,action,example", FAKE_DELIVERIES)
def test_the_fakes_deliveries_carry_what_githubs_carry(event: str, object_id: int, action: str, example: str) -> None:
    real = load(present(OCTOKIT / example if OCTOKIT.is_dir() else None, OCTOKIT))
    state = GitHubState.from_worlds([World.load(OWN_WORLDS / "mini")])
    fake = stored_event(Site(state, "http://127.0.0.1:1"), state.repo("acme", "bench"), event, action,
                        object_id).payload
    assert set(real) - OPTIONAL <= set(fake), f"top-level fields the fake does not send: {set(real) - set(fake)}"
    assert set(fake) - set(real) <= OPTIONAL | {"changes", "before", "after", "number", "workflow"}
    for key in SUBJECTS:
        if isinstance(real.get(key), dict):
            assert set(real[key]) <= set(fake[key]), f"{key}: {sorted(set(real[key]) - set(fake[key]))}"
    real_labels, fake_labels = _labels(real), _labels(fake)
    if real_labels and fake_labels:  # exactly the fields of GitHub's labels: none a schema made up
        assert {frozenset(lab) for lab in fake_labels} == {frozenset(lab) for lab in real_labels}


def test_the_e2e_world_is_what_the_rewrite_names() -> None:
    world = World.load(E2E_WORLD)
    repo = world.repos[REPO]
    assert repo.installation_id == INSTALLATION and repo.pulls[PR]["head"]["sha"] == HEAD
