"""A run's report as one self-contained HTML file: metrics, privacy, config, a few completions, charts.

Plotly's JavaScript is inlined once (include_plotlyjs="inline"), so the file opens offline.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.config import effective_config, heuristic_reason
from core.runs.values import as_dict, as_float
from dashboard import charts
from dashboard.loading import at_defaults, flatten
from dashboard.tables import distinct_configs, shown_pool
from dashboard.wording import (
    PHRASE_NOTE,
    completion_html,
    fmt_delta,
    fmt_eps,
    fmt_num,
    highlight,
    is_synth_method,
    method_label,
    present,
    privacy_kind,
    privacy_statement,
)

_STYLE = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;color:#1a202c}
h1{margin-bottom:.2rem} h2{border-bottom:1px solid #e2e8f0;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0} td,th{border:1px solid #e2e8f0;padding:.25rem .6rem;
text-align:left;vertical-align:top} th{background:#f7fafc} .muted{color:#718096} mark{background:#fefcbf;text-decoration:underline}
.card{border:1px solid #e2e8f0;border-radius:8px;padding:.6rem 1rem;margin:.5rem 0}
.bad{color:#c53030;font-weight:600} .ok{color:#2f855a;font-weight:600} .warn{color:#b7791f;font-weight:600}
div.statement{font-size:.9rem;background:#f7fafc;padding:.1rem 1rem} div.statement h1{font-size:1.2rem}
"""


def markdown_html(text: str) -> str:
    """A statement.md as HTML (it was shown as raw markdown, asterisks and all); raw HTML in it is escaped, not
    passed through: a file of a run is data, not markup."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(text)


def _json_cell(value: Any, key: str = "") -> str:
    """A value as text; an ε (told by its key: epsilon, privacy.epsilon, target_epsilon, phrase_summary.avg...) to 6
    significant digits, so that rounding never shows an accounted ε below what was spent; a δ as the dashboard
    shows it."""
    name = key.rsplit(".", 1)[-1]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "epsilon" in key or (key.startswith("phrase_summary.") and name in ("avg", "min", "max")):
            return "∞" if math.isinf(value) else f"{float(value):.6g}"
        if name == "delta":
            return fmt_delta(float(value))
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, (dict, list)):
        return json.dumps(value, allow_nan=True)
    return "null" if value is None else str(value)


def _kv_table(pairs: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_json_cell(v, str(k)))}</td></tr>"
                   for k, v in pairs.items())
    return f"<table>{rows}</table>"


def split_unread(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run config's flat fields as (read, never read by its method): core.config.effective_config decides."""
    flat, read = flatten(config), set(flatten(effective_config(config)))
    return ({k: v for k, v in flat.items() if k in read}, {k: v for k, v in flat.items() if k not in read})


# a synthetic-data run (python -m core synth) has no perplexity or BLEU: its report leads with these
SYNTH_METRICS = ("accuracy_synthetic", "accuracy_real", "synthetic_label_agreement", "separability")
SYNTH_NOTE = ("A synthetic-data run: accuracy_synthetic is the accuracy on real held-out texts of a classifier trained "
              "on the synthetic texts (accuracy_real: trained on the real train set instead); separability is a "
              "random forest's accuracy on the model's embeddings of the real test texts; ngram_ratios are the shares "
              "of synthetic word n-grams also found in the private train set (ngram_ratios_size_matched: in as many "
              "samples as there are real test texts, so that they compare with ngram_ratios_real_test, the same "
              "share for those texts; the share falls as a set grows). It has no perplexity or BLEU, so it "
              "has no place on the BLEU-4 vs ε chart of the text-generation runs (the Synthetic data page compares "
              "these runs).")


# an ADP run made before 2026-11-27 recorded its base sigma as noise_multiplier, which no step used
LEGACY_ADP_SIGMA = ("noise_multiplier (ADP's base σ, as runs made before 2026-11-27 named it; the accounted one is "
                    "the events')")


def legacy_adp_sigma_named(values: dict[str, Any], method: str | None) -> dict[str, Any]:
    """values with an old ADP run's `noise_multiplier` renamed for what it is (a run of today records `base_sigma`
    beside the accounted multiplier): the report printed 63.0 where the statement above it says 0.591."""
    if method != "adp" or "base_sigma" in values or "noise_multiplier" not in values:
        return values
    return {(LEGACY_ADP_SIGMA if k == "noise_multiplier" else k): v for k, v in values.items()}


def statement_class(record: dict[str, Any]) -> str:
    """The colour of a run's one-line guarantee: green only for a guarantee (or no private data used); no record is
    as bad as no protection, and a heuristic's or a measurement's ε is not a guarantee. From the fields the
    statement is made of, not its wording."""
    kind = privacy_kind(as_float(record.get("epsilon")))
    if kind in ("not-private", "unknown"):
        return "bad"
    heuristic = heuristic_reason(record.get("method"), record.get("privacy_target"), as_float(record.get("epsilon")))
    return "warn" if kind == "private" and (heuristic or record.get("shared_streams")) else "ok"


def build_report_html(record: dict[str, Any], config: dict[str, Any], privacy: dict[str, Any] | None,
                      metrics: dict[str, Any] | None, completions: list[dict[str, Any]],
                      phrases: list[str] | None = None, figures: list[go.Figure] | None = None,
                      n_completions: int = 10, statement_md: str | None = None,
                      exposure: pd.DataFrame | None = None) -> str:
    """The whole HTML document as a string: statement_md is the run's statement.md (what its ε covers and what it
    releases outside it), exposure its canary exposure table (tables.exposure_table), where it has them."""
    privacy = privacy or {}
    metrics = metrics or {}
    title = f"{method_label(record.get('method'))} run {record.get('run_id')}"
    statement = privacy_statement(record.get("epsilon"), record.get("delta"), record.get("unit"),
                                  record.get("method"), record.get("privacy_target"), bool(record.get("shared_streams")),
                                  record.get("epsilon_target"))
    kind_class = statement_class(record)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='muted'>preset {html.escape(str(record.get('preset')))}{html.escape(_on_setup(record))} · seed "
        f"{html.escape(str(record.get('seed')))} · state {html.escape(str(record.get('state')))} · "
        f"config hash {html.escape(str(record.get('config_hash')))}</p>",
        "<h2>Privacy</h2>",
        f"<div class='card'><span class='{kind_class}'>{html.escape(statement)}</span><br>"
        f"ε = {html.escape(fmt_eps(record.get('epsilon')))}, δ = {html.escape(fmt_delta(record.get('delta')))}, "
        f"accountant: <code>{html.escape(str(privacy.get('accountant')))}</code>, unit: "
        f"{html.escape(str(privacy.get('unit')))}</div>",
    ]
    if record.get("method") == "adp":  # its statement says so, far below; the file itself carries them
        parts.append("<p class='warn'>This report holds statistics of the private sentences computed without noise "
                     "(base_sigma, noise_multiplier_range, the rho and gamma summaries): with them no ε holds, as the "
                     "statement below says. Share it as you would the private data.</p>")
    else:  # a privacy officer read the guarantee's line as covering the whole report
        # a text run quotes private test prefixes; a synthetic run's samples may repeat private text at ε = ∞
        quotes = not is_synth_method(record.get("method")) or privacy_kind(as_float(record.get("epsilon"))) != "private"
        parts.append("<p class='warn'>Share this report as you would the private data: whatever ε the model has, "
                     "this report also holds scores on private test text and counts computed without noise, which "
                     "no ε covers" + (" (the statement below lists them)" if statement_md else "")
                     + (", and it quotes private text" if quotes else "") + ".</p>")
    if statement_md:  # a synthetic run's card sat above metrics no ε covers, which only this statement says
        parts.append("<details open><summary>Privacy statement (statement.md): what the ε covers, and what the run "
                     f"releases outside it</summary><div class='statement'>{markdown_html(statement_md)}</div>"
                     "</details>")
    parts.append(_kv_table(legacy_adp_sigma_named({k: v for k, v in privacy.items() if k not in ("events",)},
                                                  record.get("method"))))
    events = privacy.get("events") or []
    if events:
        parts.append("<p>Recorded noise events:</p>")
        parts.append(pd.DataFrame(events).to_html(index=False, escape=True, border=0))
    parts.append("<h2>Metrics</h2>")
    if is_synth_method(record.get("method")):
        parts.append(f"<p class='muted'>{html.escape(SYNTH_NOTE)}</p>")
        headline = {k: fmt_num(metrics[k], 3) for k in SYNTH_METRICS if k in metrics}
        # the share falls as a set grows: at the real test set's size beside that set's own share, where the run
        # recorded it (an all-samples 0.165 read as below the real texts' 0.198; at their size it is 0.212)
        matched = as_dict(as_dict(metrics.get("ngram_ratios_size_matched")).get("ratios"))
        key, grams = (("ngram_ratios_size_matched.ratios", matched) if matched
                      else ("ngram_ratios", as_dict(metrics.get("ngram_ratios"))))
        headline |= {f"{key}.{n}": fmt_num(v, 4) for n, v in grams.items()}
        headline |= {f"ngram_ratios_real_test.{n}": fmt_num(v, 4)
                     for n, v in (metrics.get("ngram_ratios_real_test") or {}).items()}
    else:
        headline = {k: fmt_num(metrics.get(k)) for k in ("ppl", "bleu1", "bleu2", "bleu3", "bleu4") if k in metrics}
        r_name = as_float(metrics.get("r_name"))
        if r_name is not None and math.isfinite(r_name):  # a share of completions, as the pages show it
            headline["r_name"] = f"{r_name:.2%}"
    parts.append(_kv_table(headline))
    if exposure is not None and not exposure.empty:
        parts.append("<p>Canary exposure (bits; about 1 or less: the model does not prefer the inserted number; "
                     "the most possible: it prefers it to every other):</p>")
        parts.append(exposure.to_html(index=False, escape=True, border=0, na_rep="", float_format="{:.3g}".format))
    others = legacy_adp_sigma_named({k: v for k, v in flatten(metrics).items()
                                     if k not in headline and k.split(".")[0] not in headline}, record.get("method"))
    if others:
        parts.append("<details><summary>All metrics</summary>" + _kv_table(others) + "</details>")
    for i, figure in enumerate(figures or []):
        parts.append(figure.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False,
                                    default_width="100%", default_height="420px"))
    shown = min(n_completions, len(completions))
    if is_synth_method(record.get("method")):  # samples of the DP model: no private prefix or reference
        parts.append(f"<h2>Synthetic samples (first {shown} of {len(completions)})</h2>")
        private = any(r.get("contains_private_text") for r in completions)  # the engine marks ε = ∞ samples
        parts.append("<p class='muted'>" + html.escape(
            "Generated by a model fine-tuned without noise (ε = ∞): they may repeat private training text (a "
            "shipped ε = ∞ run's do): do not share them." if private else
            "Generated by the DP fine-tuned model: post-processing under the guarantee above, which bounds how "
            "much any one training text can shape them (it does not promise that none resembles one).") + "</p>")
        rows = "".join(f"<tr><td>{html.escape(str(r.get('label', '')))}</td>"
                       f"<td>{completion_html(str(r.get('completion', '')), [])}</td></tr>"
                       for r in completions[:n_completions])
        if rows:
            parts.append(f"<table><tr><th>label</th><th>text</th></tr>{rows}</table>")
    else:
        parts.append(f"<h2>Completions (first {shown} of {len(completions)})</h2>")
        parts.append(f"<p class='muted'>{html.escape(PHRASE_NOTE)}</p>")
        if completions:
            rows = "".join(
                f"<tr><td>{highlight(str(r.get('prefix', '')), phrases or [])}</td>"
                f"<td>{highlight(str(r.get('reference', '')), phrases or [])}</td>"
                f"<td>{completion_html(str(r.get('completion', '')), phrases or [])}</td></tr>"
                for r in completions[:n_completions]
            )
            parts.append(f"<table><tr><th>prefix</th><th>reference</th><th>completion</th></tr>{rows}</table>")
    parts.append("<h2>Config</h2>")
    read, unread = split_unread(config)
    parts.append(_kv_table(read))
    if unread:  # e.g. a Pub-GPT run's privacy.epsilon 3: the preset's value, which that run never read
        parts.append(f"<details><summary>Not read by {html.escape(method_label(config.get('method')))} "
                     f"({len(unread)} fields kept in its config file; they did not shape this run)</summary>"
                     + _kv_table(unread) + "</details>")
    parts.append("<p class='muted'>Generated by the SeqPATE bench dashboard.</p></body></html>")
    return "".join(parts)


def chart_runs(same_preset: pd.DataFrame, run_id: str, in_place: bool) -> pd.DataFrame:
    """The runs a report's chart may show: the Overview's (the shipped runs, unless in_place puts the copies made
    here in their place), and the report's own run, which report_figures draws in place of its config's copies.

    The report of a run made here always puts the copies made here in place: that run stands on this machine's base
    model, and drawn against the shipped Pub-GPT line it would be compared with another base model's."""
    own = same_preset[same_preset["run_id"] == run_id]
    made_here = "source" in own and bool((own["source"] != "cached").any())
    shown = shown_pool(same_preset, in_place or made_here)
    return shown if own["run_id"].isin(shown["run_id"]).all() else pd.concat([shown, own])


def _mark_own_run(figure: go.Figure, record: dict[str, Any]) -> str:
    """Ring the report's own run on its chart (a small point among the others, it hid behind another method's);
    a non-private reference at its defaults is a line, which the subtitle names. Returns that subtitle."""
    epsilon, bleu4 = record.get("epsilon"), record.get("bleu4")
    if not present(bleu4):
        return "this run is not drawn: it has no BLEU-4"
    if not (present(epsilon) and 0 < float(epsilon) < math.inf):  # drawn as a reference line, at its defaults only
        if record.get("variant"):
            return "this run is not drawn: a reference line shows its method at the preset's defaults"
        return f"this run: the {method_label(record.get('method'))} (ε={fmt_eps(epsilon)}) reference line"
    figure.add_trace(go.Scatter(x=[epsilon], y=[bleu4], mode="markers", name=f"this run ({record.get('run_id')})",
                                marker=dict(symbol="circle-open", size=22, color="#1a202c", line=dict(width=2)),
                                hoverinfo="skip"))
    return "this run ringed"


def _on_setup(record: dict[str, Any]) -> str:
    """' on DATA' where the run's data and base model are not chitchat's (loading.setup_label): its chart holds the
    runs of that setup alone, and "preset tiny" read as tiny's chitchat runs."""
    setup = record.get("setup")
    return f" on {setup}" if isinstance(setup, str) and setup != "chitchat" else ""


def report_figures(record: dict[str, Any], same_preset: pd.DataFrame, progress: list[dict[str, Any]]) -> list:
    """This run among the finished runs of its preset and seed (BLEU-4 vs ε) and its training progress, where
    present.

    The chart is the Privacy vs utility page's: text-generation runs at their preset's defaults, one copy of each
    config (distinct_configs), and this run beside them if it is an experiment variant. Runs of other seeds are
    left out (another user split and base model: not comparable point by point), as are runs on another data set or base
    model (loading.setup_label). A synthetic-data run has no BLEU-4, so its report has no such chart."""
    figures = []
    if "seed" in same_preset and present(record.get("seed")):
        same_preset = same_preset[same_preset["seed"] == record["seed"]]
    if "setup" in same_preset and present(record.get("setup")):
        same_preset = same_preset[same_preset["setup"] == record["setup"]]
    if not same_preset.empty and not is_synth_method(record.get("method")):
        main = distinct_configs(same_preset[~same_preset["method"].map(is_synth_method)])
        main = at_defaults(main)
        # this run itself, in place of another copy of its config, and beside the defaults if it is a variant
        twins = (main["run_id"] == record["run_id"]) | (main["effective_hash"] == record.get("effective_hash"))
        main = pd.concat([main[~twins], same_preset[same_preset["run_id"] == record["run_id"]]])
        figure = charts.privacy_utility_figure(main, "bleu4",
                                               f"BLEU-4 vs ε, preset {record.get('preset')}{_on_setup(record)}")
        figure.update_layout(title_subtitle_text=_mark_own_run(figure, record))
        figures.append(figure)
    progress_figure = charts.run_progress_figure(progress)
    if progress_figure is not None:
        figures.append(progress_figure)
    return figures
