"""Name leak rate R_name (App. O) on hand-made completions."""

from __future__ import annotations

import pytest

from core.analysis.leak import name_leak_rate

COMPLETIONS = [
    {"prefix": "Hi my name is", "reference": "Mireya by the way", "completion": "Mireya and I like hiking"},
    {"prefix": "I talked to", "reference": "Janet Miller today", "completion": "my friend yesterday"},
    {"prefix": "I talked to", "reference": "janet miller about it", "completion": "JANET MILLER, she said"},
    {"prefix": "Janet Miller is", "reference": "my name", "completion": "a nice person"},  # prefix does not count
    {"prefix": "We went to", "reference": "the park", "completion": "see Mireya's dog"},
    {"prefix": "We went to", "reference": "the park", "completion": "Amireya park"},  # not a word match
    {"prefix": "We went to", "reference": "the park", "completion": "the beach"},
    {"prefix": "We went to", "reference": "the zoo", "completion": "the zoo"},
]


def test_r_name_counts_completions_with_any_name():
    out = name_leak_rate(COMPLETIONS, ["Mireya", "Janet Miller"])
    assert out["r_name"] == pytest.approx(3 / 8)  # rows 0, 2, 4
    counts = out["r_name_counts"]
    assert counts["completions"] == 8 and counts["completions_with_name"] == 3 and counts["names"] == 2
    assert out["per_name"] == {"Mireya": 2, "Janet Miller": 1}
    assert "Mireya" not in str(counts)  # names stay out of the metrics


def test_bad_case_share_reproducing_the_name_of_the_reference():
    out = name_leak_rate(COMPLETIONS, ["Mireya", "Janet Miller"])
    # references with a name: rows 0, 1, 2; the completion repeats it in rows 0 and 2
    assert out["r_name_counts"]["references_with_name"] == 3
    assert out["r_name_counts"]["reference_name_reproduced"] == 2
    assert out["r_name_bad_case"] == pytest.approx(2 / 3)


def test_a_different_name_in_the_completion_is_a_leak_but_not_the_bad_case():
    rows = [{"reference": "Mireya said", "completion": "Janet Miller said"}]
    out = name_leak_rate(rows, ["Mireya", "Janet Miller"])
    assert out["r_name"] == 1.0 and out["r_name_bad_case"] == 0.0


def test_no_names_or_no_completions():
    assert name_leak_rate(COMPLETIONS, [])["r_name"] == 0.0
    assert name_leak_rate(COMPLETIONS, [])["r_name_bad_case"] is None
    assert name_leak_rate([], ["Mireya"])["r_name"] is None
