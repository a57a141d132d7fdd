"""Plotly figures built from run frames; shared by the pages and the HTML report (plotly is imported here only)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.tables import epsilon_group, heuristic_runs, measured_runs
from dashboard.wording import METHOD_COLORS, NON_PRIVATE_REFERENCES, fmt_eps, method_label, method_order

TRACE_COLORS = ("#2b6cb0", "#c53030", "#2f855a", "#6b46c1", "#b7791f")  # lines that are not methods
METRIC_LABELS = {"bleu4": "BLEU-4", "ppl": "Perplexity (lower is better)", "bleu1": "BLEU-1", "r_name": "R_name"}
# y axes name BLEU's scale: sacrebleu's 0-100, so a 0.23 is not read as 23%
AXIS_TITLES = {**METRIC_LABELS, "bleu4": "BLEU-4 (0-100)", "bleu1": "BLEU-1 (0-100)"}
# Every chart of the dashboard uses this layout (python -m dashboard builds one figure with it before serving: the
# first use of the template costs ~0.6 s of imports and copies).
LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.2), template="plotly_white")
# two panels: their two-line titles clear of the modebar, and the legend clear of the x-axis titles, which the
# ticks push down when a narrow screen (900 px) turns them on end
PANELS_LAYOUT = {**LAYOUT, "margin": {**LAYOUT["margin"], "t": 85}, "legend": {**LAYOUT["legend"], "y": -0.3}}


INK = "#2d3748"  # the text colour of the page's own headings


def readable(fig: go.Figure) -> go.Figure:
    """fig with its axis ticks and titles, legend and subplot titles in INK: Streamlit's chart theme sets them grey
    (rgb(128,132,149) on white: 3.7:1, under the 4.5:1 that small text needs to be read, from a projector too), and
    only a colour set on each axis itself overrides it."""
    fig.update_xaxes(tickfont_color=INK, title_font_color=INK)
    fig.update_yaxes(tickfont_color=INK, title_font_color=INK)
    fig.update_layout(legend_font_color=INK)
    return fig.update_annotations(font_color=INK)


def _finite(values: pd.Series) -> pd.Series:
    return values.apply(lambda v: v is not None and isinstance(v, (int, float)) and math.isfinite(v))


EPSILON_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 3, 5, 8, 10, 20, 50, 100, 256, 1000)
MIN_TICK_RATIO = 1.4  # neighbouring ε ticks at least this far apart: at 900 px "8" and "10" (1.25) touched


def epsilon_ticks(lo: float, hi: float) -> list[float]:
    """The ticks of EPSILON_TICKS within [lo, hi] that are not crowded by the one before (plotly's own log ticks
    print 0.5 as "5")."""
    ticks: list[float] = []
    for t in EPSILON_TICKS:
        if lo <= t <= hi and (not ticks or t / ticks[-1] >= MIN_TICK_RATIO):
            ticks.append(t)
    return ticks


def _by_method(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(method, its rows) in the dashboard's method order; one groupby instead of a boolean mask per method."""
    return sorted(df.groupby("method"), key=lambda group: method_order(group[0])) if not df.empty else []


# One dash pattern per reference line: references often coincide (Pri-GPT + blacklist has Pri-GPT's perplexity, as
# its filter only edits completions), and a line drawn over another with the same pattern hides it.
REFERENCE_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _made_here(rows: pd.DataFrame) -> pd.Series:
    """Per run, " · made here" for runs made on this machine (another base model than the shipped runs'), else ""."""
    if "source" not in rows:
        return pd.Series("", index=rows.index)
    return rows["source"].map(lambda source: "" if source == "cached" else " · made here")


def _base_digest(rows: pd.DataFrame) -> pd.Series:
    """Per run, " · base <weights digest>" where the run records one (since 2026-11-25), else "": the hover tells
    runs on another base model apart (ADP's shipped canary runs stand on another than the tiny runs beside them)."""
    if "base_weights" not in rows:
        return pd.Series("", index=rows.index)
    return rows["base_weights"].map(lambda digest: f" · base {digest}" if isinstance(digest, str) else "")


def _run_marker(color: str, made_here: pd.Series) -> dict:
    """Shipped runs as dots, runs made here as diamonds: the two train on different base models."""
    return dict(color=color, size=9, symbol=["diamond" if tag else "circle" for tag in made_here])


def _made_here_legend() -> go.Scatter:
    """A legend entry (no data) saying what a diamond is."""
    return go.Scatter(x=[None], y=[None], mode="markers", name="made on this machine (another base model)",
                      marker=dict(symbol="diamond", color="#718096", size=9), hoverinfo="skip")


def _privacy_utility_traces(df: pd.DataFrame, metric: str, legend: bool = True) -> tuple[list[go.Scatter], list]:
    """The traces of one Fig. 2 panel and its log-x tick values (see privacy_utility_figure)."""
    traces = []
    label = {"ppl": "PPL"}.get(metric, METRIC_LABELS.get(metric, metric))  # in hovers
    data = df[df[metric].notna()] if not df.empty else df
    private = data[_finite(data["epsilon"]) & (data["epsilon"] > 0)] if not data.empty else data
    refs = data[data["method"].isin(NON_PRIVATE_REFERENCES) | ~_finite(data["epsilon"]) | (data["epsilon"] == 0)] \
        if not data.empty else data
    private = private[~private.index.isin(refs.index)] if not private.empty else private
    xs = list(private["epsilon"]) if not private.empty else []
    x_lo = min(xs) / 2 if xs else 0.1
    x_hi = max(xs) * 2 if xs else 100.0
    for method, rows in _by_method(private):
        rows = rows.sort_values("epsilon")
        color = METHOD_COLORS.get(method, "#4a5568")
        name = method_label(method) + (" (heuristic ε)" if _all_heuristic(rows) else "")
        # the line goes through the runs at the preset's defaults; experiment variants (other teacher counts,
        # filters...) are points beside it, never averaged into it (a method with variants only has no line)
        settings = rows["variant"].fillna("") if "variant" in rows else pd.Series("", index=rows.index)
        at_defaults = rows[settings == ""]
        rows = rows.assign(setting=settings.replace("", "defaults") + _made_here(rows) + _base_digest(rows)
                           + _epsilon_caveat(rows))
        # the shipped runs and the runs made here (another base model) each on a line of their own: joined, a run
        # made here in place of a shipped copy made the shipped curve jump at its ε (909 -> 1033 -> 909)
        here = _made_here(at_defaults) != ""
        for made_here, on_one_base in ((False, at_defaults[~here]), (True, at_defaults[here])):
            if on_one_base.empty:
                continue
            # one point per target ε: runs of one target are accounted a few 1e-7 apart in different seeds
            target = on_one_base.apply(epsilon_group, axis=1).rename("target")
            mean = on_one_base.groupby(target)[["epsilon", metric]].mean().sort_values("epsilon")
            traces.append(go.Scatter(
                x=mean["epsilon"], y=mean[metric], mode="lines",
                line=dict(color=color, dash="dot") if made_here else dict(color=color), name=name,
                legendgroup=method, hoverinfo="skip", showlegend=False,
            ))
        traces.append(go.Scatter(
            x=rows["epsilon"], y=rows[metric], mode="markers", marker=_run_marker(color, _made_here(rows)),
            name=name, legendgroup=method, customdata=rows[["run_id", "setting"]].to_numpy(),
            showlegend=legend,
            hovertemplate=(f"<b>{name}</b><br>ε=%{{x:.3g}}<br>{label}=%{{y:.3f}}"
                           "<br>run %{customdata[0]} (%{customdata[1]})<extra></extra>"),
        ))
    for index, (method, rows) in enumerate(_by_method(refs)):
        if "variant" in rows:  # a reference line is the reference at its defaults, not averaged with canary runs
            at_defaults = rows[rows["variant"].fillna("") == ""]
            rows = at_defaults if not at_defaults.empty else rows
        value = float(rows[metric].mean())
        eps_text = fmt_eps(float(rows["epsilon"].iloc[0])) if rows["epsilon"].notna().any() else "–"
        color = METHOD_COLORS.get(method, "#4a5568")
        ids = ", ".join(rows["run_id"].astype(str).tolist()[:5])
        # a reference made here (another base model) in place of the shipped one said nothing of it: the shipped
        # SeqPATE line was silently compared with a Pub-GPT of another base
        here = _made_here(rows) != ""
        here_tag = ", made here" if here.all() else ", partly made here" if here.any() else ""
        xs = np.geomspace(x_lo, x_hi, 25)  # points along the line, so that its hover shows anywhere on it
        traces.append(go.Scatter(
            x=xs, y=[value] * len(xs), mode="lines",
            line=dict(color=color, dash=REFERENCE_DASHES[index % len(REFERENCE_DASHES)], width=2),
            name=f"{method_label(method)} (ε={eps_text}, reference{here_tag})", legendgroup=method,
            customdata=[[ids]] * len(xs), showlegend=legend,
            hovertemplate=(f"<b>{method_label(method)}</b> (non-private reference, ε={eps_text}{here_tag})<br>"
                           f"{label}=%{{y:.3f}}<br>run %{{customdata[0]}}<extra></extra>"),
        ))
    if legend and not private.empty and (_made_here(private) != "").any():
        traces.append(_made_here_legend())
    ticks = epsilon_ticks(x_lo, x_hi)
    return traces, ticks


def _all_heuristic(rows: pd.DataFrame) -> bool:
    """Whether every run's ε is a heuristic (ADP: noise chosen from the private data), so its legend says so."""
    return bool(len(rows)) and bool(heuristic_runs(rows).all())


def _epsilon_caveat(rows: pd.DataFrame) -> pd.Series:
    """Per run, " · ε a heuristic" / " · ε a measurement" (both where both) for its hover, else "": a phrase-avg
    variant sits in its method's trace, and most shipped runs' ε is a measurement (tables.epsilon_kind)."""
    heuristic, measured = heuristic_runs(rows), measured_runs(rows)
    return pd.Series([(" · ε a heuristic" if h else "") + (" · ε a measurement" if m else "")
                      for h, m in zip(heuristic, measured, strict=True)], index=rows.index)


def privacy_utility_figure(df: pd.DataFrame, metric: str = "bleu4", title: str | None = None) -> go.Figure:
    """Metric vs epsilon (log x) per private method; non-private references as flat dashed lines, each its own
    dash pattern (Fig. 2).

    df: finished runs (loading.run_records rows). Private points carry the run id in customdata (shown on hover).
    """
    label = METRIC_LABELS.get(metric, metric)
    traces, ticks = _privacy_utility_traces(df, metric)
    fig = go.Figure(traces)
    fig.update_layout(title=title or f"{label} vs ε", xaxis_title="ε (log scale)",
                      yaxis_title=AXIS_TITLES.get(metric, label), **LAYOUT)
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    if metric == "ppl":
        fig.update_yaxes(type="log")
    return fig


def privacy_utility_panels(df: pd.DataFrame) -> go.Figure:
    """Fig. 2 as one figure: BLEU-4 (left, x/y axes) and perplexity (right, x2/y2, log y) against ε, one legend.

    One chart instead of two is ~0.1 s less of a cold page load in the browser (benchmarks/RESULTS.md).
    """
    # titles on two lines and no title on the right y axis (its title says log scale): side by side at 900 px
    # the one-line titles ran into each other and the right axis title lay over the BLEU-4 points
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("BLEU-4 vs ε<br>(higher is better)",
                                        "Perplexity vs ε<br>(log scale, lower is better)"))
    for col, metric in ((1, "bleu4"), (2, "ppl")):
        traces, ticks = _privacy_utility_traces(df, metric, legend=col == 1)
        fig.add_traces(traces, rows=1, cols=col)
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], title_text="ε (log scale)",
                         row=1, col=col)
    fig.update_yaxes(title_text=AXIS_TITLES["bleu4"], row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(**PANELS_LAYOUT)
    return fig


def span_at_least(values: Sequence[float], relative: float = 0.1) -> list[float] | None:
    """A y range around values at least `relative` of their middle wide, or None (plotly's own) when they already
    spread wider: autoscaled, a 0.1% spread of perplexities fills the plot and reads as a real effect."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    middle, need = (low + high) / 2, relative * abs((low + high) / 2)
    if high - low >= need or need == 0:
        return None
    return [middle - need / 2, middle + need / 2]


def teacher_curve_figure(df: pd.DataFrame, metric: str = "bleu4") -> go.Figure:
    """SeqPATE metric vs teacher count, one line per epsilon through the mean at each M (App. H), runs as points."""
    fig = go.Figure()
    label = METRIC_LABELS.get(metric, metric)
    for i, eps in enumerate(sorted(df["epsilon_target"].dropna().unique())):
        rows = df[df["epsilon_target"] == eps].sort_values("teachers")
        color = TRACE_COLORS[i % len(TRACE_COLORS)]
        mean = rows.groupby("teachers")[metric].mean().reset_index()
        fig.add_trace(go.Scatter(x=mean["teachers"], y=mean[metric], mode="lines", line=dict(color=color),
                                 name=f"ε={fmt_eps(eps)}", legendgroup=str(eps), hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=rows["teachers"], y=rows[metric], mode="markers", marker=_run_marker(color, _made_here(rows)),
            name=f"ε={fmt_eps(eps)}", legendgroup=str(eps), showlegend=False,
            customdata=np.column_stack([rows["run_id"], _made_here(rows)]) if not rows.empty else [],
            hovertemplate=f"teachers=%{{x}}<br>{label}=%{{y:.3f}}<br>run %{{customdata[0]}}%{{customdata[1]}}"
                          "<extra></extra>",
        ))
    if (_made_here(df) != "").any():
        fig.add_trace(_made_here_legend())
    fig.update_layout(title=f"SeqPATE: {label} vs number of teachers", xaxis_title="teachers (M)",
                      yaxis_title=AXIS_TITLES.get(metric, label), showlegend=True, **LAYOUT)
    fig.update_xaxes(type="log")
    if (y_range := span_at_least(df[metric].tolist() if metric in df else [])) is not None:
        fig.update_yaxes(range=y_range)
    return fig


# Round values per decade for a log axis, finest first: phrase ε span anything from 3-10 (names) to 1-20,000 (canaries)
LOG_TICK_MANTISSAS = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 5, 7), (1, 2, 3, 5), (1, 3))


def log_ticks(lo: float, hi: float, most: int = 10) -> list[float]:
    """Ticks for a log axis over [lo, hi] (values, both > 0): the finest of LOG_TICK_MANTISSAS per decade that gives at
    most `most` ticks (each keeps 3, the usual ε target), else every decade, thinned to at most `most`. A histogram of
    ε 3-9.6 had ticks at 3 and 5 only, and its bars at 6.6, 7 and 9.6 could be read only by hovering."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    for mantissas in LOG_TICK_MANTISSAS:
        ticks = [float(f"{m}e{d}") for d in decades for m in mantissas if lo <= float(f"{m}e{d}") <= hi]
        if len(ticks) <= most:
            return ticks
    powers = [float(f"1e{d}") for d in decades if lo <= float(f"1e{d}") <= hi]
    return powers[:: math.ceil(len(powers) / most)]


def phrase_epsilon_histogram(per_run: Mapping[str, tuple[str, Sequence[float]]], bins: int = 40) -> go.Figure:
    """One bar series per run (run id -> (method, phrase ε values)) on a log ε axis: names sit at a few units of ε,
    canaries inserted 100 times at hundreds, and a linear axis would squeeze the first into one bar. Every run is
    counted in the same bins (equal widths in log ε), its bars beside the other runs' in each bin (so runs with the
    same phrase ε all stay visible), and a bar's hover names its ε range. ε = 0 and ε = ∞ have no place on a log
    axis and are left out, and so is a run with no other value (the page says which)."""
    logs = {run_id: [math.log10(v) for v in values if v is not None and math.isfinite(v) and v > 0]
            for run_id, (_, values) in per_run.items()}
    logs = {run_id: xs for run_id, xs in logs.items() if xs}
    every = [x for xs in logs.values() for x in xs]
    lo, hi = (min(every), max(every)) if every else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    ranges = [f"ε {10 ** a:.3g}–{10 ** b:.3g}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
    methods = [per_run[run_id][0] for run_id in logs]
    fig = go.Figure()
    tallest = 0
    for run_id, xs in logs.items():
        method = per_run[run_id][0]
        counts, _ = np.histogram(xs, bins=edges)
        tallest = max(tallest, int(counts.max()))
        # method colours only while they tell the runs apart
        color = METHOD_COLORS.get(method) if methods.count(method) == 1 else None
        fig.add_trace(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, name=f"{method_label(method)}: {run_id}",
                             marker_color=color, customdata=ranges,
                             hovertemplate="%{customdata}: %{y} phrase(s)<extra>%{fullData.name}</extra>"))
    # the axis spans the bins and half a bin more on each side, and its round ticks include 3 (the usual ε target):
    # a first bar at ε 3 has its label under it
    pad = (edges[1] - edges[0]) / 2
    x_range = [edges[0] - pad, edges[-1] + pad]
    ticks = log_ticks(10 ** x_range[0], 10 ** x_range[1])
    fig.update_layout(barmode="group", bargap=0.1, title="ε per secret phrase", yaxis_title="phrases",
                      showlegend=True, **LAYOUT)
    fig.update_xaxes(title="ε of the phrase (log scale)", range=x_range, tickvals=[math.log10(t) for t in ticks],
                     ticktext=[f"{t:g}" for t in ticks])
    # counts: whole ticks (plotly's automatic ones put 0.5 between 0 and 1 phrase)
    fig.update_yaxes(tickformat="d", rangemode="tozero", **({"dtick": 1} if tallest <= 10 else {}))
    return fig


def teachers_per_user_figure(hist: Mapping[str, Any]) -> go.Figure:
    keys = [k for k in ("1", "2", "3", ">3") if k in hist]
    fig = go.Figure(go.Bar(x=keys, y=[hist[k] for k in keys], marker_color="#2b6cb0",
                           text=[hist[k] for k in keys], textposition="outside"))
    mean = hist.get("mean")
    title = "Users by number of teachers holding their data"
    if isinstance(mean, (int, float)):
        title += f" (mean {mean:.2f})"
    fig.update_layout(title=title, xaxis_title="teachers holding the user's sentences", yaxis_title="users",
                      **LAYOUT)
    return fig


def seqpate_noise_figure(noise_std: float, teachers: int, points: Sequence[tuple[int, float]],
                         queries: int | None = None) -> go.Figure:
    """The calculator's two panels: noise relative to the AVERAGE teacher distribution (std / M) against the
    teacher count M at a fixed std (left), and epsilon spent against queries at this noise (right)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("Noise on the average teacher<br>distribution vs teachers",
                                        "ε spent vs queries<br>at this noise"))
    top = max(teachers * 10, 100)
    ms = sorted({int(round(10 ** (i / 20))) for i in range(0, int(20 * math.log10(top)) + 1)} | {teachers})
    fig.add_trace(go.Scatter(x=ms, y=[noise_std / m for m in ms], mode="lines", name="std / M",
                             hovertemplate="M=%{x}<br>std/M=%{y:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[teachers], y=[noise_std / teachers], mode="markers", marker=dict(size=11),
                             name=f"M = {teachers}"), row=1, col=1)
    # a trace, not add_hline: on a log axis the hline's annotation is placed at log10 coordinates (y = 10)
    fig.add_trace(go.Scatter(x=[ms[0], ms[-1]], y=[1.0, 1.0], mode="lines", line=dict(dash="dot", color="#718096"),
                             name="std / M = 1: noise as large as a whole probability mass", hoverinfo="skip"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=[q for q, _ in points], y=[e for _, e in points], mode="lines", name="ε",
                             hovertemplate="Q=%{x}<br>ε=%{y:.3f}<extra></extra>"), row=1, col=2)
    match = [e for q, e in points if q == queries]
    if match:
        fig.add_trace(go.Scatter(x=[queries], y=match, mode="markers", marker=dict(size=11), name=f"Q = {queries:,}"),
                      row=1, col=2)
    fig.update_xaxes(type="log", dtick=1, title_text="teachers (M)", row=1, col=1)
    fig.update_yaxes(type="log", dtick=1, title_text="noise std / M", row=1, col=1)
    fig.update_xaxes(type="log", dtick=1, title_text="queries (Q)", row=1, col=2)
    fig.update_yaxes(tickprefix="ε ", row=1, col=2)  # an axis title sat in the left panel at 900 px
    fig.update_layout(**PANELS_LAYOUT)
    return fig


def run_progress_figure(progress: Sequence[Mapping[str, Any]]) -> go.Figure | None:
    """Loss (and epsilon spent, where logged) over minutes since the run started, on shaded bands naming each stage
    and across the whole run, so a run that logs loss only at its end (SeqPATE after its teachers) still shows when
    that was; None if nothing to plot."""
    from datetime import datetime

    rows = [p for p in progress if isinstance(p, Mapping)]

    def minutes(row: Mapping[str, Any], i: int) -> float | None:
        """Minutes since the first line; the line's index in a file without times; None for an untimed line in a
        timed file (placed by its index it would stretch the axis to the line count)."""
        if start is None:
            return float(i)
        try:
            return (datetime.fromisoformat(row["time"]) - start).total_seconds() / 60
        except (KeyError, TypeError, ValueError):
            return None

    try:
        start = datetime.fromisoformat(rows[0]["time"]) if rows else None
    except (KeyError, TypeError, ValueError):
        start = None
    timed = [(x, p) for i, p in enumerate(rows) if (x := minutes(p, i)) is not None]
    losses = [(x, p["loss"], p.get("stage")) for x, p in timed if isinstance(p.get("loss"), (int, float))]
    spent = [(x, p["epsilon_spent"]) for x, p in timed
             if isinstance(p.get("epsilon_spent"), (int, float)) and math.isfinite(p["epsilon_spent"])]
    if not losses and not spent:
        return None
    fig = go.Figure()
    first, last = min(x for x, _ in timed), max(x for x, _ in timed)
    for k, (stage, begin, end) in enumerate(_stage_spans([(x, p.get("stage"), "message" in p) for x, p in timed])):
        # a name for the stages wide enough to hold one (hover shows every stage), centred over its band: at the
        # band's left edge it reads as naming the band beside it
        wide = end - begin >= 0.08 * (last - min(first, 0.0))
        fig.add_vrect(x0=begin, x1=end, fillcolor="#718096" if k % 2 else "#a0aec0", opacity=0.12, line_width=0,
                      layer="below", **(dict(annotation_text=stage, annotation_position="top",
                                             annotation_font=dict(size=10, color=INK)) if wide else {}))
    # one line per stage: their losses are different quantities (SeqPATE's warm-up NLL, then its student's NLL plus
    # the KL term), which one line joined into a jump
    for stage in dict.fromkeys(s for _, _, s in losses):
        points = [(x, v) for x, v, s in losses if s == stage]
        fig.add_trace(go.Scatter(x=[x for x, _ in points], y=[v for _, v in points], mode="lines+markers",
                                 name=f"loss ({stage})" if stage else "loss",
                                 hovertemplate="%{x:.1f} min<br>loss=%{y:.4f}<extra></extra>"))
    if spent:
        top = max(v for _, v in spent)
        fig.add_trace(go.Scatter(x=[x for x, _ in spent], y=[v for _, v in spent], mode="lines+markers",
                                 name="ε spent", yaxis="y2", hovertemplate="%{x:.1f} min<br>ε spent=%{y:.4g}"
                                 "<extra></extra>"))
        # its own ticks from 0 (not synced to the loss axis's grid, which gave ticks such as 0.405 and 2.804)
        fig.update_layout(yaxis2=dict(title="ε spent", overlaying="y", side="right", tickmode="auto",
                                      showgrid=False, range=[0, 1.12 * top if top > 0 else 1]))
    x_title = "minutes since start" if start is not None else "progress line"
    fig.update_layout(title="Training progress", xaxis_title=x_title, yaxis_title="loss", **LAYOUT)
    fig.update_xaxes(range=[min(first, 0.0), last * 1.01 if last > 0 else 1])
    return fig


def _stage_spans(points: Sequence[tuple[float, Any, bool]]) -> list[tuple[str, float, float]]:
    """(stage, begin, end) for each run of equal stages, in order, from (minute, stage, starts) per progress line.

    A line marks the end of a piece of work (a teacher trained, an epoch done) unless it carries a message, which
    marks its stage's start. So a stage begins at its first line if that one starts it, else where the line before
    was written (SeqPATE's warm-up logs its loss at the end of its epoch: drawn from that line alone, it would sit
    inside the teachers' band); it ends where the next begins, the last one at the last line. A stage that
    logs only its start needs a line at its end too (the pipeline's pseudo data have one since 2026-11-27: before,
    their minutes went to the partition, whose one line follows them). 'done' ends the run and has no band; a stage
    whose work left no time between lines has none either."""
    spans: list[tuple[str, float, float]] = []
    previous = None  # the minute of the line before
    for x, stage, starts in points:
        if isinstance(stage, str) and stage != "done" and not (spans and spans[-1][0] == stage):
            begin = x if starts or previous is None else previous
            spans.append((stage, begin, begin))
        previous = x
    last = points[-1][0] if points else 0.0
    ends = [begin for _, begin, _ in spans[1:]] + [last]
    return [(stage, begin, end) for (stage, begin, _), end in zip(spans, ends, strict=True) if end > begin]
