"""Per-phrase epsilon of a run's mechanism, the Table 6 summary, and calibration for an average phrase epsilon."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from scipy import optimize
from scipy.stats import norm

from core.analysis.phrases import (
    KIND_DPSGD,
    KIND_NOT_PRIVATE,
    KIND_PUBLIC,
    KIND_SEQPATE,
    KIND_USER_BATCHES,
    check_partition,
    dpsgd_phrase_avg_multiplier,
    dpsgd_phrase_epsilon_of_events,
    mechanism_kind,
    phrase_summary,
    phrase_table,
    seqpate_phrase_avg_std,
    seqpate_phrase_report,
    user_batched_phrase_avg_multiplier,
)
from core.data.prepare import Sentence
from core.data.secrets import SecretPhrase
from core.privacy import (
    ACCOUNTANT_BASIC_LAPLACE,
    ACCOUNTANT_EXACT_GAUSSIAN,
    ACCOUNTANT_PLD,
    GaussianEvent,
    LaplaceEvent,
    SubsampledGaussianEvent,
    dpsgd_phrase_epsilon,
    gaussian_epsilon,
    gaussian_std,
    seqpate_phrase_epsilon,
    user_batched_phrase_epsilon,
)
from core.seqpate.partition import assign_teachers
from tests.conftest import micro_config

STD, QUERIES, DELTA = 69.04, 1000, 1e-6


def closed_form_epsilon(mu: float, delta: float) -> float:
    """Analytic Gaussian mechanism: the eps with Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta."""

    def gap(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return optimize.brentq(gap, 0.0, 500.0, xtol=1e-12)


@pytest.mark.parametrize("n_s", [1, 2, 3, 5])
def test_seqpate_phrase_epsilon_is_the_gaussian_closed_form(n_s):
    privacy = {"events": [GaussianEvent(STD, math.sqrt(2), QUERIES).to_dict()]}
    mu = math.sqrt(QUERIES) * math.sqrt(2) * n_s / STD  # sensitivity sqrt(2) * n_s, Q releases composed
    report = seqpate_phrase_report(privacy, n_s, DELTA)
    assert report.epsilon == pytest.approx(closed_form_epsilon(mu, DELTA), rel=1e-6)
    assert report.accountant == ACCOUNTANT_EXACT_GAUSSIAN
    assert seqpate_phrase_report(privacy, 0, DELTA).epsilon == 0.0


def test_seqpate_laplace_phrase_names_the_accountant_that_gave_its_epsilon():
    """Laplace releases (ablation -gaussian) go to the PLD accountant, but where basic composition of pure DP is
    smaller it is the bound reported, and the phrase row must name it rather than 'pld'."""
    basic = seqpate_phrase_report({"events": [LaplaceEvent(0.5, 2.0, 3).to_dict()]}, 1, DELTA)
    assert basic.epsilon == pytest.approx(3 * 2.0 / 0.5) and basic.accountant == ACCOUNTANT_BASIC_LAPLACE
    pld = seqpate_phrase_report({"events": [LaplaceEvent(1.0, 2.0, 1).to_dict()]}, 1, DELTA)
    assert pld.epsilon == pytest.approx(2.0, abs=1e-4) and pld.accountant == ACCOUNTANT_PLD
    two = seqpate_phrase_report({"events": [LaplaceEvent(1.0, 2.0, 1).to_dict()]}, 2, DELTA)  # L1 2 * n_s
    assert two.epsilon == pytest.approx(4.0, abs=1e-4)


def test_seqpate_phrase_epsilon_is_computed_from_the_recorded_events_not_the_summary_fields():
    """privacy.json also states noise_scale and queries_spent; the events are what was released, and only they
    are accounted (a summary field that disagreed would otherwise set the phrase table)."""
    events = [GaussianEvent(STD, math.sqrt(2), QUERIES).to_dict()]
    stale = {"mechanism": "gaussian", "noise_scale": 10 * STD, "queries_spent": 1, "sensitivity": 1.0,
             "events": events}
    for n_s in (1, 3):
        assert seqpate_phrase_report(stale, n_s, DELTA).epsilon == seqpate_phrase_epsilon(STD, QUERIES, n_s, DELTA)
    # releases recorded in two events compose: the same as one event with their counts added
    split = {"events": [GaussianEvent(STD, math.sqrt(2), 400).to_dict(), GaussianEvent(STD, math.sqrt(2), 600).to_dict()]}
    assert seqpate_phrase_report(split, 3, DELTA).epsilon == pytest.approx(seqpate_phrase_epsilon(STD, QUERIES, 3, DELTA), rel=1e-12)
    assert seqpate_phrase_report({"events": [GaussianEvent(STD, math.sqrt(2), 0).to_dict()]}, 3, DELTA).epsilon == 0.0
    # a run whose student asked nothing records no events (TeacherOracle.events() before its first answer)
    assert seqpate_phrase_report({"events": [], "queries_spent": 0}, 3, DELTA).epsilon == 0.0
    for missing in ({}, {"events": [], "queries_spent": 5}, {"noise_scale": STD, "queries_spent": QUERIES}):
        with pytest.raises(ValueError, match="records no mechanism events"):  # never read as "nothing released"
            seqpate_phrase_report(missing, 3, DELTA)


def _phrase(name, indices, users, kind="name", inserted=0):
    return SecretPhrase(name, kind, tuple(users[:1]), tuple(indices), tuple(sorted(set(users))), inserted=inserted)


def test_the_partition_check_names_a_teachers_per_user_histogram_other_than_the_runs():
    from core.seqpate.partition import teachers_per_user

    users = [f"u{i % 5}" for i in range(40)]
    teacher_of = assign_teachers("by-user", users, 4, 0)
    recorded = teachers_per_user(users, teacher_of)
    assert check_partition(users, teacher_of, {"teachers_per_user": recorded}) == "ok"
    spread = assign_teachers("random", users, 4, 0)  # every user in several teachers: another partition
    check = check_partition(users, spread, {"teachers_per_user": recorded})
    assert check.startswith("MISMATCH: recomputed") and str(recorded) in check
    assert check_partition(users, teacher_of, {}) == "not recorded by the run"


def test_seqpate_table_uses_the_runs_partition():
    cfg = micro_config(method="seqpate", seqpate__partition="random", seqpate__teachers=4)
    train = [Sentence(f"s{i}", f"u{i % 7}") for i in range(40)]
    teacher_of = assign_teachers("random", [s.user_id for s in train], 4, cfg.seed)
    # three phrases: one sentence, two sentences in the same teacher, four sentences in four teachers
    same = [i for i in range(40) if teacher_of[i] == teacher_of[0]][:2]
    spread = [int(np.flatnonzero(teacher_of == t)[0]) for t in range(4)]
    phrases = [_phrase("A", [5], ["u5"]), _phrase("B", same, ["u0", "u0"]), _phrase("C", spread, ["u1"] * 4)]
    privacy = {"epsilon": 3.0, "delta": DELTA, "mechanism": "gaussian", "noise_scale": STD, "queries_spent": QUERIES,
               "events": [GaussianEvent(STD, math.sqrt(2), QUERIES).to_dict()]}
    table = phrase_table(cfg, privacy, phrases, train)
    assert table.kind == KIND_SEQPATE
    assert [r["teachers"] for r in table.rows] == [1, 1, 4]
    assert [r["occurrences"] for r in table.rows] == [1, 2, 4]
    assert [r["epsilon"] for r in table.rows] == [seqpate_phrase_epsilon(STD, QUERIES, n, DELTA) for n in (1, 1, 4)]
    assert table.info["partition_check"] == "not recorded by the run"
    summary = phrase_summary(table.rows, sample_epsilon=table.rows[0]["epsilon"])
    assert summary["count"] == 3 and summary["share_at_or_below_sample"] == pytest.approx(2 / 3)
    assert summary["share_below_avg"] == pytest.approx(2 / 3)
    assert summary["max"] == table.rows[2]["epsilon"]


def test_dpsgd_phrase_epsilon_grows_with_occurrences(monkeypatch):
    event = SubsampledGaussianEvent(3.0, 0.1, 20)
    values = [dpsgd_phrase_epsilon_of_events([event], n, DELTA) for n in (0, 1, 2, 3)]
    assert values[0] == 0.0
    assert values[1] < values[2] < values[3]
    assert values[2] == dpsgd_phrase_epsilon(3.0, 0.1, 20, 2, DELTA)
    # many occurrences skip core.privacy's coarse pre-pass: the same two bounds, the same accountant
    monkeypatch.setattr("core.analysis.phrases.DIRECT_GROUP_ABOVE", 1)
    assert dpsgd_phrase_epsilon_of_events([event], 2, DELTA) == values[2]


def test_dpsgd_and_user_batched_tables():
    train = [Sentence(f"s{i}", f"u{i // 4}") for i in range(16)]
    phrases = [_phrase("A", [0], ["u0"]), _phrase("B", [0, 1, 2], ["u0"] * 3), _phrase("C", [3, 4, 5], ["u0", "u1", "u1"])]
    cfg = micro_config(method="noisysgd")
    dp = {"epsilon": 2.0, "delta": DELTA, "unit": "sample",
          "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 4.0, "sampling_rate": 1.0, "steps": 5}]}
    table = phrase_table(cfg, dp, phrases, train)
    assert table.kind == KIND_DPSGD
    eps = [r["epsilon"] for r in table.rows]
    # full batches (q = 1): group privacy of a Gaussian is exact, n*mu-GDP
    for e, n in zip(eps, (1, 3, 3), strict=True):
        assert e == pytest.approx(closed_form_epsilon(n * math.sqrt(5) / 4.0, DELTA), rel=1e-6)
    assert all(r["teachers"] is None for r in table.rows)

    batches = [i // 4 for i in range(16)]  # four fixed batches of four sentences
    users = {"epsilon": 2.0, "delta": DELTA, "unit": "sample", "batching": "users", "sampling_rate": None,
             "events": [{"mechanism": "gaussian", "noise_std": 6.0, "sensitivity": 1.0, "count": 3}]}
    table = phrase_table(cfg, users, phrases, train, batch_of_sentence=batches)
    assert table.kind == KIND_USER_BATCHES
    a, b, c = (r["epsilon"] for r in table.rows)
    assert a == user_batched_phrase_epsilon(6.0, 3, [1], DELTA)
    assert b == user_batched_phrase_epsilon(6.0, 3, [3], DELTA)  # three occurrences in one batch
    assert c == user_batched_phrase_epsilon(6.0, 3, [2, 1], DELTA)  # sentence 3 in batch 0, 4 and 5 in batch 1
    assert a < c < b
    missing = phrase_table(cfg, users, phrases, train)
    assert all(math.isnan(r["epsilon"]) for r in missing.rows) and "batch" in missing.info["error"]


def test_public_and_non_private_runs():
    train = [Sentence("s", "u")]
    phrases = [_phrase("A", [0], ["u"])]
    public = {"epsilon": 0.0, "delta": 0.0, "unit": "none", "events": []}
    assert phrase_table(micro_config(method="pub-gpt"), public, phrases, train).rows[0]["epsilon"] == 0.0
    private = {"epsilon": math.inf, "delta": 0.0, "unit": "none", "events": []}
    assert phrase_table(micro_config(method="pri-gpt"), private, phrases, train).rows[0]["epsilon"] == math.inf
    assert mechanism_kind("pub-gpt", public) == KIND_PUBLIC
    assert mechanism_kind("pri-gpt-blacklist", private) == KIND_NOT_PRIVATE
    assert mechanism_kind("seqpate", {"mechanism": "none", "epsilon": math.inf}) == KIND_NOT_PRIVATE


def test_seqpate_phrase_avg_noise_hits_the_average():
    ns = [1] * 8 + [2, 3]
    std = seqpate_phrase_avg_std(3.0, DELTA, QUERIES, ns)
    avg = statistics.fmean(seqpate_phrase_epsilon(std, QUERIES, n, DELTA) for n in ns)
    assert 3.0 * (1 - 1e-4) <= avg <= 3.0
    assert std > gaussian_std(3.0, DELTA, QUERIES)  # more noise than the sample level needs
    # every phrase in one teacher: the sample-level calibration
    assert seqpate_phrase_avg_std(3.0, DELTA, QUERIES, [1, 1, 1]) == pytest.approx(gaussian_std(3.0, DELTA, QUERIES))
    with pytest.raises(ValueError):
        seqpate_phrase_avg_std(3.0, DELTA, QUERIES, [0, 0])


def test_dpsgd_and_user_batched_phrase_avg_noise():
    occurrences = [1, 1, 2, 4]
    z = dpsgd_phrase_avg_multiplier(2.0, DELTA, 1.0, 10, occurrences, rtol=1e-3)  # q = 1: exact and fast
    avg = statistics.fmean(dpsgd_phrase_epsilon(z, 1.0, 10, n, DELTA) for n in occurrences)
    assert 2.0 * (1 - 1e-3) <= avg <= 2.0
    per_batch = [[1], [2], [1, 1], [3, 1]]
    z = user_batched_phrase_avg_multiplier(2.0, DELTA, 4, per_batch)
    avg = statistics.fmean(user_batched_phrase_epsilon(z, 4, ks, DELTA) for ks in per_batch)
    assert 2.0 * (1 - 1e-4) <= avg <= 2.0
    assert gaussian_epsilon(math.sqrt(4) / z, DELTA) < 2.0  # the single-occurrence phrase is below the average


def test_phrase_summary_by_kind_and_infinite_values():
    rows = [{"epsilon": 1.0, "kind": "name"}, {"epsilon": 3.0, "kind": "name"}, {"epsilon": math.inf, "kind": "canary"}]
    s = phrase_summary(rows, sample_epsilon=1.0)
    assert s["avg"] == math.inf and s["share_at_or_below_sample"] == pytest.approx(1 / 3)
    assert s["by_kind"]["name"]["avg"] == 2.0 and s["by_kind"]["canary"]["count"] == 1
    assert phrase_summary([], 1.0)["count"] == 0


def test_calibration_helpers_average_over_name_phrases_only(tmp_path):
    from types import SimpleNamespace

    from core.analysis.phrases import (
        calibration_phrases,
        dpsgd_phrase_avg_multiplier_for,
        seqpate_phrase_avg_std_for,
        teachers_holding,
    )
    from core.data.prepare import PreparedData
    from core.data.secrets import insert_canaries

    rows = [{"text": f"hello my name is Mireya and I like item number {i}", "user_id": "u1"} for i in range(3)]
    rows += [{"text": f"we saw Mireya again at the park on day {i}", "user_id": f"u{i % 3 + 2}"} for i in range(6)]
    rows += [{"text": f"just an ordinary sentence about the weather number {i}", "user_id": f"u{i % 5 + 1}"}
             for i in range(30)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = micro_config(method="seqpate", seqpate__partition="by-user", seqpate__teachers=3, data__corpus=str(corpus))
    train = tuple(Sentence(r["text"], r["user_id"]) for r in rows)
    data = PreparedData(public_train=(Sentence("an ordinary public sentence", "p1"),), public_valid=(),
                        private_train=train, private_valid=(), private_test=(), public_users=frozenset({"p1"}),
                        private_users=frozenset(s.user_id for s in train))
    data = insert_canaries(data, "5", 0, digits=3)
    ws = SimpleNamespace(cfg=cfg, data=data)
    phrases = calibration_phrases(ws)
    assert [p.kind for p in phrases] == ["name"] and phrases[0].phrase == "Mireya"  # the canary is left out
    teacher_of = assign_teachers("by-user", [s.user_id for s in data.private_train], 3, cfg.seed)
    ns = teachers_holding(phrases, teacher_of)
    assert seqpate_phrase_avg_std_for(ws, teacher_of, 100) == seqpate_phrase_avg_std(3.0, cfg.privacy.delta, 100, ns)
    z = dpsgd_phrase_avg_multiplier_for(ws, 1.0, 5)
    assert z == dpsgd_phrase_avg_multiplier(3.0, cfg.privacy.delta, 1.0, 5, [phrases[0].occurrences])
