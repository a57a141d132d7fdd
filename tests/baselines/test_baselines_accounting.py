"""Noise calibration of the DP-SGD baselines and the two epsilons of adaptive DP."""

import json
from pathlib import Path

import numpy as np
import pytest

from core.baselines.adp import GAMMA_FLOOR, adp_accounting, batch_gammas, privacy_probabilities
from core.baselines.dpsgd import Plan, privacy_note
from core.privacy import (
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    epsilon_from_events,
    gaussian_noise_multiplier,
    poisson_shape,
)

DELTA = 1e-6


@pytest.mark.parametrize("n,batch,epochs,eps", [(2000, 32, 2, 3.0), (400, 128, 1, 1.0), (100, 100, 3, 8.0)])
def test_calibrated_noise_never_overshoots(n, batch, epochs, eps):
    q, steps = poisson_shape(n, batch, epochs)
    z = dpsgd_noise_multiplier(eps, DELTA, q, steps)
    plan = Plan([[0]] * steps, steps // epochs, z, q)
    report = epsilon_from_events(plan.events(steps), DELTA)
    assert z > 0 and report.epsilon <= eps
    assert report.epsilon >= 0.99 * eps  # and does not waste budget either


def test_users_batching_is_one_exact_gaussian_per_epoch():
    z = gaussian_noise_multiplier(3.0, DELTA, 4)
    plan = Plan([[0]] * 40, 10, z, None)
    assert [e.to_dict() for e in plan.events(35)] == [
        {"mechanism": "gaussian", "noise_std": z, "sensitivity": 1.0, "count": 4}  # a partial epoch counts in full
    ]
    assert epsilon_from_events(plan.events(40), DELTA).epsilon <= 3.0


def test_a_phrase_avg_runs_note_names_the_average_phrase_epsilon_it_was_calibrated_for():
    """A phrase-avg run's privacy.json said "calibrated before training for target epsilon 3.0" beside its
    accounted epsilon 0.433: its noise was set for an AVERAGE secret-phrase epsilon of 3, not a sentence-level 3."""
    poisson, users = Plan([], 1, 1.2, 0.05), Plan([], 1, 1.2, None)
    assert privacy_note(poisson, 3.0, "sample").endswith("calibrated before training for target epsilon 3.0")
    for plan in (poisson, users):
        note = privacy_note(plan, 3.0, "phrase-avg")
        assert "target epsilon" not in note and note.endswith(
            "noise calibrated before training for an average secret-phrase epsilon of 3.0 (privacy target phrase-avg)")
    assert "calibrated" not in privacy_note(users, 3.0, "sample")
    # and the shipped DP-SGD runs say what the code says now
    shipped = sorted(Path(__file__).resolve().parents[2].glob("cached_runs/*noisysgd*/privacy.json"))
    assert len(shipped) > 30
    for path in shipped:
        record = json.loads(path.read_text())
        plan = Plan([], 1, record["noise_multiplier"], record["sampling_rate"])
        assert record["note"] == privacy_note(plan, record["target_epsilon"], record["target"]), path.parent.name


def test_privacy_probabilities_min_max_normalised():
    rho = privacy_probabilities(np.array([10.0, 20.0, 30.0]))
    assert rho.tolist() == [0.0, 0.5, 1.0]
    assert privacy_probabilities(np.array([5.0, 5.0])).tolist() == [1.0, 1.0]
    gammas = batch_gammas([[0, 2], [], [1]], rho)
    assert gammas.tolist() == [0.5, 1.0, 0.5]  # empty batch: full noise
    # a batch of the single lowest-perplexity sentence (rho 0) is floored: sigma / min(gamma) stays finite
    assert batch_gammas([[0], [2]], rho).tolist() == [GAMMA_FLOOR, 1.0]


def test_adp_valid_epsilon_never_below_dpsgd_and_claimed_below_valid():
    sigma, q, steps = 1.2, 0.05, 60
    gammas = np.random.default_rng(0).uniform(0.3, 1.0, steps)
    acc = adp_accounting(sigma, gammas, q, DELTA)
    dpsgd = dpsgd_epsilon(sigma, q, steps, DELTA)
    assert acc["valid"].epsilon >= dpsgd
    assert acc["claimed"].epsilon < acc["valid"].epsilon
    # exactly: every step at the SMALLEST multiplier (valid), at the MEAN one (claimed); >= alone held for either
    assert acc["valid"].epsilon == pytest.approx(dpsgd_epsilon(sigma * gammas.min(), q, steps, DELTA), rel=1e-9)
    assert acc["claimed"].epsilon == pytest.approx(dpsgd_epsilon(sigma * gammas.mean(), q, steps, DELTA), rel=1e-9)
    # all gammas 1: ADP is plain DP-SGD and both numbers agree with it
    ones = adp_accounting(sigma, np.ones(steps), q, DELTA)
    assert ones["valid"].epsilon == pytest.approx(dpsgd) and ones["claimed"].epsilon == pytest.approx(dpsgd)
