"""A live `python -m dashboard` server (the README's command) and Debian's chromium driven by playwright's sync API.

Never runs `playwright install`: it uses /usr/bin/chromium (apt-get install -y chromium). Without it the tests
skip, unless SEQPATE_REQUIRE_BROWSER=1, where they fail.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("SEQPATE_CHROMIUM", "/usr/bin/chromium"))
for _path in (ROOT / "tests" / "dashboard", Path(__file__).resolve().parent):  # fake_runs, browser_helpers
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from browser_helpers import ARTIFACTS, CHROMIUM_ARGS  # noqa: E402


def _require_browser() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing (apt-get install -y chromium; never `playwright install`)"
    if os.environ.get("SEQPATE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " and SEQPATE_REQUIRE_BROWSER=1")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cache_dir(base: Path) -> Path:
    choice = os.environ.get("SEQPATE_E2E_CACHE", "")
    if choice == "fresh":
        return base / "cache"
    return Path(choice) if choice else ARTIFACTS / "e2e-cache"


@pytest.fixture(scope="session")
def e2e_dirs(tmp_path_factory) -> dict[str, Path]:
    """Live runs and cached runs (a few fake finished runs) in a temporary folder; the engine's artefact cache.

    The artefact cache (trained public base model, pseudo data: keyed by their config hash, so reuse is safe) is
    test-artifacts/e2e-cache, kept between sessions so that a second e2e session skips base-model training; it is
    never the developer's .cache. SEQPATE_E2E_CACHE names another folder; SEQPATE_E2E_CACHE=fresh uses a new
    temporary one (the slowest, fully cold run).
    """
    from fake_runs import phrase_rows, write_run

    base = tmp_path_factory.mktemp("e2e")
    dirs = {"live": base / "runs", "cached": base / "cached_runs",
            "cache": _cache_dir(base)}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    write_run(dirs["cached"], "demo-pub-gpt", "pub-gpt", bleu4=0.3, ppl=900.0)
    write_run(dirs["cached"], "demo-pri-gpt", "pri-gpt", bleu4=1.2, ppl=400.0, r_name=0.2)
    write_run(dirs["cached"], "demo-seqpate-eps1", "seqpate", epsilon=1.0, bleu4=0.5, ppl=800.0,
              phrases=phrase_rows(), teachers_per_user={"1": 120, "2": 40, "3": 20, ">3": 10, "mean": 1.6})
    return dirs


@pytest.fixture(scope="session")
def server(e2e_dirs):
    """Base URL of a headless streamlit server on a free port (stopped at the end of the session)."""
    _require_browser()
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    env = dict(os.environ, SEQPATE_RUNS_DIR=str(e2e_dirs["live"]), SEQPATE_CACHED_RUNS_DIR=str(e2e_dirs["cached"]),
               SEQPATE_CACHE=str(e2e_dirs["cache"]), PYTHONUNBUFFERED="1")
    log = open(ARTIFACTS / "e2e-streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.close()
            pytest.fail(f"streamlit did not become healthy; see {ARTIFACTS / 'e2e-streamlit.log'}")
        time.sleep(0.3)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def browser_page(server):
    """One chromium page (1400x1000) for the whole session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        yield page
        context.close()
        browser.close()
