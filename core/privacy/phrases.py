"""Epsilon per secret phrase (SeqPATE Sec. 5.3, App. D, F, M).

A phrase (say a user's name) that occurs several times is protected only if all its occurrences are
protected together: group privacy over the occurrences, computed per method from the run's noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace

from core.privacy._validate import check_delta, check_int, check_nonneg_finite, check_rate
from core.privacy.accountant import _epsilon, _plan, epsilon_from_events
from core.privacy.calibrate import SEQPATE_L2_SENSITIVITY
from core.privacy.events import GaussianEvent, LaplaceEvent, SubsampledGaussianEvent


def seqpate_phrase_epsilon(noise_std: float, queries: int, teachers_holding: int, delta: float) -> float:
    """Epsilon of a phrase held by n_s teachers after `queries` Gaussian releases with this std.

    Removing the phrase changes the data of at most n_s teachers, each of whose next-token distributions
    moves by at most sqrt(2) in L2 before averaging (App. D): sensitivity sqrt(2) * n_s, composed exactly.
    """
    check_nonneg_finite("noise_std", noise_std)
    check_int("queries", queries, 0)
    check_int("teachers_holding", teachers_holding, 0)
    check_delta(delta)
    if teachers_holding == 0 or queries == 0:
        return 0.0
    return epsilon_from_events([GaussianEvent(noise_std, SEQPATE_L2_SENSITIVITY * teachers_holding, queries)], delta).epsilon


def group_release(event: GaussianEvent | LaplaceEvent, members: int) -> GaussianEvent | LaplaceEvent:
    """The same releases seen by a group of `members` units: each unit moves the released sum by at most the
    event's sensitivity, so the group moves it by at most `members` times that (triangle inequality)."""
    check_int("members", members, 0)
    if isinstance(event, GaussianEvent):
        return replace(event, sensitivity=event.sensitivity * members)
    if isinstance(event, LaplaceEvent):
        return replace(event, sensitivity_l1=event.sensitivity_l1 * members)
    raise ValueError(f"group_release takes Gaussian or Laplace releases, got {event.mechanism}")


_ROUGH_INTERVAL = 1e-2


def dpsgd_phrase_group_events(
    noise_multiplier: float, sampling_rate: float, steps: int, occurrences: int
) -> tuple[SubsampledGaussianEvent, SubsampledGaussianEvent]:
    """Two dominating events for a phrase in n = `occurrences` distinct examples under Poisson DP-SGD.

    Either one alone bounds the phrase's privacy loss; dpsgd_phrase_epsilon takes the smaller epsilon.
    Setting: per step, the clipped sum of the batch plus N(0, z^2 C^2); removing the n examples removes
    X = sum_i B_i g_i, with B_i ~ Bernoulli(q) independent (Poisson sampling) and |g_i| <= C. The rest
    of the batch is the same independent term on both sides: post-processing, so it can be dropped.

    1. "sampled-any" SubsampledGaussianEvent(z / n, 1 - (1 - q)^n, steps). Let K = sum_i B_i; X = s_K with
       |s_K| <= K*C <= n*C, and K >= 1 with probability q' = 1 - (1 - q)^n. With the phrase the output is
       P = (1 - q') Q + q' * sum_k w_k N(s_k, z^2 C^2), a mixture over the sampled count; without it,
       Q = N(0, z^2 C^2).
       - The hockey-stick divergence H_a(P || Q) = sup_A P(A) - a Q(A) is jointly convex (a supremum of
         linear functions), so the mixture over k is dominated by its worst component (1 - q') Q + q' N(s_k),
         in both orders of the pair.
       - Rotating s_k onto one axis leaves the other coordinates identical on both sides, and in 1-D the
         kernel x -> (s/s') x + N(0, (1 - (s/s')^2) z^2 C^2) maps N(0) to N(0) and N(s') to N(s) for
         s <= s', so by post-processing a larger shift dominates: the worst case is |s| = n*C, a
         Poisson-subsampled Gaussian at rate q' with noise multiplier z / n.
       Loose for small q: it charges shift n*C with probability ~ n*q, epsilon grows ~ n^2.
    2. "split-noise" SubsampledGaussianEvent(z / sqrt(n), q, n * steps). Split the noise into n independent
       N(0, z^2 C^2 / n) parts Z_i; X + Z = sum_i (B_i g_i + Z_i) is a function (the sum) of n independent
       pairs, each a Poisson-subsampled Gaussian with shift |g_i| <= C and multiplier z / sqrt(n). By
       post-processing and tensorisation of dominating pairs, one step is dominated by n such releases.
       Epsilon grows ~ n for large z, like group privacy of a GDP mechanism.
    Dominating pairs compose adaptively, so `steps` of them bound the whole run (PLD checks both
    directions of add/remove). n = 1 gives the sample-level event in both cases.
    """
    n = occurrences
    z, q = noise_multiplier, sampling_rate
    # expm1/log1p keep q' accurate for tiny q; n = 1 is kept bit-identical to the sample-level event
    q_any = q if n == 1 or q == 1 else min(1.0, -math.expm1(n * math.log1p(-q)))
    sampled_any = SubsampledGaussianEvent(z / n, q_any, steps)
    split_noise = SubsampledGaussianEvent(z if n == 1 else z / math.sqrt(n), q, n * steps)
    return sampled_any, split_noise


def dpsgd_phrase_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, occurrences: int, delta: float
) -> float:
    """Group-privacy epsilon of a phrase in `occurrences` distinct examples under Poisson-subsampled DP-SGD.

    The smaller of two valid bounds (see dpsgd_phrase_group_events for why each dominates), both through
    the PLD accountant. n = 1 is exactly the sample-level epsilon; it grows with n. Not tight: Ganesh
    (2024, arXiv 2401.10294) gives a tight mixture-of-Gaussians analysis that is lower still.
    """
    check_nonneg_finite("noise_multiplier", noise_multiplier)
    check_rate(sampling_rate)
    check_int("steps", steps, 0)
    check_int("occurrences", occurrences, 0)
    check_delta(delta)
    if occurrences == 0 or steps == 0:  # nothing released about it (a run stopped before its first step)
        return 0.0
    events = dpsgd_phrase_group_events(noise_multiplier, sampling_rate, steps, occurrences)
    if occurrences == 1:
        return epsilon_from_events([events[0]], delta).epsilon
    # Each full PLD costs up to seconds; a coarse pessimistic look (~5% of the cost, a few % high) skips
    # the bound that is clearly worse (usually "sampled-any"). Either bound alone is valid, so this
    # choice can only cost tightness, never privacy.
    rough = [_epsilon(_plan([e]), delta, _ROUGH_INTERVAL).epsilon for e in events]
    keep = [e for e, r in zip(events, rough, strict=True) if r <= 1.5 * min(rough) + 0.1]
    return min(epsilon_from_events([e], delta).epsilon for e in keep)


def user_batched_phrase_epsilon(
    noise_multiplier: float, epochs: int, occurrences_per_batch: Sequence[int], delta: float
) -> float:
    """Epsilon of a phrase under "batching users" (App. M): fixed batches, no sampling amplification.

    Each epoch, a batch holding k occurrences is a Gaussian release whose clipped sum moves by at most k*C
    with noise std z*C when the phrase's sentences lose their content but keep their places in the fixed batches
    (zero-out neighbours, as for the sample-level epsilon of these runs): GaussianEvent(z, k, epochs) per batch,
    all composed exactly. The phrase pays for every epoch, which is why this scales with the number of epochs.
    """
    check_nonneg_finite("noise_multiplier", noise_multiplier)
    check_int("epochs", epochs, 0)
    check_delta(delta)
    for k in occurrences_per_batch:
        check_int("occurrences_per_batch entries", k, 0)
    if epochs == 0:  # nothing released, as for a SeqPATE run with no query
        return 0.0
    events = [GaussianEvent(noise_multiplier, float(k), epochs) for k in occurrences_per_batch if k > 0]
    return epsilon_from_events(events, delta).epsilon


def summarize_phrase_epsilons(values: Sequence[float]) -> dict[str, float | int]:
    """avg, min, max, share of phrases with epsilon <= avg (paper Table 6), count. Empty -> NaNs, count 0."""
    vals = [float(v) for v in values]
    if not vals:
        nan = math.nan
        return {"avg": nan, "min": nan, "max": nan, "share_below_avg": nan, "count": 0}
    avg = statistics.fmean(vals)
    # the mean of equal values can round a hair below them; they still count as "at or below average"
    slack = abs(avg) * 1e-12 if math.isfinite(avg) else 0.0
    below = sum(1 for v in vals if v <= avg + slack)
    return {
        "avg": avg,
        "min": min(vals),
        "max": max(vals),
        "share_below_avg": below / len(vals),
        "count": len(vals),
    }


def calibrate_for_average(
    target_avg: float,
    eps_for_noise: Callable[[float], Sequence[float]],
    lo: float,
    hi: float,
    rtol: float = 1e-3,
) -> float:
    """Noise in [lo, hi] whose average phrase epsilon is <= target_avg and within rtol of it (bisection).

    eps_for_noise(noise) gives every phrase's epsilon at that noise; the average must decrease with noise.
    """
    if not (isinstance(target_avg, (int, float)) and 0 < target_avg < math.inf):
        raise ValueError(f"target_avg must be finite and > 0, got {target_avg!r}")
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 <= lo < hi < math.inf):
        raise ValueError(f"need 0 <= lo < hi < inf, got lo={lo!r}, hi={hi!r}")

    def avg_at(noise: float) -> float:
        vals = list(eps_for_noise(noise))
        if not vals:
            raise ValueError("eps_for_noise returned no phrases")
        return statistics.fmean(vals)

    if avg_at(hi) > target_avg:
        raise ValueError(f"even noise {hi} gives an average epsilon above {target_avg}; raise hi")
    a_lo = avg_at(lo)
    if a_lo <= target_avg:
        if a_lo >= target_avg * (1 - rtol):
            return lo
        raise ValueError(f"noise {lo} already gives average epsilon {a_lo:.4g} < {target_avg}; lower lo")
    for _ in range(200):
        mid = (lo + hi) / 2
        a = avg_at(mid)
        if a <= target_avg:
            hi = mid
            if a >= target_avg * (1 - rtol):
                return hi
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi  # average jumps over the window (discrete epsilons): the smallest noise known to pass
