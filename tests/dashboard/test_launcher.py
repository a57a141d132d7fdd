"""`python -m dashboard`: streamlit's own `run` command on dashboard/app.py, options passed through unchanged."""

from __future__ import annotations

import sys

import pytest

import dashboard.__main__ as launcher


def test_launcher_runs_the_app_with_the_options_given(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr("streamlit.web.cli.main", lambda: seen.append(list(sys.argv)))
    monkeypatch.setattr(sys, "argv", ["python -m dashboard"])
    launcher.main(["--server.port", "8600", "--server.headless", "true"])
    assert seen == [["streamlit", "run", str(launcher.APP), "--server.port", "8600", "--server.headless", "true"]]
    assert launcher.APP.name == "app.py" and launcher.APP.exists()
    for module in ("pandas", "pyarrow", "plotly.graph_objects", "core.privacy", "dashboard.loading",
                   "dashboard.privacy_math", "dashboard.widgets"):
        assert module in sys.modules


FIRST_USE = """
import gc, sys
import dashboard.__main__ as launcher
launcher.preload()
import pandas as pd
from dashboard import charts
before = set(sys.modules)
runs = pd.DataFrame({"method": ["seqpate", "pub-gpt"], "epsilon": [3.0, 0.0], "ppl": [280.0, 225.0],
                     "bleu4": [0.3, 0.28], "run_id": ["a", "b"]})
charts.privacy_utility_panels(runs[runs["method"] != "x"]).to_json()
print(sorted(set(sys.modules) - before))
print(gc.get_freeze_count() > 0)
"""


def test_preload_leaves_the_pages_no_first_use_imports() -> None:
    """After preload a page's chart (the dashboard's template, pandas columns) imports nothing more: the ~0.8 s
    of first-use imports happen before the server listens, not during the first visitor's page load."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True, timeout=300,
                          cwd=launcher.ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    new_modules, frozen = done.stdout.strip().splitlines()[-2:]
    assert new_modules == "[]"
    assert frozen == "True"  # the preloaded objects are out of reach of Streamlit's post-run gc.collect(2)
