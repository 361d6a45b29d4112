"""The tree passes ruff's pyflakes checks and has no syntax error (pyproject.toml's [tool.ruff]), and the
checks package type-checks under mypy --strict ([tool.mypy]): an unused import, an undefined name or a None
read as a string fails the test run, not a later reader."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    # the environment's own ruff first: a venv's bin/ need not be on PATH (`.venv/bin/pytest`)
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        why = "ruff is not installed (pip install -e '.[test]' installs it)"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    out = subprocess.run([ruff, "check", "--output-format", "concise", "--no-cache", "checks", "app", "bench", "tests"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_on_checks_finds_nothing():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        why = "mypy is not installed (pip install -e '.[test]' installs it)"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    # (the files and the strictness are pyproject.toml's; no cache: a stale one could hide an error)
    out = subprocess.run([mypy, "--no-incremental", "--cache-dir", os.devnull], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
