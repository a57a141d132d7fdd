"""Streamlit dashboard of the SeqPATE bench: `streamlit run dashboard/app.py`.

Pages (dashboard/views/) are thin: they read runs through core.runs via dashboard.loading (one record per run,
cached reads of its files) and render them. Beside it: wording (method names, number formats, the plain-language
privacy text), widgets (pickers that follow the reader across pages, number boxes), privacy_math (the what-if
panels' noise and ε, core.privacy imported lazily), values (fields of run files, a garbled one counting as absent),
estimate (elapsed and remaining time of a running run), launch_settings (the Launch page's settings, URL and
configs), tables and charts (what the result pages show), report (a run's self-contained HTML report), diagram
(SeqPATE's data flow as a graph).
Nothing here imports torch (tests/dashboard/test_tools_pages.py and test_synthetic_page.py check it), so a cold load stays fast.
"""
