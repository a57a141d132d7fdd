"""Shared loading, caching and formatting for the dashboard pages.

Rules kept here so that pages stay thin:
- runs are read only through core.runs (registry.list_runs, resolve_run(..., allow_paths=False), RunDir readers);
- reads of run files are cached with st.cache_data keyed on the files' (mtime_ns, size), so a page reload costs
  a few stat() calls per run and a changed file is read again at once;
- nothing imports torch (but Launch, to ask whether a GPU is there, when SEQPATE_DEVICE=cuda); core.privacy
  (autodp, scipy) is imported lazily, only by pages that compute noise.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import math
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.analysis.statement import HEURISTIC_REASONS, heuristic_reason
from core.config import (
    METHODS,
    PRESETS,
    PUBLIC_ONLY_METHODS,
    VARIANT_FIELDS,
    ConfigError,
    RunConfig,
    check_delta_range,
    check_epsilon_range,
    effective_config,
    effective_hash,
    fixed_epsilon,
    flatten_config,
    parse_filter,
    parse_number,
    validate,
    varied_settings,
)
from core.runs import registry, store
from core.runs.registry import RunInfo
from core.runs.store import RunDir, RunError, RunFormatError
from dashboard.estimate import choose_pace, method_began, method_start, pace_runs, timing, trains_its_base
from dashboard.values import as_dict, as_float, as_int, as_str, safe_read

# ----------------------------------------------------------------------------------------------------------------
# Methods: names, groups, colours
# ----------------------------------------------------------------------------------------------------------------

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
METHOD_HELP: dict[str, str] = {
    "pub-gpt": "public base model only (no private data: a lower bound)",
    "pri-gpt": "fine-tuned on private data without noise (NOT private: an upper bound)",
    "pub-gpt+pseudo": "public model fine-tuned on its own completions of public prefixes (no private data)",
    "seqpate": "teachers on private data, noisy aggregation on the student's candidates",
    "noisysgd": "DP-SGD fine-tuning on private data",
    "noisysgd+pseudo": "DP-SGD on private data after pseudo-data pre-training",
    "noisysgd-gc+pseudo": "DP-SGD with ghost clipping (large logical batch) after pseudo data",
    "pri-gpt-blacklist": "private fine-tuning with a blacklist of names removed (heuristic, not DP)",
    "adp": "adaptive DP (noise scaled by a privacy probability per batch)",
}
# the paper's Table 1 references (flat lines on the curves); Pri-GPT + blacklist, also epsilon inf, is a baseline
NON_PRIVATE_REFERENCES = (*PUBLIC_ONLY_METHODS, "pri-gpt")
DPSGD_METHODS = ("noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo", "adp")
# one colour per method, in METHODS order (SeqPATE amber; Adaptive DP near-black, told apart from it on one chart)
_PALETTE = ("#2b6cb0", "#c53030", "#2f855a", "#b7791f", "#6b46c1", "#319795", "#d53f8c", "#4a5568", "#1a202c")
METHOD_COLORS: dict[str, str] = {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(METHODS)}
ACTIVE_STATES = ("queued", "running")
PHRASE_NOTE = "Completions, references and phrase tables quote private text by design: do not share them."


def method_label(method: str | None) -> str:
    if not method:
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


# ----------------------------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------------------------


def fmt_eps(eps: float | None) -> str:
    if eps is None or (isinstance(eps, float) and math.isnan(eps)):
        return "–"
    if math.isinf(eps):
        return "∞"
    return f"{eps:,.0f}" if abs(eps) >= 1000 else f"{eps:.3g}"  # 1,000 rather than 1e+03


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


def privacy_statement(epsilon: float | None, delta: float | None, unit: str | None, method: str | None = None,
                      target: str | None = None) -> str:
    """One line on a run's guarantee; with the method and privacy target, ADP's and a phrase-avg run's are
    heuristics (noise chosen from the private data) and synthetic data's δ a weak one."""
    kind = privacy_kind(epsilon)
    if kind == "not-private":
        return "NOT PRIVATE: trained on private data without noise (ε = ∞)"
    if kind == "public-only":
        return "No private data used (ε = 0): a public-only reference"
    if kind == "unknown":
        return "no privacy record"
    unit_text = {"sample": "one training sentence", "user": "all sentences of one user"}.get(unit or "", unit or "?")
    if heuristic_reason(method, target, epsilon):  # noise read off the private data: no guarantee
        return (f"ε = {fmt_eps(epsilon)}, δ = {fmt_delta(delta)} as accounted for {unit_text}, but a heuristic, "
                "not a DP guarantee: its noise level is chosen from the private data")
    weak = " (δ = 1/|train|, a weak δ)" if is_synth_method(method) else ""
    return f"(ε = {fmt_eps(epsilon)}, δ = {fmt_delta(delta)})-DP{weak}, protecting {unit_text}"


# SeqPATE's neighbouring data sets are not DP-SGD's add/remove ones (core.analysis.statement.neighbours)
SEQPATE_NEIGHBOURS = ("for SeqPATE: than with that sentence's content removed or replaced by another, every other "
                      "sentence keeping its teacher; the partition is held public")


def epsilon_reading(epsilon: float, delta: float, unit: str = "training sentence", seqpate: bool = False) -> str:
    """A plain-language reading of (epsilon, delta); seqpate: name SeqPATE's neighbouring data sets too."""
    if epsilon is None or math.isnan(epsilon) or epsilon < 0:
        return "ε must be a positive number."
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


# ----------------------------------------------------------------------------------------------------------------
# Reading runs (cached on file mtimes)
# ----------------------------------------------------------------------------------------------------------------

# every file a record reads, and every required one (a finished run missing one is failed: _damaged_files)
_RECORD_FILES = tuple(dict.fromkeys((*store.REQUIRED_FILES, store.PHRASES)))


def file_signature(path: Path, names: Iterable[str] = _RECORD_FILES) -> tuple:
    """(name, mtime_ns, size) per file (None when absent): the cache key of everything read from a run."""
    sig = []
    for name in names:
        try:
            stat = (path / name).stat()
            sig.append((name, stat.st_mtime_ns, stat.st_size))
        except OSError:
            sig.append((name, None))
    return tuple(sig)


# A run made here in a folder named like a shipped run (`core run --run-dir runs/tiny-seqpate-eps3`, a sweep into
# runs/) shares its id, and the pages key runs by id: the shipped one is listed under this suffix, so that each id
# names one run (a review saw one run's number beside the other's completions).
SHIPPED_SUFFIX = " (shipped)"


def list_infos() -> list[RunInfo]:
    """Every live and cached run, newest first (live runs whose process died are marked failed), each id once."""
    infos = registry.list_runs()
    made_here = {info.run_id for info in infos if info.source != "cached"}
    return [dataclasses.replace(info, run_id=info.run_id + SHIPPED_SUFFIX)
            if info.source == "cached" and info.run_id in made_here else info for info in infos]


def listed_id(run: RunDir) -> str:
    """A run's id as list_infos names it (a shipped run with a run made here in a folder of its name: suffixed)."""
    shadowed = run.source == "cached" and (registry.live_root() / run.run_id).is_dir()
    return run.run_id + SHIPPED_SUFFIX if shadowed else run.run_id


def get_run(run_id: str) -> RunDir:
    """A run by id only (as list_infos names it): user input never becomes a path (RunNotFoundError otherwise)."""
    text = str(run_id)
    if text.endswith(SHIPPED_SUFFIX):
        shipped = [(registry.cached_root(), "cached")]
        return registry.resolve_run(text.removesuffix(SHIPPED_SUFFIX), shipped, allow_paths=False)
    return registry.resolve_run(text, allow_paths=False)


# Settings whose non-default values make a run an experiment variant (Tables 2-4, App. H) rather than a point of
# the privacy-utility trade-off (Fig. 2), which compares every method at its preset's defaults. They are named by
# their field alone; any other setting a run changes (a learning rate, a delta) makes it a variant too, named
# section.field, so a run at other settings is never averaged with the defaults.
_SHORT_NAMES = {key: key.split(".", 1)[1] for key in VARIANT_FIELDS}  # core.config.VARIANT_FIELDS


def variant_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The settings the method reads whose value differs from the run's preset default, name -> value ({} at the
    defaults; core.config.varied_settings): VARIANT_FIELDS first, by their short names, then any other as
    section.field."""
    varied = varied_settings(cfg)
    order = [key for key in _SHORT_NAMES if key in varied] + sorted(set(varied) - set(_SHORT_NAMES))
    return {_SHORT_NAMES.get(key, key): varied[key] for key in order}


def filter_order(spec: Any) -> tuple:
    """A sort key for candidate filters: top-k 10 before 50 before 100 (not as text); a missing or unreadable
    filter last."""
    try:
        return (0, *parse_filter(str(spec)))
    except ConfigError:
        return (1, str(spec), 0.0)


def variant_label(settings: dict[str, Any]) -> str:
    """'' for a run at its preset's defaults, else its variant_settings as text (e.g. 'filter top-k:10')."""
    return ", ".join(f"{name} {value}" for name, value in settings.items())


def only_varies(df: pd.DataFrame, setting: str) -> pd.DataFrame:
    """Runs at their preset's defaults except, possibly, `setting` (a VARIANT_FIELDS name such as 'filter'): a table
    of the paper varies one setting and holds the others, so a phrase-level or by-user run never joins it."""
    if df.empty:
        return df
    return df[df["varied"].map(lambda names: set(names or ()) <= {setting})]


def shown_delta(epsilon: float | None, delta: float | None) -> float | None:
    """The delta that goes with an epsilon: none without an epsilon or at epsilon inf (no guarantee; runs record
    their config's delta all the same), 0 at epsilon 0 (public data only)."""
    if epsilon is None or math.isinf(epsilon):
        return None
    return 0.0 if epsilon == 0 else delta


def _damaged_files(run: RunDir, read: dict[str, dict]) -> str:
    """The required files a finished run lacks, or holds garbled (read as {} here), in words; '' when none."""
    names = run.missing_files() + [name for name, value in read.items() if not value and (run.path / name).is_file()]
    return ", ".join(names)


def _build_record(path: Path, source: str) -> dict[str, Any]:
    run = RunDir(path, source=source)
    stored = safe_read(run.config, {})
    cfg = as_dict(stored.get("config"))
    status = safe_read(run.status, {})
    privacy = safe_read(run.privacy, {})
    metrics = safe_read(run.metrics, {})
    # SeqPATE's settings only for SeqPATE runs: every config carries its preset's, and the "all runs" CSV listed
    # Pub-GPT's 1,000 teachers and NoisySGD's query budget as if they had used them
    sp = as_dict(cfg.get("seqpate")) if cfg.get("method") == "seqpate" else {}
    pv = as_dict(cfg.get("privacy"))
    requested = as_float(pv.get("epsilon"))
    accounted = as_float(privacy.get("epsilon"))
    fixed = fixed_epsilon(as_str(cfg.get("method")))
    state = status.get("state") if status.get("state") in store.STATES else "failed"
    error = as_str(status.get("error"))
    if state == "done" and (damaged := _damaged_files(run, {store.CONFIG: stored, store.PRIVACY: privacy,
                                                            store.METRICS: metrics})):
        # failed, as `core runs list` lists it: a done run with a blank method and no metrics joined the tables
        state, error = "failed", f"finished, but {damaged} missing or unreadable since"
    # every ε shown comes from the run's recorded events (privacy.json); the one asked for stands in only while the
    # run has not written them yet: a finished run without them has no guarantee to show
    asked = requested if state in ACTIVE_STATES else None
    epsilon = accounted if accounted is not None else fixed if fixed is not None else asked
    elapsed, remaining = timing(status)
    timings = as_dict(metrics.get("timings"))
    base_model = as_dict(metrics.get("base_model"))
    varied = variant_settings(cfg)
    return {
        "run_id": run.run_id,
        "source": source,
        "state": state,
        "stage": as_str(status.get("stage")),
        "progress": as_float(status.get("progress")) or 0.0,
        "error": error,
        "method": as_str(cfg.get("method")),
        "preset": as_str(cfg.get("preset")),
        "seed": as_int(cfg.get("seed", stored.get("seed"))),
        # before privacy.json exists: the epsilon the run is calibrated for, or the one no setting changes
        "epsilon": epsilon,
        "epsilon_target": requested if fixed is None else None,  # a fixed-ε method ignores its config's ε
        # phrase-avg: calibrated on name phrases (a fixed-ε method calibrates nothing)
        "privacy_target": (as_str(pv.get("target")) or "sample") if fixed is None else "sample",
        "delta": shown_delta(epsilon, as_float(privacy.get("delta")) if privacy else as_float(pv.get("delta"))),
        "accountant": as_str(privacy.get("accountant")),
        "unit": as_str(privacy.get("unit")),
        "has_privacy": bool(privacy),
        "ppl": as_float(metrics.get("ppl")),
        "bleu1": as_float(metrics.get("bleu1")),
        "bleu2": as_float(metrics.get("bleu2")),
        "bleu3": as_float(metrics.get("bleu3")),
        "bleu4": as_float(metrics.get("bleu4")),
        "r_name": as_float(metrics.get("r_name")),
        # how much the leak rate can show: the private names it looks for, the test references holding one
        "r_name_names": as_float(as_dict(metrics.get("r_name_counts")).get("names")),
        "r_name_references": as_float(as_dict(metrics.get("r_name_counts")).get("references_with_name")),
        "teachers": as_int(sp.get("teachers")),
        "filter": as_str(sp.get("filter")),
        "partition": as_str(sp.get("partition")),
        "ablation": (as_str(sp.get("ablation")) or "none") if sp else None,  # None: not a SeqPATE run
        "variant": variant_label(varied),
        "varied": tuple(varied),  # the names only, for only_varies
        "query_budget": as_int(privacy.get("query_budget", sp.get("query_budget"))),
        "queries_spent": as_int(privacy.get("queries_spent")),
        "teachers_per_user": as_dict(privacy.get("teachers_per_user")) or None,
        "has_phrases": (path / store.PHRASES).is_file(),
        "has_completions": (path / store.COMPLETIONS).is_file(),
        "config_hash": as_str(stored.get("config_hash")),
        # copies of one run: equal where the configs differ only in fields the method never reads
        "effective_hash": effective_hash(cfg) if cfg else as_str(stored.get("config_hash")),
        "created": as_str(status.get("created")) or as_str(stored.get("created")),
        "started": as_str(status.get("started")),
        "finished": as_str(status.get("finished")),
        "elapsed_s": elapsed,
        "remaining_s": remaining,
        "total_s": as_float(timings.get("total_s")),
        # where it computes (SEQPATE_DEVICE), known once it started; runs from before the GPU path all ran on the CPU
        "device": as_str(status.get("device")) or as_str(metrics.get("device")) or ("cpu" if metrics else None),
        "base_weights": as_str(base_model.get("weights_sha256")),  # runs since 2026-11-25
        "base_cached": base_model.get("cached"),  # False: the run trained its base model
    }


# st.cache_data hashes every argument on every call (about 1 ms per run for a tuple of file signatures), so the
# cache key is made here as one short string and the inputs travel in underscore arguments, which it skips.


def _digest(obj: Any) -> str:
    return hashlib.blake2b(repr(obj).encode(), digest_size=16).hexdigest()


@st.cache_data(show_spinner=False, max_entries=5000)
def _cached_record(key: str, _path: str, _source: str) -> dict[str, Any]:
    return _build_record(Path(_path), _source)


@st.cache_data(show_spinner=False, max_entries=64)
def _cached_records(key: str, _items: tuple[tuple[str, str, str], ...]) -> list[dict[str, Any]]:
    return [_cached_record(item_key, path, source) for path, source, item_key in _items]


def run_record(info: RunInfo) -> dict[str, Any]:
    """One flat row per run: config, status, privacy and metrics fields the pages need."""
    key = _digest((str(info.path), info.source, file_signature(info.path)))
    return _fresh_times(_cached_record(key, str(info.path), info.source), info)


def _fresh_times(record: dict[str, Any], info: RunInfo) -> dict[str, Any]:
    """The cached record as listed now: its times moved on while it runs, its id as list_infos names it."""
    if record["state"] in ACTIVE_STATES:  # times move on even when no file changed
        status = safe_read(info.run_dir.status, {})
        record = {**record}
        record["elapsed_s"], record["remaining_s"] = timing(status)
    return record if record["run_id"] == info.run_id else {**record, "run_id": info.run_id}


def run_records(infos: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """run_record for many runs with one cache lookup when nothing changed (the usual page load)."""
    items = tuple((str(i.path), i.source, _digest((str(i.path), i.source, file_signature(i.path)))) for i in infos)
    records = _cached_records(_digest(items), items)
    fresh = [_fresh_times(record, info) for record, info in zip(records, infos, strict=True)]
    return _paced(fresh, infos) if any(r["state"] == "running" for r in fresh) else fresh


def _paced(records: list[dict[str, Any]], infos: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """Running runs' remaining times paced on a finished run of their kind (choose_pace among pace_runs), which is
    named; a progress.jsonl that does not read counts as empty (a damaged reference paces nothing)."""
    out = []
    for record, info in zip(records, infos, strict=True):
        if record["state"] == "running":
            status = safe_read(info.run_dir.status, {})
            lines = safe_read(lambda info=info: read_run(info.run_dir, "progress"), [])
            trains = trains_its_base(lines)
            kin = pace_runs(record, records, trains)
            references = ((records[ref]["run_id"], safe_read(lambda ref=ref: read_run(infos[ref].run_dir, "progress"), []),
                           records[ref]["started"]) for ref in kin)
            pace = choose_pace(as_float(status.get("progress")) or 0.0, lines, status.get("started"), references)
            record = {**record, "trains_base": trains, "has_kin": bool(kin), "method_start": method_start(lines),
                      "method_begun": method_began(lines, status.get("started")) is not None}
            if pace is not None:
                record.update(paced_on=pace.run_id, paced_start=pace.ref_start, paced_took_s=pace.ref_took)
                record["elapsed_s"], record["remaining_s"] = timing(status, profile=pace.profile, origin=pace.origin)
        out.append(record)
    return out


RECORD_COLUMNS = (
    "run_id", "source", "state", "stage", "progress", "error", "method", "preset", "seed", "epsilon",
    "epsilon_target", "privacy_target", "delta", "accountant", "unit", "has_privacy", "ppl", "bleu1", "bleu2", "bleu3", "bleu4",
    "r_name", "r_name_names", "r_name_references",
    "teachers", "filter", "partition", "ablation", "variant", "varied", "query_budget", "queries_spent",
    "teachers_per_user", "has_phrases", "has_completions", "config_hash", "effective_hash", "created", "started", "finished",
    "elapsed_s", "remaining_s", "total_s", "base_weights", "base_cached",
)


def runs_frame(infos: Sequence[RunInfo] | None = None) -> pd.DataFrame:
    """A DataFrame of run_record rows (empty with the right columns when there are no runs)."""
    infos = list_infos() if infos is None else infos
    rows = run_records(infos)
    if not rows:
        return pd.DataFrame(columns=list(RECORD_COLUMNS))
    return pd.DataFrame(rows)


def finished_frame(df: pd.DataFrame | None = None) -> pd.DataFrame:
    df = runs_frame() if df is None else df
    if df.empty:
        return df
    return df[df["state"] == "done"].reset_index(drop=True)


def main_preset(df: pd.DataFrame) -> str | None:
    """The preset with the most finished runs (ties: tiny < quick < paper order)."""
    if df.empty or df["preset"].dropna().empty:
        return None
    counts = df["preset"].value_counts()
    order = {name: i for i, name in enumerate(PRESETS)}
    return sorted(counts.index, key=lambda p: (-counts[p], order.get(p, 99)))[0]


# The last preset and seed chosen on any page (session-wide), which the other pages' pickers open on.
LAST_PRESET = "_last_preset"  # also followed by Launch (launch_settings.init_launch_settings)
_LAST_SEED = "_last_seed"


def remember_shared(key: str, shared: str) -> None:
    st.session_state[shared] = st.session_state[key]


def preset_picker(df: pd.DataFrame, key: str, label: str = "Preset", include_all: bool = False) -> str | None:
    """A selectbox of the presets present in df, defaulting to the one with the most runs."""
    presets = sorted(df["preset"].dropna().unique(), key=lambda p: list(PRESETS).index(p) if p in PRESETS else 99)
    if not presets:
        return None
    options = (["all"] if include_all else []) + list(presets)
    return carried_picker(label, options, main_preset(df), key, LAST_PRESET,
                          help="Runs are only comparable within one preset (same data sizes and model).")


_OPENED_LINK = "_opened_link"  # the URL's parameters when the session opened the app


def opened_link_value(key: str) -> str | None:
    """The value a link named for this page's picker `key`, once: the URL's parameters are kept as the session
    opened the app, and each is handed out one time. So a link's value is judged on opening it, and a parameter the
    page itself wrote (a seed chosen, then left behind by a preset with one seed) is never taken for a link."""
    if _OPENED_LINK not in st.session_state:
        st.session_state[_OPENED_LINK] = st.query_params.to_dict()
    return st.session_state[_OPENED_LINK].pop(key, None)


def carried_picker(label: str, options: list, default: Any, key: str, shared: str, help: str) -> Any:
    """A selectbox bound to the URL (a choice made on the page, or named by a link, is in the URL, so a link shows
    the same runs) that opens on the choice last made on another page (session_state[shared]) where this page has
    it, else on default. A value carried from another page stays out of the URL: Streamlit writes a bound widget's
    value there only once the reader changes it, and refuses st.query_params for it."""
    last = st.session_state.get(shared)
    opening = last if last in options else default if default in options else options[0]
    linked = opened_link_value(key)  # Streamlit drops a link's value that is not an option, without a word
    choice = st.selectbox(label, options, index=options.index(opening), key=key, bind="query-params",
                          on_change=remember_shared, args=(key, shared), help=help)
    if linked is not None and linked != str(choice):
        st.warning(f"The link's {key}={linked} is not one of this page's choices "
                   f"({', '.join(str(o) for o in options)}): showing {choice}.", icon=":material/link_off:")
    if key in st.query_params:  # set by a link: no on_change is called, yet the other pages should follow it
        st.session_state[shared] = choice
    return choice


EVERY_SEED = "every seed (mean)"


def seeds_of(df: pd.DataFrame) -> list[int]:
    """The seeds of the runs in df, lowest first (a run with no recorded seed has none)."""
    return sorted({int(s) for s in df["seed"].dropna()}) if not df.empty and "seed" in df else []


def same_seed(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two runs of the same recorded seed (runs without one match each other only)."""
    sa, sb = a.get("seed"), b.get("seed")
    return int(sa) == int(sb) if present(sa) and present(sb) else not present(sa) and not present(sb)


def compare_partner(records: Sequence[dict[str, Any]], a: int = 0) -> int:
    """Run B's default beside run A (records[a]): another run of A's preset and seed (whose test sentences are A's,
    so that their perplexities compare), of A's kind (text generation or synthetic data), for a run made here the
    shipped run of its config (another base model: what the pages show in its place; of several shipped copies the
    one whose id sorts first, as distinct_configs and REPORT.md keep), finished, of A's method; each preference in
    that order, then the first listed."""
    first = records[a]

    def shipped_copy(r: dict[str, Any]) -> bool:
        return (first.get("source") != "cached" and r.get("source") == "cached"
                and r.get("effective_hash") is not None and r.get("effective_hash") == first.get("effective_hash"))

    def misfit(i: int) -> tuple:
        r = records[i]
        return (r.get("preset") != first.get("preset") or not same_seed(r, first),
                is_synth_method(r.get("method")) != is_synth_method(first.get("method")), not shipped_copy(r),
                str(r.get("run_id")) if shipped_copy(r) else "", r.get("state") != "done",
                r.get("method") != first.get("method"), i)

    return min((i for i in range(len(records)) if i != a), key=misfit)


def lowest_seed_first(run_ids: Sequence[str], records: dict[str, dict[str, Any]]) -> list[str]:
    """run_ids in their order, the runs of the lowest seed kept first (as REPORT.md's tables; no seed sorts last)."""
    seeds = [records[i].get("seed") for i in run_ids]
    lowest = min((int(x) for x in seeds if present(x)), default=None)
    return sorted(run_ids, key=lambda i: records[i].get("seed") != lowest)  # stable: ties keep their order


def seed_picker(df: pd.DataFrame, key: str, every: bool = True) -> pd.DataFrame:
    """The runs of one seed, the lowest by default (as REPORT.md's tables), or (every=True) of every seed; only asked
    when df holds several. Another seed is another user split and base model (quick's Pub-GPT: 223.8, 198.3, 202.3),
    a spread larger than most gaps between methods, so numbers are compared within a seed unless the reader asks."""
    seeds = seeds_of(df)
    if len(seeds) < 2:  # no picker: a link's seed other than the one these runs have is named, not dropped silently
        linked = opened_link_value(key)
        if linked is not None and [str(s) for s in seeds] != [linked]:
            st.warning(f"The link's {key}={linked} is not a seed of these runs: showing "
                       + (f"seed {seeds[0]}, their only one." if seeds else "them (they record no seed)."),
                       icon=":material/link_off:")
            try:  # and out of the URL, so that a copied link does not carry it on (no widget holds it here)
                del st.query_params[key]
            except Exception:  # noqa: BLE001 (Streamlit refuses it while a widget is bound to the key: kept)
                pass
        return df
    options = [*seeds, EVERY_SEED] if every else seeds
    choice = carried_picker("Seed", options, seeds[0], key, _LAST_SEED,
                            help="Another seed splits the users anew and trains another base model: compare methods "
                                 "within one seed."
                                 + (" 'Every seed' averages the seeds each row has (see its seeds)." if every else
                                    " Another seed's runs completed other test prefixes."))
    return df if choice == EVERY_SEED else df[df["seed"] == choice]


def lazy_tabs(views: dict[str, Callable[[], None]], key: str) -> None:
    """Tabs (label -> function drawing its content) of which only the open one is built and sent.

    A first visit then loads the browser code of the first tab's elements only: plotly.js (4.7 MB) and the data grid
    cost about 1.1 s and 0.3 s of a cold load on 2 cores (benchmarks/RESULTS.md). Switching tabs reruns the page;
    the open tab is kept in the URL, so a link opens it. A closed tab's widgets are not rendered, and Streamlit
    forgets the value of a widget that is not rendered: widgets inside a tab take persist_state="page".
    """
    tabs = st.tabs(list(views), key=key, on_change="rerun", bind="query-params")
    for tab, view in zip(tabs, views.values(), strict=True):
        if tab.open:
            with tab:
                view()


def _cached_reader(kind: str):
    def read(key: str, _path: str, _source: str):
        run = RunDir(Path(_path), source=_source)
        if kind == "completions":
            return run.completions()
        if kind == "phrases":
            return run.phrases()
        if kind == "progress":
            return run.progress()
        if kind == "config":
            return run.config()
        if kind == "privacy":
            return run.privacy()
        if kind == "metrics":
            return run.metrics()
        raise ValueError(kind)

    read.__name__ = f"read_{kind}"
    read.__qualname__ = f"read_{kind}"
    return st.cache_data(show_spinner=False, max_entries=500)(read)


_READERS = {
    kind: _cached_reader(kind) for kind in ("completions", "phrases", "progress", "config", "privacy", "metrics")
}
_FILE_OF = {
    "completions": store.COMPLETIONS, "phrases": store.PHRASES, "progress": store.PROGRESS,
    "config": store.CONFIG, "privacy": store.PRIVACY, "metrics": store.METRICS,
}


def read_run(run: RunDir, kind: str) -> Any:
    """A cached read of one run file (config, privacy, metrics, progress, completions or phrases)."""
    key = _digest((str(run.path), run.source, file_signature(run.path, (_FILE_OF[kind],))))
    return _READERS[kind](key, str(run.path), run.source)


def read_shown(run: RunDir, kind: str) -> Any:
    """read_run for a page: a damaged file (RunFormatError, e.g. a bad line in completions.jsonl) is named in an
    error on the page and read as empty ([] rows, or None for a JSON file), so the page and the other runs still
    show instead of the page failing."""
    try:
        return read_run(run, kind)
    except RunFormatError as exc:
        st.error(f"{listed_id(run)}: {exc}", icon=":material/error:")
        return [] if kind in ("completions", "phrases", "progress") else None


@st.cache_data(show_spinner=False, max_entries=100)
def _cached_perplexity_comparison(key: str, _runs: tuple[tuple[str, str], ...]) -> tuple[bool, str]:
    from core.runs.compare import (  # scipy.stats: only when both runs have the file
        NotComparableError,
        compare_runs,
    )

    run_a, run_b = (RunDir(Path(path), source=source) for path, source in _runs)
    try:
        return True, compare_runs(run_a, run_b).summary()
    except (NotComparableError, RunError) as exc:
        return False, str(exc)


def perplexity_comparison(run_a: RunDir, run_b: RunDir) -> tuple[bool, str] | None:
    """(comparable, sentence): the paired-bootstrap test-perplexity comparison of two runs, or None when either
    kept no per-sentence NLL (runs written before test_nll.csv existed, e.g. the shipped ones)."""
    runs = (run_a, run_b)
    if not all(run.file(store.TEST_NLL).is_file() for run in runs):
        return None
    key = _digest([(str(r.path), r.source, file_signature(r.path, (store.TEST_NLL, store.CONFIG))) for r in runs])
    return _cached_perplexity_comparison(key, tuple((str(r.path), r.source) for r in runs))


def has_model(run: RunDir) -> bool:
    """The run kept its final weights (run/model/), so it can complete a prefix the user types."""
    return (run.path / store.MODEL / "config.json").is_file()


class CompletionFailed(RuntimeError):
    """`python -m core complete` gave no answer; raised inside the cached function so a failure is not cached."""


@st.cache_data(show_spinner=False, max_entries=200)
def _cached_own_completions(key: str, _paths: tuple[str, ...], prefix: str, seed: int) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "core", "complete", *_paths, "--prefix", prefix, "--seed", str(seed)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=registry.REPO_ROOT)
    except subprocess.TimeoutExpired:
        raise CompletionFailed("no answer within 5 minutes") from None
    if proc.returncode != 0:
        raise CompletionFailed((proc.stderr.strip().splitlines() or ["python -m core complete failed"])[-1])
    return json.loads(proc.stdout)


def complete_own_prefix(runs: Sequence[RunDir], prefix: str, seed: int = 0) -> dict[str, dict[str, Any]]:
    """run id -> {"completion"} or {"error"}: `python -m core complete` in a subprocess, so the dashboard never
    imports torch (it loads each run's saved model: a few seconds). Cached on the runs' weights and the prefix."""
    paths = tuple(str(run.path) for run in runs)
    key = _digest([(p, file_signature(Path(p), (f"{store.MODEL}/model.safetensors",))) for p in paths])
    try:
        rows = _cached_own_completions(key, paths, " ".join(prefix.split()), seed)
    except CompletionFailed as exc:
        rows = [{"run": run.run_id, "error": str(exc)} for run in runs]
    return {row["run"]: row for row in rows}


def run_config_dict(run: RunDir) -> dict[str, Any]:
    return (read_run(run, "config") or {}).get("config") or {}


def read_report() -> str | None:
    """cached_runs/REPORT.md (the report on the shipped runs), if present."""
    path = registry.cached_root() / "REPORT.md"
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


# ----------------------------------------------------------------------------------------------------------------
# Configs: flatten, diff, relaunch
# ----------------------------------------------------------------------------------------------------------------


flatten = flatten_config  # the pages' name for it


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> pd.DataFrame:
    """Only the fields whose values differ (a field missing on one side counts as different), each with the runs
    whose method never reads it (core.config.effective_config), so that a difference that shaped neither run, or
    only one, reads as such: SeqPATE's partition set apart from a NoisySGD run's unread one."""
    fa, fb = flatten(a), flatten(b)
    read_a, read_b = set(flatten(effective_config(a))), set(flatten(effective_config(b)))
    rows = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, "(absent)"), fb.get(key, "(absent)")
        if va != vb and not (is_nan(va) and is_nan(vb)):
            unread = [name for name, flat, read in (("A", fa, read_a), ("B", fb, read_b))
                      if key in flat and key not in read]
            rows.append({"field": key, "A": _cell(va), "B": _cell(vb),
                         "never read by": " and ".join(unread)})
    return pd.DataFrame(rows, columns=["field", "A", "B", "never read by"])


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _cell(value: Any) -> str:
    return "null" if value is None else '""' if value == "" else str(value)  # an empty cell would read as missing


def validated_config(config: dict[str, Any]) -> RunConfig:
    """A stored config dict as a validated RunConfig (ConfigError with one line otherwise)."""
    try:
        return validate(RunConfig.from_dict(config))
    except TypeError as exc:
        raise ConfigError(f"config no longer matches the engine: {exc}") from None


# ----------------------------------------------------------------------------------------------------------------
# Privacy math (lazy: core.privacy pulls autodp/scipy, about 1.5 s on a cold start)
# ----------------------------------------------------------------------------------------------------------------


_WARMED = threading.Event()


def warm_privacy_import() -> None:
    """Import core.privacy (scipy, autodp: 1-2 s) in a background thread, once per server process, so the first
    visit to Launch or Calculator does not wait for it. Plain imports only: no st.* call from the thread."""
    if _WARMED.is_set():
        return
    _WARMED.set()

    def work() -> None:
        try:
            _privacy()
        except Exception:  # noqa: BLE001 (the page that needs it reports the real error)
            pass

    threading.Thread(target=work, name="warm-core-privacy", daemon=True).start()


def _privacy():
    import core.privacy as privacy  # lazy: autodp and scipy take 1-2 s to import

    return privacy


@st.cache_data(show_spinner="Partitioning the private users by user…", max_entries=64)
def by_user_partition(data_json: str, seed: int, teachers: int) -> dict[str, Any]:
    """What a by-user SeqPATE run will record before training: its teachers-per-user histogram (Table 5), the
    number of private train users and the engine's crowding note, from the same data and partition (about 2 s on
    quick; no torch). ValueError where the partition is impossible (more teachers than sentences)."""
    from core.data import load_prepared
    from core.seqpate.partition import crowding_note, partition_by_user, teachers_per_user

    data = RunConfig.from_dict({"data": json.loads(data_json)}).data
    users = [s.user_id for s in load_prepared(data, seed).private_train]
    histogram = teachers_per_user(users, partition_by_user(users, teachers, seed))
    return {"histogram": histogram, "users": len(set(users)), "note": crowding_note(teachers, histogram)}


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_noise(epsilon: float, delta: float, queries: int) -> dict[str, float]:
    """Noise multiplier z (std / L2 sensitivity) and std = z * sqrt(2) for Q Gaussian releases (SeqPATE)."""
    privacy = _privacy()
    z = privacy.gaussian_noise_multiplier(float(epsilon), float(delta), int(queries))
    return {"z": z, "std": z * privacy.SEQPATE_L2_SENSITIVITY}


@st.cache_data(show_spinner=False, max_entries=500)
def seqpate_laplace_scale(epsilon: float, delta: float, queries: int) -> float:
    """Laplace scale b for Q releases with L1 sensitivity 2 (SeqPATE's -gaussian and -all ablations; PLD)."""
    privacy = _privacy()
    return privacy.laplace_scale(float(epsilon), float(delta), int(queries), privacy.SEQPATE_L1_SENSITIVITY)


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_epsilon(noise_std: float, queries: int, delta: float) -> float:
    privacy = _privacy()
    return privacy.epsilon_for_gaussian(float(noise_std), int(queries), float(delta), privacy.SEQPATE_L2_SENSITIVITY)


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_max_queries(epsilon: float, delta: float, noise_std: float) -> int:
    """Most Gaussian releases with this std that stay within (epsilon, delta): Q = floor((z / z_1)^2)."""
    z1 = _privacy().gaussian_noise_multiplier(float(epsilon), float(delta), 1)
    z = float(noise_std) / _privacy().SEQPATE_L2_SENSITIVITY
    if z1 <= 0:
        return 0
    q = int(math.floor((z / z1) ** 2 * (1 + 1e-12)))
    while q > 1 and seqpate_epsilon(noise_std, q, delta) > epsilon:
        q -= 1
    return max(q, 0)


@st.cache_data(show_spinner=False, max_entries=500)
def dpsgd_noise(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    return _privacy().dpsgd_noise_multiplier(float(epsilon), float(delta), float(sampling_rate), int(steps))


def poisson_shape(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sampling rate q, steps) of a Poisson DP-SGD run, as the runs compute them (core.privacy.poisson_shape)."""
    return _privacy().poisson_shape(int(n), int(batch_size), int(epochs))


@st.cache_data(show_spinner=False, max_entries=500)
def dpsgd_eps(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    return _privacy().dpsgd_epsilon(float(noise_multiplier), float(sampling_rate), int(steps), float(delta))


# ----------------------------------------------------------------------------------------------------------------
# Phrase highlighting
# ----------------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------------
# Small UI helpers
# ----------------------------------------------------------------------------------------------------------------


def as_shown(value: float, decimals: int) -> float:
    """The number a box with format %.<decimals>f shows: JavaScript's toFixed rounds the exact binary value half
    up (2.5 -> 3, 0.125 -> 0.13), where Python's round and % round half to even."""
    if not abs(value) < 2**53:  # whole already (Decimal's 28 digits could not quantize 1e30 either)
        return value
    return float(Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


# What a number box takes at all: below 2^53 (JavaScript's exact whole numbers), above every bound a page checks.
BOX_LIMIT = 1e15


def _range_error(label: str, number: float, min_value: float | None, max_value: float | None,
                 decimals: int) -> str | None:
    """Why a box's number is out of its range, or None."""
    def shown(value: float) -> str:
        return f"{value:,.{decimals}f}"

    if (min_value is not None and number < min_value) or (max_value is not None and number > max_value):
        if min_value is not None and max_value is not None:
            return f"{label} must be from {shown(min_value)} to {shown(max_value)}, got {shown(number)}"
        bound = f"at least {shown(min_value)}" if min_value is not None else f"at most {shown(max_value)}"
        return f"{label} must be {bound}, got {shown(number)}"
    return None


# px: st.metric's value font fits 7 characters ("0.09764") and a label such as "noise multiplier z" with its help
METRIC_WIDTH = 160


def wrapping_row() -> Any:
    """A row of fixed-width elements (metrics of METRIC_WIDTH, Launch's fields) that wraps on a narrow screen:
    equal st.columns kept four or five side by side at 900 px and cut the numbers the Launch page and the
    Calculator exist to show to "69…"."""
    return st.container(horizontal=True, wrap=True)


def metric(row: Any, label: str, value: str, help: str | None = None) -> None:
    """One metric of a wrapping_row; a value too long for METRIC_WIDTH (the Calculator's 10^12 queries) as wide as
    it needs, rather than cut to '1,000,00…'."""
    row.metric(label, value, help=help, width=METRIC_WIDTH if len(value) <= 8 else "content")


def float_input(where: Any, label: str, *, decimals: int = 2, min_value: float | None = None,
                max_value: float | None = None, **kwargs: Any) -> float | None:
    """st.number_input whose value is the number it shows: Streamlit shows a float box through its format but
    returns what was typed, so a typed ε 0.015 showed 0.01 and was used as 0.015, and top-p 0.999 showed 1.00.

    The range is checked here, not by the box: given min/max, Streamlit's box turns red at a number outside them
    and keeps the last one without a word (a typed 0 teachers launched the preset's 10). A number outside
    [min_value, max_value] is named in an error under the box and read as None; the box itself only refuses what
    no page could use (beyond ±BOX_LIMIT, e.g. 1e400)."""
    number = where.number_input(label, format=f"%.{decimals}f", min_value=-BOX_LIMIT, max_value=BOX_LIMIT, **kwargs)
    if number is None:
        return None
    number = as_shown(number, decimals)
    if problem := _range_error(label, number, min_value, max_value, decimals):
        where.error(problem, icon=":material/error:")
        return None
    return number


def search_key(text: str) -> str:
    """Text as a search compares it: lower case, typographic quotes as plain ones, runs of spaces as one (a typed
    "i’m" found none of the prefixes that say "I'm")."""
    text = text.translate(str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'}))
    return " ".join(text.lower().split())


def count_input(where: Any, label: str, *, min_value: int | None = 1, max_value: int | None = None, step: int = 1,
                **kwargs: Any) -> int | None:
    """st.number_input for a whole number that reads what was typed. Streamlit parses a whole-number box with
    parseInt, so a typed 1e9 became 1 (the Calculator then answered for one query, and 1e3 teachers launched one);
    a float box that shows no decimals reads 1e9 as 10^9. Its value is the whole number it shows; one outside
    [min_value, max_value] is named under the box and read as None (float_input)."""
    if kwargs.get("value") is not None:
        kwargs["value"] = float(kwargs["value"])
    number = float_input(where, label, decimals=0, min_value=None if min_value is None else float(min_value),
                         max_value=None if max_value is None else float(max_value), step=float(step), **kwargs)
    return None if number is None else int(number)


def epsilon_input(where: Any, label: str = "ε", *, key: str, default: str = "3", **kwargs: Any) -> float | None:
    """ε typed as text, as on the Launch page, with the engine's range (MIN_EPSILON to MAX_EPSILON); None (with
    the reason shown) when it is not usable. A number box of 2 decimals turned a typed 0.005 into 0.01 and 2.345
    into 2.35, so the Calculator answered for another ε than Launch did."""
    text = where.text_input(label, value=default, key=key, **kwargs)
    try:
        epsilon = parse_number(text, "ε")
        check_epsilon_range(epsilon, "ε")
    except ConfigError as err:
        where.error(str(err))
        return None
    if math.isinf(epsilon):  # in range for a run (no noise), but nothing for a calculator to compute
        where.error("ε = ∞ means no noise: there is nothing to calculate.")
        return None
    return epsilon


def delta_input(where: Any, label: str = "δ", *, key: str, default: str = "1e-6", **kwargs: Any) -> float | None:
    """δ typed as text, as on the Launch page ('1e-6'), checked against the range the engine honours; None (with
    the reason shown) when it is not usable. A number box showed 1.26e-7 as 1.3e-7 and its steppers jumped."""
    text = where.text_input(label, value=default, key=key, **kwargs)
    try:
        delta = parse_number(text, "δ", allow_inf=False)
        check_delta_range(delta, "δ")
    except ConfigError as err:
        where.error(str(err))
        return None
    return delta


def no_runs(what: str = "finished runs") -> None:
    st.info(f"No {what} yet. Start one on the Launch page, or put finished runs in "
            f"`{registry.cached_root()}`.", icon=":material/hourglass_empty:")


def run_option_label(record: dict[str, Any], live: bool = False) -> str:
    """Label of a run in a selectbox; live=True leaves out what changes while a run goes on (state, accounted ε),
    since a selectbox does not redraw the label of the option already chosen."""
    if live:
        return f"{record['run_id']}  ·  {method_label(record.get('method'))}"
    eps = fmt_eps(record.get("epsilon"))
    seed = f"  ·  {seed_label(record)}" if seed_label(record) else ""
    return f"{record['run_id']}  ·  {method_label(record.get('method'))}  ·  ε={eps}{seed}  ·  {record.get('state')}"


def seed_label(record: dict[str, Any]) -> str:
    """"seed N" for a run of a seed other than the default 0, else ""."""
    seed = record.get("seed")
    return f"seed {int(seed)}" if present(seed) and int(seed) != 0 else ""


def csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode("utf-8")

