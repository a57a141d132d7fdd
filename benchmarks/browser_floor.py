"""The browser's share of a cold load: a page with the dashboard's kinds of elements and NO Python work.

Serves a throwaway Streamlit page (a title, optionally a selectbox, a toggle and a radio, N plotly charts in the
dashboard's layout, M dataframes) and times a first visit in a fresh chromium profile until the page has rendered
(the same criterion as cold_load.py). The server has served the page once before, so the Python side is warm: what
is left is loading and running Streamlit's frontend and its lazily loaded plotly (4.7 MB) and data-grid chunks
on this machine. A dashboard page with the same elements cannot load faster than this.

    python benchmarks/browser_floor.py                          # the Privacy-utility mix: widgets, 3 charts, 3 frames
    python benchmarks/browser_floor.py --charts 0 --frames 0    # Streamlit alone
    python benchmarks/browser_floor.py --library vega           # the same charts in Streamlit's Vega-Lite
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cold_load import CHARTS_DRAWN, CHROMIUM_ARGS, READY, ROOT, start_server

PAGE = """
import sys
sys.path.insert(0, {root!r})
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from dashboard.charts import LAYOUT

st.title("Floor")
if {widgets}:
    st.selectbox("Preset", ["tiny", "quick"], key="preset")
    st.toggle("Include experiment variants", key="variants")
points = pd.DataFrame({{"epsilon": [0.5, 1, 3, 8], "BLEU-4": [1, 2, 3, 4]}})
for i in range({charts}):
    if {library!r} == "plotly":
        figure = go.Figure(go.Scatter(x=points["epsilon"], y=points["BLEU-4"], mode="lines+markers"), layout=LAYOUT)
        st.plotly_chart(figure.update_xaxes(type="log"), key=f"chart{{i}}")
    else:  # the same line in Streamlit's built-in Vega-Lite
        st.vega_lite_chart(points, {{"mark": {{"type": "line", "point": True, "tooltip": True}},
                                     "encoding": {{"x": {{"field": "epsilon", "type": "quantitative",
                                                         "scale": {{"type": "log"}}}},
                                                  "y": {{"field": "BLEU-4", "type": "quantitative"}}}}}},
                           key=f"chart{{i}}")
for i in range({frames}):
    st.dataframe(pd.DataFrame({{"method": ["a", "b"], "PPL": [1.0, 2.0]}}), hide_index=True)
if {widgets}:
    st.radio("Metric", ["bleu4", "ppl"], horizontal=True, key="metric")
"""


def first_visit(browser, url: str) -> float:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("[data-testid=stMain] h1", timeout=60_000)
    page.wait_for_selector(READY, timeout=60_000)
    page.wait_for_function(CHARTS_DRAWN, timeout=60_000)
    seconds = time.perf_counter() - t0
    context.close()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--charts", type=int, default=3)
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--no-widgets", action="store_true")
    parser.add_argument("--library", choices=["plotly", "vega"], default="plotly")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="seqpate-floor-"))
    app = work / "floor.py"
    app.write_text(PAGE.format(root=str(ROOT), widgets=not args.no_widgets, charts=args.charts, frames=args.frames,
                                library=args.library))
    env = dict(os.environ)
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        for _ in range(args.repeat):
            proc, base, _ = start_server(env, work / "streamlit.log", plain=True, app=app)
            try:
                first_visit(browser, base)  # warms the server's Python (imports, the page's first run)
                times.append(first_visit(browser, base))  # a fresh browser profile: the cold browser side
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        browser.close()
    widgets = "no widgets" if args.no_widgets else "selectbox, toggle, radio"
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"page: title, {widgets}, {args.charts} {args.library} chart(s), {args.frames} dataframe(s); no Python work")
    print(f"fresh-profile load until rendered: median {statistics.median(times):.2f} s "
          f"({', '.join(f'{t:.2f}' for t in times)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
