"""The one place where recorded events become (epsilon, delta).

Two accountants, picked by what was released (and a third answer for Laplace alone):
- Gaussian releases only: exact. A sequence of Gaussians with multipliers z_i = std_i / sensitivity_i is
  mu-GDP with mu = sqrt(sum count_i / z_i^2) (Dong, Roth & Su; SeqPATE Lemma 5.2), i.e. one Gaussian with
  multiplier 1/mu, whose exact (epsilon, delta) curve is the analytic Gaussian mechanism (Balle & Wang 2018):
  delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
- anything with Poisson subsampling or Laplace noise: privacy loss distributions (dp_accounting's
  PLDAccountant, add-or-remove-one neighbours as in DP-SGD). Its discretisation is pessimistic by default
  (`pessimistic_estimate=True` in every PLD it builds), so the epsilon it reports is an upper bound, on
  any grid (see PLD_DISCRETIZATION for the grid chosen).
- Laplace releases only: the smaller of the PLD's epsilon and basic composition of pure DP (sum of count / b
  per unit of L1 sensitivity), both upper bounds; the latter stays finite where the PLD gives up.
RDP is deliberately not used: it is looser for DP-SGD (q 0.01, z 1, 1,000 steps, delta 1e-6: RDP 2.4367, PLD
2.1245; 10-30% above the PLD on the shipped runs, e.g. 3.896 against 2.999 for quick NoisySGD, by an audit on
2026-11-27) and would make methods incomparable.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from autodp import dp_bank
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

from core.privacy._validate import check_delta, check_real
from core.privacy.events import GaussianEvent, LaplaceEvent, PrivacyEvent, SubsampledGaussianEvent

ACCOUNTANT_NONE = "none (no private data released)"
ACCOUNTANT_NOT_PRIVATE = "none (no noise: not private)"
ACCOUNTANT_EXACT_GAUSSIAN = "analytic-gaussian (exact composition)"
ACCOUNTANT_PLD = "pld (dp_accounting)"
ACCOUNTANT_BASIC_LAPLACE = "basic composition (pure dp, laplace)"

# Grid for privacy-loss values. dp_accounting's default 1e-4 is used for every epsilon up to 10 (all
# realistic budgets: it reproduces the PLD's 2.1245 above, tests/privacy). Beyond that the PLD's support grows
# with the loss range (tiny effective noise, e.g. a phrase seen 5 times under DP-SGD) and 1e-4 takes minutes, so
# the grid grows with epsilon (about 1e-5 relative accuracy), capped at 0.1. Any grid gives an upper bound.
PLD_DISCRETIZATION = 1e-4
_PLD_SCOUT_INTERVAL = 0.1


@dataclass(frozen=True)
class PrivacyReport:
    epsilon: float
    delta: float
    accountant: str

    def to_dict(self) -> dict[str, float | str]:
        return {"epsilon": self.epsilon, "delta": self.delta, "accountant": self.accountant}


@dataclass(frozen=True)
class _Plan:
    """Events reduced to what the accountants need: kind of accountant, Gaussian mu, PLD-only events."""

    kind: str  # "none", "not_private", "exact", "pld"
    mu: float  # GDP parameter of all plain Gaussian releases together
    laplace: tuple[tuple[float, int], ...]  # (scale / sensitivity_l1, count)
    subsampled: tuple[tuple[float, float, int], ...]  # (noise_multiplier, sampling_rate, steps)


def _plan(events: Iterable[PrivacyEvent]) -> _Plan:
    mu_sq = 0.0
    laplace: list[tuple[float, int]] = []
    subsampled: list[tuple[float, float, int]] = []
    not_private = False
    for e in events:
        # events that reveal nothing about the data cost nothing (and must not count as "no noise")
        if isinstance(e, GaussianEvent):
            if e.count == 0 or e.sensitivity == 0:
                continue
            if e.noise_std == 0:
                not_private = True
                continue
            ratio = e.sensitivity / e.noise_std
            mu_sq += e.count * ratio * ratio  # a product overflows to inf; ** raised OverflowError (std 1e-160)
        elif isinstance(e, LaplaceEvent):
            if e.count == 0 or e.sensitivity_l1 == 0:
                continue
            if e.scale == 0:
                not_private = True
                continue
            laplace.append((e.scale / e.sensitivity_l1, e.count))
        elif isinstance(e, SubsampledGaussianEvent):
            if e.steps == 0 or e.sampling_rate == 0:
                continue
            if e.noise_multiplier == 0:
                not_private = True
                continue
            if e.sampling_rate == 1:
                # full batch: plain Gaussian with sensitivity C, so it joins the exact composition
                mu_sq += e.steps / e.noise_multiplier / e.noise_multiplier  # inf, not 1/0, for z ~ 1e-170
                continue
            subsampled.append((e.noise_multiplier, e.sampling_rate, e.steps))
        else:
            raise ValueError(f"not a privacy event: {e!r}")
    mu = math.sqrt(mu_sq)
    if not_private:
        kind = "not_private"
    elif laplace or subsampled:
        kind = "pld"
    elif mu_sq > 0:
        kind = "exact"
    else:
        kind = "none"
    return _Plan(kind, mu, tuple(laplace), tuple(subsampled))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of a mu-GDP mechanism at delta, rounded up so that delta(epsilon) <= delta holds."""
    check_delta(delta)
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return math.inf
    sigma = 1.0 / mu
    try:
        eps = float(dp_bank.get_eps_ana_gaussian(sigma, delta))
    except (ValueError, RuntimeError, ArithmeticError):
        # autodp's root finder fails at the extremes (no bracket once mu is beyond ~1e9, where epsilon ~ mu^2 / 2
        # > 10^17; 'Failed to find epsilon' at mu 1e160 or delta 1e-310; division by zero at mu 1e200): report
        # infinity, a valid (if loose) upper bound, rather than fail a what-if question or an audit
        return math.inf
    # autodp's root finder lands within ~1e-12 of the root on either side; step up until it is a true bound
    log_delta = math.log(delta)
    step = max(abs(eps), 1.0) * 1e-12
    while eps > 0 and dp_bank.get_logdelta_ana_gaussian(sigma, eps) > log_delta:
        eps += step
        step *= 2
    return eps


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact delta of a mu-GDP mechanism at epsilon (closed form, computed in log space by autodp)."""
    if mu <= 0 or epsilon == math.inf:
        return 0.0
    if not math.isfinite(mu):
        return 1.0
    return min(1.0, math.exp(dp_bank.get_logdelta_ana_gaussian(1.0 / mu, max(epsilon, 0.0))))


@functools.lru_cache(maxsize=8)  # a PLD holds MBs of arrays; keep only a few
def _pld_accountant(plan: _Plan, interval: float) -> pld_privacy_accountant.PLDAccountant:
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    if plan.mu > 0:
        # all plain Gaussians in one exact event: fewer PLD convolutions, less discretisation error
        acc.compose(dp_event.GaussianDpEvent(1.0 / plan.mu))
    for z, count in plan.laplace:
        acc.compose(dp_event.LaplaceDpEvent(z), count)  # count-fold self-composition via FFT, not a loop
    for z, q, steps in plan.subsampled:
        acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
    return acc


def pld_interval(epsilon_estimate: float) -> float:
    """PLD grid for an answer of about this size: 1e-4 up to epsilon 10, then 1e-5 * epsilon, at most 0.1."""
    return min(_PLD_SCOUT_INTERVAL, max(PLD_DISCRETIZATION, 1e-5 * epsilon_estimate))


def _pld_epsilon_on_grid(plan: _Plan, delta: float, interval: float) -> tuple[float, str]:
    try:
        eps = float(_pld_accountant(plan, interval).get_epsilon(delta))
    except (IndexError, OverflowError, FloatingPointError, ValueError):
        # dp_accounting 0.6 crashes (IndexError in _truncate_tails) composing Laplace with scale/sensitivity
        # around 1e-3 a thousand times, and reports inf for one such release; a Gaussian of multiplier 1e-100
        # beside subsampled steps is 'Maximum allowed size exceeded' (ValueError): hopeless budgets, no crash
        eps = math.inf
    if not plan.subsampled and plan.mu == 0:
        # Laplace only: basic composition of pure DP is also an upper bound, and finite where PLD gave up
        basic = math.fsum(count / z for z, count in plan.laplace)
        if basic < eps:
            return basic, ACCOUNTANT_BASIC_LAPLACE
    return eps, ACCOUNTANT_PLD


@functools.lru_cache(maxsize=4096)  # phrase tables ask for the same (events, delta) many times
def _pld_epsilon(plan: _Plan, delta: float, interval: float | None) -> tuple[float, str]:
    if interval is None:
        # a cheap pessimistic scout on a coarse grid (ms) decides how fine the real computation must be
        scout = _pld_epsilon_on_grid(plan, delta, _PLD_SCOUT_INTERVAL)
        interval = pld_interval(scout[0])
        if interval >= _PLD_SCOUT_INTERVAL or not math.isfinite(scout[0]):
            return scout
    return _pld_epsilon_on_grid(plan, delta, interval)


def _epsilon(plan: _Plan, delta: float, interval: float | None = None) -> PrivacyReport:
    """interval None: the reporting grid (pld_interval); calibration passes a coarse grid to search faster."""
    if plan.kind == "none":
        return PrivacyReport(0.0, delta, ACCOUNTANT_NONE)
    if plan.kind == "not_private":
        return PrivacyReport(math.inf, delta, ACCOUNTANT_NOT_PRIVATE)
    if plan.kind == "exact":
        return PrivacyReport(gaussian_epsilon(plan.mu, delta), delta, ACCOUNTANT_EXACT_GAUSSIAN)
    eps, name = _pld_epsilon(plan, delta, interval)
    return PrivacyReport(max(eps, 0.0), delta, name)


def epsilon_from_events(events: Iterable[PrivacyEvent], delta: float) -> PrivacyReport:
    """(epsilon, delta) of everything released, with the name of the accountant that produced it."""
    check_delta(delta)
    return _epsilon(_plan(events), float(delta))


def delta_for_epsilon(events: Iterable[PrivacyEvent], epsilon: float) -> float:
    """Smallest delta (an upper bound for PLD) at which the released events are (epsilon, delta)-DP."""
    check_real("epsilon", epsilon)
    if not epsilon >= 0:  # NaN too
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    plan = _plan(events)
    if plan.kind == "none":
        return 0.0
    if plan.kind == "not_private":
        return 1.0
    if plan.kind == "exact":
        return gaussian_delta(plan.mu, float(epsilon))
    if epsilon == math.inf:
        return 0.0
    try:
        delta = float(_pld_accountant(plan, pld_interval(float(epsilon))).get_delta(float(epsilon)))
    except (IndexError, OverflowError, FloatingPointError, ValueError):
        delta = 1.0  # see _pld_epsilon_on_grid: dp_accounting fails on hopeless budgets
    if not plan.subsampled and plan.mu == 0 and epsilon >= math.fsum(c / z for z, c in plan.laplace):
        delta = 0.0  # Laplace only: basic composition gives pure DP at this epsilon
    return min(max(delta, 0.0), 1.0)
