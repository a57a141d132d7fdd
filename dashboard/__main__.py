"""`python -m dashboard [streamlit options]`: serve dashboard/app.py, with its libraries imported up front.

The same server as `streamlit run dashboard/app.py [options]`, except that pandas, pyarrow, plotly and core.privacy
are imported, and their first-use work done (plotly's template, pyarrow's kernels, Streamlit's one-off REPL check),
before the server listens. Streamlit runs nothing until a browser connects, so otherwise the first visitor waits for
that work: ~1 s of a chart page's 1.8 s script on 2 cores (benchmarks/cold_load.py, benchmarks/RESULTS.md).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"


def preload() -> float:
    """Import what every page needs and run the first-use paths once; returns the seconds it took.

    Each step below was measured on a cold first visit (py-spy on the server, 2 cores, shipped runs).
    """
    t0 = time.perf_counter()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    # Before the server runs, every st.cache_data function warns (at import and at first call) that it keeps its
    # cache in memory, which is what the server does too: 18 lines of noise at start-up, not shown.
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    try:
        _preload()
    finally:
        cache_log.setLevel(level)
    return time.perf_counter() - t0


def _preload() -> None:
    import gc

    import pandas as pd
    import plotly.graph_objects as go
    import pyarrow  # noqa: F401 (st.dataframe serialises through it)
    import streamlit.elements.plotly_chart  # noqa: F401
    from plotly.subplots import make_subplots

    import core.privacy  # noqa: F401 (scipy, autodp: Launch and Calculator)
    import dashboard.charts  # noqa: F401
    import dashboard.loading  # noqa: F401
    import dashboard.privacy_math  # noqa: F401
    import dashboard.widgets  # noqa: F401

    # the first boolean filter of a frame with (pyarrow-backed) string columns loads pyarrow's kernels (~0.2 s)
    frame = pd.DataFrame({"method": ["a", "b"], "value": [1.0, 2.0]})
    frame = frame[frame["method"] == "a"].sort_values("value")
    # plotly imports its validators, builds the pages' template (~0.6 s) and loads narwhals to read pandas
    # columns (~0.2 s) on first use; subplots (Privacy-utility's two panels) import the layout's grid and annotations
    figure = make_subplots(rows=1, cols=2, subplot_titles=("a", "b"))
    figure.add_trace(go.Scatter(x=frame["value"], y=frame["value"], customdata=frame[["method"]].to_numpy(),
                                mode="lines+markers", line=dict(dash="dash"), marker=dict(size=9)), row=1, col=2)
    figure.update_layout(**dashboard.charts.LAYOUT).to_json()
    # Streamlit's first element checks once per process whether it runs in a REPL by walking inspect.stack(),
    # which reads the source of every frame (~0.25 s); a server started here never is one
    import streamlit.delta_generator

    streamlit.delta_generator._use_warning_has_been_displayed = True
    # every page starts by reading the runs (config, status, privacy, metrics: ~0.05 s for the shipped ones); the
    # records are cached by file signature, so a run that changes later is read again
    dashboard.loading.finished_frame()
    # Streamlit runs gc.collect(2) after every script run; frozen, the libraries above are not traversed (~0.2 s)
    gc.collect()
    gc.freeze()


def main(argv: list[str]) -> None:
    from streamlit.web import cli

    seconds = preload()
    print(f"dashboard: libraries imported in {seconds:.1f} s; starting streamlit", flush=True)
    sys.argv = ["streamlit", "run", str(APP), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
