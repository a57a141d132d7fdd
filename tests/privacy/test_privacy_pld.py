"""DP-SGD and Laplace through the PLD accountant, cross-checked against independent libraries (opacus)."""

import inspect
import math
import time

import pytest
from dp_accounting.pld import privacy_loss_distribution
from hypothesis import given, settings
from hypothesis import strategies as st

# tests may use torch; core.privacy may not. opacus is a dependency: importorskip skipped this module and
# test_privacy_gaussian (which imports opacus_prv from here) without a word where it failed to import
from opacus import accountants as opacus_accountants
from scipy.stats import norm

from core.privacy import (
    ACCOUNTANT_PLD,
    GaussianEvent,
    LaplaceEvent,
    SubsampledGaussianEvent,
    delta_for_epsilon,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    epsilon_from_events,
    laplace_scale,
    poisson_rate,
)
from core.privacy.accountant import _epsilon, _Plan, gaussian_epsilon


def opacus_rdp(z: float, q: float, steps: int, delta: float) -> float:
    acc = opacus_accountants.RDPAccountant()
    acc.history = [(z, q, steps)]
    return acc.get_epsilon(delta)


def opacus_prv(z: float, q: float, steps: int, delta: float) -> float:
    acc = opacus_accountants.PRVAccountant()
    acc.history = [(z, q, steps)]
    return acc.get_epsilon(delta)  # opacus returns the PRV upper bound


# epsilon of DP-SGD at q 0.01, z 1, 1,000 steps, delta 1e-6 on the reporting grid (PLD_DISCRETIZATION 1e-4), as
# dp_accounting 0.6 computes it. Its correctness rests on the independent PRV comparison below (to 0.05); the pin
# only catches a change of our own accounting (grid, composition count, neighbouring relation), which moves it by
# 1e-4 or more: one step fewer is 2.12356
PLD_EPSILON_Q001_Z1_T1000 = 2.1245225256749


def test_pld_matches_facts_and_an_independent_prv_accountant():
    report = epsilon_from_events([SubsampledGaussianEvent(1.0, 0.01, 1000)], 1e-6)
    assert report.accountant == ACCOUNTANT_PLD
    prv = opacus_prv(1.0, 0.01, 1000, 1e-6)
    assert prv == pytest.approx(2.1346, abs=0.01)
    assert abs(report.epsilon - prv) < 0.05  # the independent check: another library, another method
    assert report.epsilon == pytest.approx(PLD_EPSILON_Q001_Z1_T1000, abs=1e-6)  # the regression pin
    rdp = opacus_rdp(1.0, 0.01, 1000, 1e-6)
    assert rdp == pytest.approx(2.4367, abs=1e-3)
    assert report.epsilon < rdp and prv < rdp  # the tight accountants beat RDP by ~13% here


def test_steps_split_over_events_compose_to_the_same_epsilon():
    """1,000 DP-SGD steps recorded as two events of 500 are the same mechanism as one event of 1,000: the
    accountant must compose exactly `steps` of each (an off-by-one per event shows as a gap of ~5e-4 relative)."""
    whole = epsilon_from_events([SubsampledGaussianEvent(1.0, 0.01, 1000)], 1e-6)
    split = epsilon_from_events([SubsampledGaussianEvent(1.0, 0.01, 500)] * 2, 1e-6)
    assert split.accountant == whole.accountant == ACCOUNTANT_PLD
    assert split.epsilon == pytest.approx(whole.epsilon, rel=1e-6)
    # and the split is not trivially equal because nothing counts: half the steps spend clearly less
    assert epsilon_from_events([SubsampledGaussianEvent(1.0, 0.01, 500)], 1e-6).epsilon < 0.8 * whole.epsilon


@pytest.mark.parametrize(
    ("z", "q", "steps", "delta", "golden_rdp"),
    [(1.5, 0.04, 2250, 1e-5, 7.3291), (1.3, 0.0025, 6000, 1e-5, 0.7242)],
)
def test_golden_rdp_values_bound_our_pld(z, q, steps, delta, golden_rdp):
    rdp = opacus_rdp(z, q, steps, delta)
    assert rdp == pytest.approx(golden_rdp, abs=1e-4)  # checks our use of opacus against its own tests
    pld = dpsgd_epsilon(z, q, steps, delta)
    assert pld <= rdp
    assert abs(pld - opacus_prv(z, q, steps, delta)) < 0.05


def test_pld_discretisation_is_pessimistic_by_default():
    # the accountant never passes pessimistic_estimate, so the library default decides: it must stay True
    for builder in (
        privacy_loss_distribution.from_gaussian_mechanism,
        privacy_loss_distribution.from_laplace_mechanism,
    ):
        assert inspect.signature(builder).parameters["pessimistic_estimate"].default is True
    # and on a case with an exact answer (a plain Gaussian sent through the PLD path, as it is beside subsampled
    # or Laplace events) the PLD number sits just above the truth, never below it
    for mu in (0.5, 2.0, 10.0):
        exact = gaussian_epsilon(mu, 1e-6)
        through_pld = _epsilon(_Plan("pld", mu, (), ()), 1e-6)
        assert through_pld.accountant == ACCOUNTANT_PLD
        assert exact <= through_pld.epsilon <= exact * (1 + 1e-6)


def test_ten_thousand_steps_is_fast():
    start = time.perf_counter()
    eps = dpsgd_epsilon(1.0, 0.01, 10_000, 1e-6)
    assert time.perf_counter() - start < 10.0  # about 0.6 s here; composes with count, never loops
    assert 6.0 < eps < 8.0


def test_a_plain_gaussian_beside_subsampled_steps_is_composed_with_them():
    """Dropping the plain Gaussian event where subsampled ones are present was caught only at sigma = 1e-100 (inf):
    a finite mix must cost clearly more than the subsampled steps alone, and stay under dp_accounting's RDP bound
    (an independent, looser accountant)."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    mixed = [GaussianEvent(10.0, 1.0, 100), SubsampledGaussianEvent(1.0, 0.01, 1000)]
    report = epsilon_from_events(mixed, 1e-6)
    alone = epsilon_from_events(mixed[1:], 1e-6).epsilon
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(dp_event.GaussianDpEvent(10.0), 100)
    rdp.compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 1000)
    assert alone + 1.0 < report.epsilon <= rdp.get_epsilon(1e-6)  # 2.12, 5.39, 5.77
    assert report.delta == 1e-6  # the delta asked for, reported with it


def test_poisson_shape_and_full_batch_calibration_by_hand():
    """q = 1 / ceil(n / B), as opacus' DPDataLoader sets it; a full batch (q = 1) is T plain Gaussians, calibrated
    for all T steps (a mutation that calibrated it for one step was caught only by the baselines' tests)."""
    assert (poisson_rate(2000, 32), poisson_rate(64, 32), poisson_rate(65, 32)) == (1 / 63, 1 / 2, 1 / 3)
    z = dpsgd_noise_multiplier(3.0, 1e-6, 1.0, 100)
    mu = math.sqrt(100) / z  # T Gaussians of multiplier z: mu-GDP, delta at epsilon 3 by Balle & Wang's form
    delta = norm.cdf(-3.0 / mu + mu / 2) - math.exp(3.0) * norm.cdf(-3.0 / mu - mu / 2)
    assert delta == pytest.approx(1e-6, rel=1e-3) and delta <= 1e-6


def test_full_batch_is_plain_gaussian_and_delta_inverts_epsilon():
    # q = 1: no amplification, exact Gaussian composition with mu = sqrt(T)/z
    assert dpsgd_epsilon(4.0, 1.0, 16, 1e-5) == pytest.approx(
        epsilon_from_events([GaussianEvent(1.0, 1.0, 1)], 1e-5).epsilon, rel=1e-12
    )
    events = [SubsampledGaussianEvent(1.0, 0.01, 1000)]
    eps = epsilon_from_events(events, 1e-6).epsilon
    assert delta_for_epsilon(events, eps) == pytest.approx(1e-6, rel=0.01)
    assert delta_for_epsilon(events, eps + 0.5) < 1e-6 < delta_for_epsilon(events, eps - 0.5)


@settings(max_examples=3, deadline=None, derandomize=True, database=None)
@given(
    eps=st.floats(0.5, 10.0),
    q=st.floats(0.001, 0.1),
    steps=st.integers(10, 2000),
)
def test_dpsgd_calibration_never_overshoots(eps, q, steps):
    z = dpsgd_noise_multiplier(eps, 1e-5, q, steps)
    achieved = dpsgd_epsilon(z, q, steps, 1e-5)
    assert achieved <= eps
    assert achieved >= eps * (1 - 1e-3)


@pytest.mark.parametrize(("eps", "q", "steps"), [(1.0, 0.01, 1000), (3.0, 0.004, 5000)])
def test_dpsgd_calibration_on_typical_runs(eps, q, steps):
    start = time.perf_counter()
    z = dpsgd_noise_multiplier(eps, 1e-6, q, steps)
    assert time.perf_counter() - start < 20.0  # about 1-2 s here
    achieved = dpsgd_epsilon(z, q, steps, 1e-6)
    assert eps * (1 - 1e-3) <= achieved <= eps
    assert dpsgd_epsilon(z * 0.99, q, steps, 1e-6) > eps  # and not much more noise than needed


@pytest.mark.parametrize(("scale", "sens"), [(0.5, 1.0), (2.0, 2.0), (10.0, 2.0)])
def test_single_laplace_release_is_pure_dp(scale, sens):
    eps0 = sens / scale
    assert epsilon_from_events([LaplaceEvent(scale, sens, 1)], 1e-12).epsilon == pytest.approx(eps0, rel=1e-4)
    # exact curve of one Laplace release: delta(eps) = 1 - exp((eps - eps0) / 2)
    exact = eps0 + 2 * math.log1p(-1e-3)
    assert exact <= epsilon_from_events([LaplaceEvent(scale, sens, 1)], 1e-3).epsilon <= exact + 1e-3


def laplace_pair_delta(eps: float, eps0: float) -> float:
    """delta(eps) of two Laplace releases, each eps0-DP (shift 1, scale 1/eps0), by quadrature over the privacy
    loss L(x) = (|x - 1| - |x|) / b under P = Lap(0, b): an atom eps0 (x < 0, probability 1/2), an atom -eps0
    (x > 1, probability e^-eps0 / 2), and (1 - 2x) / b between. delta = E[(1 - e^(eps - L1 - L2))_+]."""
    from scipy.integrate import quad

    b = 1 / eps0

    def density(x):
        return math.exp(-x / b) / (2 * b)

    def one(t):  # E[(1 - e^(t - L))_+] over one release
        def hinge(loss):
            return max(0.0, -math.expm1(t - loss))

        kink = min(max((1 - t * b) / 2, 0.0), 1.0)
        middle = quad(lambda x: density(x) * hinge((1 - 2 * x) / b), 0, 1, points=[kink], epsabs=1e-13, limit=200)[0]
        return 0.5 * hinge(eps0) + 0.5 * math.exp(-eps0) * hinge(-eps0) + middle

    middle = quad(lambda x: density(x) * one(eps - (1 - 2 * x) / b), 0, 1, epsabs=1e-13, limit=200)[0]
    return 0.5 * one(eps - eps0) + 0.5 * math.exp(-eps0) * one(eps + eps0) + middle


def test_two_laplace_releases_match_an_independent_quadrature():
    """The composition of Laplace releases (SeqPATE's -gaussian ablation) checked against the privacy loss
    integrated directly, not against our own inversion: the PLD delta sits on the true curve (to 1e-9) and the
    reported epsilon's true delta never exceeds the delta asked for."""
    events = [LaplaceEvent(2.0, 2.0, 2)]  # each release 1-DP: pure 2-DP together, delta 0 from epsilon 2
    for eps in (0.0, 0.5, 1.0, 1.5, 1.9, 1.99):
        truth = laplace_pair_delta(eps, 1.0)
        assert truth - 1e-12 <= delta_for_epsilon(events, eps) <= truth + 1e-9
    assert laplace_pair_delta(2.0, 1.0) == 0.0 and delta_for_epsilon(events, 2.0) == 0.0
    for delta in (1e-2, 1e-3, 1e-6):
        eps = epsilon_from_events(events, delta).epsilon
        assert laplace_pair_delta(eps, 1.0) <= delta and eps < 2.0


@pytest.mark.parametrize(("eps", "delta", "count"), [(1.0, 1e-6, 1), (3.0, 1e-6, 1000), (0.5, 1e-5, 100)])
def test_laplace_scale_never_overshoots(eps, delta, count):
    b = laplace_scale(eps, delta, count)
    achieved = epsilon_from_events([LaplaceEvent(b, 2.0, count)], delta).epsilon
    assert eps * (1 - 1e-5) <= achieved <= eps
    if count == 1:
        assert b == pytest.approx(2.0 / eps, rel=1e-3)
    else:
        assert b < 2.0 * count / eps  # composition through PLD beats basic composition


@pytest.mark.parametrize("calibrate", [lambda eps, delta: dpsgd_noise_multiplier(eps, delta, 32 / 20000, 1250),
                                       lambda eps, delta: laplace_scale(eps, delta, 2000)])
def test_calibration_refuses_what_the_accountant_cannot_do(calibrate):
    """epsilon 10^4 took 44 s and 2.9 GB for DP-SGD (the PLD grid grows as the noise shrinks) and 10^9 ran out of
    memory for Laplace; below delta 1e-12 PLD's tail truncation made DP-SGD's multiplier jump (800 at 1e-15)."""
    with pytest.raises(ValueError, match="epsilon must be at most 1000"):
        calibrate(1e4, 1e-6)
    with pytest.raises(ValueError, match="delta must be at least 1e-12"):
        calibrate(3.0, 1e-15)
    assert calibrate(1000.0, 1e-12) > 0  # the edges of the range still calibrate



def test_reporting_gives_a_bound_outside_the_calibration_range():
    """The ranges are for calibrating; an epsilon is still reported for any recorded events and delta in (0, 1):
    a run made at delta 1e-13 stays auditable, and the accountants' failures at the extremes are infinity."""
    eps = epsilon_from_events([GaussianEvent(69.04, math.sqrt(2), 1000)], 1e-13).epsilon
    # mu-GDP with mu = sqrt(1000) * sqrt(2) / 69.04; Balle & Wang's delta(eps), written here: at most 1e-13 at the
    # epsilon reported, more a thousandth below it
    mu = math.sqrt(1000) * math.sqrt(2) / 69.04
    delta_at = lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)  # noqa: E731
    assert eps == pytest.approx(4.7483, abs=1e-3) and delta_at(eps) <= 1e-13 < delta_at(eps - 1e-3)
    for events in ([GaussianEvent(1e-160, 1.0, 1)], [GaussianEvent(1e-200, 1e10, 10)],
                   [GaussianEvent(1e-100, 1.0, 1), SubsampledGaussianEvent(1.0, 0.01, 10)]):
        assert epsilon_from_events(events, 1e-6).epsilon == math.inf
        assert delta_for_epsilon(events, 1.0) == 1.0  # the reverse question: no delta, not a ValueError
