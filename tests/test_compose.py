"""docker-compose.yml, read as Docker Compose reads it (no container engine runs here): the App gets
the settings app/settings.py reads, pointing at the PostgreSQL service, whose data is in a volume,
behind the proxy that is the one webhook URL; and `serve` started with exactly that environment
comes up on a real PostgreSQL server and migrates it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import yaml

from app.settings import Settings
from app.store.postgres import PG_MIGRATIONS

from .apphost import KEY, START_TIMEOUT, end, free_port
from .databases import query

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]
DOTENV = {"POSTGRES_PASSWORD": "pw-from-dotenv", "SIGNOFF_BOT_APP_ID": "12345", "SIGNOFF_BOT_WEBHOOK_SECRET": "s3"}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?message} substitution."""
    def one(m: re.Match) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        if env.get(name):
            return env[name]
        assert op != "?", f"compose would refuse to start: {arg}"
        return arg if op == "-" else ""
    return re.sub(r"\$\{(\w+)(?::([-?])([^}]*))?\}", one, text)


def app_environment(env: dict[str, str]) -> dict[str, str]:
    return {k: interpolate(str(v), env) for k, v in SERVICES["app"]["environment"].items()}


def test_the_app_is_given_only_settings_it_reads():
    source = (ROOT / "app" / "settings.py").read_text(encoding="utf-8")
    read = set(re.findall(r'"(SIGNOFF_BOT_[A-Z_]+)"', source))
    assert set(SERVICES["app"]["environment"]) <= read


def test_the_app_uses_the_postgres_service_and_its_volume():
    env = app_environment(DOTENV)
    url = urllib.parse.urlsplit(env["SIGNOFF_BOT_DB"])
    pg = SERVICES["postgres"]
    assert (url.scheme, url.hostname, url.port) == ("postgresql", "postgres", 5432)
    assert (url.username, url.password, url.path) == (
        pg["environment"]["POSTGRES_USER"], DOTENV["POSTGRES_PASSWORD"], "/" + pg["environment"]["POSTGRES_DB"])
    assert interpolate(pg["environment"]["POSTGRES_PASSWORD"], DOTENV) == DOTENV["POSTGRES_PASSWORD"]
    volume, mount = pg["volumes"][0].split(":")
    assert mount == "/var/lib/postgresql/data" and volume in COMPOSE["volumes"]
    assert SERVICES["app"]["depends_on"]["postgres"]["condition"] == "service_healthy" and pg["healthcheck"]
    secret = env["SIGNOFF_BOT_PRIVATE_KEY_FILE"]
    assert secret == f"/run/secrets/{SERVICES['app']['secrets'][0]}" and SERVICES["app"]["secrets"][0] in COMPOSE["secrets"]


def test_the_proxy_is_the_one_webhook_url_for_every_replica():
    proxy = SERVICES["proxy"]
    conf, mount = proxy["volumes"][0].removeprefix("./").split(":")[:2]
    nginx = (ROOT / conf).read_text(encoding="utf-8")
    port = SERVICES["app"]["expose"][0]
    assert mount == "/etc/nginx/conf.d/default.conf"
    assert f"http://app:{port}" in nginx and "client_max_body_size 25m" in nginx
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")  # the image serves on SIGNOFF_BOT_PORT
    assert f"SIGNOFF_BOT_PORT={port}" in dockerfile and '--port \\"$SIGNOFF_BOT_PORT\\"' in dockerfile
    assert proxy["ports"] == [f"{port}:{port}"] and "ports" not in SERVICES["app"]  # replicas publish nothing


def test_serve_starts_on_postgresql_with_the_environment_compose_gives_it(postgres, tmp_path):
    """The compose environment as is, but for the database's address (the test's server, with the
    role and database the postgres image creates), the key file's path, and a GitHub URL on
    loopback (tests never reach GitHub)."""
    query(postgres.url(), f"CREATE ROLE signoff LOGIN PASSWORD '{DOTENV['POSTGRES_PASSWORD']}'")
    query(postgres.url(), "CREATE DATABASE signoff OWNER signoff")
    key = tmp_path / "signoff-bot.pem"
    key.write_text(KEY)
    env: dict[str, Any] = app_environment(DOTENV)
    env["SIGNOFF_BOT_DB"] = env["SIGNOFF_BOT_DB"].replace("@postgres:5432/", f"@127.0.0.1:{postgres.port}/")
    env["SIGNOFF_BOT_PRIVATE_KEY_FILE"] = str(key)
    env["SIGNOFF_BOT_GITHUB_URL"] = f"http://127.0.0.1:{free_port()}"
    assert Settings.from_env(env).db_path.startswith("postgresql://signoff:")
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_BOT_")}
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(port)], cwd=ROOT,
                            env={**base, **env}, stdout=log, stderr=log)
    try:
        deadline, ready = time.monotonic() + START_TIMEOUT, None
        while ready is None or ready.status_code != 200:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
            except httpx.HTTPError:
                pass
        assert ready.json() == {"ok": True, "queue_depth": 0}
    finally:
        end(proc)
    owners = query(postgres.url("signoff"), "SELECT tableowner FROM pg_tables WHERE tablename = 'jobs'")
    assert owners == [("signoff",)]
    assert query(postgres.url("signoff"), "SELECT max(version) FROM schema_migrations") == [(len(PG_MIGRATIONS),)]
