"""Sampled canary exposure: the rank estimate 1 + (|R| - 1) k / S and its end points (Carlini et al. 2019)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from core.analysis.exposure import canary_exposure
from core.data.secrets import CANARY_TEMPLATE, Canary


def _canary(secret: str) -> Canary:
    return Canary("canary-1x", secret, CANARY_TEMPLATE.format(secret=secret), f"my ID is {secret}", "u1", 1,
                  len(secret), CANARY_TEMPLATE)


def _number(text: str) -> int:
    return int(re.search(r"is (\d+)", text).group(1))


def _by_number(texts):
    """A fake model: smaller numbers are more likely (lower log-perplexity)."""
    return np.array([float(_number(t)) for t in texts])


def test_a_canary_beaten_by_every_sample_is_ranked_last_with_exposure_zero():
    """Guards the (|R| - 1) factor: with k = S the rank is |R| (last), exposure exactly 0, not |R| + 1."""
    result = canary_exposure(_by_number, _canary("999999"), exact_limit=1000, samples=500)
    assert (result.method, result.candidates, result.scored, result.more_likely) == ("sampled", 10**6, 500, 500)
    assert result.rank == 10**6
    assert result.exposure == 0.0
    # k = S: the upper end of k/S is 1 (rank |R|, exposure 0); the lower end is 0.025^(1/S) (Beta(S, 1) quantile)
    assert result.exposure_low == 0.0
    p_lo = 0.025 ** (1 / 500)
    assert result.exposure_high == pytest.approx(math.log2(10**6) - math.log2(1 + (10**6 - 1) * p_lo), rel=1e-9)


def test_sampled_rank_is_one_plus_the_share_of_more_likely_samples_times_the_other_candidates():
    """Guards the estimate's formula for 0 < k < S: k counted here from the candidates the scorer saw."""
    seen: list[int] = []

    def recording(texts):
        seen.extend(_number(t) for t in texts)
        return _by_number(texts)

    secret = 300_000
    result = canary_exposure(recording, _canary(f"{secret:06d}"), exact_limit=1000, samples=400, seed=3)
    others = seen[1:]
    assert seen[0] == secret and len(others) == 400 and secret not in others
    k = sum(n < secret for n in others)
    assert 0 < k < 400 and result.more_likely == k
    expected_rank = 1 + (10**6 - 1) * k / 400
    assert result.rank == pytest.approx(expected_rank, rel=1e-12)
    assert result.exposure == pytest.approx(math.log2(10**6 / expected_rank), rel=1e-12)
