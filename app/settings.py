"""Configuration of the App server, from environment variables, validated at start-up."""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import Mapping

from checks.policy import CONFIG_PATH

from .store.sql import POSTGRES_SCHEMES, SQLITE_SCHEME

# The check runs the App posts: the sign-off's verdict (the one branch protection requires) and the recipe lint.
CHECK_NAME = "codeowner-signoff-verify"
LINT_CHECK_NAME = "signoff-bot lint"


class ConfigError(Exception):
    """Missing or malformed configuration; the message lists every problem."""


@dataclass(frozen=True)
class Settings:
    app_id: int
    private_key: str
    webhook_secret: str
    github_url: str = "https://api.github.com"
    db_path: str = "./signoff-bot.db"  # a SQLite file (a path or sqlite:///PATH) or a postgresql:// URL
    log_level: str = "INFO"
    bot_login: str = "signoff-bot[bot]"
    max_body_bytes: int = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
    max_unverified_bytes: int = 64 * 1024 * 1024  # bodies held before their signature is checked, all together
    body_seconds: float = 10.0  # for a body to arrive (GitHub gives up on a delivery after 10 s)
    workers: int = 2
    check_processes: int = 1  # processes the server runs the checks in (app/judge.py)
    check_cpu_seconds: float = 10.0  # one verification's checks: CPU time (app/judge.py `Budget`)
    check_memory_mb: int = 512  # one verification's checks: memory beyond what the checks' process held
    work_nice: int = 10  # how much lower the verifying processes' CPU priority is than the server's (0-19)
    lease_seconds: float = 30.0
    reconcile_seconds: float = 600.0
    job_budget_seconds: float = 900.0
    max_attempts: int = 8
    http_timeout: float = 15.0  # seconds a GitHub call may take to answer (connecting: at most 5)
    config_path: str = CONFIG_PATH  # the repository's policy file, read at the base branch tip

    def __repr__(self) -> str:  # never print secrets
        return f"Settings(app_id={self.app_id}, github_url={self.github_url!r}, db_path={redacted(self.db_path)!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        problems: list[str] = []

        app_id_text = env.get("SIGNOFF_BOT_APP_ID", "").strip()
        app_id = 0
        if not app_id_text:
            problems.append("SIGNOFF_BOT_APP_ID is not set")
        elif not app_id_text.isdigit():
            problems.append("SIGNOFF_BOT_APP_ID must be a number")
        else:
            app_id = int(app_id_text)

        key = env.get("SIGNOFF_BOT_PRIVATE_KEY", "")
        key_file = env.get("SIGNOFF_BOT_PRIVATE_KEY_FILE", "")
        if not key and key_file:
            try:
                with open(key_file, encoding="utf-8") as handle:
                    key = handle.read()
            except OSError as exc:
                problems.append(f"SIGNOFF_BOT_PRIVATE_KEY_FILE cannot be read ({exc.strerror})")
        if not key and not key_file:
            problems.append("SIGNOFF_BOT_PRIVATE_KEY or SIGNOFF_BOT_PRIVATE_KEY_FILE is not set")
        elif key and "-----BEGIN" not in key:
            problems.append("the private key is not PEM text")

        secret = env.get("SIGNOFF_BOT_WEBHOOK_SECRET", "")
        if not secret:
            problems.append("SIGNOFF_BOT_WEBHOOK_SECRET is not set")

        url = env.get("SIGNOFF_BOT_GITHUB_URL", cls.github_url).strip()
        if not url.startswith(("http://", "https://")):
            problems.append("SIGNOFF_BOT_GITHUB_URL must be an http(s) URL")

        db = env.get("SIGNOFF_BOT_DB", cls.db_path).strip()
        if not db or ("://" in db and not db.startswith((*POSTGRES_SCHEMES, SQLITE_SCHEME))):
            problems.append("SIGNOFF_BOT_DB must be a file path, sqlite:///PATH or a postgresql:// URL")

        level = env.get("SIGNOFF_BOT_LOG_LEVEL", cls.log_level).upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            problems.append("SIGNOFF_BOT_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR")

        numbers = {}
        for name, field_name, kind in (("SIGNOFF_BOT_WORKERS", "workers", int),
                                       ("SIGNOFF_BOT_CHECK_PROCESSES", "check_processes", int),
                                       ("SIGNOFF_BOT_CHECK_CPU_SECONDS", "check_cpu_seconds", float),
                                       ("SIGNOFF_BOT_CHECK_MEMORY_MB", "check_memory_mb", int),
                                       ("SIGNOFF_BOT_LEASE_SECONDS", "lease_seconds", float),
                                       ("SIGNOFF_BOT_RECONCILE_SECONDS", "reconcile_seconds", float),
                                       ("SIGNOFF_BOT_JOB_BUDGET_SECONDS", "job_budget_seconds", float),
                                       ("SIGNOFF_BOT_MAX_ATTEMPTS", "max_attempts", int),
                                       ("SIGNOFF_BOT_HTTP_TIMEOUT", "http_timeout", float),
                                       ("SIGNOFF_BOT_MAX_UNVERIFIED_BYTES", "max_unverified_bytes", int),
                                       ("SIGNOFF_BOT_BODY_SECONDS", "body_seconds", float)):
            if name in env:
                try:
                    value = kind(env[name])
                    if value <= 0:
                        raise ValueError
                    numbers[field_name] = value
                except ValueError:
                    problems.append(f"{name} must be a positive number")

        nice_text = env.get("SIGNOFF_BOT_WORK_NICE", str(cls.work_nice)).strip()
        if nice_text.isdigit() and int(nice_text) <= 19:
            numbers["work_nice"] = int(nice_text)
        else:
            problems.append("SIGNOFF_BOT_WORK_NICE must be a whole number from 0 to 19")

        if numbers.get("max_unverified_bytes", cls.max_unverified_bytes) < cls.max_body_bytes:
            problems.append(f"SIGNOFF_BOT_MAX_UNVERIFIED_BYTES must be at least {cls.max_body_bytes} "
                            "(one delivery of GitHub's largest)")
        if problems:
            raise ConfigError("invalid configuration: " + "; ".join(problems))
        return cls(app_id=app_id, private_key=key, webhook_secret=secret, github_url=url.rstrip("/"),
                   db_path=db, log_level=level,
                   bot_login=env.get("SIGNOFF_BOT_LOGIN", cls.bot_login), **numbers)


def redacted(db: str) -> str:
    """`db` fit to print: a URL's password, in its user part or its query, replaced by ***."""
    parts = urllib.parse.urlsplit(db)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if parts.password is None and all(key != "password" for key, _ in query):
        return db
    netloc = parts.netloc
    if parts.password is not None:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}:***@{host}"
    text = urllib.parse.urlencode([(k, "***" if k == "password" else v) for k, v in query], safe="*/")
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{text}" if text else "")
