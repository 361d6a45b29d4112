"""Shared fixtures: where the shared real-PR worlds are (when the folder exists), and the databases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests are judged by what they find, never by how fast an example ran: a busy machine makes a
# 200 ms example take a second (Hypothesis's default deadline), and generating examples slow (too_slow).
settings.register_profile("signoff-bot", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("signoff-bot")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_WORLDS = SHARED / "fixtures" / "worlds"
SHARED_HISTORY = SHARED / "fixtures" / "history"
OWN_WORLDS = Path(__file__).resolve().parent / "worlds"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def pytest_addoption(parser) -> None:
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (CI always does)")


def pytest_configure(config) -> None:
    """A plain `pytest -q` on a workstation leaves out the tests marked slow (end-to-end runs of servers,
    processes, Docker and the metamorphic suite: a third of the tests, most of the wall time) so a rule's
    change gets feedback in minutes. CI (CI=true), `--slow`, an explicit `-m`, or naming test files or
    ids runs them too. Decided once, in the controlling process: pytest-xdist hands the option to its
    workers."""
    if config.option.markexpr or config.getoption("--slow") or in_ci():
        return
    if config.args_source is pytest.Config.ArgsSource.TESTPATHS:
        config.option.markexpr = LEAVE_OUT_SLOW
        config._signoff_slow_left_out = True


LEAVE_OUT_SLOW = "not slow"


def runs_slow(config) -> bool:
    """Whether this run keeps the tests marked slow: a slow module whose parameters cost a lot to work out
    (the metamorphic suite judges every config's base) asks before working them out."""
    return config.option.markexpr != LEAVE_OUT_SLOW


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if getattr(config, "_signoff_slow_left_out", False):
        terminalreporter.write_line("tests marked slow were left out: `pytest -q --slow` (or CI=true) runs every test")


def pytest_sessionstart(session) -> None:
    """In CI the real data in ../shared is always there: a missing folder fails the run instead of skipping
    every acceptance suite."""
    if in_ci() and not SHARED.is_dir():
        pytest.exit(f"CI=true but {SHARED} is missing: the acceptance suites on real data cannot run", returncode=3)


def shared_worlds() -> list[Path]:
    if not SHARED_WORLDS.is_dir():
        return []
    return sorted(p for p in SHARED_WORLDS.iterdir() if (p / "world.yaml").exists())


def world_params():
    """pytest params over the shared worlds; a single skipped param when the folder is absent."""
    worlds = shared_worlds()
    if not worlds:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures/worlds not present"))]
    return [pytest.param(w, id=w.name) for w in worlds]


def expected_check(world: Path, number: int) -> str | None:
    """The status expected.yaml asserts for check `number`, or None when it asserts none."""
    import yaml

    path = world / "expected.yaml"
    expected = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    return ((expected or {}).get("checks") or {}).get(number)


def check_on_world(world: Path, module, *evidence):
    """Run one check module on a world's snapshot; `evidence` are further modules allowed to ask for evidence."""
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World
    from checks.context import Context
    from checks.registry import rules_of

    snap = snapshot_from_world(World.load(world), rules=rules_of(module, *evidence))
    return module.check(Context(snap))


def assert_check_agrees(world: Path, module, *evidence) -> None:
    """The module's status on `world` equals expected.yaml's; skipped where expected.yaml asserts nothing."""
    expected = expected_check(world, module.NUMBER)
    if expected is None:
        pytest.skip(f"check {module.NUMBER} is not asserted in {world.name}")
    result = check_on_world(world, module, *evidence)
    assert result.status.value == expected, result.reason


def shared_files(folder: Path, pattern: str) -> list:
    """pytest params over the files of a ../shared folder; without the folder, one param of None
    (see `present`)."""
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    return [pytest.param(f, id=str(f.relative_to(folder))) for f in files] or [pytest.param(None, id="missing")]


def present(path: Path | None, folder: Path) -> Path:
    """`path`, or, when ../shared is absent, a skip; in CI (CI=true), where it always exists, a failure."""
    if path is None:
        why = f"{folder} not present"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    return path


# --- databases: each store test runs on SQLite and on a real PostgreSQL server ----------------------


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of the test run's own; skipped where none can run, but never in CI."""
    from .databases import PostgresServer, unavailable

    reason = unavailable()
    if reason:
        if in_ci():
            pytest.fail(f"the PostgreSQL tests must run in CI, but {reason}")
        pytest.skip(f"PostgreSQL store tests skipped: {reason}")
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """A new, empty database of each engine, as SIGNOFF_BOT_DB names it: a file path or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "bot.db")
    return request.getfixturevalue("postgres").new_database()

