"""Noise calibration, done BEFORE the first release from the budget, and never overshooting it.

Every calibrated value is checked by recomputing epsilon with core.privacy.accountant (the same code that
later reports the run's epsilon); if the recomputation is above the target, the noise is nudged up. So a run
calibrated to (eps, delta) always reports an epsilon <= eps.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from autodp import calibrator_zoo, dp_bank, mechanism_zoo
from scipy import optimize

from core.privacy._validate import (
    check_int,
    check_nonneg_finite,
    check_positive_finite,
    check_rate,
    check_target,
)
from core.privacy.accountant import _epsilon, _plan, epsilon_from_events
from core.privacy.events import GaussianEvent, LaplaceEvent, SubsampledGaussianEvent

# SeqPATE's per-query sensitivities: a changed sentence changes one teacher's next-token distribution, so the
# teachers' summed distributions move by at most sqrt(2) in L2 and 2 in L1 (paper Sec. 5.2). The engine, the
# phrase analysis and the dashboard's previews all read these two.
SEQPATE_L2_SENSITIVITY = math.sqrt(2.0)
SEQPATE_L1_SENSITIVITY = 2.0

# ---------------------------------------------------------------------------------------------------------
# generic search: smallest noise whose epsilon is <= target
# ---------------------------------------------------------------------------------------------------------


def _smallest_noise(
    eps_of: Callable[[float], float], target: float, x0: float, accept: float, slope: float = -1.0
) -> tuple[float, float]:
    """A noise level x with target*(1-accept) <= eps_of(x) <= target, for eps_of decreasing in x.

    Returns x and the last slope d log(eps) / d log(x), which a finer search can start from.

    Secant steps on log(eps) against log(x), where the curve is nearly straight (eps ~ 1/x for small eps,
    ~ 1/x^2 for large), guarded by bisection once a bracket is known: typically 3-5 evaluations, which
    matters when one PLD evaluation takes a second. The answer is always a point that was evaluated and
    passed, so discretisation jitter in eps_of can cost a hair of noise but never privacy.
    """
    log_target = math.log(target)
    aim = math.log1p(-accept / 2)  # aim inside the accepted window, not at its edge
    floor = math.log1p(-accept)
    passed: list[float] = []
    lo: float | None = None  # log x known to fail (eps above target)
    hi: float | None = None  # log x known to pass
    pts: list[tuple[float, float]] = []

    def gap(u: float) -> float:
        e = eps_of(math.exp(u))
        g = math.log(e) - log_target if e > 0 else -50.0
        return min(max(g, -50.0), 50.0)  # keep inf (no privacy) and 0 out of the arithmetic

    u = math.log(x0)
    for _ in range(100):
        g = gap(u)
        pts.append((u, g))
        if g <= 0:
            passed.append(math.exp(u))
            hi = u if hi is None else min(hi, u)
            if g >= floor:
                break
        else:
            lo = u if lo is None else max(lo, u)
        if lo is not None and hi is not None and hi - lo < 1e-12:
            break
        u1, g1 = pts[-1]
        if len(pts) > 1 and abs(u1 - pts[-2][0]) > 1e-7:  # closer points: the slope is grid jitter
            slope = (g1 - pts[-2][1]) / (u1 - pts[-2][0])
        slope = min(slope, -0.05)  # eps decreases in x; a flat or wrong-signed secant is noise
        u_next = u1 + (aim - g1) / slope
        if lo is not None and hi is not None:
            if not lo < u_next < hi:
                u_next = (lo + hi) / 2  # secant left the bracket: bisect
        else:
            # while bracketing: at most /2 down (small noise makes PLD slow: the loss range grows ~1/x) and
            # x4.5 up per step
            u_next = min(max(u_next, u1 - 0.7), u1 + 1.5)
        u = u_next
    if not passed:
        raise ValueError(f"no noise level reaches epsilon {target} (searched up to {math.exp(u):.3g})")
    return min(passed), slope


# ---------------------------------------------------------------------------------------------------------
# Gaussian releases (SeqPATE): exact composition, analytic Gaussian mechanism
# ---------------------------------------------------------------------------------------------------------


def _gaussian_mu_for(epsilon: float, delta: float) -> float:
    """mu of the Gaussian (sensitivity 1, multiplier 1/mu) that is exactly (epsilon, delta)-DP."""
    try:
        # Balle & Wang's calibrator (autodp); a good start, but its tolerance is 1e-12 on delta in absolute
        # terms and its Phi is erf-based, so it drifts for small delta or large epsilon: polish below.
        sigma0 = calibrator_zoo.ana_gaussian_calibrator()(
            mechanism_zoo.ExactGaussianMechanism, epsilon, delta
        )
        mu0 = 1.0 / float(sigma0.params["sigma"])
    except (ArithmeticError, ValueError):
        mu0 = 1.0
    if not (math.isfinite(mu0) and mu0 > 0):
        mu0 = 1.0
    log_delta = math.log(delta)

    def gap(log_mu: float) -> float:  # increasing in mu: more signal, more privacy loss
        return dp_bank.get_logdelta_ana_gaussian(math.exp(-log_mu), epsilon) - log_delta

    lo = hi = math.log(mu0)
    while gap(lo) > 0:
        lo -= 0.5
    while gap(hi) < 0:
        hi += 0.5
    if lo == hi:
        return mu0
    return math.exp(optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * 2.0**-52))


def gaussian_noise_multiplier(epsilon: float, delta: float, count: int) -> float:
    """z = std / L2 sensitivity so that `count` Gaussian releases are (epsilon, delta)-DP, to float precision.

    count releases with multiplier z compose to one Gaussian with multiplier z / sqrt(count), so
    z = sqrt(count) / mu(epsilon, delta). epsilon = inf means no privacy asked: z = 0.
    """
    check_target(epsilon, delta)
    check_int("count", count, 1)
    if epsilon == math.inf:
        return 0.0
    z = math.sqrt(count) / _gaussian_mu_for(float(epsilon), float(delta))
    return _raised_to_target(z, lambda x: epsilon_from_events([GaussianEvent(x, 1.0, count)], delta).epsilon, epsilon)


def _raised_to_target(noise: float, epsilon_of: Callable[[float], float], epsilon: float) -> float:
    """noise, raised by the smallest doubling step that brings epsilon_of(noise) to the target or below (float
    rounding can leave a calibrated noise a hair short)."""
    step = noise * 1e-15
    while epsilon_of(noise) > epsilon:
        noise += step
        step *= 2
    return noise


def gaussian_std(epsilon: float, delta: float, count: int, sensitivity: float = SEQPATE_L2_SENSITIVITY) -> float:
    """Noise std for `count` releases of a query with this L2 sensitivity (sqrt(2): one teacher changes), checked
    as the run records it (std, sensitivity): z * sqrt(2) / sqrt(2) is not always z in floating point, and the
    recorded epsilon could come out up to 2e-11 above the target."""
    check_positive_finite("sensitivity", sensitivity)
    std = gaussian_noise_multiplier(epsilon, delta, count) * sensitivity
    if std == 0.0:
        return std
    return _raised_to_target(std, lambda x: epsilon_for_gaussian(x, count, delta, sensitivity), epsilon)


def epsilon_for_gaussian(noise_std: float, count: int, delta: float, sensitivity: float = SEQPATE_L2_SENSITIVITY) -> float:
    """Epsilon spent by `count` Gaussian releases with this std (what-if panel; closed form, instant)."""
    check_nonneg_finite("noise_std", noise_std)
    check_int("count", count, 1)
    check_positive_finite("sensitivity", sensitivity)
    return epsilon_from_events([GaussianEvent(noise_std, sensitivity, count)], delta).epsilon


# ---------------------------------------------------------------------------------------------------------
# Laplace releases (the official SeqPATE code's mechanism): PLD
# ---------------------------------------------------------------------------------------------------------


def laplace_scale(epsilon: float, delta: float, count: int, sensitivity_l1: float = SEQPATE_L1_SENSITIVITY) -> float:
    """Laplace scale so that `count` releases are (epsilon, delta)-DP under PLD; never above the target."""
    check_target(epsilon, delta)
    check_int("count", count, 1)
    check_positive_finite("sensitivity_l1", sensitivity_l1)
    if epsilon == math.inf:
        return 0.0

    def eps_of(b: float) -> float:
        return epsilon_from_events([LaplaceEvent(b, sensitivity_l1, count)], delta).epsilon

    # start: basic composition (count/eps) is safe but loose for many releases, where the Gaussian
    # multiplier for the same budget is close (both are ~GDP with mu^2 ~ count / b^2 for large b)
    x0 = sensitivity_l1 * min(count / epsilon, gaussian_noise_multiplier(epsilon, delta, count))
    return _smallest_noise(eps_of, epsilon, x0, accept=1e-6)[0]


# ---------------------------------------------------------------------------------------------------------
# DP-SGD (Poisson-subsampled Gaussian): PLD
# ---------------------------------------------------------------------------------------------------------

_COARSE_INTERVAL = 1e-3  # ~10x faster PLD, still pessimistic; only used to find a starting point
DPSGD_ACCEPT = 1e-3  # calibrated epsilon lands in [target * (1 - 1e-3), target]


def dpsgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """Epsilon of `steps` DP-SGD steps (Poisson sampling at rate q, noise multiplier z), PLD accountant."""
    check_nonneg_finite("noise_multiplier", noise_multiplier)
    check_rate(sampling_rate)
    check_int("steps", steps, 1)
    return epsilon_from_events(
        [SubsampledGaussianEvent(noise_multiplier, sampling_rate, steps)], delta
    ).epsilon


def poisson_rate(n: int, batch_size: int) -> float:
    """Sampling rate of Poisson DP-SGD for an expected batch of `batch_size` out of n, as opacus' DPDataLoader sets
    it: 1 / ceil(n / batch_size), batch_size / n up to rounding the steps per epoch to an integer."""
    check_int("n", n, 1)
    check_int("batch_size", batch_size, 1)
    return 1.0 / math.ceil(n / batch_size)


def poisson_shape(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sampling rate q, steps) of Poisson DP-SGD as opacus runs it, the accountant's inputs: q = poisson_rate and,
    per epoch, the int(1 / q) batches opacus' sampler draws at that rate: one fewer than ceil(n / batch_size) for
    some sizes (93 batches give 92 steps, as 1 / (1 / 93) rounds below 93). Runs calibrate their noise for these
    steps, and the dashboard previews them (tests/baselines/test_batching_users.py checks them against opacus)."""
    check_int("epochs", epochs, 1)
    q = poisson_rate(n, batch_size)
    return q, epochs * int(1 / q)


def dpsgd_noise_multiplier(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    """Noise multiplier whose DP-SGD epsilon (PLD) is in [target * (1 - 1e-3), target]; inf -> 0."""
    check_target(epsilon, delta)
    check_rate(sampling_rate)
    check_int("steps", steps, 1)
    if epsilon == math.inf:
        return 0.0
    if sampling_rate == 1:
        return gaussian_noise_multiplier(epsilon, delta, steps)  # full batch: plain Gaussians, exact

    def eps_with(interval: float | None) -> Callable[[float], float]:
        def eps_of(z: float) -> float:
            plan = _plan([SubsampledGaussianEvent(z, sampling_rate, steps)])
            return _epsilon(plan, delta, interval).epsilon

        return eps_of

    # coarse grid to get close cheaply; then the accountant that reports the run, usually once: the coarse
    # grid is pessimistic too, so its answer passes, and is within the window unless the grids disagree
    z_coarse, slope = _smallest_noise(eps_with(_COARSE_INTERVAL), epsilon, 1.0, accept=DPSGD_ACCEPT / 2)
    return _smallest_noise(eps_with(None), epsilon, z_coarse, accept=DPSGD_ACCEPT, slope=slope)[0]


def per_release_noise_multiplier(joint: float, releases: int) -> float:
    """The noise multiplier each of `releases` Gaussian releases on the SAME sampled batch needs, so that together
    they are one release with multiplier `joint` (the z the accountant records).

    Each release is a sum of per-example vectors clipped to C plus N(0, (z_r C)^2 I). Stacked, the sums change by
    at most sqrt(releases) C when one example comes or goes, and the stacked noise is N(0, (z_r C)^2 I): one
    Gaussian release with multiplier z_r / sqrt(releases), so z_r = joint * sqrt(releases). (Algorithm 1 of the
    multitask synthetic-data paper releases an LM gradient and a discriminator gradient per batch, each clipped
    and noised on its own.)
    """
    check_nonneg_finite("joint", joint)
    check_int("releases", releases, 1)
    return joint * math.sqrt(releases)
