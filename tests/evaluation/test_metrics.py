import math

import pytest
import torch

from core.evaluation import bleu_scores, perplexity_from_nll, sentence_nll, total_nll


def test_bleu_identical_is_100():
    s = bleu_scores(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert s["bleu4"] == pytest.approx(100.0)


def test_bleu_known_pair_hand_computed():
    # unigrams 5/6; bigrams 3/5 (the cat, on the, the mat); trigrams 1/4 (on the mat); same length: BP = 1
    s = bleu_scores(["the cat is on the mat"], ["the cat sat on the mat"])
    assert s["bleu1"] == pytest.approx(100 * 5 / 6)
    assert s["bleu2"] == pytest.approx(100 * math.sqrt(5 / 6 * 3 / 5))
    assert s["bleu3"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 4) ** (1 / 3))
    # no 4-gram matches (0/3): sacrebleu's exp smoothing counts the first empty order as 1 / (2 * 3)
    assert s["bleu4"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** (1 / 4))
    assert "orders:1-4" in s["bleu_signature"] and "smooth:exp" in s["bleu_signature"]


def test_bleu_brevity_penalty():
    # hypothesis 3 words, reference 6: BP = exp(1 - 6/3); all unigrams match
    s = bleu_scores(["the cat sat"], ["the cat sat on the mat"])
    assert s["bleu1"] == pytest.approx(100 * math.exp(1 - 2))


def test_bleu_rejects_length_mismatch():
    with pytest.raises(ValueError):
        bleu_scores(["a"], ["a", "b"])


class FixedModel(torch.nn.Module):
    """Predicts the same next-token distribution everywhere: p = softmax(logits)."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits)

    def forward(self, input_ids, attention_mask=None):
        b, t = input_ids.shape
        return type("Out", (), {"logits": self.logits.expand(b, t, -1)})()


def test_perplexity_hand_computed_case():
    # p = (1/2, 1/4, 1/4); sequences [0,1,2] and [0,1] predict tokens 1,2 and 1: NLL = 3 * ln 4
    model = FixedModel([math.log(2), math.log(1), math.log(1)])
    total, n = total_nll(sentence_nll(model, [[0, 1, 2], [0, 1]], pad_id=0))
    assert n == 3
    assert total == pytest.approx(3 * math.log(4))
    assert perplexity_from_nll(total, n) == pytest.approx(4.0)


def test_sentence_nll_is_per_sequence_and_ignores_padding():
    # p = (1/2, 1/4, 1/4): [0,1,2] predicts 1,2 (2 ln 4), [0,1] predicts 1 (ln 4), [1,0] predicts 0 (ln 2)
    model = FixedModel([math.log(2), math.log(1), math.log(1)])
    rows = sentence_nll(model, [[0, 1, 2], [0, 1], [1, 0]], pad_id=2, batch_size=2)
    assert [tokens for _, tokens in rows] == [2, 1, 1]
    assert [nll for nll, _ in rows] == pytest.approx([2 * math.log(4), math.log(4), math.log(2)])


def test_perplexity_is_corpus_level_not_mean_of_batches():
    # batch 1 predicts token 0 (p=1/2), batch 2 predicts tokens 1,1 (p=1/4): corpus PPL = exp((ln2 + 2 ln4)/3)
    model = FixedModel([math.log(2), math.log(1), math.log(1)])
    total, n = total_nll(sentence_nll(model, [[2, 0], [0, 1, 1]], pad_id=2, batch_size=1))
    assert perplexity_from_nll(total, n) == pytest.approx(math.exp((math.log(2) + 2 * math.log(4)) / 3))
    assert perplexity_from_nll(total, n) != pytest.approx((2 + 4) / 2)
