"""Secrets never appear in logs, comments, check runs or error messages.

The private key, the webhook secret, installation tokens, the JWTs the App
signs and artifact download URLs (pre-signed on GitHub) are searched for in
everything a serve session writes: its JSON logs at DEBUG, the comments,
check runs, statuses and reactions it posts, its audit trail, and what it
answers on failures (bad configuration, a broken key, GitHub erroring).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pydantic
import pytest

from app.github.client import GitHubError
from app.observability import QUIET_LOGGERS, JsonFormatter, setup_logging
from app.settings import ConfigError, Settings

from .apphost import KEY, REPO, SECRET, Stack

ROOT = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"gh[osu]_[A-Za-z0-9_]{8,}")
JWT = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}")
DOWNLOAD = re.compile(r"/_fake/download/[\w-]+")
KEY_LINES = [line for line in KEY.splitlines() if line and "-----" not in line]


def leaks(text: str, *also: str) -> list[str]:
    """Every secret, or secret-shaped string, found in `text`."""
    found = [s for s in (SECRET, *also) if s and s in text]
    found += [line for line in KEY_LINES if line in text]
    for pattern in (TOKEN, JWT, DOWNLOAD):
        found += pattern.findall(text)
    return found


# --- configuration -----------------------------------------------------------------------------------


def test_settings_never_print_the_key_or_the_secret():
    settings = Settings(app_id=7, private_key=KEY, webhook_secret=SECRET)
    for text in (repr(settings), str(settings), f"{settings}", f"{settings!r}", repr([settings])):
        assert not leaks(text)


def test_configuration_errors_name_the_problem_not_the_value():
    env = {"SIGNOFF_BOT_APP_ID": "app-id-hunter2", "SIGNOFF_BOT_PRIVATE_KEY": "not-pem-hunter2-key",
           "SIGNOFF_BOT_WEBHOOK_SECRET": SECRET, "SIGNOFF_BOT_GITHUB_URL": "ftp://hunter2@example.com",
           "SIGNOFF_BOT_LOG_LEVEL": "hunter2", "SIGNOFF_BOT_WORKERS": "hunter2"}
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    message = str(raised.value)
    assert "SIGNOFF_BOT_PRIVATE_KEY" not in message or "not PEM" in message
    assert "hunter2" not in message and not leaks(message)


def test_the_database_password_is_never_printed():
    settings = Settings(app_id=7, private_key=KEY, webhook_secret=SECRET,
                        db_path="postgresql://bot:hunter2@db.internal:5432/signoff?password=hunter2&sslmode=require")
    for text in (repr(settings), str(settings), repr([settings])):
        assert "hunter2" not in text and "postgresql://bot:***@db.internal:5432/signoff" in text
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": KEY, "SIGNOFF_BOT_WEBHOOK_SECRET": SECRET,
                           "SIGNOFF_BOT_DB": "mysql://bot:hunter2@db/signoff"})
    assert "SIGNOFF_BOT_DB must be" in str(raised.value) and "hunter2" not in str(raised.value)


def test_serve_refuses_a_bad_configuration_without_echoing_it(tmp_path):
    env = {**os.environ, "SIGNOFF_BOT_APP_ID": "x", "SIGNOFF_BOT_PRIVATE_KEY": "hunter2-not-a-key",
           "SIGNOFF_BOT_WEBHOOK_SECRET": SECRET, "SIGNOFF_BOT_DB": str(tmp_path / "db")}
    done = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--port", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "not PEM" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout and not leaks(done.stderr + done.stdout)


# --- the log formatter --------------------------------------------------------------------------------


def _formatted(exc: Exception) -> dict:
    try:
        raise exc
    except Exception:  # noqa: BLE001 - any exception: the record needs its exc_info
        record = logging.getLogger("t").makeRecord("t", logging.ERROR, __file__, 1, "job crashed", (),
                                                    sys.exc_info())
    return json.loads(JsonFormatter().format(record))


def test_logged_exceptions_carry_their_type_not_what_they_quote():
    """pydantic quotes the response it rejected, httpx the URL it called: neither reaches the log."""
    class Token(pydantic.BaseModel):
        expires_at: str

    try:
        Token.model_validate({"token": "ghs_16i1a0123456789abcdef01234567"})
    except pydantic.ValidationError as exc:
        validation = exc
    url = "https://productionresults.blob.core.windows.net/a.zip?sig=hunter2signature"
    request = httpx.Request("GET", url)
    for exc in (validation, httpx.HTTPStatusError("failed", request=request, response=httpx.Response(403)),
                httpx.ConnectError(f"cannot reach {url}", request=request), ValueError(f"bad {SECRET}")):
        entry = _formatted(exc)
        assert entry["exc"].startswith(f"{type(exc).__module__}.{type(exc).__qualname__}")
        assert "hunter2" not in json.dumps(entry) and not leaks(json.dumps(entry)), entry
    assert _formatted(GitHubError("tree a1b2: GitHub answered 422", 422))["exc"].endswith(
        "GitHub answered 422")


def test_debug_logging_keeps_http_libraries_quiet():
    """At DEBUG httpcore would log every response header: the Location of a pre-signed download among them."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, {n: logging.getLogger(n).level for n in QUIET_LOGGERS})
    try:
        setup_logging("DEBUG")
        stream = io.StringIO()
        root.handlers[0].setStream(stream)
        logging.getLogger("httpcore.http11").debug("receive_response_headers.complete location=%s",
                                                   "https://blob/a.zip?sig=hunter2")
        logging.getLogger("signoff_bot.jobs").debug("still logged")
        root.handlers[0].flush()  # written apart (app/observability.py): now rather than within 50 ms
        assert "hunter2" not in stream.getvalue() and "still logged" in stream.getvalue()
    finally:
        root.handlers[:], root.level = saved[0], saved[1]
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)


# --- a serve session, failures included --------------------------------------------------------------------


def _fault(stack: Stack, **fault) -> None:
    httpx.post(f"{stack.fake_url}/_fake/faults", json=fault, timeout=30).raise_for_status()


def _published(stack: Stack) -> str:
    """What the App wrote on the PR (comments, check runs, statuses, reviews, reactions), as text."""
    writes = [w for w in stack.writes() if not w["route"].endswith("/access_tokens")]
    return json.dumps([w["request"] for w in writes]) + json.dumps(stack.issue_comments(42))


@pytest.mark.slow
def test_a_serve_session_at_debug_with_failures_leaks_no_secret(tmp_path):
    with Stack(tmp_path, env={"SIGNOFF_BOT_LOG_LEVEL": "DEBUG"}) as stack:
        stack.deliver("issue_comment", 5001)
        stack.wait(lambda: stack.verdict_comments(42), 60, "a verdict comment")
        refused = stack.comment("random-user", 42, "/reuse-sweep-run 9001")
        stack.wait(lambda: stack.reactions(refused["id"]) == ["-1"], 60, "the refusal")
        bad = httpx.post(f"{stack.app_url}/webhook", content=b"{}", timeout=30,
                         headers={"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "forged",
                                  "X-Hub-Signature-256": "sha256=" + "0" * 64})
        assert bad.status_code == 401 and not leaks(bad.text)
        # GitHub failing: downloads erroring, a dropped connection, then a verification that cannot finish.
        _fault(stack, route="GET /_fake/download/*", status=500, times=3)
        _fault(stack, route="GET /repos/*/pulls/42/files", drop=True, times=1)
        stack.comment("core-maintainer", 42, "/signoff-recheck")
        _fault(stack, route="GET /repos/*/git/trees/*", status=422, times=1_000)
        stack.deliver("issue_comment", 6002)
        stack.wait(lambda: any((r.get("output") or {}).get("title") == "Verification could not complete"
                               for r in stack.check_runs("e5" * 20)), 90, "a failed verification")
        # A new process must exchange a fresh token while GitHub refuses: the error is logged, not the JWT.
        stack.kill_app()
        _fault(stack, route="POST /app/installations/*/access_tokens", status=401, times=3)
        stack.start_app()
        stack.deliver("issue_comment", 5001, delivery="after-restart")
        stack.wait(lambda: not _fault_pending(stack, "access_tokens"), 60, "the token faults to be used")
        published = _published(stack)
        audit = subprocess.run([sys.executable, "-m", "app.cli", "audit", "--json", "--db", stack.db], cwd=ROOT,
                               capture_output=True, text=True, timeout=60, check=True).stdout
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("app*.log")))
    assert '"level": "DEBUG"' in logs or '"level": "INFO"' in logs
    assert json.loads(audit.splitlines()[0])["repo"] == REPO
    for name, text in (("logs", logs), ("what the App posted", published), ("the audit trail", audit)):
        assert not leaks(text), f"{name} leak {leaks(text)[:3]}"


def _fault_pending(stack: Stack, route: str) -> bool:
    pending = httpx.get(f"{stack.fake_url}/_fake/faults", timeout=30).json()["faults"]
    return any(route in f["route"] for f in pending)


@pytest.mark.slow
def test_a_key_that_is_pem_but_broken_fails_jobs_without_printing_it(tmp_path):
    broken = "-----BEGIN PRIVATE KEY-----\nMIIhunter2brokenkeymaterialhunter2\n-----END PRIVATE KEY-----\n"
    with Stack(tmp_path, env={"SIGNOFF_BOT_PRIVATE_KEY": broken, "SIGNOFF_BOT_MAX_ATTEMPTS": "1"}) as stack:
        answer = stack.deliver("issue_comment", 5001)
        assert answer["status"] == 202
        stack.wait(lambda: "job failed" in stack.logs() or "retrying" in stack.logs(), 60, "the job to fail")
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("app*.log")))
    assert "hunter2" not in logs and not leaks(logs)
