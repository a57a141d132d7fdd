"""phrase_table accounts each phrase at the delta the run recorded, not at the config's default."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy.stats import norm

from core.analysis.phrases import KIND_SEQPATE, phrase_table
from core.data.prepare import Sentence
from core.data.secrets import SecretPhrase
from core.privacy import GaussianEvent
from core.seqpate.partition import assign_teachers
from tests.conftest import micro_config

STD, QUERIES = 60.0, 800
RUN_DELTA, CFG_DELTA = 1e-5, 1e-6


def _gaussian_eps(mu: float, delta: float) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018): eps with Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    = delta."""

    def gap(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return optimize.brentq(gap, 0.0, 500.0, xtol=1e-13)


def _phrase(name, indices, user):
    return SecretPhrase(name, "name", (user,), tuple(indices), (user,), inserted=0)


def test_seqpate_phrase_epsilons_use_the_delta_recorded_in_privacy_json():
    """Guards the recorded delta: cfg.privacy.delta (1e-6) must not replace privacy.json's (1e-5)."""
    cfg = micro_config(method="seqpate", seqpate__partition="random", seqpate__teachers=4, privacy__delta=CFG_DELTA)
    assert cfg.privacy.delta == CFG_DELTA
    train = [Sentence(f"s{i}", f"u{i % 7}") for i in range(40)]
    teacher_of = assign_teachers("random", [s.user_id for s in train], 4, cfg.seed)
    one = [3]
    spread = [int(np.flatnonzero(teacher_of == t)[0]) for t in range(3)]  # three sentences in three teachers
    phrases = [_phrase("A", one, "u3"), _phrase("B", spread, "u1")]
    privacy = {"epsilon": 2.0, "delta": RUN_DELTA, "mechanism": "gaussian", "noise_scale": STD,
               "queries_spent": QUERIES, "events": [GaussianEvent(STD, math.sqrt(2), QUERIES).to_dict()]}
    table = phrase_table(cfg, privacy, phrases, train)
    assert table.kind == KIND_SEQPATE
    assert table.info["delta"] == RUN_DELTA
    assert [r["teachers"] for r in table.rows] == [1, 3]
    for row in table.rows:
        mu = math.sqrt(QUERIES) * math.sqrt(2) * row["teachers"] / STD
        expected = _gaussian_eps(mu, RUN_DELTA)
        assert row["epsilon"] == pytest.approx(expected, rel=1e-6)
        # the two deltas give clearly different epsilons: the check above can tell them apart
        assert abs(_gaussian_eps(mu, CFG_DELTA) - expected) > 1e-2 * expected


def test_a_run_without_a_usable_delta_falls_back_to_the_config():
    """Guards the fallback: no (or an out-of-range) recorded delta is accounted at cfg.privacy.delta."""
    cfg = micro_config(method="seqpate", seqpate__partition="random", seqpate__teachers=4, privacy__delta=CFG_DELTA)
    train = [Sentence(f"s{i}", f"u{i % 7}") for i in range(40)]
    events = [GaussianEvent(STD, math.sqrt(2), QUERIES).to_dict()]
    mu = math.sqrt(QUERIES) * math.sqrt(2) / STD
    for recorded in ({}, {"delta": 0}, {"delta": 1.5}):
        privacy = {"epsilon": 2.0, "mechanism": "gaussian", "events": events, **recorded}
        table = phrase_table(cfg, privacy, [_phrase("A", [3], "u3")], train)
        assert table.info["delta"] == CFG_DELTA
        assert table.rows[0]["epsilon"] == pytest.approx(_gaussian_eps(mu, CFG_DELTA), rel=1e-6)
