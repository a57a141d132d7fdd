"""Local-only serving, no uploads, no path traversal from user input, no private text in logs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.runs.registry import resolve_run
from core.runs.store import RunNotFoundError
from tests.dashboard.apptest_helpers import open_page, texts
from tests.dashboard.fake_runs import phrase_rows, write_run
from tests.reliability.conftest import REPO_ROOT, cli, make_roots, one_line_error, wait_for

CONFIG_TOML = REPO_ROOT / ".streamlit" / "config.toml"


def test_streamlit_config_serves_on_localhost_only() -> None:
    config = tomllib.loads(CONFIG_TOML.read_text())
    server = config["server"]
    assert server["address"] == "127.0.0.1" and server["headless"] is True
    assert config["browser"]["serverAddress"] == "127.0.0.1"
    assert 0 < server["maxUploadSize"] <= 50  # MiB
    # Streamlit's own protections stay on (they default to on; turning them off would show up here).
    assert server.get("enableXsrfProtection", True) is True and server.get("enableCORS", True) is True


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on this TCP port (Linux /proc/net/tcp and tcp6)."""
    found = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads listening sockets from /proc (Linux)")
def test_the_dashboard_listens_on_127_0_0_1_only(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SEQPATE_RUNS_DIR": str(tmp_path / "runs"), "SEQPATE_CACHED_RUNS_DIR": str(tmp_path / "c")}
    # Started from the repository root like the README says, so .streamlit/config.toml applies; only the port is
    # chosen here (a free one).
    server = subprocess.Popen([sys.executable, "-m", "dashboard", "--server.port", str(port)],
                              cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: bool(_listening_addresses(port)), 60), "streamlit did not start listening"
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1 (little-endian hex); no 0.0.0.0, no ::
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_no_page_takes_uploads_or_file_paths() -> None:
    """User data reaches the engine only through the command line (whose corpus loaders are tested and fuzzed);
    a page with an uploader or a path field would need its own size and parsing tests, so none may appear
    unnoticed."""
    for page in sorted((REPO_ROOT / "dashboard").rglob("*.py")):
        source = page.read_text()
        assert "file_uploader" not in source, page
        assert not re.search(r"text_input\([^)]*(path|corpus|folder|dir)", source, re.IGNORECASE), page


# ----------------------------------------------------------------------------------------------------------------
# Path traversal
# ----------------------------------------------------------------------------------------------------------------

MARKER = "PLANTED-OUTSIDE-7f3a"
PLANTED_DIR = "planted-q9"


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A live root with one good run, and a well-formed run folder OUTSIDE the roots holding a marker."""
    roots = make_roots(tmp_path / "roots")
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(roots["live"]))
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(roots["cached"]))
    monkeypatch.setenv("SEQPATE_CACHE", str(roots["cache"]))
    write_run(roots["live"], "inside", "seqpate", phrases=phrase_rows())
    planted = write_run(tmp_path / PLANTED_DIR, "outside", "seqpate", ppl=9999.0,
                        completions=[f"{MARKER} completion"] * 6,
                        phrases=[{"phrase": MARKER, "occurrences": 1, "users": 1, "teachers": 1, "epsilon": 1.0}])
    return {**roots, "planted": planted.path}


def _traversals(planted: Path, live: Path) -> list[str]:
    return [
        f"../{PLANTED_DIR}/outside", f"../../{PLANTED_DIR}/outside", os.path.relpath(planted, live), str(planted),
        "..", ".", "/etc", "../../../../etc/passwd", f"inside/../../{PLANTED_DIR}/outside", "outside", "%2e%2e%2fetc",
        "inside\0", "~/outside",
    ]


def test_registry_lookup_by_id_never_leaves_the_roots(outside) -> None:
    assert resolve_run("inside", allow_paths=False).path == outside["live"] / "inside"
    for text in _traversals(outside["planted"], outside["live"]):
        with pytest.raises(RunNotFoundError):
            resolve_run(text, allow_paths=False)  # what the dashboard calls (loading.get_run)


def test_runs_show_refuses_paths_that_are_not_runs(outside) -> None:
    env = {**os.environ}
    for text in ("../../../../etc", "/etc", "/etc/passwd", "..", "nosuch", "../nosuch"):
        out = cli("runs", "show", text, env=env)
        one_line_error(out, "not a run folder" if "/" in text or text == ".." else "no run named")
        assert out.stdout == ""


PAGES = ("overview", "privacy_utility", "phrases", "completions", "runs", "export", "launch", "calculator")


@pytest.mark.parametrize("view", PAGES)  # not "page": pytest-playwright owns that name
def test_dashboard_query_parameters_never_open_paths(outside, view: str) -> None:
    rel = os.path.relpath(outside["planted"], outside["live"])
    query = {"run": rel, "run_id": str(outside["planted"]), "id": "../../etc", "path": "/etc/passwd"}
    at = open_page(None if view == "overview" else view, query)
    assert not at.exception, at.exception
    shown = texts(at) + "".join(df.value.to_string() for df in at.dataframe)
    shown += "".join(str(s.options) for s in at.selectbox) + "".join(str(m.options) for m in at.multiselect)
    assert MARKER not in shown and PLANTED_DIR not in shown and "root:" not in shown
    if view in ("phrases", "runs"):
        assert "inside" in shown  # the page did render the run it may read


def test_dashboard_run_lookup_refuses_ids_that_are_paths(outside) -> None:
    from dashboard import loading

    for text in _traversals(outside["planted"], outside["live"]):
        with pytest.raises(RunNotFoundError):
            loading.get_run(text)


# ----------------------------------------------------------------------------------------------------------------
# Private text never goes to logs
# ----------------------------------------------------------------------------------------------------------------

LOG_FILES = ("progress.jsonl", "log.txt", "status.json", "traceback.txt", "config.json", "privacy.json",
             "metrics.json")


def test_no_private_sentence_appears_in_any_log_of_real_jobs(three_jobs) -> None:
    _, runs, private = three_jobs
    assert len(private) >= 150
    # A sentence, and its continuation after the 4-word prefix (what a completion would repeat).
    texts_ = private | {" ".join(s.split()[4:]) for s in private if len(s.split()) >= 9}
    # JSON files escape quotes and non-ASCII letters: look for that spelling too.
    needles = texts_ | {json.dumps(s)[1:-1] for s in texts_}
    for method, run in runs.items():
        logs = {name: (run.path / name).read_text(errors="replace") for name in LOG_FILES
                if (run.path / name).is_file()}
        assert {"progress.jsonl", "log.txt", "status.json"} <= set(logs), method
        assert len(logs["progress.jsonl"].splitlines()) >= 5 and "launching" in logs["log.txt"]
        for name, text in logs.items():
            leaked = [s for s in needles if s in text]
            assert leaked == [], (method, name, leaked[:3])
        # Positive control: the same search finds the private test text that completions.jsonl quotes by design.
        completions = (run.path / "completions.jsonl").read_text()
        assert any(s in completions for s in needles), method
