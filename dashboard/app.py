"""SeqPATE bench dashboard: `streamlit run dashboard/app.py` (from the repository root).

Sets the page config and the navigation; every page lives in dashboard/views/ and reads runs only through
core.runs (via dashboard/loading.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` puts dashboard/ on the path, not the repo root
    sys.path.insert(0, str(_ROOT))

_VIEWS = Path(__file__).resolve().parent / "views"

# A local SVG (sent inline as a data URI): a material-icon page_icon makes every browser fetch it from
# fonts.gstatic.com, and this dashboard should contact nothing beyond its own server.
st.set_page_config(page_title="SeqPATE bench", page_icon=Path(__file__).resolve().parent / "favicon.svg",
                   layout="wide")

PAGES = {
    "Results": [
        st.Page(_VIEWS / "overview.py", title="Overview", icon=":material/home:", default=True),
        st.Page(_VIEWS / "privacy_utility.py", title="Privacy-utility", icon=":material/show_chart:",
                url_path="privacy-utility"),
        st.Page(_VIEWS / "phrases.py", title="Phrases", icon=":material/key:", url_path="phrases"),
        st.Page(_VIEWS / "completions.py", title="Completions", icon=":material/chat:", url_path="completions"),
        st.Page(_VIEWS / "synthetic.py", title="Synthetic data", icon=":material/dataset:", url_path="synthetic"),
    ],
    "Experiments": [
        st.Page(_VIEWS / "launch.py", title="Launch", icon=":material/rocket_launch:", url_path="launch"),
        st.Page(_VIEWS / "runs.py", title="Runs", icon=":material/list:", url_path="runs"),
    ],
    "Tools": [
        st.Page(_VIEWS / "calculator.py", title="Calculator", icon=":material/calculate:", url_path="calculator"),
        st.Page(_VIEWS / "export.py", title="Export", icon=":material/download:", url_path="export"),
    ],
}

from dashboard.privacy_math import warm_privacy_import  # noqa: E402 needs the path above

# A visible keyboard focus everywhere: Streamlit marks a focused sidebar link with a 1.1:1 tint only, and a text box
# with a 1 px border colour, which a keyboard user loses on a projector.
FOCUS_STYLE = "<style>:focus-visible{outline:3px solid #2b6cb0 !important;outline-offset:2px}</style>"

try:
    page = st.navigation(PAGES)
    st.html(FOCUS_STYLE)
    # each page its own browser title: a screen reader announces the change, and tabs tell the pages apart
    st.set_page_config(page_title=f"{page.title} · SeqPATE bench")
    page.run()
finally:  # also after a page that stops early (st.stop raises through here)
    # After the page: an import thread running beside the first page's script would compete with it for the GIL
    # (measured with the shipped runs: a cold Overview load took 3.8 s with the thread started before the page, 2.7 s
    # after).
    warm_privacy_import()
