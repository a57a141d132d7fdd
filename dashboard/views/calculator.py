"""Calculator: what-if privacy math without training (SeqPATE Gaussian releases and DP-SGD)."""

import math

import streamlit as st

from core.config import preset_value
from dashboard import charts, privacy_math, widgets, wording

# SeqPATE defaults: the quick preset's, the dashboard's default preset
QUICK_TEACHERS = preset_value("quick", "seqpate", "teachers")
QUICK_QUERIES = preset_value("quick", "seqpate", "query_budget")
# Upper ends of the boxes: what the accountants compute in seconds (core.config.MAX_EPSILON says why for ε), and
# counts a chart can still draw (plotly's integers are 64-bit: Q = 1e20 crashed it).
MAX_STD = 1e6
MAX_COUNT = 10**12
MAX_STEPS = 10**6  # DP-SGD steps: 1-10 s of PLD accounting (q 1e-6 to 1e-2); 10^7 took 47 s, 10^9 did not finish

st.title("Privacy calculator")
st.caption("What-if numbers from core.privacy: the same code that accounts the runs. No training: SeqPATE's "
           "answers are instant, DP-SGD's PLD accountant takes a second to about 10 s on a new setting (more steps, "
           "longer).")


# The boxes the modes share keep what was typed across a switch (not back to their defaults), and the
# σ box holds the σ "noise from ε" last computed, rounded UP to its two decimals (within its range): switching to
# "ε from noise" gives the ε typed back or a hair below it, and "queries from ε and noise" at least the Q typed
# (rounded to nearest, σ 0.005 short answered 999 queries for 1,000 and an ε of 1 came back 1.0001, "moderate").
STD_KEY = "calc_sp_std"
# DP-SGD's noise multiplier is handed over the same way, to 4 decimals: its values are near 1 (0.7904 for tiny's
# NoisySGD at ε 3), where two decimals would add up to 1% more noise than the ε asked for
SIGMA_KEY, SIGMA_DECIMALS = "calc_dp_sigma", 4


def std_box(where) -> float | None:
    """The σ box "ε from noise" and "queries from ε and noise" share: 100 until a σ is typed or computed."""
    # (a σ set by the page is kept: float_input seeds the default only where the key holds none)
    return widgets.float_input(where, "noise std σ", min_value=0.01, max_value=MAX_STD, step=10.0, key=STD_KEY,
                               persist_state="page", value=100.0)


def seqpate_calculator() -> None:
    mode = st.radio("Solve for", ["noise from ε", "ε from noise", "queries from ε and noise"], horizontal=True,
                    key="calc_sp_mode", persist_state="page")
    a, b, d, e = st.columns(4)
    delta = widgets.delta_input(d, key="calc_sp_delta", persist_state="page")
    teachers = widgets.count_input(e, "teachers M", value=QUICK_TEACHERS, max_value=MAX_COUNT, key="calc_sp_teachers",
                                   persist_state="page")
    if mode == "noise from ε":
        eps = widgets.epsilon_input(a, key="calc_sp_eps", persist_state="page")
        queries = widgets.count_input(b, "queries Q", value=QUICK_QUERIES, max_value=MAX_COUNT, step=100,
                                      key="calc_sp_queries", persist_state="page")
        if None in (delta, teachers, eps, queries):  # a box out of its range says so beneath it
            return
        noise = privacy_math.seqpate_noise(eps, delta, queries)
        z, std = noise["z"], noise["std"]
        # (round first: 1.1 * 100 is 110.00000000000001, which ceil takes to 1.11)
        st.session_state[STD_KEY] = min(max(math.ceil(round(std * 100, 6)) / 100, 0.01), MAX_STD)
    elif mode == "ε from noise":
        std = std_box(a)
        queries = widgets.count_input(b, "queries Q", value=QUICK_QUERIES, max_value=MAX_COUNT, step=100,
                                      key="calc_sp_queries", persist_state="page")
        if None in (delta, teachers, std, queries):
            return
        eps = privacy_math.seqpate_epsilon(std, queries, delta)
        z = std / math.sqrt(2)
    else:
        eps = widgets.epsilon_input(a, key="calc_sp_eps", persist_state="page")
        std = std_box(b)
        if None in (delta, teachers, eps, std):
            return
        queries = privacy_math.seqpate_max_queries(eps, delta, std)
        z = std / math.sqrt(2)
    row = widgets.wrapping_row()
    # a typed ε as typed (2.345)
    # a computed ε to 4 digits: at 3 an ε of 1.9994 read "2" beside its reading's e^ε ≈ 7.38
    widgets.metric(row, "ε", f"{eps:.6g}" if mode != "ε from noise" else wording.fmt_eps(eps, digits=4))
    widgets.metric(row, "noise multiplier z", wording.fmt_noise(z), help="std / L2 sensitivity (√2: one teacher "
                                                                          "changes)")
    widgets.metric(row, "noise std σ", wording.fmt_noise(std))
    widgets.metric(row, "σ / M", f"{std / teachers:.4g}", help="noise on the AVERAGE of the M teacher distributions")
    widgets.metric(row, "queries Q", f"{queries:,}")
    if queries < 1:
        st.warning("Not even one query fits this ε at this noise.")
    else:
        st.markdown(wording.epsilon_reading(eps, delta, seqpate=True))
        st.markdown(
            f"The teachers' answer is the **sum** of M = {teachers} probability vectors; one changed sentence "
            f"moves it by at most √2 whatever M is, so the noise std σ = {wording.fmt_noise(std)} does not depend "
            f"on M. Relative to the **average** distribution (what the student learns from) the noise is σ/M = "
            f"{std / teachers:.4g}: more teachers, less relative noise"
            + (" — here the noise still swamps the average (σ/M > 1)." if std / teachers > 1 else ".")
            + " Each teacher then trains on less data, though, so more teachers do not always help (the paper's "
            "Sec. 6.4). The Q answers compose like one Gaussian release whose noise multiplier is z / √Q (the "
            "paper's Lemma 5.2): at a fixed (ε, δ), σ grows as √Q."
        )
        decades = max(5, math.ceil(math.log10(queries)))  # the curve reaches past the chosen Q, however large
        grid = sorted({max(1, int(round(10 ** (k / 8)))) for k in range(0, 8 * decades + 1)} | {int(queries)})
        points = [(q, privacy_math.seqpate_epsilon(std, q, delta)) for q in grid]
        st.plotly_chart(charts.readable(charts.seqpate_noise_figure(std, int(teachers), points, int(queries))), width="stretch",
                        key="calc_noise")


def dpsgd_calculator() -> None:
    mode = st.radio("Solve for", ["noise multiplier from ε", "ε from noise multiplier"], horizontal=True,
                    key="calc_dp_mode", persist_state="page")
    a, b, d = st.columns(3)
    n = widgets.count_input(a, "private training sentences N", value=20000, max_value=MAX_COUNT, step=1000,
                            key="calc_dp_n", persist_state="page")
    batch = widgets.count_input(b, "expected batch size", value=32, max_value=MAX_COUNT, key="calc_dp_batch",
                                persist_state="page")
    epochs = widgets.float_input(d, "epochs", min_value=0.01, max_value=1000.0, value=2.0, step=0.5,
                                 key="calc_dp_epochs", persist_state="page")
    # every box first, so that none disappears while another's number is refused
    a, b = st.columns(2)
    delta = widgets.delta_input(b, key="calc_dp_delta", persist_state="page")
    if mode == "noise multiplier from ε":
        eps = widgets.epsilon_input(a, key="calc_dp_eps", persist_state="page")
        given = eps
    else:
        sigma = widgets.float_input(a, "noise multiplier", decimals=SIGMA_DECIMALS, min_value=0.05, max_value=MAX_STD,
                                    step=0.1, key=SIGMA_KEY, persist_state="page", value=1.0)  # kept where set
        given = sigma
    if None in (n, batch, epochs, delta, given):  # a box out of its range says so beneath it
        return
    if batch > n:  # Poisson sampling: a batch cannot expect more sentences than there are
        st.error(f"The expected batch size ({batch:,}) cannot exceed the number of training sentences ({n:,}).")
        return
    # as the DP-SGD runs sample, so Launch and a run agree with it
    q, per_epoch = privacy_math.poisson_shape(n, batch, 1)
    steps = max(1, int(math.ceil(epochs * per_epoch)))
    if steps > MAX_STEPS:
        st.error(f"{steps:,} steps (epochs · int(1 / q)): the calculator accounts up to {MAX_STEPS:,} steps, which "
                 "take the PLD accountant about 10 s; 10^7 take about a minute.")
        return
    with st.spinner("PLD accountant…"):
        if mode == "noise multiplier from ε":
            sigma = privacy_math.dpsgd_noise(eps, delta, q, steps)
            # handed to "ε from noise multiplier" as the σ box is (rounded up: ε comes back at or under the typed one)
            scale = 10**SIGMA_DECIMALS
            st.session_state[SIGMA_KEY] = min(max(math.ceil(round(sigma * scale, 6)) / scale, 0.05), MAX_STD)
        else:
            eps = privacy_math.dpsgd_eps(sigma, q, steps, delta)
    row = widgets.wrapping_row()
    # a typed ε as typed
    widgets.metric(row, "ε", f"{eps:.6g}" if mode == "noise multiplier from ε" else wording.fmt_eps(eps, digits=4))
    widgets.metric(row, "noise multiplier", f"{sigma:.4g}", help="per-step noise std / clipping norm")
    widgets.metric(row, "sampling rate q", f"{q:.4g}", help="1 / ceil(N / batch): Poisson sampling as the runs do it "
                                                     "(opacus), batch / N up to a whole number of batches per epoch")
    widgets.metric(row, "steps", f"{steps:,}", help="epochs · int(1 / q) batches, as the runs draw them")
    st.markdown(wording.epsilon_reading(eps, delta))
    st.caption("Accountant: privacy loss distributions (dp_accounting PLD, pessimistic), the one the DP-SGD "
               "runs report. Results are cached: repeating a setting is instant.")


# Lazy tabs: only the open one runs (the DP-SGD accountant takes a second or two on a new setting).
widgets.lazy_tabs({"SeqPATE (Gaussian releases)": seqpate_calculator, "DP-SGD": dpsgd_calculator}, key="calc_tab")
