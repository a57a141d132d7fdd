"""Fixtures for the run-directory tests: temporary live/cached roots and small job scripts."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.runs import jobs
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A live and a cached root under tmp_path; the live one is also $SEQPATE_RUNS_DIR."""
    live, cached = tmp_path / "runs", tmp_path / "cached_runs"
    live.mkdir()
    cached.mkdir()
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(live))
    return {"live": live, "cached": cached}


@pytest.fixture
def job_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """Make `launch` run a small Python script (given as a body using `run`, `root`, `jobs`) instead of the engine."""

    def make(body: str) -> Path:
        script = tmp_path / f"job_{time.monotonic_ns()}.py"
        header = textwrap.dedent(
            """
            import sys, time
            from pathlib import Path
            from core.runs import RunDir, jobs
            run = RunDir(sys.argv[1])
            root = run.path.parent
            """
        )
        script.write_text(header + textwrap.dedent(body))
        monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
        return script

    return make


@pytest.fixture
def waiter() -> Callable[..., bool]:
    return wait_for


@pytest.fixture
def python() -> str:
    return sys.executable
