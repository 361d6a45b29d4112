"""The tree passes ruff's pyflakes checks and has no syntax error (pyproject.toml's [tool.ruff]): an unused
import or an undefined name fails the test run, not a later reader."""

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
