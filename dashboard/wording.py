"""What the pages call things and how they write them: method names and colours, number formats, the
plain-language reading of a privacy guarantee, and private phrases highlighted in text. No run is read here."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

import streamlit as st

from core.config import HEURISTIC_REASONS, METHODS, PUBLIC_ONLY_METHODS, heuristic_reason

METHOD_LABELS: dict[str, str] = {
    "pub-gpt": "Pub-GPT",
    "pri-gpt": "Pri-GPT",
    "pub-gpt+pseudo": "Pub-GPT + pseudo",
    "seqpate": "SeqPATE",
    "noisysgd": "NoisySGD",
    "noisysgd+pseudo": "NoisySGD + pseudo",
    "noisysgd-gc+pseudo": "NoisySGD-GC + pseudo",
    "pri-gpt-blacklist": "Pri-GPT + blacklist",
    "adp": "Adaptive DP",
    "synth-filter": "Synthetic text: filter",
    "synth-pplm": "Synthetic text: PPLM",
    "synth-multitask": "Synthetic text: multitask",
}
# the paper's Table 1 references (flat lines on the curves); Pri-GPT + blacklist, also epsilon inf, is a baseline
NON_PRIVATE_REFERENCES = (*PUBLIC_ONLY_METHODS, "pri-gpt")
DPSGD_METHODS = ("noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo", "adp")
# one colour per method, in METHODS order (SeqPATE amber; Adaptive DP near-black, told apart from it on one chart)
_PALETTE = ("#2b6cb0", "#c53030", "#2f855a", "#b7791f", "#6b46c1", "#319795", "#d53f8c", "#4a5568", "#1a202c")
METHOD_COLORS: dict[str, str] = {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(METHODS)}


# what each ablation of Table 3 switches (core.config.ABLATION_SWITCHES), for Launch's help and the Ablations table
ABLATION_MEANINGS = {
    "none": "full SeqPATE",
    "-merge_p": "teachers vote for their top candidate instead of averaging their distributions",
    "-kl": "cross-entropy over the vocabulary on the noisy answer's top candidate instead of KL to it",
    "-pseudo": "no loss on the pseudo labels",
    "-effi_kd": "every position queried, not only the hard ones",
    "-gaussian": "Laplace noise instead of Gaussian (L1 sensitivity 2)",
    "-all": "all five at once",
}

PHRASE_NOTE = "Completions, references and phrase tables quote private text by design: do not share them."


def method_label(method: str | None) -> str:
    if not isinstance(method, str) or not method:  # a run that lost its config.json has NaN here (truthy)
        return "unknown"
    return METHOD_LABELS.get(method, method)


def method_order(method: str | None) -> int:
    return METHODS.index(method) if method in METHODS else len(METHODS)


def is_synth_method(method: Any) -> bool:
    """A DP synthetic-data run (its own page): no perplexity or BLEU to put beside the text-generation methods."""
    return str(method or "").startswith("synth-")


# Methods whose accounted ε is valid for the noise they add but whose noise level depends on private data: the
# reason privacy.json records (core.analysis.statement), and what to make of it.
HEURISTIC_PRIVACY = {
    "adp": HEURISTIC_REASONS["adp"] + ": treat it as a heuristic, not a DP guarantee (the run's statement.md).",
}


def fmt_eps(eps: float | None, digits: int = 3) -> str:
    if eps is None or (isinstance(eps, float) and math.isnan(eps)):
        return "–"
    if math.isinf(eps):
        return "∞"
    return f"{eps:,.0f}" if abs(eps) >= 1000 else f"{eps:.{digits}g}"  # 1,000 rather than 1e+03


def fmt_delta(delta: float | None) -> str:
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return "–"
    if delta == 0:
        return "0"
    return f"{delta:.3g}"  # 1e-06, 0.000651 (1/1,536), 0.00156 (1/640)


def fmt_num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "–"
    if math.isinf(number):
        return "∞"
    return f"{number:,.{digits}f}"


def fmt_noise(value: float) -> str:
    """A noise level a reader may type back into a box: six significant digits (σ 69.0436 at Q 1,000, ε 3; shown as
    69.04, typed back it answered 999 queries), rounded up, so that typed back it buys at least the queries and at
    most the ε that made it; thousands separated rather than in e-notation."""
    if not (math.isfinite(value) and value > 0):
        return f"{value:g}"
    decimals = max(1, 5 - math.floor(math.log10(value)))
    scale = 10 ** decimals
    text = f"{math.ceil(round(value * scale, 6)) / scale:,.{decimals}f}"  # round first: 1.1 * 10 is 11.000000000000002
    return text.rstrip("0").rstrip(".") if value < 1000 else text


def statement_body(markdown: str) -> str:
    """A run's statement.md to show inside an expander that already names it: its title dropped, and its section
    headings made small (a page-sized "# ..." inside an expander dwarfs the page's own headings)."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(re.sub(r"^#{1,3} ", "#### ", line) for line in lines).strip() + "\n"


def present(value: Any) -> bool:
    """Not None and not NaN (DataFrame rows turn missing numbers into NaN)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def privacy_kind(epsilon: float | None) -> str:
    """'private', 'not-private' (private data, no protection), 'public-only' (no private data used) or 'unknown'."""
    if epsilon is None or (isinstance(epsilon, float) and math.isnan(epsilon)):
        return "unknown"
    if math.isinf(epsilon):
        return "not-private"
    if epsilon == 0:
        return "public-only"
    return "private"


# where a run comes from (loading's "source"), as the pages say it
SOURCE_NAMES = {"cached": "shipped", "live": "made here"}


def privacy_statement(epsilon: float | None, delta: float | None, unit: str | None, method: str | None = None,
                      target: str | None = None, shared_streams: bool = False,
                      epsilon_target: float | None = None) -> str:
    """One line on a run's guarantee; with the method and privacy target, ADP's and a phrase-avg run's are
    heuristics (noise chosen from the private data; a phrase-avg run's epsilon_target is the average name ε it was
    calibrated to) and synthetic data's δ a weak one; shared_streams (core.config.shared_noise_streams): its noise
    replayed numbers drawn elsewhere in the run, so its ε is a measurement, not a proven bound."""
    kind = privacy_kind(epsilon)
    if kind == "not-private":
        return "NOT PRIVATE: trained on private data without noise (ε = ∞)"
    if kind == "public-only":
        return "No private data used (ε = 0): a public-only reference"
    if kind == "unknown":
        return "no privacy record"
    unit_text = {"sample": "one training sentence", "user": "all sentences of one user"}.get(unit or "", unit or "?")
    if heuristic_reason(method, target, epsilon):  # noise read off the private data: no guarantee
        calibrated = (f" so that the average name ε is {fmt_eps(epsilon_target)}"
                      if target == "phrase-avg" and present(epsilon_target) else "")
        return (f"ε = {fmt_eps(epsilon)}, δ = {fmt_delta(delta)} as accounted for {unit_text}, but a heuristic, "
                f"not a DP guarantee: its noise level is chosen from the private data{calibrated}"
                + (f"; and {SHARED_STREAMS}" if shared_streams else ""))
    weak = " (δ = 1/|train|, a weak δ)" if is_synth_method(method) else ""
    if shared_streams:
        return (f"ε = {fmt_eps(epsilon)}, δ = {fmt_delta(delta)}{weak} as accounted for {unit_text}, {SHARED_STREAMS}")
    return f"(ε = {fmt_eps(epsilon)}, δ = {fmt_delta(delta)})-DP{weak}, protecting {unit_text}"


# runs made before the noise had streams of its own (core.config.shared_noise_streams; their statements say more)
SHARED_STREAMS = ("a measurement at its noise level, not a proven bound: made before its noise had a random stream "
                  "of its own (2026-11-27), it replayed numbers drawn elsewhere in the run (see its statement)")


# SeqPATE's neighbouring data sets are not DP-SGD's add/remove ones (core.analysis.statement.neighbours)
SEQPATE_NEIGHBOURS = ("for SeqPATE: than with that sentence's content removed or replaced by another, every other "
                      "sentence keeping its teacher; the partition is held public")


def epsilon_reading(epsilon: float, delta: float, unit: str = "training sentence", seqpate: bool = False) -> str:
    """A plain-language reading of (epsilon, delta); seqpate: name SeqPATE's neighbouring data sets too."""
    if epsilon is None or math.isnan(epsilon) or epsilon < 0:
        return "ε must be a number, at least 0."
    if epsilon == 0:  # the accountant's answer where the noise is so large that δ alone covers the bound
        return (f"ε = 0 at this δ: whatever anyone can observe about the result is as likely with any one {unit} in "
                "the private data as without it" + (f" ({SEQPATE_NEIGHBOURS})" if seqpate else "")
                + f", up to an added probability δ = {fmt_delta(delta)}.")
    if math.isinf(epsilon):
        return (f"ε = ∞ gives no formal protection: the model may memorise and repeat any {unit}, "
                "names and secrets included.")
    # An attacker guessing from a 50/50 start whether a given unit was used is right with probability at most
    # (e^ε + δ) / (1 + e^ε) <= e^ε / (1 + e^ε) + δ: a bound on the guess's accuracy, not on its certainty after every
    # output (a Gaussian's privacy loss is unbounded)
    posterior = 1 / (1 + math.exp(-epsilon))  # e^ε / (1 + e^ε), without overflow for large ε
    # enough decimals that a bound below 1 reads below 100% (ε 8: 99.97%, beside "moderate"; from ε ≈ 19 it is 100%)
    shown = next((f"{posterior:.{d}%}" for d in range(1, 7) if f"{posterior:.{d}%}" != f"{1:.{d}%}"), "100%")
    tier = ("strong" if epsilon <= 1 else "moderate (common in published work)" if epsilon <= 10
            else "weak: the bound alone says little")
    if delta is not None and delta > 1e-3:  # a δ this large lets a mechanism publish some records outright
        tier = f"weak: δ = {fmt_delta(delta)} is large (use δ well below 1 / the number of {unit}s)"
    decades = epsilon / math.log(10)  # e^ε = 10^decades, written out even where e^ε overflows a float
    ratio_text = f"{math.exp(epsilon):.3g}" if decades < 6 else \
        f"{10 ** (decades - math.floor(decades)):.1f}e+{math.floor(decades)}"
    return (
        f"Whatever anyone can observe about the result is at most e^ε ≈ {ratio_text}× more likely with any one "
        f"{unit} in the private data than without it" + (f" ({SEQPATE_NEIGHBOURS})" if seqpate else "")
        + f", plus an added probability δ = {fmt_delta(delta)} (not "
        f"a chance that the bound fails: a slack on every probability). An attacker who starts 50/50 unsure "
        f"whether a given {unit} was used guesses right at most {shown} of the time, plus at most δ. "
        f"Protection: {tier}."
    )


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


@st.cache_data(show_spinner=False, max_entries=200)
def phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern | None:
    """One case-insensitive regex matching any phrase (longest first, whole words)."""
    cleaned = sorted({p.strip() for p in phrases if p and p.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    body = "|".join(re.escape(html.escape(p)) for p in cleaned)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


def highlight(text: str, phrases: Sequence[str]) -> str:
    """HTML-escaped text with every phrase wrapped in <mark>."""
    escaped = html.escape(text or "")
    pattern = phrase_pattern(tuple(phrases))
    if pattern is None:
        return escaped
    return pattern.sub(lambda m: f"<mark>{m.group(0)}</mark>", escaped)


EMPTY_COMPLETION = "(empty: the model ended the text at its first token)"


def completion_html(text: str, phrases: Sequence[str]) -> str:
    """A completion as highlight() draws it; an empty one says so instead of leaving a blank that reads as a fault
    (351 of the shipped runs' 64,400 are empty; more are for text in characters the models rarely saw: 5 to 11
    seeds of 20 for Japanese, Cyrillic or accented prefixes on a quick SeqPATE model, none for English ones)."""
    if not (text or "").strip():
        return f"<i>{EMPTY_COMPLETION}</i>"
    return highlight(text, phrases)


def search_key(text: str) -> str:
    """Text as a search compares it: lower case, typographic quotes as plain ones, runs of spaces as one (a typed
    "i’m" found none of the prefixes that say "I'm")."""
    text = text.translate(str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'}))
    return " ".join(text.lower().split())


OPTION_SEPARATOR = "  ·  "  # between the parts of a run's label; a run id holds none


def run_option_label(record: dict[str, Any], live: bool = False) -> str:
    """Label of a run in a selectbox; live=True leaves out what changes while a run goes on (state, accounted ε),
    since a selectbox does not redraw the label of the option already chosen. It starts with the run id (a page
    binding the box to the URL finds the run there)."""
    parts = [record["run_id"], method_label(record.get("method"))]
    if not live:
        parts += [f"ε={fmt_eps(record.get('epsilon'))}", *([seed_label(record)] if seed_label(record) else []),
                  str(record.get("state"))]
    return OPTION_SEPARATOR.join(parts)


def seed_label(record: dict[str, Any]) -> str:
    """"seed N" for a run of a seed other than the default 0, else ""."""
    seed = record.get("seed")
    return f"seed {int(seed)}" if present(seed) and int(seed) != 0 else ""
