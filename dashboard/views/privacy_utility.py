"""Privacy-utility: BLEU-4 and PPL vs epsilon per method (paper Fig. 2), ablations, filters, teacher counts."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from core.config import OLD_TEACHER_LOSS, OLD_TEACHER_LOSS_NOTE, ONE_CANDIDATE_NOTE
from core.runs.report import noise_dominance
from core.runs.values import as_float, as_str
from dashboard import charts, loading, tables, widgets, wording

st.title("Privacy vs utility")
st.caption("Finished runs of one preset. Private methods are points at their accounted ε (log axis); "
           "non-private references are flat lines, each its own dash pattern: Pub-GPT and Pub-GPT + pseudo use no "
           "private data (ε = 0), Pri-GPT uses it without noise (ε = ∞). A method's solid line goes through the mean "
           "of its runs at the preset's defaults at each target ε (one run per seed with every seed chosen; "
           "experiment variants are points beside it); each point is one run: hover it for its run id; a "
           "diamond is a run made on this machine, whose base model is not the shipped runs': a method's runs made "
           "here are joined by a dotted line of their own, and a reference made here says so in its name. "
           "Adaptive DP's ε, and "
           "that of a variant with a phrase-avg target, is a heuristic, not a DP guarantee: its noise level was "
           "chosen from the private data (the Overview's \"ε is\" column and privacy cards say which runs' ε are "
           "measurements). "
           "BLEU-4 below 1 rests on a handful of completions' 4-grams found in the references (0 to 2 in 1,000 on "
           "quick, for every method but Pri-GPT and its blacklist variant), so it moves with length and sampling luck: read perplexity for "
           "orderings (`python -m core compare --draws 20` tests BLEU-4 over 20 completions of each prefix).")

finished = loading.finished_frame()
# synthetic-data runs have no perplexity or BLEU-4: their accuracy against ε is on the Synthetic data page
df = finished[~finished["method"].map(wording.is_synth_method)] if not finished.empty else finished
if df.empty:
    widgets.no_runs("finished text-generation runs (the synthetic-data runs are on the Synthetic data page)"
                    if not finished.empty else "finished runs")
    st.stop()

preset = widgets.preset_picker(df, key="pu_preset")
# several sweep plans share a run: one copy of each config; one seed at a time unless the reader asks for every seed
of_preset = widgets.setup_picker(df[df["preset"] == preset], key="pu_setup")
pool = tables.made_here_or_shipped(widgets.seed_picker(of_preset, key="pu_seed"), key="pu_made_here")
runs = tables.distinct_configs(pool)
if stand_in := tables.stand_in_note(pool, set(runs["run_id"])):
    st.info(stand_in, icon=":material/content_copy:")
variants = st.toggle("Include experiment variants", key="pu_variants",
                     help="Off: every method at its preset's defaults (the paper's Fig. 2). On: also runs with another "
                          "teacher count, candidate filter, partition, phrase-level target, canaries or any other "
                          "changed setting (ablations are always in their own tab).")
main = runs[runs["ablation"].fillna("none") == "none"]  # in their own tab
if not variants:
    main = loading.at_defaults(main)

metric_cols = {"PPL": st.column_config.NumberColumn(format="%.2f"),
               "BLEU-4": st.column_config.NumberColumn(format="%.2f", help="sacrebleu BLEU-4 of completions (0-100)"),
               "ε": st.column_config.NumberColumn(format="%.3g")}
seqpate = runs[runs["method"] == "seqpate"]


def show_curves() -> None:
    """Paper Fig. 2: BLEU-4 and perplexity against ε, one line per private method, references flat."""
    st.plotly_chart(charts.readable(charts.privacy_utility_panels(main)), width="stretch", key="pu_curves")
    # the chart's text alternative: a screen reader hears loose tick numbers from the chart itself
    st.caption("The numbers behind these points, one row per run (its ε, PPL, BLEU-4 and setting), are in the "
               "Points tab; each line goes through the mean of its method's runs at the preset's defaults.")
    if not noise_dominance_note(subject="SeqPATE's points"):  # that note already says why its line is flat
        flat_seqpate_note()


FLAT_SPREAD = 0.02  # SeqPATE's mean PPL over its target ε values within 2%: a line a reader takes for a bug


def flat_seqpate_note() -> None:
    """Below the curves: where SeqPATE's perplexity barely moves from its smallest ε to no noise at all, say so and
    why (REPORT.md's controls), rather than leave a flat line for the reader to explain."""
    at_defaults = loading.at_defaults(main[main["method"] == "seqpate"])  # not the variants beside the line
    ppl = at_defaults.groupby("epsilon_target")["ppl"].mean().dropna()
    ppl = ppl[np.isfinite(ppl)]  # an inf perplexity has no spread to speak of
    if len(ppl) < 3 or ppl.min() <= 0 or (ppl.max() - ppl.min()) / ppl.min() > FLAT_SPREAD:
        return
    st.caption(f"SeqPATE's perplexity is flat here: between {ppl.min():,.2f} and {ppl.max():,.2f} across target ε "
               f"{wording.fmt_eps(ppl.index.min())} to {wording.fmt_eps(ppl.index.max())}, a spread of "
               f"{(ppl.max() - ppl.min()) / ppl.min():.1%}. "
               + ("No noise at all (ε = ∞) gives about the same: at this preset the teachers' answers barely "
                  "change the student, noisy or not (REPORT.md's controls say where its gain over Pub-GPT comes "
                  "from)." if math.isinf(ppl.index.max())
                  else "At this preset the teachers' answers barely change the student."))


def show_points() -> None:
    """The runs behind the curves' points."""
    points = pd.DataFrame({
        "run": main["run_id"],
        "method": main["method"].map(wording.method_label),
        "ε": main["epsilon"],
        "δ": main["delta"].map(wording.fmt_delta),
        "setting": main["variant_shown"].fillna("") if not main.empty else [],
        "PPL": main["ppl"],
        "BLEU-4": main["bleu4"],
        "seed": main["seed"],
        "base model": main["base_weights"].map(as_str).fillna("not recorded"),
    })
    base_help = ("The weights digest of the run's base model. Runs made before 2026-11-25 record none, so beside "
                 "\"not recorded\" a digest may or may not be the same base; two different digests are two base "
                 "models. Compare runs on one base model only (REPORT.md names the shipped runs made on another).")
    st.dataframe(points.sort_values(["method", "ε"]), hide_index=True, width="stretch",
                 column_config={**metric_cols, "base model": st.column_config.TextColumn(help=base_help)})


def small_table(rows: pd.DataFrame, first: str, values: pd.Series, order=None) -> pd.DataFrame:
    """One row per run (the page keeps one copy of each config), led by the setting the table varies, sorted by
    order(setting) where given (e.g. top-k 10 before 50), else by the setting."""
    table = pd.DataFrame({
        first: values,
        "ε": rows["epsilon"],
        "teachers": rows["teachers"],
        "PPL": rows["ppl"],
        "BLEU-4": rows["bleu4"],
        "run": rows["run_id"],
    })
    keys = table[first].map(order) if order else table[first]
    return table.assign(_order=keys).sort_values(["_order", "ε"]).drop(columns="_order")


def at_varied_epsilons(pool: pd.DataFrame, varied: pd.DataFrame) -> pd.DataFrame:
    """The pool's runs at the target ε values where some run varies the setting (the default run is the baseline)."""
    return pool[pool["epsilon_target"].isin(set(varied["epsilon_target"].dropna()))]


def noise_dominance_note(by_teachers: bool = False, subject: str = "the rows below") -> bool:
    """Above a table of SeqPATE's own variants: where its runs at the preset's defaults and ε 3 release noise larger
    than the teachers' average distribution could ever be (std / M > 1, tiny's 6.9), the table shows the student's
    losses and the noise, not what the teachers know (REPORT.md says the same). Whether it said so."""
    base = seqpate[(seqpate["variant"].fillna("") == "") & (seqpate["epsilon_target"] == 3.0)]
    if base.empty:
        return False
    record = base.iloc[0]
    std = as_float((loading.read_shown(loading.get_run(record["run_id"]), "privacy") or {}).get("noise_scale"))
    if not (why := noise_dominance(std, as_float(record["teachers"]))):
        return False
    rows = f"the runs with fewer than {std:.0f} teachers (σ / M > 1) differ" if by_teachers else f"{subject} differ"
    st.caption(f"Noise-dominated at this preset: at ε 3 {why}, and {rows} by the student's own losses and the noise.")
    return True


# Each table varies one setting with every other at the preset's defaults (loading.only_varies).
def show_ablations() -> None:
    """Paper Table 3: SeqPATE with one component switched off."""
    pool = loading.only_varies(seqpate, "ablation")
    ablations = pool[pool["ablation"].fillna("none") != "none"]
    if ablations.empty:
        st.info("No ablation runs yet (SeqPATE runs with an ablation other than none).")
        return
    noise_dominance_note()
    rows = at_varied_epsilons(pool, ablations)
    names = rows["ablation_label"].fillna("none").replace({"none": "SeqPATE (full)"})
    st.dataframe(small_table(rows, "ablation", names), hide_index=True, width="stretch",
                 column_config={**metric_cols, "ablation": st.column_config.TextColumn(width="medium")})
    shown = [a for a in wording.ABLATION_MEANINGS if a != "none" and (rows["ablation"] == a).any()]
    st.caption("What each row switches off: "
               + "; ".join(f"{a}: {wording.ABLATION_MEANINGS[a]}" for a in shown) + ".")
    if names.str.contains(OLD_TEACHER_LOSS, regex=False).any():
        st.caption(OLD_TEACHER_LOSS_NOTE)


def show_filters() -> None:
    """Paper Table 4: SeqPATE with other candidate filters."""
    pool = loading.only_varies(seqpate, "filter")
    filters = at_varied_epsilons(pool, pool[pool["variant"].fillna("") != ""])
    if filters["filter"].nunique() < 2:
        present = f" Present: {', '.join(pool['filter'].dropna().unique())}." if not pool.empty else ""
        st.info("No filter comparison yet: needs SeqPATE runs with at least two candidate filters "
                "(e.g. top-p:0.95 and top-k:50)." + present)
        return
    noise_dominance_note()
    st.dataframe(small_table(filters, "filter", filters["filter"], order=loading.filter_order), hide_index=True,
                 width="stretch", column_config=metric_cols)
    if (filters["filter"] == "top-k:1").any():
        st.caption(ONE_CANDIDATE_NOTE)


def show_teacher_curve() -> None:
    """Paper App. H: SeqPATE against the number of teachers."""
    pool = loading.only_varies(seqpate, "teachers")
    teachers = at_varied_epsilons(pool, pool[pool["variant"].fillna("") != ""])
    if teachers["teachers"].nunique() < 2:
        st.info("No teacher-count curve yet: needs SeqPATE runs with at least two teacher counts.")
        return
    noise_dominance_note(by_teachers=True)
    # perplexity first: on every test sentence, where the tiny BLEU-4 differences are within noise (REPORT.md)
    metric = st.radio("Metric", ["ppl", "bleu4"], format_func=charts.METRIC_LABELS.get, horizontal=True,
                      key="pu_teacher_metric", persist_state="page")
    st.plotly_chart(charts.readable(charts.teacher_curve_figure(teachers, metric)), width="stretch", key="pu_teachers")


widgets.lazy_tabs({"Curves (Fig. 2)": show_curves, "Points": show_points, "Ablations (Table 3)": show_ablations,
                   "Candidate filters (Table 4)": show_filters, "Teachers (App. H)": show_teacher_curve}, key="pu_tab")
