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
    for module in ("pandas", "pyarrow", "plotly.graph_objects", "core.privacy", "dashboard.common"):
        assert module in sys.modules
