"""Export: any table as CSV, and a run's report as one self-contained HTML file."""

import pandas as pd
import streamlit as st

from core.config import preset_value
from dashboard import loading, report, tables, widgets, wording

st.title("Export")

df = loading.runs_frame()
if df.empty:
    widgets.no_runs("runs")
    st.stop()
finished = loading.finished_frame(df)
records = {r["run_id"]: r for r in df.to_dict("records")}

st.subheader("Tables as CSV")
TABLES = ["all runs", "headline comparison", "phrases of a run", "completions of a run",
          "privacy events of a run", "progress of a run"]
which = st.selectbox("Table", TABLES, key="export_table")
table = None
name = which.replace(" ", "_")
if which == "all runs":  # in the pages' words: "shipped" / "made here", the varied settings as text
    table = df.drop(columns=["teachers_per_user"], errors="ignore").assign(
        source=df["source"].map(wording.SOURCE_NAMES).fillna(df["source"]),
        varied=df["varied"].map(lambda v: ", ".join(v) if isinstance(v, tuple) else v))
elif which == "headline comparison":
    # one preset and, by default, its lowest seed, as the Overview and REPORT.md: runs compare only within a
    # preset, and another seed is another user split and base model
    preset = widgets.preset_picker(finished, key="export_preset") if not finished.empty else None
    pool = widgets.seed_picker(widgets.setup_picker(finished[finished["preset"] == preset], key="export_setup"),
                               key="export_seed") if preset else finished
    # the shipped runs unless the reader puts the runs made here in their place, as on the Overview (the toggle
    # is shared between pages)
    pool = tables.made_here_or_shipped(pool, key="export_made_here")
    table = tables.headline_table(pool, include_variants=True)
    name = f"headline_{preset}" if preset else name
    if copies_note := tables.replaced_copies_note(pool, table):
        st.info(copies_note, icon=":material/content_copy:")
    if seed_note := tables.seed_mix_note(table):
        st.warning(seed_note, icon=":material/warning:")
    if shipped_note := tables.shipped_copies_note(pool, table):
        st.info(shipped_note, icon=":material/content_copy:")
else:
    # open on the newest run that has this table (a synthetic-data run has no phrases; its completions are samples)
    has = {"phrases of a run": "has_phrases", "completions of a run": "has_completions",
           "privacy events of a run": "has_privacy"}.get(which)
    first = next((i for i, r in records.items() if not has or r.get(has)), next(iter(records)))
    run_id = st.selectbox("Run", list(records), index=list(records).index(first),
                          key=f"export_table_run_{which.split(' ')[0]}",  # a choice per table, each opening as above
                          format_func=lambda i: wording.run_option_label(records[i]))
    run = loading.get_run(run_id)
    name = f"{run_id}_{which.split(' ')[0]}"
    if which == "phrases of a run":
        table = pd.DataFrame(loading.read_shown(run, "phrases"))
    elif which == "completions of a run":
        table = pd.DataFrame(loading.read_shown(run, "completions"))
    elif which == "privacy events of a run":
        table = pd.DataFrame((loading.read_shown(run, "privacy") or {}).get("events") or [])
    else:
        table = pd.DataFrame(loading.read_shown(run, "progress"))
if table is None or table.empty:
    st.info("This table is empty.")
else:
    st.dataframe(table.head(200), hide_index=True, width="stretch", placeholder="")  # a missing value is blank
    st.caption(f"{len(table):,} rows (the preview shows up to 200).")
    st.download_button(f"Download {which} (CSV)", widgets.csv_bytes(table), file_name=f"{name}.csv", mime="text/csv",
                       key="export_csv", icon=":material/download:", on_click="ignore")

st.subheader("Run report (HTML)")
if finished.empty:
    st.info("Reports are made from finished runs; none yet.")
    st.stop()
done = {r["run_id"]: r for r in finished.to_dict("records")}
# open on a text-generation run, SeqPATE at its preset's defaults and default ε where there is one, of the preset
# the other pages show (the one last chosen on any page, else the one with most runs)
shown_preset = st.session_state.get(widgets.LAST_PRESET) or loading.main_preset(finished)
# the copy of a config the other pages show (tiny's SeqPATE at ε 3 is in four sweep plans, and a report on another
# copy gave PPL 909.46 where the Overview says 909.34)
shown = set(tables.distinct_configs(tables.shown_pool(finished, tables.made_here_in_place()))["run_id"])
text_runs = [i for i, r in done.items() if not wording.is_synth_method(r["method"]) and i in shown]
text_runs = [i for i in text_runs if done[i]["preset"] == shown_preset] or text_runs
# ... and of the data and base model they show (loading.setup_label): chitchat's unless another was chosen
shown_setup = st.session_state.get(widgets.LAST_SETUP) or "chitchat"
text_runs = [i for i in text_runs if done[i]["setup"] == shown_setup] or text_runs
seqpate = [i for i in text_runs if done[i]["method"] == "seqpate" and not done[i]["variant"]
           and done[i]["epsilon_target"] == preset_value(done[i]["preset"], "privacy", "epsilon")]
# the lowest seed within the preset
default_run = loading.lowest_seed_first(seqpate or text_runs or list(done), done)[0]
run_id = st.selectbox("Run", list(done), index=list(done).index(default_run), key="export_report_run",
                      format_func=lambda i: wording.run_option_label(done[i]))
n_completions = st.slider("Completions to include", 0, 50, 10, key="export_report_n")
record = done[run_id]
run = loading.get_run(run_id)
phrases = [p["phrase"] for p in loading.read_shown(run, "phrases")] if record["has_phrases"] else []
def make_report() -> bytes:
    """Built only when the button is clicked (plotly inlined makes it several MB)."""
    chart_runs = report.chart_runs(finished[finished["preset"] == record["preset"]], run_id,
                                   tables.made_here_in_place())
    figures = report.report_figures(record, chart_runs, loading.read_shown(run, "progress"))
    metrics = loading.read_shown(run, "metrics")
    exposure = tables.exposure_table(metrics, loading.read_shown(run, "phrases")) if record["has_phrases"] else None
    document = report.build_report_html(record, loading.run_config_dict(run), loading.read_shown(run, "privacy"),
                                        metrics, loading.read_shown(run, "completions"), phrases, figures,
                                        n_completions=n_completions, statement_md=run.read_text("statement.md"),
                                        exposure=exposure)
    return document.encode("utf-8")


st.caption("One self-contained HTML file (plotly inlined, opens offline): the privacy guarantee, the run's privacy "
           "statement (what its ε covers and what it releases outside it) and its noise events, metrics (with the "
           "canary exposure of a run with canaries), a BLEU-4 vs ε chart with this run among its preset's runs at "
           "their defaults (text-generation runs; a synthetic-data run's report gives its classifier accuracy, "
           "separability and n-gram ratios instead, and its synthetic samples in place of completions), training "
           "progress, completions, the full config (the fields its method never reads set apart). "
           + wording.PHRASE_NOTE)
st.download_button("Download report (HTML)", make_report, file_name=f"{run_id}_report.html", mime="text/html",
                   key="export_report", icon=":material/description:", type="primary", on_click="ignore")
