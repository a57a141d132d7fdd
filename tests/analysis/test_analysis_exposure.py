"""Canary exposure: exact and sampled ranks with fake scorers, and the LM scorer against a full computation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from core.analysis.exposure import canary_exposure, canary_exposures, candidate_text, model_scorer
from core.data.secrets import CANARY_TEMPLATE, Canary


def canary(secret: str, inserted: int = 10) -> Canary:
    return Canary(f"canary-{inserted}x", secret, CANARY_TEMPLATE.format(secret=secret), f"my ID is {secret}", "u1",
                  inserted, len(secret), CANARY_TEMPLATE)


def number(text: str) -> int:
    return int(re.search(r"is (\d+)", text).group(1))


def scorer_preferring(secret: int):
    """A fake model: the secret is the most likely candidate, the rest ordered by their number."""
    return lambda texts: np.array([-1.0 if number(t) == secret else float(number(t)) for t in texts])


def test_a_canary_ranked_first_has_exposure_log2_of_the_space():
    c = canary("042")
    result = canary_exposure(scorer_preferring(42), c)
    assert (result.method, result.rank, result.candidates, result.scored) == ("exact", 1.0, 1000, 999)
    assert result.exposure == math.log2(1000)
    sampled = canary_exposure(scorer_preferring(955320), canary("955320"), exact_limit=1000, samples=500)
    assert sampled.method == "sampled" and sampled.scored == 500 and sampled.more_likely == 0
    assert sampled.exposure == math.log2(10**6)
    assert sampled.exposure_low < sampled.exposure == sampled.exposure_high  # k = 0: only a lower end is known
    assert sampled.exposure_low == pytest.approx(math.log2(10**6) - math.log2(1 + (10**6 - 1) * (1 - 0.025 ** (1 / 500))))


def test_exact_rank_counts_the_strictly_more_likely_candidates():
    by_number = lambda texts: np.array([float(number(t)) for t in texts])  # noqa: E731
    assert canary_exposure(by_number, canary("999")).exposure == 0.0  # ranked last
    mid = canary_exposure(by_number, canary("249"))
    assert mid.rank == 250 and mid.exposure == pytest.approx(math.log2(1000 / 250))
    ties = canary_exposure(lambda texts: np.zeros(len(texts)), canary("500"))
    assert ties.rank == 1  # ties count in the canary's favour (the pessimistic side for privacy)


def test_sampled_estimate_brackets_the_true_exposure():
    by_number = lambda texts: np.array([float(number(t)) for t in texts])  # noqa: E731
    secret = 123_456
    truth = math.log2(10**6) - math.log2(secret + 1)
    est = canary_exposure(by_number, canary(f"{secret:06d}"), exact_limit=10**4, samples=4000, seed=1)
    assert est.method == "sampled" and est.candidates == 10**6
    assert est.exposure_low <= truth <= est.exposure_high
    assert abs(est.exposure - truth) < 0.3
    # the canary's own number is never drawn as a competitor
    seen = []

    def recording(texts):
        seen.extend(number(t) for t in texts)
        return by_number(texts)

    canary_exposure(recording, canary("0007"), exact_limit=10, samples=9_999)
    assert seen[0] == 7 and 7 not in seen[1:] and len(set(seen)) == 10**4


@pytest.fixture(scope="module")
def tiny_lm():
    import torch

    from core.config import ModelConfig
    from core.models import build_tiny_gpt2
    from core.tokenizer import train_tokenizer

    texts = [f"hello there number {i} is mine, just so you know my ID" for i in range(200)]
    tokenizer = train_tokenizer(texts, vocab_size=400)
    torch.manual_seed(0)
    model = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=48), len(tokenizer))
    return model.eval(), tokenizer


def test_model_scorer_matches_the_full_sentence_nll(tiny_lm):
    import torch

    from core.tokenizer import encode_sentences
    from core.train import pad_batch, token_nll

    model, tokenizer = tiny_lm
    texts = [candidate_text(CANARY_TEMPLATE, i, 3) for i in (0, 7, 42, 500, 999)]
    fast = model_scorer(model, tokenizer, max_tokens=40, batch_size=2)(texts)
    ids, mask = pad_batch(encode_sentences(tokenizer, texts, 40), tokenizer.pad_token_id)
    with torch.inference_mode():
        nll, predicted = token_nll(model, ids, mask)
    full = (nll * predicted).sum(dim=1).double().numpy()
    offset = full - fast  # the shared prefix is a constant left out of the fast score
    assert np.allclose(offset, offset[0], atol=1e-4) and offset[0] > 0


def test_canary_exposures_per_insertion_count(tiny_lm):
    """Each canary's detail is its own exposure under the model (canary_exposure with the LM scorer, called here
    canary by canary), and an insertion count shared by two canaries reports the mean of their two exposures."""
    model, tokenizer = tiny_lm
    canaries = [canary("17", 1), canary("83", 10), canary("42", 10)]
    out = canary_exposures(model, tokenizer, canaries, max_tokens=40)
    score = model_scorer(model, tokenizer, max_tokens=40)
    assert out["exposure_detail"] == [canary_exposure(score, c, seed=i).to_dict() for i, c in enumerate(canaries)]
    assert [d["method"] for d in out["exposure_detail"]] == ["exact"] * 3
    once, *tenfold = [d["exposure"] for d in out["exposure_detail"]]
    assert tenfold[0] != tenfold[1]  # so the mean differs from either one (the first, the last, the largest)
    assert out["exposure"] == {"1": once, "10": pytest.approx((tenfold[0] + tenfold[1]) / 2, rel=1e-12)}
    assert list(out["exposure"]) == ["1", "10"]  # in order of insertion count


def test_the_cached_prefix_path_itself_matches_the_full_pass(tiny_lm):
    """The scorer falls back to full sequences when the cache API does not fit, with the same numbers, so the test
    above cannot tell whether the cached path works; here it is called directly, with no fallback."""
    import torch

    from core.analysis.exposure import _cached_suffix_nll, _prefix_state
    from core.tokenizer import encode_sentences

    model, tokenizer = tiny_lm
    seqs = encode_sentences(tokenizer, [candidate_text(CANARY_TEMPLATE, i, 3) for i in range(0, 1000, 37)], 40)
    length = max({len(s) for s in seqs}, key=[len(s) for s in seqs].count)
    seqs = [s for s in seqs if len(s) == length][:4]  # the scorer batches rows of one length
    assert len(seqs) >= 3
    first = next(k for k in range(len(seqs[0])) if len({s[k] for s in seqs}) > 1)  # the first differing token
    state = _prefix_state(model, seqs[0][:first], torch.device("cpu"))
    assert state is not None
    ids = torch.tensor(seqs)
    with torch.inference_mode():
        cached = _cached_suffix_nll(model, ids, first, state)
        logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)[:, first - 1 : -1]
        full = -logp.gather(-1, ids[:, first:].unsqueeze(-1)).squeeze(-1).sum(dim=1)
    torch.testing.assert_close(cached, full, atol=1e-4, rtol=1e-5)
