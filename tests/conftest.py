"""Shared fixtures: where the shared real-PR worlds are (when the folder exists)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
OWN_WORLDS = Path(__file__).resolve().parent / "worlds"


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
