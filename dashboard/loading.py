"""Runs as the pages see them: one flat record per run, cached reads of its files, and the comparisons and
config diffs built on them.

- Runs are read only through core.runs (registry.list_runs, resolve_run(..., allow_paths=False), RunDir readers).
- Reads of run files are cached with st.cache_data keyed on the files' (mtime_ns, size), so a page reload costs a
  few stat() calls per run and a changed file is read again at once.
- Nothing here imports torch: completing a typed prefix runs `python -m core complete` in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.config import (
    OLD_TEACHER_LOSS,
    PRESETS,
    PRIVATE_ONLY_DATA_FIELDS,
    VARIANT_FIELDS,
    ConfigError,
    RunConfig,
    ablation_label,
    effective_config,
    effective_hash,
    fixed_epsilon,
    flatten_config,
    parse_filter,
    shared_noise_streams,
    validate,
    varied_settings,
)
from core.runs import registry, store
from core.runs.registry import RunInfo
from core.runs.store import RunDir, RunError, RunFormatError, plainest_first
from core.runs.values import as_dict, as_float, as_int, as_str, safe_read
from dashboard.estimate import choose_pace, method_began, method_start, pace_runs, timing, trains_its_base
from dashboard.wording import is_nan, is_synth_method, present

ACTIVE_STATES = ("queued", "running")  # a run in these states still changes (its times move on)


# every file a record reads, and every required one (a finished run missing one is failed: RunDir.damaged_files)
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


listed_id = registry.listed_id  # a shipped run whose id a run made here has is suffixed (registry.named_apart)


def list_infos() -> list[RunInfo]:
    """Every live and cached run, newest first (live runs whose process died are marked failed), each id once."""
    return registry.named_apart(registry.list_runs())


def get_run(run_id: str) -> RunDir:
    """A run by id only (as list_infos names it): user input never becomes a path (RunNotFoundError otherwise)."""
    return registry.resolve_run(str(run_id), allow_paths=False)


# Settings whose non-default values make a run an experiment variant (Tables 2-4, App. H) rather than a point of
# the privacy-utility trade-off (Fig. 2), which compares every method at its preset's defaults. They are named by
# their field alone; any other setting a run changes (a learning rate, a delta) makes it a variant too, named
# section.field, so a run at other settings is never averaged with the defaults.
_SHORT_NAMES = {key: key.split(".", 1)[1] for key in VARIANT_FIELDS}  # core.config.VARIANT_FIELDS


def is_setup_setting(key: str) -> bool:
    """Whether a setting (section.field) makes another data set or base model, rather than a variant of a method on
    them: runs are compared within one setup (widgets.setup_picker), as within one preset. Canaries are a variant:
    the same users, with secrets added to one of them."""
    section, _, name = key.partition(".")
    return section == "model" or (section == "data" and name not in PRIVATE_ONLY_DATA_FIELDS)


def setup_label(cfg: dict[str, Any]) -> str:
    """The data set and base model a run was made on: its corpus ('chitchat', or the file's path), and the setup
    settings it changes from its preset (e.g. '/data/air.json · data.private_train 750, model.source /ck'). A
    synthetic-data run's labelled texts are its synth section's corpus."""
    corpus = (as_str(as_dict(cfg.get("data")).get("corpus")) or as_str(as_dict(cfg.get("synth")).get("corpus"))
              or "chitchat")
    others = [f"{key} {value}" for key, value in varied_settings(cfg).items()
              if is_setup_setting(key) and key != "data.corpus"]
    base_model = as_str(as_dict(as_dict(cfg.get("base")).get("model")).get("source"))  # a synthetic-data run's
    if base_model not in (None, "tiny"):
        others.append(f"model.source {base_model}")
    return corpus + (f" · {', '.join(others)}" if others else "")


def variant_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The settings the method reads whose value differs from the run's preset default, name -> value ({} at the
    defaults; core.config.varied_settings), setup settings aside (setup_label): VARIANT_FIELDS first, by their short
    names, then any other as section.field."""
    varied = {key: value for key, value in varied_settings(cfg).items() if not is_setup_setting(key)}
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


def at_defaults(df: pd.DataFrame) -> pd.DataFrame:
    """Runs at their preset's defaults: no setting varied (an ablation, another filter or target is a variant)."""
    return df if df.empty else df[df["variant"].fillna("") == ""]


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


def base_digest(base_model: dict[str, Any]) -> str | None:
    """What names a run's base model: its weights' digest, and a GPT-2 checkout's tokenizer digest beside it."""
    weights, tokenizer = as_str(base_model.get("weights_sha256")), as_str(base_model.get("tokenizer_sha256"))
    return f"{weights} (tokenizer {tokenizer})" if weights and tokenizer else weights


def _build_record(path: Path, source: str) -> dict[str, Any]:
    """One run as the pages read it (RECORD_COLUMNS): where it is, its ε, its scores, its SeqPATE settings and
    its times, from its config, status, privacy and metrics files (each read once; a damaged one counts as empty)."""
    run = RunDir(path, source=source)
    stored = safe_read(run.config, {})
    cfg = as_dict(stored.get("config"))
    status = safe_read(run.status, {})
    privacy = safe_read(run.privacy, {})
    metrics = safe_read(run.metrics, {})
    # SeqPATE's settings only for SeqPATE runs: every config carries its preset's, and the "all runs" CSV listed
    # Pub-GPT's 1,000 teachers and NoisySGD's query budget as if they had used them
    sp = as_dict(cfg.get("seqpate")) if cfg.get("method") == "seqpate" else {}
    # as `core runs list` gives them: a damaged record makes a finished run failed, an unreadable status.json is
    # named as the error (the page said "Failed at stage ?: no error recorded")
    info = registry.run_info(run)
    seed = as_int(cfg.get("seed", stored.get("seed")))
    return {
        "run_id": run.run_id,
        "source": source,
        "state": info.state,
        "stage": info.stage,
        "progress": as_float(status.get("progress")) or 0.0,
        "error": info.error,
        "method": as_str(cfg.get("method")),
        "preset": as_str(cfg.get("preset")),
        # runs on two corpora completed different test sentences: the pages compare within one setup
        "setup": setup_label(cfg),
        "seed": seed,
        **_privacy_fields(cfg, privacy, info.state, seed, sp),
        **_metric_fields(metrics),
        **_seqpate_fields(cfg, sp, privacy, metrics),
        "has_phrases": (path / store.PHRASES).is_file(),
        "has_completions": (path / store.COMPLETIONS).is_file(),
        "config_hash": as_str(stored.get("config_hash")),
        # copies of one run: equal where the configs differ only in fields the method never reads
        "effective_hash": effective_hash(cfg) if cfg else as_str(stored.get("config_hash")),
        **_time_fields(status, stored, metrics),
    }


def _privacy_fields(cfg: dict[str, Any], privacy: dict[str, Any], state: str, seed: int | None,
                    sp: dict[str, Any]) -> dict[str, Any]:
    """ε and δ as the pages show them: every ε comes from the run's recorded events (privacy.json); the one asked
    for stands in only while the run has not written them yet (a finished run without them has no guarantee to
    show), and a method whose ε no setting changes (the references) shows that one."""
    pv = as_dict(cfg.get("privacy"))
    requested = as_float(pv.get("epsilon"))
    accounted = as_float(privacy.get("epsilon"))
    fixed = fixed_epsilon(as_str(cfg.get("method")))
    asked = requested if state in ACTIVE_STATES else None
    epsilon = accounted if accounted is not None else fixed if fixed is not None else asked
    return {
        "epsilon": epsilon,
        "epsilon_target": requested if fixed is None else None,  # a fixed-ε method ignores its config's ε
        # phrase-avg: calibrated on name phrases (a fixed-ε method calibrates nothing)
        "privacy_target": (as_str(pv.get("target")) or "sample") if fixed is None else "sample",
        "delta": shown_delta(epsilon, as_float(privacy.get("delta")) if privacy else as_float(pv.get("delta"))),
        "accountant": as_str(privacy.get("accountant")),
        "unit": as_str(privacy.get("unit")),
        "has_privacy": bool(privacy),
        # made before its noise had a stream of its own, and shared one: its ε is a measurement, not a proven bound
        "shared_streams": shared_noise_streams(as_str(cfg.get("method")) or "", privacy, seed or 0,
                                               as_int(sp.get("teachers")) or 0),
    }


def _metric_fields(metrics: dict[str, Any]) -> dict[str, Any]:
    """Perplexity, BLEU-1..4 and the name leak rate, with how much the leak rate can show."""
    counts = as_dict(metrics.get("r_name_counts"))
    return {
        **{key: as_float(metrics.get(key)) for key in ("ppl", "bleu1", "bleu2", "bleu3", "bleu4", "r_name")},
        # the private names it looks for, the test references holding one
        "r_name_names": as_float(counts.get("names")),
        "r_name_references": as_float(counts.get("references_with_name")),
    }


def _seqpate_fields(cfg: dict[str, Any], sp: dict[str, Any], privacy: dict[str, Any],
                    metrics: dict[str, Any]) -> dict[str, Any]:
    """SeqPATE's settings (None for another method) and the setting a run varies from its preset's defaults."""
    varied = variant_settings(cfg)
    variant = variant_label(varied)
    label = ablation_label(as_str(sp.get("ablation")) or "none", metrics) if sp else None
    return {
        "teachers": as_int(sp.get("teachers")),
        "filter": as_str(sp.get("filter")),
        "partition": as_str(sp.get("partition")),
        "ablation": (as_str(sp.get("ablation")) or "none") if sp else None,  # None: not a SeqPATE run
        # its name in result tables (core.config.ablation_label: says which -KL loss a run was made with)
        "ablation_label": label,
        "variant": variant,  # the setting it varies
        # ... as tables and exports name the row: a -kl or -all run made with the earlier -KL loss says so
        "variant_shown": variant + (f" ({OLD_TEACHER_LOSS})" if OLD_TEACHER_LOSS in (label or "") else ""),
        "varied": tuple(varied),  # the names only, for only_varies
        "query_budget": as_int(privacy.get("query_budget", sp.get("query_budget"))),
        "queries_spent": as_int(privacy.get("queries_spent")),
        "teachers_per_user": as_dict(privacy.get("teachers_per_user")) or None,
    }


def _time_fields(status: dict[str, Any], stored: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """When the run was made, started and finished, how long it took and has left, where it computed, and the base
    model it stood on."""
    elapsed, remaining = timing(status)
    timings = as_dict(metrics.get("timings"))
    base_model = as_dict(metrics.get("base_model"))
    return {
        "created": as_str(status.get("created")) or as_str(stored.get("created")),
        "started": as_str(status.get("started")),
        "finished": as_str(status.get("finished")),
        "elapsed_s": elapsed,
        "remaining_s": remaining,
        "total_s": as_float(timings.get("total_s")),
        # where it computes (SEQPATE_DEVICE), known once it started; runs from before the GPU path all ran on the CPU
        "device": as_str(status.get("device")) or as_str(metrics.get("device")) or ("cpu" if metrics else None),
        # a checkout's tokenizer with its weights (same weights, another tokenizer: another base)
        "base_weights": base_digest(base_model),
        "base_cached": base_model.get("cached"),  # False: the run trained its base model
        "base_model_s": as_float(timings.get("base_model_s")),  # its training or loading, within total_s
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


def _fresh_times(record: dict[str, Any], info: RunInfo) -> dict[str, Any]:
    """The cached record as listed now: its times moved on while it runs, its id as list_infos names it, and its
    state as list_infos found it (a run whose process is gone reads failed where its folder could not be written:
    a shipped folder, a full disk)."""
    if record["state"] in ACTIVE_STATES and info.state not in ACTIVE_STATES:
        record = {**record, "state": info.state, "error": info.error}
    if record["state"] in ACTIVE_STATES:  # times move on even when no file changed
        status = safe_read(info.run_dir.status, {})
        record = {**record}
        record["elapsed_s"], record["remaining_s"] = timing(status)
    return record if record["run_id"] == info.run_id else {**record, "run_id": info.run_id}


def run_records(infos: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """One flat record per run (config, status, privacy and metrics fields the pages need), with one cache lookup
    when nothing changed (the usual page load)."""
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
                record.update(paced_on=pace.run_id, paced_start=pace.ref_start, paced_took_s=pace.ref_took,
                              paced_from_pseudo=pace.anchor is not None)
                record["elapsed_s"], record["remaining_s"] = timing(status, profile=pace.profile, origin=pace.origin,
                                                                  anchor=pace.anchor)
        out.append(record)
    return out


RECORD_COLUMNS = (
    "run_id", "source", "state", "stage", "progress", "error", "method", "preset", "setup", "seed", "epsilon",
    "epsilon_target", "privacy_target", "delta", "accountant", "unit", "has_privacy", "shared_streams", "ppl", "bleu1", "bleu2", "bleu3", "bleu4",
    "r_name", "r_name_names", "r_name_references",
    "teachers", "filter", "partition", "ablation", "ablation_label", "variant", "variant_shown", "varied", "query_budget", "queries_spent",
    "teachers_per_user", "has_phrases", "has_completions", "config_hash", "effective_hash", "created", "started", "finished",
    "elapsed_s", "remaining_s", "total_s", "device", "base_weights", "base_cached", "base_model_s",
)


def runs_frame(infos: Sequence[RunInfo] | None = None) -> pd.DataFrame:
    """A DataFrame of run_records rows (empty with the right columns when there are no runs)."""
    infos = list_infos() if infos is None else infos
    rows = run_records(infos)
    if not rows:
        return pd.DataFrame(columns=list(RECORD_COLUMNS))
    return pd.DataFrame(rows)


def runs_with_settings(runs: pd.DataFrame, config: dict[str, Any]) -> pd.DataFrame:
    """The runs of `runs` queued, running or done with these settings (fields the method never reads aside,
    core.config.effective_hash): launching the config again adds a copy of them."""
    if runs.empty:
        return runs
    return runs[(runs["effective_hash"] == effective_hash(config)) & runs["state"].isin([*ACTIVE_STATES, "done"])]


def copies_listed(same: pd.DataFrame, most: int = 4) -> str:
    """Run ids of runs_with_settings, shipped or in their state: "`a` (shipped), `b` (done) and 3 more"; a
    -kl or -all run made with the earlier -KL loss says so (the same settings train otherwise now)."""
    def made(r) -> str:
        older = OLD_TEACHER_LOSS in str(r.ablation_label)
        return ("shipped" if r.source == "cached" else r.state) + (
            f"; {OLD_TEACHER_LOSS}, when the -KL cross-entropy was over the candidate set, not the vocabulary as "
            "now" if older else "")

    listed = ", ".join(f"`{r.run_id}` ({made(r)})" for r in same.head(most).itertuples())
    return listed + (f" and {len(same) - most} more" if len(same) > most else "")


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


def seeds_of(df: pd.DataFrame) -> list[int]:
    """The seeds of the runs in df, lowest first (a run with no recorded seed has none)."""
    return sorted({int(s) for s in df["seed"].dropna()}) if not df.empty and "seed" in df else []


def same_seed(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two runs of the same recorded seed (runs without one match each other only)."""
    sa, sb = a.get("seed"), b.get("seed")
    return int(sa) == int(sb) if present(sa) and present(sb) else not present(sa) and not present(sb)


def compare_partner(records: Sequence[dict[str, Any]], a: int = 0) -> int:
    """Run B's default beside run A (records[a]): another run of A's preset, seed and data (setup_label; whose
    test sentences are A's, so that their perplexities compare), of A's kind (text generation or synthetic data),
    for a run made here the shipped run of its config (another base model: what the pages show in its place; of
    several shipped copies the plainest name, as distinct_configs and REPORT.md keep), finished, of A's method;
    each preference in that order, then the first listed."""
    first = records[a]

    def shipped_copy(r: dict[str, Any]) -> bool:
        return (first.get("source") != "cached" and r.get("source") == "cached"
                and r.get("effective_hash") is not None and r.get("effective_hash") == first.get("effective_hash"))

    def misfit(i: int) -> tuple:
        r = records[i]
        other_test_set = (r.get("preset") != first.get("preset") or not same_seed(r, first)
                          or r.get("setup") != first.get("setup"))
        return (other_test_set,
                is_synth_method(r.get("method")) != is_synth_method(first.get("method")), not shipped_copy(r),
                plainest_first(str(r.get("run_id"))) if shipped_copy(r) else (0, ""), r.get("state") != "done",
                r.get("method") != first.get("method"), i)

    return min((i for i in range(len(records)) if i != a), key=misfit)


def lowest_seed_first(run_ids: Sequence[str], records: dict[str, dict[str, Any]]) -> list[str]:
    """run_ids in their order, the runs of the lowest seed kept first (as REPORT.md's tables; no seed sorts last)."""
    seeds = [records[i].get("seed") for i in run_ids]
    lowest = min((int(x) for x in seeds if present(x)), default=None)
    return sorted(run_ids, key=lambda i: records[i].get("seed") != lowest)  # stable: ties keep their order


def _cached_reader(kind: str):
    """A cached reader of one kind of run file: the RunDir method of that name (completions, phrases, ...)."""
    def read(key: str, _path: str, _source: str):
        return getattr(RunDir(Path(_path), source=_source), kind)()

    read.__name__ = f"read_{kind}"
    read.__qualname__ = f"read_{kind}"
    return st.cache_data(show_spinner=False, max_entries=500)(read)


_FILE_OF = {
    "completions": store.COMPLETIONS, "phrases": store.PHRASES, "progress": store.PROGRESS,
    "config": store.CONFIG, "privacy": store.PRIVACY, "metrics": store.METRICS,
}
_READERS = {kind: _cached_reader(kind) for kind in _FILE_OF}


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


def _cell(value: Any) -> str:
    return "null" if value is None else '""' if value == "" else str(value)  # an empty cell would read as missing


def validated_config(config: dict[str, Any]) -> RunConfig:
    """A stored config dict as a validated RunConfig (ConfigError with one line otherwise)."""
    try:
        return validate(RunConfig.from_dict(config))
    except TypeError as exc:
        raise ConfigError(f"config no longer matches the engine: {exc}") from None
