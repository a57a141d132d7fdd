"""Helpers of the dashboard tests: run a page with AppTest and read what it shows."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "dashboard" / "app.py"


def open_page(page: str | None = None, query: dict | None = None) -> AppTest:
    """Run the whole app (navigation included), then switch to views/<page>.py; returns the AppTest."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    if query and page is None:
        at.query_params.update(query)
    at.run()
    if page is not None:
        if query:
            at.query_params.update(query)
        at.switch_page(f"views/{page}.py").run()
    return at


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Switch the lazy tabs with this key (dashboard.widgets.lazy_tabs) to the tab called label, and rerun."""
    at.session_state[key] = label
    return at.run()


def texts(at: AppTest) -> str:
    """Every markdown, caption, info, success, warning and error text of the page, joined."""
    parts = []
    for kind in ("markdown", "caption", "info", "success", "warning", "error", "title", "subheader"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(e.proto.body) for e in at.get("html")]
    return "\n".join(parts)


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _decode(obj):
    """Plotly 6 writes numeric arrays as {"dtype", "bdata"} (base64); turn them back into lists."""
    if isinstance(obj, dict):
        if set(obj) >= {"dtype", "bdata"}:
            import base64

            import numpy as np

            array = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            if "shape" in obj:
                array = array.reshape([int(n) for n in str(obj["shape"]).split(",")])
            return array.tolist()
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    return obj


def plotly_specs(at: AppTest) -> list[dict]:
    """The JSON specs of every plotly chart on the page (AppTest shows them as UnknownElement)."""
    import json

    return [_decode(json.loads(element.proto.spec)) for element in at.get("plotly_chart")]
