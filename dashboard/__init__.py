"""Streamlit dashboard of the SeqPATE bench: `streamlit run dashboard/app.py`.

Pages (dashboard/views/) are thin: they read runs through core.runs via dashboard.common and render them.
Beside common: values (fields of run files, a garbled one counting as absent), estimate (elapsed and remaining
time of a running run), launch_settings (the Launch page's settings, URL and configs), charts (plotly figures),
report (a run's self-contained HTML report), diagram (SeqPATE's data flow as a graph).
Nothing here imports torch (tests/dashboard/test_tools_pages.py and test_synthetic_page.py check it), so a cold load stays fast.
"""
