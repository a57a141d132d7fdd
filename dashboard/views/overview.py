"""Overview: what SeqPATE does, the headline comparison and a privacy statement per method."""

import streamlit as st

from dashboard import loading, tables, widgets, wording
from dashboard.diagram import PIPELINE_DOT

PRIVACY_CARD_WIDTH = 260  # px: three fit beside the sidebar from a 1,280 px screen up (at 200, four made a caveat a column
# 20 lines tall beside short cards), one or two on a narrow one

st.title("SeqPATE bench")
st.caption("Differentially private text generation: SeqPATE (Tian et al., NeurIPS 2022) against DP-SGD "
           "baselines and non-private references, run on this machine.")

st.graphviz_chart(PIPELINE_DOT, width="stretch")
st.markdown(
    """
**What SeqPATE does.** A language model trained on private sentences can repeat them, names and secrets included.
SeqPATE never lets the released model (the *student*) see private text:

1. The private sentences are split into **disjoint parts**, and one **teacher** model is fine-tuned per part,
   so any one sentence (or, with the by-user partition, most of one user's sentences) sits in one teacher.
2. The student learns on **pseudo sentences**: public prefixes completed by the public base model.
3. Where the student does not rank the pseudo label among its top 5 (a "hard" position: efficient KD), the
   teachers' next-token distributions are **summed over the student's own top candidates** (public information) and released with **Gaussian noise**. One sentence moves the sum by at most
   √2, so each answer is a Gaussian mechanism; the noise is calibrated *before* the first query from (ε, δ) and
   the query budget Q, and querying stops when the budget is spent.
4. The student is trained on the pseudo labels plus the noisy distributions (KL loss).

**Reading ε.** ε bounds how much any one private sentence (or, where a run says so, one user or one secret
phrase) can change what a run releases: the smaller, the more private. δ is a small added probability on every
such bound (a slack on every probability, not a chance that the bound fails). ε = 0: a reference that used public data only; ε = ∞ (*Infinity* in the tables): trained on private data with
no protection. Launch reads a chosen ε in plain words (how much more likely one outcome can become), and the
Calculator shows how noise, queries and ε trade off.

Every ε shown here is computed from the recorded noise events by `core.privacy` and names its accountant.
"""
)

report = loading.read_report()
if report:
    with st.expander("Report on the shipped runs (cached_runs/REPORT.md)", expanded=False):
        # REPORT's widest tables (14 columns) would spill past the expander: let them scroll sideways instead
        st.html("<style>[data-testid='stExpander'] [data-testid='stMarkdownContainer'] table"
                "{display:block;overflow-x:auto;max-width:100%}</style>")
        st.markdown(report)

st.subheader("Headline comparison")
df = loading.finished_frame()
if df.empty:
    widgets.no_runs()
    st.stop()

preset = widgets.preset_picker(df, key="overview_preset")
of_preset = widgets.setup_picker(df[df["preset"] == preset], key="overview_setup")
several_seeds = len(loading.seeds_of(of_preset)) > 1
pool = tables.made_here_or_shipped(widgets.seed_picker(of_preset, key="overview_seed"), key="overview_made_here")
table = tables.headline_table(pool)
seed_note, copies_note = tables.seed_mix_note(table), tables.replaced_copies_note(pool, table)
if copies_note:  # above the table it changes
    st.info(copies_note, icon=":material/content_copy:")
if (table["setting"] == "").all():
    table = table.drop(columns="setting")  # every row is at the preset's defaults here
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    # every row without scrolling, up to 30 (tiny has 29; Streamlit's default of 10 hid rows the seed warning names)
    height=35 * (min(len(table), 30) + 1) + 3,
    column_config={
        # the numbers narrow, so that the run ids (30 characters) are not cut at 1,400 px
        "PPL": st.column_config.NumberColumn(format="%.2f", width=70,
                                             help="corpus perplexity on private test sentences"),
        "BLEU-4": st.column_config.NumberColumn(format="%.2f", width=65,
                                                help="sacrebleu BLEU-4 of completions (0-100)"),
        "ε": st.column_config.NumberColumn(format="%.3g", width=60,
                                           help="accounted ε (0: public only, Infinity: not private)"),
        "δ": st.column_config.TextColumn(width=60, help="δ of the (ε, δ) guarantee (0: no δ term; –: none at ε = ∞)"),
        "runs": st.column_config.NumberColumn(width=50),
        "Method": st.column_config.TextColumn(width=150),
        "run ids": st.column_config.TextColumn(width=240),
        "ε is": st.column_config.TextColumn(width=155, help="where ε is not a DP guarantee: heuristic (the noise level was "
                                            "chosen from the private data), measurement (made before the noise "
                                            "had a random stream of its own, and replayed numbers drawn elsewhere "
                                            "in the run: DP-SGD, ADP and synthetic-data runs, and SeqPATE's at "
                                            "seed 0 with more than 7 teachers; ε at its noise level, not a proven "
                                            "bound); see the privacy statements below"),
        "R_name": st.column_config.NumberColumn(format="percent", width=70, help="name leak rate (App. O): share of "
                                                "completions that contain a private user's name"
                                                + (f"; {scope}" if (scope := tables.leak_scope(pool)) else "")),
    },
)
if table.empty:
    st.info("No finished run at this preset's defaults: every run here changes a setting (a teacher "
            "count, a filter, a learning rate, ...). Its runs are on the Privacy-utility page with experiment variants on.")
if seed_note:
    st.warning(seed_note, icon=":material/warning:")
if shipped_note := tables.shipped_copies_note(pool, table):
    st.info(shipped_note, icon=":material/content_copy:")
runs_shown = ("the run of the chosen seed, or with every seed the mean over the seeds in the row's seeds column"
              if several_seeds else "one run each (this preset's runs share one seed)")
st.caption(f"One row per method and ε at this preset's defaults: {runs_shown}; runs with other settings (teacher "
           "counts, filters, ablations, phrase-level targets, any other changed setting) are on the Privacy-utility "
           "page. PPL lower is better, BLEU-4 higher is better.")
if "ε is" in table and table["ε is"].fillna("").str.contains("measurement").any():  # the help is a tooltip
    st.caption("\"measurement\" under ε is: these runs were made before each noise had a random stream of its own "
               "(2026-11-27), and their noise replayed random numbers drawn elsewhere in the run. Their ε is what the "
               "accountant gives at their noise level, not a proven DP bound. A run launched now draws its noise "
               "from a stream of its own, and its ε is a guarantee (a heuristic for Adaptive DP either way).")
leaks = table["R_name"].dropna() if "R_name" in table else []
if len(leaks) and (leaks == 0).all():  # the column tells no method apart here, not even the unprotected one
    unprotected = table.loc[leaks.index, "Method"].eq(wording.method_label("pri-gpt")).any()
    st.caption("R_name is 0% in every row" + (", the non-private Pri-GPT's included" if unprotected else "")
               + (f": {scope}" if (scope := tables.leak_scope(pool)) else "")
               + (". The Phrases page's canary exposure (secrets planted 1, 10 and 100 times) measures memorisation "
                  "directly." if "canaries" in " ".join(of_preset["variant"].fillna("")) else
                  ". A run with canaries (--canaries 1,10,100) measures memorisation directly on the Phrases page."))

st.subheader("Privacy statements")
st.caption("One card per method, over all its runs at this preset (every seed and setting, phrase-level runs too; "
           "of the data and base model chosen above, where there is a choice); "
           "copies of one setting (a run shared by several sweep plans, or made here with a shipped run's settings) "
           "count once.")
cards = tables.privacy_cards(of_preset)  # the runs of the data and base model chosen above
# cards of a fixed width in a row that wraps: three side by side on a wide screen, fewer on a narrow one (equal
# columns stayed four wide down to Streamlit's 640 px breakpoint and wrapped the text a letter per line at 800 px)
cards_row = st.container(horizontal=True, wrap=True)
for card in cards:
    with cards_row.container(border=True, width=PRIVACY_CARD_WIDTH):
        st.markdown(f"**{card['label']}**")
        if card["kind"] == "not-private":
            st.error("NOT PRIVATE: private data, no noise (ε = ∞)", icon=":material/warning:")
        elif card["kind"] == "public-only":
            st.info("Non-private reference: uses no private data (ε = 0)", icon=":material/public:")
        elif card["kind"] == "unknown":  # finished runs without a privacy record: no guarantee to show
            st.warning("No privacy record (privacy.json missing or unreadable): no guarantee is shown.",
                       icon=":material/warning:")
        elif card["caveat"]:
            st.warning(f"ε = {card['epsilon']}, δ = {card['delta']}. {card['caveat']}", icon=":material/warning:")
        else:
            st.success(f"ε = {card['epsilon']}, δ = {card['delta']}", icon=":material/shield:")
        st.markdown(f"Protects: {card['unit']}  \nAccountant: `{card['accountant']}`  \nRuns: {card['runs']}")
        if card["note"]:
            st.caption(card["note"])
