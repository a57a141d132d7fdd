"""Streamlit dashboard of the SeqPATE bench: `streamlit run dashboard/app.py`.

Pages (dashboard/views/) are thin: they read runs through core.runs via dashboard.common and render them.
Nothing here imports torch (tests/dashboard/test_imports.py checks it), so a cold load stays fast.
"""
