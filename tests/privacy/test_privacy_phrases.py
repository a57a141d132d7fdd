"""Per-phrase epsilon: SeqPATE's n_s teachers, DP-SGD group privacy, batching users."""

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from scipy.stats import norm

from core.privacy import (
    GaussianEvent,
    LaplaceEvent,
    SubsampledGaussianEvent,
    calibrate_for_average,
    dpsgd_epsilon,
    dpsgd_phrase_epsilon,
    dpsgd_phrase_group_events,
    epsilon_for_gaussian,
    epsilon_from_events,
    group_release,
    seqpate_phrase_epsilon,
    summarize_phrase_epsilons,
    user_batched_phrase_epsilon,
)

STD, QUERIES, DELTA = 69.04, 1000, 1e-6


def closed_form_delta(mu: float, eps: float) -> float:
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_seqpate_phrase_in_one_teacher_costs_the_sample_level_epsilon():
    sample = epsilon_for_gaussian(STD, QUERIES, DELTA)  # sensitivity sqrt(2)
    assert sample == pytest.approx(3.0, abs=1e-3)
    assert seqpate_phrase_epsilon(STD, QUERIES, 1, DELTA) == sample
    assert seqpate_phrase_epsilon(STD, QUERIES, 0, DELTA) == 0.0


def test_group_release_multiplies_the_sensitivity_by_the_group_size():
    assert group_release(GaussianEvent(STD, math.sqrt(2), QUERIES), 3) == GaussianEvent(STD, 3 * math.sqrt(2), QUERIES)
    assert group_release(LaplaceEvent(97.1, 2.0, QUERIES), 4) == LaplaceEvent(97.1, 8.0, QUERIES)
    assert epsilon_from_events([group_release(GaussianEvent(STD, math.sqrt(2), QUERIES), 2)], DELTA).epsilon == \
        seqpate_phrase_epsilon(STD, QUERIES, 2, DELTA)
    with pytest.raises(ValueError, match="subsampled_gaussian"):  # DP-SGD's groups need their own bounds
        group_release(SubsampledGaussianEvent(1.0, 0.01, 100), 2)
    with pytest.raises(ValueError):
        group_release(GaussianEvent(STD, math.sqrt(2), QUERIES), -1)


def test_seqpate_phrase_in_two_teachers_is_a_gaussian_with_half_the_std():
    eps2 = seqpate_phrase_epsilon(STD, QUERIES, 2, DELTA)
    assert eps2 == pytest.approx(epsilon_for_gaussian(STD / 2, QUERIES, DELTA), rel=1e-12)
    mu = math.sqrt(QUERIES) * math.sqrt(2) * 2 / STD  # paper Sec. 5.3: sensitivity sqrt(2) * n_s
    assert closed_form_delta(mu, eps2) == pytest.approx(DELTA, rel=1e-6)
    assert eps2 > 2 * seqpate_phrase_epsilon(STD, QUERIES, 1, DELTA)  # mu doubles: eps more than doubles here


def test_dpsgd_phrase_epsilon_grows_with_occurrences():
    z, q, steps = 1.5, 0.01, 300
    values = [dpsgd_phrase_epsilon(z, q, steps, n, 1e-6) for n in range(1, 4)]
    assert values[0] == dpsgd_epsilon(z, q, steps, 1e-6)  # n = 1 is the sample level, bit for bit
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    assert dpsgd_phrase_epsilon(z, q, steps, 0, 1e-6) == 0.0
    # n = 2 is the smaller of the two dominating events
    sampled_any, split_noise = dpsgd_phrase_group_events(z, q, steps, 2)
    assert (sampled_any.noise_multiplier, sampled_any.steps) == (z / 2, steps)
    assert sampled_any.sampling_rate == pytest.approx(1 - (1 - q) ** 2, rel=1e-12)
    assert split_noise == SubsampledGaussianEvent(z / math.sqrt(2), q, 2 * steps)
    eps_any = epsilon_from_events([sampled_any], 1e-6).epsilon
    eps_split = epsilon_from_events([split_noise], 1e-6).epsilon
    assert values[1] == min(eps_any, eps_split)
    assert eps_split < eps_any / 2  # sampled-any charges shift 2C at rate ~2q: far looser for small q


def test_dpsgd_phrase_epsilon_is_not_below_the_tight_group_analysis():
    # Ganesh (2024): the exact group-of-n pair for Poisson DP-SGD is N(0, z^2) vs sum_j Bin(n, q)_j N(j, z^2).
    # A valid bound can never go below it; ours should stay within a small factor of it.
    z, q, steps, n = 1.5, 0.01, 300, 2
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=3e-3)  # 1e-4 takes ~5 s
    probs = [math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(n + 1)]
    acc.compose(dp_event.MixtureOfGaussiansDpEvent(z, list(range(n + 1)), probs), steps)
    tight = acc.get_epsilon(1e-6)  # 1.235 (1.238 on this coarser grid)
    ours = dpsgd_phrase_epsilon(z, q, steps, n, 1e-6)  # 1.491
    assert tight <= ours <= 1.3 * tight


def test_dpsgd_phrase_without_subsampling_is_n_mu_gdp():
    # q = 1: group privacy of a mu-GDP mechanism is exactly n*mu-GDP (Dong, Roth & Su)
    z, steps, n = 8.0, 100, 3
    mu = n * math.sqrt(steps) / z
    eps = dpsgd_phrase_epsilon(z, 1.0, steps, n, 1e-5)
    assert closed_form_delta(mu, eps) == pytest.approx(1e-5, rel=1e-6)


def test_user_batched_phrase_closed_form():
    z, epochs, per_batch = 20.0, 10, [1, 2, 0]
    eps = user_batched_phrase_epsilon(z, epochs, per_batch, 1e-5)
    mu = math.sqrt(epochs * (1**2 + 2**2)) / z
    assert closed_form_delta(mu, eps) == pytest.approx(1e-5, rel=1e-6)
    assert (
        eps
        == epsilon_from_events([GaussianEvent(z, 1.0, epochs), GaussianEvent(z, 2.0, epochs)], 1e-5).epsilon
    )
    # the phrase pays every epoch: 4x the epochs is 2x mu
    assert user_batched_phrase_epsilon(z, 4 * epochs, per_batch, 1e-5) > eps
    assert user_batched_phrase_epsilon(z, epochs, [0, 0], 1e-5) == 0.0


def test_a_phrase_nothing_was_released_about_costs_nothing_under_every_mechanism():
    """0 queries, 0 steps or 0 epochs: epsilon 0 under every mechanism, as the accountant itself says (a review
    found SeqPATE's answering 0 and DP-SGD's and the user batches' refusing with a ValueError)."""
    assert epsilon_from_events([SubsampledGaussianEvent(1.0, 0.01, 0), GaussianEvent(2.0, 1.0, 0)], DELTA).epsilon == 0
    assert seqpate_phrase_epsilon(STD, 0, 3, DELTA) == 0.0
    assert dpsgd_phrase_epsilon(1.0, 0.01, 0, 3, DELTA) == 0.0
    assert user_batched_phrase_epsilon(2.0, 0, [1, 2], DELTA) == 0.0
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="steps must be an integer >= 0"):
            dpsgd_phrase_epsilon(1.0, 0.01, bad, 3, DELTA)
        with pytest.raises(ValueError, match="epochs must be an integer >= 0"):
            user_batched_phrase_epsilon(2.0, bad, [1], DELTA)


def test_summarize_phrase_epsilons():
    s = summarize_phrase_epsilons([1.0, 2.0, 3.0, 10.0])
    assert s == {"avg": 4.0, "min": 1.0, "max": 10.0, "share_below_avg": 0.75, "count": 4}
    assert summarize_phrase_epsilons([0.1, 0.1, 0.1])["share_below_avg"] == 1.0  # mean rounds above 0.1
    # equal values are at the average by definition, "at or below" it: fmean([0.7] * 3) rounds a hair below 0.7,
    # where only the slack keeps them (the 0.1 case above tests neither the slack nor "at")
    assert summarize_phrase_epsilons([0.7, 0.7, 0.7])["share_below_avg"] == 1.0
    assert summarize_phrase_epsilons([3.0, 3.0])["share_below_avg"] == 1.0
    empty = summarize_phrase_epsilons([])
    assert empty["count"] == 0 and math.isnan(empty["avg"])


def test_calibrate_for_average_hits_the_target():
    teachers_per_phrase = [1, 1, 1, 2, 3]

    def eps_for_noise(std: float) -> list[float]:
        return [seqpate_phrase_epsilon(std, QUERIES, n, DELTA) for n in teachers_per_phrase]

    std = calibrate_for_average(3.0, eps_for_noise, 10.0, 1000.0)
    avg = sum(eps_for_noise(std)) / len(teachers_per_phrase)
    assert 3.0 * (1 - 1e-3) <= avg <= 3.0
    assert std > STD  # phrases in 2-3 teachers need more noise than the sample-level 69.04
    with pytest.raises(ValueError):
        calibrate_for_average(3.0, eps_for_noise, 1.0, 20.0)  # even the most noise is not enough
