"""The lean sampling loop (KV cache, left padding, top-k/top-p on the k best) against transformers' own."""

from __future__ import annotations

from dataclasses import replace

import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from core.config import DecodeConfig, ModelConfig
from core.evaluation.completions import complete, left_pad, sample_batch, sample_next, sampling_distribution
from core.models import build_tiny_gpt2
from core.tokenizer import train_tokenizer
from core.train import lm_loss, pad_batch, predicted_logits

VOCAB = 64


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return build_tiny_gpt2(ModelConfig(n_layer=2, n_embd=32, n_head=2, n_positions=32), VOCAB).eval()


def test_sampling_distribution_equals_the_generate_warpers():
    torch.manual_seed(1)
    logits = torch.randn(5, VOCAB) * 3
    for decode in (DecodeConfig(top_k=40, temperature=0.7), DecodeConfig(top_k=10, top_p=0.8, temperature=1.3),
                   DecodeConfig(top_k=0, top_p=0.5, temperature=1.0), DecodeConfig(top_k=0, temperature=1.0)):
        warpers = LogitsProcessorList([TemperatureLogitsWarper(decode.temperature)])
        if decode.top_k:
            warpers.append(TopKLogitsWarper(decode.top_k))
        if decode.top_p < 1:
            warpers.append(TopPLogitsWarper(decode.top_p))
        expected = torch.softmax(warpers(None, logits.clone()), dim=-1)
        weights, tokens = sampling_distribution(logits, decode)
        weights = weights / weights.sum(-1, keepdim=True)
        got = weights if tokens is None else torch.zeros_like(expected).scatter(1, tokens, weights)
        assert torch.allclose(got, expected, atol=1e-6)


def test_complete_reports_the_prefixes_done_after_each_batch():
    """What the pseudo-data stage logs its progress from: the count so far, of all, once per batch."""
    tokenizer = train_tokenizer(["hello there friend", "how are you today"] * 20, vocab_size=300)
    model = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), len(tokenizer)).eval()
    calls = []
    prefixes = ["hello", "how are", "hello there", "you", "today"]
    texts = complete(model, tokenizer, prefixes, DecodeConfig(max_new_tokens=3), seed=0, batch_size=2,
                     on_batch=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 5), (4, 5), (5, 5)]
    # batching changes no draw's count: one continuation per prefix, in order
    assert len(texts) == len(prefixes)


def test_greedy_continuations_match_generate_with_left_padding():
    model = tiny_model()
    prefixes = [[0, 5, 9], [0, 7], [0, 3, 4, 5, 6]]
    ids, mask = left_pad(prefixes, pad=0)
    greedy = replace(DecodeConfig(), temperature=0.0)
    ours = sample_batch(model, ids, mask, greedy, new_tokens=8, eos=-1, generator=torch.Generator())
    with torch.inference_mode():
        theirs = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=8,
                                pad_token_id=0, eos_token_id=None)[:, ids.size(1):]
    assert torch.equal(ours, theirs)


def test_loss_on_predicted_positions_equals_the_masked_full_logits_loss():
    model = tiny_model()
    ids, mask = pad_batch([[1, 2, 3, 4, 5, 6], [1, 9, 8], [1, 4, 4, 4]], pad_id=0)
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1][mask[:, 1:]]
        logits, targets, _ = predicted_logits(model, ids, mask)
        assert torch.allclose(logits, full, atol=1e-5)
        expected = torch.nn.functional.cross_entropy(full, targets)
        assert torch.allclose(lm_loss(model, ids, mask), expected, atol=1e-5)


def test_sampled_tokens_follow_the_distribution():
    """Inverse-CDF draws: frequencies match the weights, zero-weight tokens are never drawn."""
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05, 0.0]])).expand(20_000, -1)
    g = torch.Generator().manual_seed(0)
    for decode, expected in ((DecodeConfig(top_k=0, temperature=1.0), [0.5, 0.3, 0.15, 0.05, 0.0]),
                             (DecodeConfig(top_k=2, temperature=1.0), [0.625, 0.375, 0, 0, 0])):
        counts = torch.bincount(sample_next(logits, decode, g), minlength=5) / len(logits)
        assert torch.allclose(counts, torch.tensor(expected), atol=0.015)
        assert counts[torch.tensor(expected) == 0].sum() == 0
