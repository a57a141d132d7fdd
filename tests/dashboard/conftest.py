"""Dashboard tests: AppTest against fake runs in temporary live and cached folders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from apptest_helpers import open_page  # noqa: E402


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Empty live and cached run folders, set through $SEQPATE_RUNS_DIR and $SEQPATE_CACHED_RUNS_DIR."""
    live, cached = tmp_path / "runs", tmp_path / "cached_runs"
    live.mkdir()
    cached.mkdir()
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(live))
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(cached))
    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path / "cache"))
    return {"live": live, "cached": cached}


@pytest.fixture
def app_page():
    """open_page as a fixture (not named `page`: pytest-playwright owns that name)."""
    return open_page
