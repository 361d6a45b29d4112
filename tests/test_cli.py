"""The command line: `audit` prints the decision trail; `serve` refuses a bad configuration clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from app.store.choose import open_store
from app.store.sql import SqliteStore

from .apphost import KEY
from .databases import query


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_audit_prints_the_records_of_a_pr(tmp_path):
    db = str(tmp_path / "bot.db")
    store = SqliteStore(db)
    for pr, verdict in ((42, "REJECTED"), (42, "PASS"), (7, "PASS")):
        store.append_audit({"delivery": "d", "repo": "o/r", "pr": pr, "head_sha": "a" * 40, "inputs_digest": "f" * 64,
                            "verdict": verdict, "published": {"writes": ["verdict comment updated"]}})
    out = run("audit", "--pr", "42", "--db", db)
    assert out.returncode == 0
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and "REJECTED" in lines[0] and "PASS" in lines[1]
    records = [json.loads(line) for line in run("audit", "--db", db, "--json").stdout.splitlines()]
    assert [r["pr"] for r in records] == [42, 42, 7]
    assert records[0]["published"]["writes"] == ["verdict comment updated"]


def test_audit_without_a_database_says_so(tmp_path):
    out = run("audit", "--db", str(tmp_path / "missing.db"))
    assert out.returncode == 1 and "no database" in out.stderr


def test_serve_lists_every_configuration_problem_and_does_not_start():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_BOT_")}
    env["SIGNOFF_BOT_APP_ID"] = "abc"
    out = run("serve", env=env)
    assert out.returncode == 2
    message = out.stderr.strip()
    assert "SIGNOFF_BOT_APP_ID must be a number" in message
    assert "SIGNOFF_BOT_WEBHOOK_SECRET is not set" in message
    assert "SIGNOFF_BOT_PRIVATE_KEY" in message


def test_serve_refuses_a_database_of_a_newer_release_and_names_it_without_its_password(db):
    open_store(db).close()
    if db.startswith("postgresql://"):
        query(db, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)")
        db = db.replace("postgres@", "postgres:hunter2@")  # the test server trusts loopback: any password opens it
    else:
        query(db, "PRAGMA user_version = 999")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_BOT_")}, "SIGNOFF_BOT_APP_ID": "1",
           "SIGNOFF_BOT_PRIVATE_KEY": KEY, "SIGNOFF_BOT_WEBHOOK_SECRET": "s", "SIGNOFF_BOT_DB": db}
    out = run("serve", "--port", "1", env=env)
    assert out.returncode == 1
    assert "cannot open the database" in out.stderr and "SchemaTooNew" in out.stderr and "version 999" in out.stderr
    assert "hunter2" not in out.stderr + out.stdout


def test_audit_reads_a_postgresql_database(postgres):
    url = postgres.new_database()
    store = open_store(url)
    store.append_audit({"delivery": "d", "repo": "o/r", "pr": 42, "head_sha": "a" * 40, "inputs_digest": "f" * 64,
                        "verdict": "PASS", "published": {"writes": ["check run created"]}})
    store.close()
    records = [json.loads(line) for line in run("audit", "--db", url, "--json").stdout.splitlines()]
    assert [(r["pr"], r["verdict"], r["published"]["writes"]) for r in records] == [(42, "PASS", ["check run created"])]
