"""Per-phrase epsilon of a run (SeqPATE Sec. 5.3, App. D, F Table 6, M): phrases.csv rows and their summary.

For every secret phrase (core.data.secrets) of the private train set, this run's mechanism gives:
- SeqPATE: the phrase changes the data of the n_s teachers holding it: Gaussian releases with sensitivity
  sqrt(2) * n_s (the run's recorded events, each through group_release); Laplace (ablation -gaussian): L1
  sensitivity 2 * n_s.
  n_s comes from the teacher partition, recomputed from the run's config exactly as core/seqpate/run.py does it.
- DP-SGD (Poisson): group privacy over the n sentences holding it (dpsgd_phrase_epsilon).
- DP-SGD with batching users: one Gaussian per epoch for each fixed batch that holds it
  (user_batched_phrase_epsilon over the per-batch counts).
- non-private runs: inf; public-only runs: 0 (the private data is never used for training).
Every epsilon comes from core.privacy; nothing is typed in. Pure math + numpy: no torch here.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.data.secrets import SecretPhrase
from core.privacy import (
    ACCOUNTANT_EXACT_GAUSSIAN,
    ACCOUNTANT_NONE,
    ACCOUNTANT_PLD,
    GaussianEvent,
    PrivacyReport,
    SubsampledGaussianEvent,
    calibrate_for_average,
    dpsgd_noise_multiplier,
    dpsgd_phrase_epsilon,
    dpsgd_phrase_group_events,
    epsilon_from_events,
    events_from_dicts,
    gaussian_epsilon,
    gaussian_noise_multiplier,
    gaussian_std,
    group_release,
    summarize_phrase_epsilons,
    user_batched_phrase_epsilon,
)
from core.privacy.calibrate import SEQPATE_L2_SENSITIVITY as SEQPATE_L2
from core.seqpate.partition import assign_teachers, teachers_per_user

# dpsgd_phrase_epsilon's coarse pre-pass (fixed 1e-2 grid) costs minutes when a phrase's epsilon is in the
# thousands (n = 100: 76 s of 83 s); above this many occurrences both dominating events are computed directly on
# the accountant's own grid instead (same two bounds, same accountant, min taken: ~6 s).
DIRECT_GROUP_ABOVE = 16

KIND_PUBLIC = "public-only"
KIND_NOT_PRIVATE = "not-private"
KIND_SEQPATE = "seqpate"
KIND_DPSGD = "dpsgd"
KIND_USER_BATCHES = "user-batches"
KIND_UNKNOWN = "unknown"


# ----------------------------------------------------------------------------------------------------------------
# Which mechanism produced this run
# ----------------------------------------------------------------------------------------------------------------


def mechanism_kind(method: str, privacy: dict[str, Any]) -> str:
    """How this run's privacy.json translates to phrases: one of the KIND_* names."""
    eps = privacy.get("epsilon")
    eps = float(eps) if isinstance(eps, (int, float)) else math.nan
    events = privacy.get("events") or []
    if method == "seqpate":
        mech = privacy.get("mechanism", "gaussian")
        if mech == "none" or privacy.get("non_private") or eps == math.inf:
            return KIND_NOT_PRIVATE
        return KIND_SEQPATE
    if eps == math.inf or (privacy.get("unit") == "none" and eps != 0):
        return KIND_NOT_PRIVATE
    if eps == 0 and not events:
        return KIND_PUBLIC
    kinds = {e.get("mechanism") for e in events}
    if kinds == {"subsampled_gaussian"}:
        return KIND_DPSGD
    if kinds == {"gaussian"} and (privacy.get("batching") == "users" or privacy.get("sampling_rate") is None):
        return KIND_USER_BATCHES
    return KIND_UNKNOWN


# ----------------------------------------------------------------------------------------------------------------
# SeqPATE: teachers holding each phrase
# ----------------------------------------------------------------------------------------------------------------


def check_partition(user_ids: Sequence[str], teacher_of: np.ndarray, privacy: dict[str, Any]) -> str:
    """'ok' if the recomputed partition gives the histogram the run recorded, else a one-line reason."""
    recorded = privacy.get("teachers_per_user")
    if not recorded:
        return "not recorded by the run"
    mine = teachers_per_user(list(user_ids), teacher_of)
    same = all(mine.get(k) == recorded.get(k) for k in ("1", "2", "3", ">3"))
    return "ok" if same else f"MISMATCH: recomputed {mine} vs recorded {recorded}"


def teachers_holding(phrases: Sequence[SecretPhrase], teacher_of: np.ndarray) -> list[int]:
    """n_s of every phrase: distinct teachers among the sentences holding it."""
    return [len({int(teacher_of[i]) for i in p.train_indices}) for p in phrases]


# ----------------------------------------------------------------------------------------------------------------
# One phrase's epsilon under each mechanism
# ----------------------------------------------------------------------------------------------------------------


def seqpate_phrase_report(privacy: dict[str, Any], n_s: int, delta: float) -> PrivacyReport:
    """A phrase in n_s teachers: the run's recorded releases (privacy.json's events) with n_s times their
    sensitivity (App. D), accounted as the run's epsilon was (Laplace releases may fall back to basic
    composition)."""
    # no events is "nothing released" only where the run says so (the oracle records none before its first
    # answer); a file without them is never read as epsilon 0
    if "events" not in privacy or (not privacy["events"] and privacy.get("queries_spent", 0) != 0):
        raise ValueError("privacy.json of a SeqPATE run records no mechanism events; its phrase epsilons cannot be computed")
    events = events_from_dicts(privacy["events"])
    if n_s == 0 or not any(e.count for e in events):
        return PrivacyReport(0.0, delta, ACCOUNTANT_NONE)
    return epsilon_from_events([group_release(e, n_s) for e in events], delta)


def dpsgd_phrase_epsilon_of_events(events: Sequence[SubsampledGaussianEvent], occurrences: int, delta: float) -> float:
    """Group-privacy epsilon of a phrase in `occurrences` sentences, for one or more DP-SGD phases."""
    if occurrences == 0:
        return 0.0
    if len(events) == 1 and occurrences <= DIRECT_GROUP_ABOVE:
        e = events[0]
        return dpsgd_phrase_epsilon(e.noise_multiplier, e.sampling_rate, e.steps, occurrences, delta)
    # each phase is dominated by either of its two group events; use one variant for all phases and keep the
    # smaller of the two totals (both valid upper bounds)
    groups = [dpsgd_phrase_group_events(e.noise_multiplier, e.sampling_rate, e.steps, occurrences) for e in events]
    return min(epsilon_from_events([g[v] for g in groups], delta).epsilon for v in (0, 1))


def user_batches_phrase_epsilon_of_events(events: Sequence[GaussianEvent], counts_per_batch: Sequence[int],
                                          delta: float) -> float:
    """Batching users (App. M): one Gaussian release per epoch per batch; events are the run's GaussianEvents
    (std z*C, sensitivity C, count = epochs)."""
    if not any(counts_per_batch):
        return 0.0
    (e,) = events  # a users-batched run records one event: GaussianEvent(z, 1.0, epochs)
    return user_batched_phrase_epsilon(e.noise_std / e.sensitivity, e.count, list(counts_per_batch), delta)


# ----------------------------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class PhraseTable:
    rows: list[dict[str, Any]]
    kind: str
    info: dict[str, Any]


def phrase_table(
    cfg,
    privacy: dict[str, Any],
    phrases: Sequence[SecretPhrase],
    private_train: Sequence[Any],
    batch_of_sentence: Sequence[int] | None = None,
) -> PhraseTable:
    """phrases.csv rows (phrase, occurrences, users, teachers, epsilon + kind, basis, accountant, ...)."""
    recorded = privacy.get("delta")
    delta = float(recorded) if isinstance(recorded, (int, float)) and 0 < recorded < 1 else cfg.privacy.delta
    kind = mechanism_kind(cfg.method, privacy)
    info: dict[str, Any] = {"mechanism": kind, "delta": delta}
    teacher_counts: list[int | None] = [None] * len(phrases)
    if kind == KIND_SEQPATE or (cfg.method == "seqpate" and kind == KIND_NOT_PRIVATE):
        users = [s.user_id for s in private_train]
        teacher_of = assign_teachers(cfg.seqpate.partition, users, cfg.seqpate.teachers, cfg.seed)
        info["partition"] = cfg.seqpate.partition
        info["partition_check"] = check_partition(users, teacher_of, privacy)
        teacher_counts = list(teachers_holding(phrases, teacher_of))
    events = events_from_dicts(privacy.get("events") or [])
    if kind == KIND_USER_BATCHES and batch_of_sentence is None:
        info["error"] = "batching users: no batch assignment (metrics batch_of_sentence / batches.json) found"
    if kind == KIND_USER_BATCHES and batch_of_sentence is not None and len(batch_of_sentence) != len(private_train):
        info["error"] = (f"batch assignment covers {len(batch_of_sentence)} sentences but private train has "
                         f"{len(private_train)}")
        batch_of_sentence = None

    cache: dict[Any, float] = {}
    rows = []
    for p, n_s in zip(phrases, teacher_counts, strict=True):
        n = p.occurrences
        basis, accountant = "", ""
        if kind == KIND_PUBLIC:
            eps, basis, accountant = 0.0, "public data only", "none (public data only)"
        elif kind == KIND_NOT_PRIVATE:
            eps, basis, accountant = math.inf, "trained without noise", "none (not private)"
        elif kind == KIND_SEQPATE:
            key = ("seqpate", n_s)
            if key not in cache:
                cache[key] = seqpate_phrase_report(privacy, n_s, delta)
            eps, basis, accountant = cache[key].epsilon, f"n_s={n_s} teachers", cache[key].accountant
        elif kind == KIND_DPSGD:
            key = ("dpsgd", n)
            if key not in cache:
                cache[key] = dpsgd_phrase_epsilon_of_events(events, n, delta)
            eps, basis, accountant = cache[key], f"n={n} sentences (group privacy)", ACCOUNTANT_PLD
        elif kind == KIND_USER_BATCHES and batch_of_sentence is not None:
            per_batch = Counter(int(batch_of_sentence[i]) for i in p.train_indices)
            counts = tuple(sorted(per_batch.values(), reverse=True))
            key = ("users", counts)
            if key not in cache:
                cache[key] = user_batches_phrase_epsilon_of_events(events, counts, delta)
            eps = cache[key]
            basis = f"{len(counts)} batch(es) holding {list(counts)}"
            accountant = ACCOUNTANT_EXACT_GAUSSIAN
        else:
            eps, basis, accountant = math.nan, info.get("error", f"no phrase accounting for {kind}"), ""
        rows.append({
            "phrase": p.phrase,
            "occurrences": n,
            "users": len(p.users),
            "teachers": n_s,
            "epsilon": eps,
            "kind": p.kind,
            "inserted": p.inserted if p.kind == "canary" else None,
            "basis": basis,
            "accountant": accountant,
            "contains_private_text": True,
        })
    return PhraseTable(rows, kind, info)


def phrase_summary(rows: Sequence[dict[str, Any]], sample_epsilon: float | None) -> dict[str, Any]:
    """Table 6: avg / min / max / share at or below the average, over all phrases and by kind, plus the share
    at or below the run's sample-level epsilon."""

    def one(sub: Sequence[dict[str, Any]]) -> dict[str, Any]:
        vals = [float(r["epsilon"]) for r in sub if not math.isnan(float(r["epsilon"]))]
        out: dict[str, Any] = dict(summarize_phrase_epsilons(vals))
        if sample_epsilon is not None and vals and not math.isnan(sample_epsilon):
            slack = abs(sample_epsilon) * 1e-9 if math.isfinite(sample_epsilon) else 0.0
            out["share_at_or_below_sample"] = sum(v <= sample_epsilon + slack for v in vals) / len(vals)
        else:
            out["share_at_or_below_sample"] = math.nan
        return out

    summary = one(rows)
    summary["sample_epsilon"] = sample_epsilon
    summary["by_kind"] = {k: one([r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})}
    return summary


# ----------------------------------------------------------------------------------------------------------------
# Calibrating for an AVERAGE phrase epsilon (privacy.target == "phrase-avg")
# ----------------------------------------------------------------------------------------------------------------


def _check_avg_inputs(target_avg: float, values: Sequence[int], what: str) -> list[int]:
    if not (isinstance(target_avg, (int, float)) and 0 < target_avg < math.inf):
        raise ValueError(f"target average epsilon must be finite and > 0, got {target_avg!r}")
    vals = [int(v) for v in values if int(v) > 0]
    if not vals:
        raise ValueError(f"no secret phrase with {what} >= 1: nothing to calibrate the average on")
    return vals


def seqpate_phrase_avg_std(target_avg: float, delta: float, queries: int, teachers_holding: Sequence[int],
                           rtol: float = 1e-4) -> float:
    """SeqPATE Gaussian noise std whose AVERAGE phrase epsilon over Q queries is target_avg (<=, within rtol).

    teachers_holding: n_s of every phrase (phrases in no teacher are left out: they cost nothing). All phrases
    with n_s = 1 give exactly gaussian_std(target_avg, delta, Q).
    """
    ns = _check_avg_inputs(target_avg, teachers_holding, "n_s")
    counts = Counter(ns)
    lo = gaussian_std(target_avg, delta, queries, SEQPATE_L2 * min(ns))  # every phrase >= target
    hi = gaussian_std(target_avg, delta, queries, SEQPATE_L2 * max(ns))  # every phrase <= target
    if hi <= lo * (1 + 1e-12):
        return hi

    def eps_for(std: float) -> list[float]:
        # exact composition: Q releases, sensitivity sqrt(2) n_s -> mu = sqrt(Q) sqrt(2) n_s / std
        out: list[float] = []
        for n, c in counts.items():
            out += [gaussian_epsilon(math.sqrt(queries) * SEQPATE_L2 * n / std, delta)] * c
        return out

    return calibrate_for_average(target_avg, eps_for, lo, hi, rtol=rtol)


def dpsgd_phrase_avg_multiplier(target_avg: float, delta: float, sampling_rate: float, steps: int,
                                occurrences: Sequence[int], rtol: float = 1e-2) -> float:
    """DP-SGD noise multiplier z whose AVERAGE phrase epsilon (group privacy over each phrase's occurrences) is
    target_avg. Each evaluation is a PLD per distinct occurrence count (up to seconds each); rtol 1e-2 keeps
    the bisection to ~8 steps."""
    ns = _check_avg_inputs(target_avg, occurrences, "occurrences")
    counts = Counter(ns)
    lo = dpsgd_noise_multiplier(target_avg, delta, sampling_rate, steps)  # n = 1 phrases hit the target exactly
    cache: dict[tuple[float, int], float] = {}

    def eps_for(z: float) -> list[float]:
        out: list[float] = []
        for n, c in counts.items():
            if (z, n) not in cache:
                cache[(z, n)] = dpsgd_phrase_epsilon_of_events(
                    [SubsampledGaussianEvent(z, sampling_rate, steps)], n, delta)
            out += [cache[(z, n)]] * c
        return out

    if max(ns) == 1:
        return lo
    hi = lo * 2
    while statistics.fmean(eps_for(hi)) > target_avg:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            raise ValueError(f"no noise multiplier up to 1e6 reaches average phrase epsilon {target_avg}")
    return calibrate_for_average(target_avg, eps_for, lo, hi, rtol=rtol)


def user_batched_phrase_avg_multiplier(target_avg: float, delta: float, epochs: int,
                                       counts_per_batch: Sequence[Sequence[int]], rtol: float = 1e-4) -> float:
    """Batching users: z whose AVERAGE phrase epsilon is target_avg; counts_per_batch[i] lists, for phrase i, how
    many of its sentences sit in each fixed batch holding it. Exact Gaussian composition: phrase i is
    mu_i-GDP with mu_i = sqrt(epochs * sum_b k_b^2) / z."""
    phrases = [[int(k) for k in ks if int(k) > 0] for ks in counts_per_batch]
    phrases = [ks for ks in phrases if ks]
    if not phrases:
        raise ValueError("no secret phrase in any batch: nothing to calibrate the average on")
    _check_avg_inputs(target_avg, [1], "")
    norms = Counter(math.sqrt(sum(k * k for k in ks)) for ks in phrases)
    base = gaussian_noise_multiplier(target_avg, delta, epochs)  # a phrase with one occurrence
    lo, hi = base * min(norms), base * max(norms)
    if hi <= lo * (1 + 1e-12):
        return hi

    def eps_for(z: float) -> list[float]:
        out: list[float] = []
        for norm, c in norms.items():
            out += [gaussian_epsilon(math.sqrt(epochs) * norm / z, delta)] * c
        return out

    return calibrate_for_average(target_avg, eps_for, lo, hi, rtol=rtol)


# Convenience for the training code: the same secret phrases the audit will use, from a Workspace.


def workspace_phrases(ws) -> list[SecretPhrase]:
    """Secret phrases of a Workspace's private train set (names of private users + canaries)."""
    from core.analysis.audit import load_private_records
    from core.data.secrets import secret_phrases

    return secret_phrases(ws.data, load_private_records(ws.cfg))


def calibration_phrases(ws) -> list[SecretPhrase]:
    """The phrases a phrase-avg target averages over: users' names, as in the paper's Table 2/6. Canaries are a
    measuring device and are left out (a 100x canary would dominate any average); they are used only when the
    data has no name phrase at all."""
    phrases = workspace_phrases(ws)
    names = [p for p in phrases if p.kind == "name"]
    return names or phrases


def seqpate_phrase_avg_std_for(ws, teacher_of: np.ndarray, budget: int) -> float:
    """For core/seqpate/run.py: noise std making the average phrase epsilon = cfg.privacy.epsilon over `budget`."""
    phrases = calibration_phrases(ws)
    return seqpate_phrase_avg_std(ws.cfg.privacy.epsilon, ws.cfg.privacy.delta, budget,
                                  teachers_holding(phrases, teacher_of))


def dpsgd_phrase_avg_multiplier_for(ws, sampling_rate: float, steps: int) -> float:
    """For core/baselines/dpsgd.py (Poisson): z making the average phrase epsilon = cfg.privacy.epsilon."""
    phrases = calibration_phrases(ws)
    return dpsgd_phrase_avg_multiplier(ws.cfg.privacy.epsilon, ws.cfg.privacy.delta, sampling_rate, steps,
                                       [p.occurrences for p in phrases])


def user_batched_phrase_avg_multiplier_for(ws, batch_of_sentence: Sequence[int], epochs: int) -> float:
    """For core/baselines/dpsgd.py (batching users): z making the average phrase epsilon = cfg.privacy.epsilon."""
    phrases = calibration_phrases(ws)
    counts = [list(Counter(int(batch_of_sentence[i]) for i in p.train_indices).values()) for p in phrases]
    return user_batched_phrase_avg_multiplier(ws.cfg.privacy.epsilon, ws.cfg.privacy.delta, epochs, counts)
