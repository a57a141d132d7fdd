"""`python -m dashboard [streamlit options]`: serve dashboard/app.py, with its libraries imported up front.

The same server as `streamlit run dashboard/app.py [options]`, except that pandas, pyarrow, plotly and core.privacy
are imported (and plotly's lazy modules touched) before the server listens. Streamlit runs nothing until a browser
connects, so otherwise the first visitor waits for those imports (~1 s on 2 cores; benchmarks/cold_load.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"


def preload() -> float:
    """Import what every page needs; returns the seconds it took."""
    t0 = time.perf_counter()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import pandas  # noqa: F401
    import plotly.graph_objects as go
    import pyarrow  # noqa: F401 (st.dataframe serialises through it)
    import streamlit.elements.plotly_chart  # noqa: F401

    import core.privacy  # noqa: F401 (scipy, autodp: Launch and Calculator)
    import dashboard.charts  # noqa: F401
    import dashboard.common  # noqa: F401

    go.Figure(go.Scatter(x=[0], y=[0])).to_json()  # plotly imports its validators on first use
    return time.perf_counter() - t0


def main(argv: list[str]) -> None:
    from streamlit.web import cli

    seconds = preload()
    print(f"dashboard: libraries imported in {seconds:.1f} s; starting streamlit", flush=True)
    sys.argv = ["streamlit", "run", str(APP), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
