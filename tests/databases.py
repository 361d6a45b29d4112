"""The tests' databases: a throwaway PostgreSQL server, and a client of their own for both engines.

`PostgresServer` runs initdb in a temporary directory and serves it on a
loopback port. Each pytest-xdist worker starts one for its session (the `postgres`
fixture): a directory of its own (mkdtemp) and a port of its own, chosen again when
another process took it first. The server binaries are Debian's (`apt-get install postgresql`, which .ci/run
does) or any on PATH. PostgreSQL refuses to run as root, so as root it runs as
the `postgres` user the Debian package creates. Every test gets a database
of its own (`PostgresServer.new_database`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import psycopg

from .apphost import free_port

SERVER_USER = "postgres"  # who runs the server when the tests run as root


def server_bindir() -> Path | None:
    """The directory of the newest PostgreSQL server binaries installed, if any."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/postgres")]
    if found:
        return max(found, key=lambda bindir: int(bindir.parent.name) if bindir.parent.name.isdigit() else 0)
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path else None


def unavailable() -> str | None:
    """Why no server can be started here, or None."""
    if server_bindir() is None:
        return "no PostgreSQL server binaries (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root and there is no {SERVER_USER!r} user to run the server as"
    return None


class PostgresServer:
    def __init__(self) -> None:
        bindir = server_bindir()
        assert bindir is not None, unavailable()
        self.bindir = bindir
        self.user = pwd.getpwnam(SERVER_USER) if os.geteuid() == 0 else None
        self.dir = Path(tempfile.mkdtemp(prefix="signoff-bot-pg-"))  # not under pytest's root-only tmp
        self.data = self.dir / "data"
        self.port = free_port()
        self._names = itertools.count(1)

    def _run(self, *args: str) -> None:
        user = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} if self.user else {}
        done = subprocess.run(args, cwd=self.dir, capture_output=True, text=True, timeout=120, **user)
        if done.returncode != 0:
            log = self.dir / "server.log"
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr or done.stdout}"
                               + (log.read_text(errors="replace")[-2000:] if log.exists() else ""))

    def _pg_ctl(self, *args: str) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), *args)

    def start(self) -> "PostgresServer":
        if self.user:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        self.start_server()
        return self

    def start_server(self) -> None:
        """Serve the data directory; on another port when this one was taken meanwhile (free_port only
        says it was free when asked, and other workers' Apps and servers pick ports too)."""
        for attempt in range(5):
            try:
                self._start_on_port()
                return
            except RuntimeError as exc:
                if attempt == 4 or "already in use" not in str(exc):
                    raise
                self.port = free_port()

    def _start_on_port(self) -> None:
        # fsync off: the tests kill the App, never the server; a crash of the machine would lose a test run only
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                   "-c fsync=off -c full_page_writes=off")
        self._pg_ctl("-l", str(self.dir / "server.log"), "-o", options, "-w", "-t", "60", "start")

    def restart(self) -> None:
        """Stop the server at once (as a crash or a failover would) and start it again."""
        self._pg_ctl("-m", "immediate", "-w", "stop")
        self._start_on_port()  # the same port: the databases' URLs name it

    def shut_down(self) -> None:
        """Stop the server as an operator does (fast: every session is ended with AdminShutdown), keeping its
        data; `start_server` starts it again."""
        self._pg_ctl("-m", "fast", "-w", "stop")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A new, empty database; its URL."""
        name = f"test_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def query(db: str, sql: str) -> list[tuple]:
    """Run one statement on `db` with a client of its own, as an operator would, outside the App's store."""
    if db.startswith("postgresql://"):
        with psycopg.connect(db, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        return conn.execute(sql).fetchall()
