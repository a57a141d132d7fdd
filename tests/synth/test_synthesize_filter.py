"""The filter generator's discriminator filter in core.synth.run.synthesize, with generation and scoring faked."""

from __future__ import annotations

import numpy as np
import pytest

from core.synth import run as synth_run
from core.synth.config import synth_config

LABELS = ("film", "music")
# per label, the discriminator's p(label | text) of the candidates in the order they are generated
PROBS = {0: [0.9, 0.3, 0.6, 0.2, 0.4, 0.5], 1: [0.1, 0.7, 0.55, 0.8, 0.05, 0.45]}


class _Fmt:
    labels = LABELS
    eos = 0

    def prompt(self, a):
        return [a]


class _Model:
    lm = object()
    head = object()


class _Tok:
    def decode(self, ids):
        return f"label{ids[0]} sample{ids[1]}"


@pytest.fixture
def faked(monkeypatch):
    counter = {0: 0, 1: 0}
    p_of: dict[str, float] = {}

    def generate_plain(lm, prompt, n, *args):
        a = prompt[0]
        out = []
        for _ in range(n):
            i = counter[a]
            counter[a] += 1
            p_of[f"label{a} sample{i}"] = PROBS[a][i]
            out.append([a, i])
        return out

    def label_probs(model, fmt, encoded, seed):
        rows = []
        for text in encoded:
            a = int(text.split()[0][len("label"):])
            row = [0.0, 0.0]
            row[a] = p_of[text]
            row[1 - a] = 1.0 - p_of[text]
            rows.append(row)
        return np.array(rows)

    monkeypatch.setattr(synth_run, "generate_plain", generate_plain)
    monkeypatch.setattr(synth_run, "label_probs", label_probs)
    monkeypatch.setattr(synth_run, "encode_texts", lambda tok, texts: list(texts))


def _synthesize(**overrides):
    cfg = synth_config("tiny", generator="filter", filter_threshold=0.5, **overrides)
    return synth_run.synthesize(cfg, _Model(), _Fmt(), _Tok(), 3, lambda *a, **k: None)


def test_filter_accepts_only_samples_above_the_threshold(faked):
    """Guards the filter itself: a sample is accepted only if p(label | text) > threshold (strictly)."""
    rows, stats = _synthesize(gen_batch=3, filter_rounds=2)
    # label 0: [0.9, 0.3, 0.6] then [0.2, 0.4, 0.5] -> accepted 0.9, 0.6 (0.5 is not > 0.5)
    # label 1: [0.1, 0.7, 0.55] then [0.8, ...]      -> accepted 0.7, 0.55, 0.8
    assert stats["accepted_per_label"] == {"film": 2, "music": 3}
    assert stats["accepted"] == 5
    assert stats["candidates"] == 12
    assert stats["acceptance_rate"] == pytest.approx(5 / 12)
    accepted = {(r["label"], r["disc_prob"]) for r in rows if r["kept"] == "accepted"}
    assert accepted == {("film", 0.9), ("film", 0.6), ("music", 0.7), ("music", 0.55), ("music", 0.8)}
    assert all(r["disc_prob"] > 0.5 for r in rows if r["kept"] == "accepted")


def test_too_few_accepted_are_filled_with_the_best_scored_rejects(faked):
    """Guards the fill-up: a label short of its share gets its highest-scored rejects, marked 'filled'."""
    rows, stats = _synthesize(gen_batch=3, filter_rounds=2)
    filled = [(r["label"], r["disc_prob"]) for r in rows if r["kept"] == "filled"]
    assert filled == [("film", 0.5)]  # rejects of film: 0.3, 0.2, 0.4, 0.5 -> the best one
    assert stats["filled"] == 1
    assert [r["label"] for r in rows].count("film") == 3 and [r["label"] for r in rows].count("music") == 3


def test_a_single_round_fills_from_its_rejects_in_score_order(faked):
    """Guards rejection when the budget is one batch: [0.9, 0.3, 0.6] keeps two and fills the 0.3."""
    rows, stats = _synthesize(gen_batch=3, filter_rounds=1)
    film = [(r["disc_prob"], r["kept"]) for r in rows if r["label"] == "film"]
    assert sorted(film) == [(0.3, "filled"), (0.6, "accepted"), (0.9, "accepted")]
    music = [(r["disc_prob"], r["kept"]) for r in rows if r["label"] == "music"]
    # [0.1, 0.7, 0.55]: two accepted, the 0.1 filled
    assert sorted(music) == [(0.1, "filled"), (0.55, "accepted"), (0.7, "accepted")]
    assert (stats["accepted"], stats["filled"], stats["candidates"]) == (4, 2, 6)
