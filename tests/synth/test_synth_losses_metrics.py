"""Hand-computed checks: prefix features, the linearly weighted multitask loss, n-gram ratios, the classifier."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from core.synth.evaluate import (
    classifier_accuracy,
    ngram_ratio,
    ngram_ratios,
    separability,
    size_matched_ratios,
    words,
)
from core.synth.model import SynthLM, pack, prefix_features, prefix_weights, weighted_prefix_loss


def test_prefix_features_are_running_means_from_sep():
    # rows [BOS, rand, SEP, x1, x2, x3]: hidden value = position index (one dimension)
    hidden = torch.arange(6, dtype=torch.float32).view(1, 6, 1)
    feats = prefix_features(hidden)
    # after k text tokens: mean of positions 2..2+k
    assert feats.squeeze().tolist() == pytest.approx([2.5, 3.0, 3.5])


def test_prefix_weights_are_linear_in_the_prefix_and_skip_padding():
    w = prefix_weights(torch.tensor([6, 3, 1]), max_k=7, step=2)
    assert w[0].tolist() == pytest.approx([0, 1 / 6, 0, 2 / 6, 0, 3 / 6, 0])  # k = 2, 4, 6 weighted 1:2:3
    assert w[1].tolist() == pytest.approx([0, 1, 0, 0, 0, 0, 0])  # only k = 2 fits in 3 tokens
    assert w[2].tolist() == pytest.approx([1, 0, 0, 0, 0, 0, 0])  # shorter than the step: its full length


def test_weighted_prefix_loss_hand_computed():
    # one example, 2 labels, text of 6 tokens, step 2: prefixes 2, 4, 6 with weights 1/6, 2/6, 3/6
    logits = torch.zeros((1, 6, 2))
    logits[0, 1] = torch.tensor([0.0, 0.0])  # CE = ln 2
    logits[0, 3] = torch.tensor([math.log(3.0), 0.0])  # p(label 0) = 3/4: CE = ln(4/3)
    logits[0, 5] = torch.tensor([0.0, math.log(3.0)])  # p(label 0) = 1/4: CE = ln 4
    loss = weighted_prefix_loss(logits, torch.tensor([0]), prefix_weights(torch.tensor([6]), 6, 2))
    expected = (1 * math.log(2) + 2 * math.log(4 / 3) + 3 * math.log(4)) / 6
    assert float(loss[0]) == pytest.approx(expected, rel=1e-6)


def test_pack_keeps_the_two_sequences_apart():
    ids, attention, positions, disc_mask, lm_mask = pack([[0, 7, 1, 5]], [[0, 3, 1, 5, 6, 0]], pad=0)
    assert ids.tolist() == [[0, 7, 1, 5, 0, 3, 1, 5, 6, 0]]
    assert positions.tolist() == [[0, 1, 2, 3, 0, 1, 2, 3, 4, 5]]
    a = attention[0, 0]
    assert not a[4:, :4].any() and not a[:4, 4:].any()  # no attention across the two sequences
    assert a[9, 4:].all() and a[3, :4].all() and not a[2, 3]  # causal inside each
    assert disc_mask.all() and lm_mask.all()


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_a_packed_row_computes_each_sequence_as_if_alone(attention):
    """The packed forward pass gives each sequence the hidden states it has on its own, whatever attention the
    model was loaded with: under eager attention the boolean mask was added to the scores (off by 0.33)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=16, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=0,
                        eos_token_id=0, attn_implementation=attention)
    model = SynthLM(GPT2LMHeadModel(config).eval(), n_labels=2)
    disc, lm_rows = [[0, 7, 0, 5, 6, 7, 8, 9], [0, 3, 0, 5, 6]], [[0, 4, 0, 5, 6, 7, 8, 9, 0], [0, 4, 0, 5, 6, 0]]
    ids, mask, positions, _, _ = pack(disc, lm_rows, pad=0)
    with torch.no_grad():
        _, hidden = model(ids, mask, positions, keep=1)
        for i, (d, m) in enumerate(zip(disc, lm_rows, strict=True)):
            alone_d = model.lm.transformer(input_ids=torch.tensor([d])).last_hidden_state[0]
            alone_m = model.lm.transformer(input_ids=torch.tensor([m])).last_hidden_state[0]
            assert torch.allclose(hidden[i, : len(d)], alone_d, atol=1e-5)
            assert torch.allclose(hidden[i, 8 : 8 + len(m)], alone_m, atol=1e-5)


def test_ngram_ratio_known_pair():
    train = ["the cat sat on the mat", "a dog ran"]
    synthetic = ["the cat sat on a log", "a dog ran home"]
    # distinct synthetic 3-grams: the cat sat, cat sat on, sat on a, on a log, a dog ran, dog ran home
    # found in train: the cat sat, cat sat on, a dog ran -> 3 / 6
    assert ngram_ratio(synthetic, train, 3) == 0.5
    # 4-grams: the cat sat on (in train), cat sat on a, sat on a log, a dog ran home -> 1 / 4
    assert ngram_ratio(synthetic, train, 4) == 0.25
    assert ngram_ratios(synthetic, train)["7"] is None  # no synthetic 7-grams at all
    assert words("Don't stop!") == ["don", "'", "t", "stop", "!"]


def test_size_matched_share_is_the_share_at_the_other_sets_size():
    """Every text repeats one memorised 3-gram and adds three of its own, so n texts hold 1 + 3n distinct 3-grams
    of which 1 is in the train set: 100 texts share 1/301, any 10 of them 1/31. Compared with 10 real texts,
    the 100's share read 10 times too low; at their size it is exact."""
    train = ["i like film"]
    synthetic = [f"i like film w{i} x{i} y{i}" for i in range(100)]
    assert ngram_ratio(synthetic, train, 3) == pytest.approx(1 / 301)
    matched = size_matched_ratios(synthetic, train, 10)
    assert matched["texts"] == 10 and matched["draws"] == 5
    assert matched["ratios"]["3"] == pytest.approx(1 / 31, abs=1e-12)
    assert matched["ratios"]["4"] == pytest.approx(0.0) and matched["ratios"]["7"] is None  # no 7-grams
    # a subset with no n-gram of an order (short texts) leaves the mean of the others, not None (a review: a
    # copied 8-word text in 5 of 100 samples read as no 7-grams at all)
    copied = ["x y z"] * 95 + ["a b c d e f g h"] * 5
    per_draw = [ngram_ratios(random.Random(draw).sample(copied, 10), ["a b c d e f g h"])["7"] for draw in range(5)]
    assert None in per_draw and 1.0 in per_draw
    assert size_matched_ratios(copied, ["a b c d e f g h"], 10)["ratios"]["7"] == 1.0
    assert size_matched_ratios(["x y z"] * 20, ["a b c d e f g h"], 10)["ratios"]["7"] is None
    # no more texts than the size: all of them, once
    assert size_matched_ratios(synthetic[:8], train, 10) == {"texts": 8, "draws": 1,
                                                             "ratios": ngram_ratios(synthetic[:8], train)}


def test_classifier_and_separability_on_separable_toy_data():
    train = ["good great fine"] * 5 + ["bad awful poor"] * 5
    labels = ["pos"] * 5 + ["neg"] * 5
    acc, _ = classifier_accuracy(train, labels, ["great film", "awful film"], ["pos", "neg"])
    assert acc == 1.0
    assert classifier_accuracy(["x y"], ["pos"], ["a", "b"], ["pos", "neg"])[0] == 0.5  # one class only
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 0.1, (10, 3)), rng.normal(5, 0.1, (10, 3))])
    assert separability(x, ["a"] * 10 + ["b"] * 10, trees=10, folds=5, seed=0) == 1.0


def test_separability_of_noise_is_chance():
    """Embeddings that carry no label information separate at chance (1/2 for two balanced labels), which only
    held-out folds show: a forest scored on the points it was fitted on would call noise separable (near 1.0).
    200 points: a fold-averaged chance accuracy has a standard deviation of about 0.035, so [0.25, 0.75] is
    about 7 of them either side (seeded, so the number does not move anyway)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8))
    labels = list(rng.permutation(["a", "b"] * 100))
    assert 0.25 <= separability(x, labels, trees=10, folds=5, seed=0) <= 0.75


def test_classifier_cannot_know_words_it_never_saw_in_training():
    """Test texts made only of words absent from the training texts carry nothing the classifier learned, so it
    gives them all the same answer: right on exactly one of two balanced labels. Higher would mean the test set
    reached the classifier (e.g. its vocabulary or labels)."""
    train = ["good great fine"] * 5 + ["bad awful poor"] * 5
    labels = ["pos"] * 5 + ["neg"] * 5
    acc, _ = classifier_accuracy(train, labels, ["superb film", "dreadful film"], ["pos", "neg"])
    assert acc == 0.5
