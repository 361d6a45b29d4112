"""The attacks of issue 10 on the running App, end to end: `signoff-bot serve` and the fake GitHub as real
processes on loopback (tests/apphost.py), driven as an attacker with write access would drive GitHub.

1. a write user who owns nothing edits a CODEOWNER's comment into the full sign-off;
2. after a push that changed a config, a write user's one-space edit of the owner's sign-off;
3. the database is lost after such a push, and the App restarts;
4. the database stops taking writes (here: a file-size limit of one byte on the App's process);
5. a burst of large unsigned bodies;
6. a sign-off indented four spaces (a code block, not a checklist).

Each ends with no PASS on content no owner vouched for (no `success` check run or commit status, no PASS
verdict comment on that head), or for 4 and 5 with /readyz not 200 while the database refuses writes and
the App's memory bounded. Where the rule has a legitimate path (the owner editing their own sign-off, the
database coming back) the test takes it too, so it could not pass by the App refusing everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import resource
import select
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .apphost import REPO, SECRET, Stack
from .worldgen import Pull, build_world, sha, signoff_text

pytestmark = pytest.mark.slow

PR = 101
CHECK = "codeowner-signoff-verify"
MALLORY = "mallory"  # write access, owns nothing
TWEAK = sha("pr101-tweak")  # a push that changes a master config: the checks still pass, the content changed
MB = 1024 * 1024


def attack_world(tmp: Path, signed_off: bool = False) -> Path:
    """One PR that passes every check once a CODEOWNER signs off, a write collaborator who owns nothing,
    and a commit to push that changes a config (conc-list [1] -> [1, 2]) and still passes."""
    world = build_world(tmp / "world", [PR], signed_off=signed_off)
    shutil.copytree(world / "trees" / "fixed", world / "trees" / "tweaked")
    master = world / "trees" / "tweaked" / "configs" / "nvidia-master.yaml"
    master.write_text(master.read_text().replace("conc-list: [1]", "conc-list: [1, 2]"))
    data = yaml.safe_load((world / "world.yaml").read_text())
    repo = data["repos"][0]
    repo["collaborators"][MALLORY] = "write"
    repo["commits"].append({"sha": TWEAK, "tree": "tweaked", "parents": [Pull(PR).head],
                            "message": "Sweep concurrency 1 and 2", "author": "contributor"})
    (world / "world.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return world


@contextlib.contextmanager
def running(tmp: Path, world: Path, **env: str):
    with Stack(tmp, world, env=env) as stack:
        try:
            yield stack
        finally:
            print(stack.logs())


def check_runs(stack: Stack, sha_: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{stack.fake_url}/repos/{REPO}/commits/{sha_}/check-runs",
                  params={"check_name": CHECK, "filter": "all"}, timeout=30)
    return r.json()["check_runs"]


def conclusion(stack: Stack, sha_: str) -> str | None:
    runs = check_runs(stack, sha_)
    return runs[0]["conclusion"] if runs else None


def verdict_comment(stack: Stack, sha_: str) -> str:
    comments = stack.verdict_comments(PR)
    return comments[0]["body"] if comments and f"sha={sha_} -->" in comments[0]["body"] else ""


def idle(stack: Stack) -> bool:
    return httpx.get(f"{stack.app_url}/readyz", timeout=10).json().get("queue_depth", 1) == 0


def assert_no_pass(stack: Stack, sha_: str) -> None:
    """Nothing the App wrote says PASS for `sha_`: no success check run, no success status, no PASS comment."""
    assert [r["conclusion"] for r in check_runs(stack, sha_) if r["conclusion"] == "success"] == []
    statuses = httpx.get(f"{stack.fake_url}/repos/{REPO}/commits/{sha_}/statuses", timeout=30).json()
    assert [s for s in statuses if s["state"] == "success"] == []
    assert "**Verdict: PASS**" not in verdict_comment(stack, sha_)


def passed(stack: Stack, sha_: str) -> bool:
    return conclusion(stack, sha_) == "success" and "**Verdict: PASS**" in verdict_comment(stack, sha_)


def settled(stack: Stack, what: str, predicate, timeout: float = 90) -> None:
    stack.wait(lambda: predicate() and idle(stack), timeout, what)


def handled(stack: Stack, action: str, timeout: float = 90) -> None:
    """Wait until the newest delivery of `action` was accepted and every job it caused has run."""
    def done() -> bool:
        sent = [d for d in httpx.get(f"{stack.fake_url}/_fake/deliveries", timeout=30).json() if d["action"] == action]
        return bool(sent) and sent[-1]["status"] == 202 and idle(stack)
    stack.wait(done, timeout, f"the {action} delivery handled")


def signed_off_then_pushed(stack: Stack) -> None:
    """The owner signs off (PASS on the head), then a push changes a config (a fresh sign-off is asked for)."""
    stack.comment("nv-owner", PR, signoff_text(PR))
    settled(stack, "PASS on the signed-off head", lambda: passed(stack, Pull(PR).head))
    stack.admin("push", number=PR, sha=TWEAK)
    settled(stack, "a fresh sign-off asked for", lambda: conclusion(stack, TWEAK) == "action_required")


def signoff_id(stack: Stack) -> int:
    return next(c["id"] for c in stack.issue_comments(PR) if c["body"].startswith("As a PR reviewer"))


# --- 1 and 2: an edit by someone else ------------------------------------------------------------------


def test_1_an_edit_by_a_write_user_into_the_full_checklist_is_no_sign_off(tmp_path):
    head = Pull(PR).head
    with running(tmp_path, attack_world(tmp_path)) as stack:
        lgtm = stack.comment("nv-owner", PR, "LGTM, will sign off later.")["id"]
        handled(stack, "created")
        stack.edit_comment(MALLORY, lgtm, signoff_text(PR))
        handled(stack, "edited")
        assert_no_pass(stack, head)
        assert conclusion(stack, head) == "failure"
        comment = verdict_comment(stack, head)
        assert "**REJECTED**" in comment
        assert f"Signer's own words: FAIL — nv-owner's conversation comment was last edited by {MALLORY}" in comment
        assert_no_pass(stack, head)

        stack.edit_comment("nv-owner", lgtm, signoff_text(PR) + "\n")  # the owner's own words now
        settled(stack, "PASS once the owner edits it", lambda: passed(stack, head))


def test_2_a_trivial_edit_by_a_write_user_does_not_make_a_stale_sign_off_fresh(tmp_path):
    with running(tmp_path, attack_world(tmp_path)) as stack:
        signed_off_then_pushed(stack)
        cid = signoff_id(stack)
        body = next(c["body"] for c in stack.issue_comments(PR) if c["id"] == cid)
        stack.edit_comment(MALLORY, cid, body + " ")
        handled(stack, "edited")
        assert_no_pass(stack, TWEAK)
        assert conclusion(stack, TWEAK) == "failure"
        assert f"last edited by {MALLORY}" in verdict_comment(stack, TWEAK)

        stack.edit_comment("nv-owner", cid, body + "\n\nRe-checked on concurrency 1 and 2.")  # a fresh sign-off
        settled(stack, "PASS once the owner signs off again", lambda: passed(stack, TWEAK))


# --- 3: the database is lost ---------------------------------------------------------------------------


def test_3_what_a_sign_off_vouches_for_survives_the_loss_of_the_database(tmp_path):
    head = Pull(PR).head
    with running(tmp_path, attack_world(tmp_path)) as stack:
        signed_off_then_pushed(stack)

        stack.kill_app()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(stack.db + suffix)
        stack.start_app()  # a new volume: the start-up reconcile pass verifies every open PR again

        def verified_again() -> bool:
            from app.store.sql import SqliteStore

            store = SqliteStore(stack.db)
            try:
                return store.verdict_for(REPO, PR, TWEAK) is not None
            finally:
                store.close()

        settled(stack, "the changed head verified again, on an empty database", verified_again)
        assert_no_pass(stack, TWEAK)
        assert conclusion(stack, TWEAK) == "action_required"
        assert passed(stack, head)  # the old head keeps its verdict: the owner did vouch for it


# --- 6: the phrase in a code block ---------------------------------------------------------------------


def test_6_a_sign_off_indented_four_spaces_is_a_code_block_not_a_sign_off(tmp_path):
    head = Pull(PR).head
    with running(tmp_path, attack_world(tmp_path)) as stack:
        indented = "\n".join("    " + line for line in signoff_text(PR).splitlines())
        stack.comment("nv-owner", PR, indented)
        handled(stack, "created")
        assert_no_pass(stack, head)
        run = check_runs(stack, head)[0]
        assert run["status"] == "queued" and run["output"]["title"] == "Awaiting a CODEOWNER sign-off"

        stack.comment("nv-owner", PR, signoff_text(PR))  # the same text as a paragraph and a checklist
        settled(stack, "PASS on the checklist", lambda: passed(stack, head))


# --- 4: a database that takes no writes -------------------------------------------------------------


def ready(stack: Stack) -> int:
    return httpx.get(f"{stack.app_url}/readyz", timeout=30).status_code


def test_4_readyz_fails_while_the_database_refuses_writes_and_refused_deliveries_are_healed(tmp_path):
    """A file-size limit of one byte on the App's process makes every write to the database fail as a full
    disk does (reads still work). /readyz is 503 meanwhile; the owner's edit that arrives then (unchecking
    an item: the verdict must turn REJECTED) is refused with 503, which GitHub does not retry; once writes
    work again the reconcile pass records it, although the head already has a verdict."""
    head = Pull(PR).head
    with running(tmp_path, attack_world(tmp_path), SIGNOFF_BOT_RECONCILE_SECONDS="2") as stack:
        stack.comment("nv-owner", PR, signoff_text(PR))
        settled(stack, "PASS on the signed-off head", lambda: passed(stack, head))
        assert ready(stack) == 200
        pid = stack.apps[0].pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))
        try:
            assert ready(stack) == 503
            cid = signoff_id(stack)
            body = next(c["body"] for c in stack.issue_comments(PR) if c["id"] == cid)
            stack.edit_comment("nv-owner", cid, body.replace("- [x] Verified that this PR passes evals",
                                                             "- [ ] Verified that this PR passes evals"))
            deliveries = stack.wait(lambda: [d for d in httpx.get(f"{stack.fake_url}/_fake/deliveries").json()
                                             if d["action"] == "edited"], 30, "the edit's delivery")
            assert deliveries[-1]["status"] == 503
            assert ready(stack) == 503
            assert passed(stack, head)  # nothing changed yet: the delivery was refused
        finally:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard))
        stack.wait(lambda: ready(stack) == 200, 30, "/readyz once the database takes writes")
        settled(stack, "the refused edit verified", lambda: conclusion(stack, head) == "failure")
        assert "**REJECTED**" in verdict_comment(stack, head) and "passes evals" in verdict_comment(stack, head)


# --- 5: a burst of large unsigned bodies -------------------------------------------------------------


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def open_delivery(port: int, length: int, signature: str = "sha256=" + "0" * 64) -> socket.socket:
    """A POST /webhook whose headers are sent and whose body (`length` bytes) is not, yet."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall((f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  f"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: burst\r\n"
                  f"X-Hub-Signature-256: {signature}\r\nContent-Length: {length}\r\n\r\n").encode())
    return sock


def status_of(sock: socket.socket) -> int | None:
    """The status the server answered on `sock`; None when it closed the connection without one."""
    try:
        head = sock.recv(64)
    except OSError:
        return None
    return int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else None


def send_body(sock: socket.socket, length: int) -> None:
    chunk = b"x" * MB
    with contextlib.suppress(OSError):  # a connection the server answered and closed
        for _ in range(length // MB):
            sock.sendall(chunk)
        sock.sendall(b"x" * (length % MB))


def test_5_unauthenticated_bodies_are_bounded_before_their_signature_is_checked(tmp_path):
    """The bytes of unsigned bodies held at once are capped (64 MiB): a body the cap cannot hold is answered
    503 at once, before a byte of it is sent; 48 concurrent 24 MB unsigned bodies leave the App's peak
    memory under 300 MB; afterwards /readyz is 200 and a signed delivery is queued."""
    size = 24 * MB
    with running(tmp_path, attack_world(tmp_path, signed_off=True)) as stack:
        settled(stack, "the start-up verification", lambda: passed(stack, Pull(PR).head))
        port, pid = stack.app_ports[0], stack.apps[0].pid

        held = [open_delivery(port, size) for _ in range(3)]  # 3 x 24 MB > 64 MiB: one cannot be held
        readable, _, _ = select.select(held, [], [], 60)
        assert len(readable) == 1, "exactly one body was refused without being read"
        assert status_of(readable[0]) == 503
        for sock in held:
            if sock not in readable:
                send_body(sock, size)
                assert status_of(sock) == 401  # held, read, and then refused for its signature
            sock.close()

        statuses: list[int | None] = []

        def attack() -> None:
            sock = open_delivery(port, size)
            send_body(sock, size)
            statuses.append(status_of(sock))
            sock.close()

        threads = [threading.Thread(target=attack) for _ in range(48)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(statuses) == 48 and set(statuses) <= {401, 503, None}  # None: refused mid-send, reset
        assert statuses.count(401) >= 1
        assert peak_rss(pid) < 300 * MB, f"peak {peak_rss(pid) / MB:.0f} MB"

        assert ready(stack) == 200
        payload = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), payload, hashlib.sha256).hexdigest()
        r = httpx.post(f"{stack.app_url}/webhook", content=payload, timeout=30,
                       headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "after-the-burst",
                                "X-Hub-Signature-256": signature, "Content-Type": "application/json"})
        assert r.status_code == 202
