"""Phrases: per-secret-phrase epsilon (paper Sec. 5.3, Table 6) and how users spread over teachers."""

import math

import pandas as pd
import streamlit as st

from core.config import heuristic_reason
from core.privacy.phrases import summarize_phrase_epsilons
from core.runs import store
from core.runs.values import as_str
from dashboard import charts, loading, tables, widgets, wording

st.title("Secret phrases")
st.caption("Phrases are the names private users give themselves (\"my name is X\"; a name counts wherever its word "
           "occurs in the private training sentences, by any user, so on chitchat a common first name spans many "
           "users and teachers, unlike the paper's user-specific full names) and any inserted canaries. A phrase's ε "
           "protects all its occurrences at once: for SeqPATE a phrase held by n teachers has sensitivity √2·n, so "
           "its ε grows with the teachers holding it; for DP-SGD, group privacy over the sentences that hold it "
           "(with user batches, over the batches that hold it). "
           "Its counts (occurrences, users, teachers) are themselves private statistics. " + wording.PHRASE_NOTE)

df = loading.finished_frame()
with_phrases = df[df["has_phrases"]] if not df.empty else df
if with_phrases.empty:
    widgets.no_runs("runs with a phrases.csv")
    st.stop()

records = {r["run_id"]: r for r in with_phrases.to_dict("records")}
# open on a private run (at ε = ∞ or 0 every phrase has that ε, and there is no average to show), preferably a
# SeqPATE run with the by-user partition of the paper's Table 6, of the preset the other pages show where it has one
# (the one last chosen, else the one with most runs); a run chosen in this session stays chosen
shown_preset = st.session_state.get(widgets.LAST_PRESET) or loading.main_preset(df)
private = [i for i, r in records.items() if wording.privacy_kind(r["epsilon"]) == "private"]
by_user = [i for i in private if records[i]["method"] == "seqpate" and records[i]["partition"] == "by-user"]
preferred = [ids for ids in (by_user, private, list(records)) if ids]
default_run = next((i for ids in preferred for i in ids if records[i]["preset"] == shown_preset), preferred[0][0])
run_id = widgets.linked_run_picker("Run", list(records), "phrases_run", default_run,
                                  lambda i: wording.run_option_label(records[i]), "a finished run with a phrase table")
run = loading.get_run(run_id)
chosen = records[run_id]
if heuristic_reason(chosen["method"], chosen["privacy_target"], chosen["epsilon"]):  # noise chosen from private data
    st.warning(tables.PHRASE_TARGET_HEURISTIC if chosen["privacy_target"] == "phrase-avg"
               else wording.HEURISTIC_PRIVACY.get(chosen["method"], ""), icon=":material/warning:")
phrases = pd.DataFrame(loading.read_shown(run, "phrases"))
if phrases.empty:
    st.info("This run's phrases.csv has no rows.")
    st.stop()

kinds = sorted(phrases["kind"].dropna().unique()) if "kind" in phrases else []
kind = "all"
if len(kinds) > 1:
    # Names and inserted canaries are different populations: a phrase-avg run calibrates the names' average, and
    # a canary inserted 100 times has a far larger ε; one average over both describes neither.
    kind = st.radio("Phrases", ["all", *kinds], index=1 + kinds.index("name") if "name" in kinds else 0,
                    horizontal=True, key="phrases_kind",
                    help="The summary and the table cover this kind of phrase (names or inserted canaries).")
    if kind != "all":
        phrases = phrases[phrases["kind"] == kind]


def phrase_summary(rows: pd.DataFrame) -> dict:
    """The summary REPORT.md gives of these phrases' ε (its share counts a phrase at the average even where the mean
    rounds a hair below)."""
    return summarize_phrase_epsilons([v for v in rows["epsilon"] if v is not None and not math.isnan(v)])


summary = phrase_summary(phrases)
row = widgets.wrapping_row()  # wraps on a narrow page ('share ≤ av…' was cut at 900 px)
widgets.metric(row, "phrases", f"{len(phrases):,}")
widgets.metric(row, "average ε", wording.fmt_eps(summary["avg"]))
widgets.metric(row, "min ε", wording.fmt_eps(summary["min"]))
widgets.metric(row, "max ε", wording.fmt_eps(summary["max"]))
share = summary["share_below_avg"]
widgets.metric(row, "share ≤ average", "–" if math.isnan(share) else f"{share:.0%}")
if kind == "all" and len(kinds) > 1:  # a phrase-avg run is calibrated on the names' average, not this one
    plural = {"name": "names", "canary": "canaries"}
    by_kind = ", ".join(f"{plural.get(k, k)} {wording.fmt_eps(phrase_summary(phrases[phrases['kind'] == k])['avg'])}"
                        for k in kinds)
    st.caption(f"Averaged over every kind of phrase; by kind: {by_kind}"
               + (" (this run is calibrated to an average name ε)." if chosen["privacy_target"] == "phrase-avg"
                  else "."))


TABLE_COLUMNS = {
    "phrase": st.column_config.TextColumn("phrase"),
    "occurrences": st.column_config.NumberColumn("occurrences", help="Training sentences that contain the phrase."),
    "users": st.column_config.NumberColumn("users", help="Users whose training sentences contain the phrase."),
    "teachers": st.column_config.NumberColumn("teachers", help="SeqPATE teachers whose data hold the phrase."),
    "epsilon": st.column_config.NumberColumn("ε", format="%.3g", help="The phrase's ε (∞: trained without noise)."),
    "kind": st.column_config.TextColumn("kind", help="A name from the data, or an inserted canary."),
    "inserted": st.column_config.NumberColumn("copies inserted", help="Canaries: copies put in the training data."),
    "basis": st.column_config.TextColumn("ε computed from"),
    "accountant": st.column_config.TextColumn("accountant"),
    # a tick, not the word True
    "contains_private_text": st.column_config.CheckboxColumn("private text",
                                                             help="Ticked: the phrase quotes private training data."),
    "in_completions": st.column_config.NumberColumn("in completions",
                                                    help="Names: completions of this run that contain the name."),
}


def show_table() -> None:
    """The phrases of the chosen kind, searchable and filterable by teachers and occurrences."""
    f1, f2, f3 = st.columns([3, 2, 2])
    search = f1.text_input("Search phrases", key="phrases_search", persist_state="page",
                           placeholder="e.g. a name").strip()
    has_teachers = "teachers" in phrases and phrases["teachers"].notna().any()
    max_teachers = int(phrases["teachers"].max()) if has_teachers else 0
    if max_teachers > 0:
        min_teachers = widgets.count_input(f2, "Held by at least … teachers", min_value=0, value=0,
                                      key="phrases_min_teachers", persist_state="page",
                                      help=f"up to {max_teachers:,} in this run")
    else:  # DP-SGD runs have no teachers: the phrase's basis column says which batches hold it
        min_teachers = 0
        f2.caption("No teacher counts in this run (not a SeqPATE run).")
    max_occ = int(phrases["occurrences"].fillna(0).max()) if "occurrences" in phrases and len(phrases) else 0
    min_occ = widgets.count_input(f3, "Occurring at least … times", min_value=0, value=0, key="phrases_min_occ",
                                  persist_state="page", help=f"up to {max_occ:,} in this run")
    view = phrases
    if search:
        view = view[view["phrase"].str.contains(search, case=False, regex=False)]
    if min_teachers and "teachers" in view:
        view = view[view["teachers"].fillna(0) >= min_teachers]
    if min_occ and "occurrences" in view:
        view = view[view["occurrences"].fillna(0) >= min_occ]
    st.caption(f"Showing {len(view):,} of {len(phrases):,} phrases; click a column header to sort.")
    # columns with no value for these phrases (copies inserted, for names) are left out; other gaps show blank
    shown = [col for col in view if phrases[col].notna().any()]
    st.dataframe(view, hide_index=True, width="stretch", column_order=shown, column_config=TABLE_COLUMNS,
                 placeholder="")


def show_histogram() -> None:
    """Histogram of phrase ε for the chosen run and others of its preset."""
    options = list(records)
    candidates = tables.histogram_candidates(records, run_id)
    kinds_of = {i: {r.get("kind") for r in loading.read_shown(loading.get_run(i), "phrases")} for i in candidates}
    default = tables.histogram_defaults(records, run_id, set(kinds), kinds_of)
    chosen = st.multiselect("Runs in the histogram", options, default=default,
                            key=f"phrases_hist_runs_{run_id}", persist_state="page",
                            format_func=lambda i: wording.run_option_label(records[i]))
    per_run: dict[str, tuple[str, list[float]]] = {}
    without_kind = []
    for rid in chosen:
        rows = [r for r in loading.read_shown(loading.get_run(rid), "phrases")
                if kind == "all" or r.get("kind") == kind]
        if not rows:
            without_kind.append(rid)
            continue
        per_run[rid] = (records[rid]["method"], [r["epsilon"] for r in rows if r.get("epsilon") is not None])
    if without_kind:
        st.caption(f"Not drawn (no {'' if kind == 'all' else kind + ' '}phrases in the run): "
                   f"{', '.join(without_kind)}.")
    if per_run:
        st.plotly_chart(charts.readable(charts.phrase_epsilon_histogram(per_run)), width="stretch", key="phrases_hist")
        values = [v for _, vs in per_run.values() for v in vs]
        counts = ((sum(math.isinf(v) for v in values), "∞ (no noise)"),
                  (sum(v == 0 for v in values), "0 (no private data)"))
        left_out = [f"{n} with ε = {label}" for n, label in counts if n]
        if left_out:
            st.caption(f"Left out of the log axis: {' and '.join(left_out)}.")
        # the chart leaves out a run with no finite ε > 0, and draws runs with the same phrase ε (to 6 digits) as
        # bars of equal heights side by side: both said here, so that the legend and the bars tell the same story
        by_values: dict[tuple, list[str]] = {}
        for rid, (_, vs) in per_run.items():
            by_values.setdefault(tuple(sorted(f"{v:.6g}" for v in vs if 0 < v < math.inf)), []).append(rid)
        if empty := by_values.pop((), None):
            st.caption(f"Not drawn (no phrase with a finite ε above 0): {', '.join(empty)}.")
        for ids in by_values.values():
            if len(ids) > 1:
                st.caption(f"Same phrase ε in {', '.join(ids)}: their bars stand side by side at equal heights.")
        if kind != "all":
            st.caption(f"Phrases of kind {kind} only, as chosen above.")


def show_teachers_per_user() -> None:
    """How users spread over teachers (paper Table 5), from privacy.json."""
    hist = records[run_id].get("teachers_per_user")
    if isinstance(hist, dict) and hist:
        st.plotly_chart(charts.readable(charts.teachers_per_user_figure(hist)), width="stretch", key="phrases_tpu")
        mean, partition = hist.get("mean"), records[run_id].get("partition")
        spread = ""
        if isinstance(mean, (int, float)) and mean > 1.5:
            why = {"random": "the random partition deals each sentence to any teacher, so a user's sentences "
                             "scatter over as many teachers as chance puts them in",
                   "by-user": "a by-user partition splits a user where teachers outnumber users, where the user "
                              "wrote more sentences than one teacher holds (teacher sizes are balanced), or where "
                              "the user is packed late into the room other users left"}.get(partition)
            spread = (f" Here a user sits in {mean:.2f} teachers on average" + (f": {why}" if why else "")
                      + ", so phrase epsilons grow.")
        st.caption("How many teachers hold sentences of the same user (paper Table 5): with the by-user "
                   "partition and many more users than teachers most users sit in one teacher, so a user's "
                   "phrases have small sensitivity." + spread)
    else:
        st.info("This run's privacy.json has no teachers_per_user histogram (only SeqPATE runs record it).")


def canary_setting(rid: str) -> tuple:
    """What makes two runs' canaries the same numbers: copies, seed and digits (data config)."""
    data = loading.run_config_dict(loading.get_run(rid)).get("data") or {}
    return tuple(str(data.get(k)) for k in ("canaries", "canary_seed", "canary_digits"))


def show_exposure() -> None:
    """Canary exposure (Carlini et al. 2019) of the chosen run, and of the runs of its preset and seed that inserted
    the same canaries: the attack's view beside the phrase ε."""
    table = tables.exposure_table(loading.read_shown(run, "metrics"), loading.read_shown(run, "phrases"))
    if table.empty:
        st.info("This run inserted no canaries, so it has no exposure. A run made with `--canaries 1,10,100` puts a "
                "random number into the private training data that many times and measures how far its model "
                "prefers that number to every other it could have been.")
        return
    st.dataframe(table, hide_index=True, width="stretch", placeholder="", column_config={
        "phrase ε": st.column_config.NumberColumn(format="%.3g", help="The canary's ε (phrases.csv)."),
        "exposure (bits)": st.column_config.NumberColumn(format="%.2f"),
        "most possible": st.column_config.NumberColumn(format="%.1f", help="log2 of the candidates: the model "
                                                                           "prefers the canary to every other")})
    st.caption("Exposure = log2 (candidates) − log2 (the canary's rank among every number of its digit count, by "
               "how likely the model finds the canary sentence with it). About 1 bit or less: the model does not prefer "
               "the inserted number; the most possible: it prefers it to all others. Measured on the trained model: an "
               "attack's view of what it memorised, not a guarantee (the phrase ε is one, where the run's ε is: not for ADP "
               "or a run calibrated to an average phrase ε). A low exposure shows no sign that "
               "the model memorised the canary, not why: a SeqPATE student whose teachers' answers are noise-dominated "
               "learned little from the private data at all.")
    mine = canary_setting(run_id)
    # one copy of each config, the one the other pages show (tiny's Pri-GPT with canaries is in two sweep plans)
    shown = set(tables.distinct_configs(tables.shown_pool(with_phrases, tables.made_here_in_place()))["run_id"])
    kin = [i for i in records if records[i]["preset"] == chosen["preset"] and loading.same_seed(records[i], chosen)
           and canary_setting(i) == mine and (i in shown or i == run_id)]
    compared = tables.exposure_comparison([(records[i], loading.read_shown(loading.get_run(i), "metrics"))
                                           for i in kin])
    if len(compared) > 1:
        st.markdown(f"**Every run of {chosen['preset']}, seed {chosen['seed']} with these canaries** (exposure in "
                    "bits by copies inserted)")
        st.dataframe(compared, hide_index=True, width="stretch", placeholder="", column_config={
            "run ε": st.column_config.NumberColumn(format="%.3g", help="The run's sample-level ε."),
            **{col: st.column_config.NumberColumn(format="%.2f") for col in compared if col.endswith("×")}})
        # ADP's canary runs (made 2026-11-27) stand on another base model than the shipped tiny runs beside them
        if note := store.base_models_note([(i, as_str(records[i].get("base_weights"))) for i in compared["run"]]):
            st.caption(note)


widgets.lazy_tabs({"Table": show_table, "ε histogram": show_histogram, "Teachers per user": show_teachers_per_user,
                   "Canary exposure": show_exposure}, key="phrases_tab")
