"""PPLM on a tiny random GPT-2: one steering step moves the discriminator towards the target label."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from core.models import cache_tensors, output_cache
from core.synth.pplm import (
    PPLMSettings,
    _step,
    discriminator_loss,
    generate_plain,
    generate_pplm,
    nucleus_sample,
    perturb_past,
)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, tie_word_embeddings=False,
                     bos_token_id=0, eos_token_id=0)
    lm = GPT2LMHeadModel(cfg).eval()
    head = torch.nn.Linear(32, 3)
    for p in (*lm.parameters(), *head.parameters()):
        p.requires_grad_(False)
    return lm, head


def target_prob(lm, head, past, last, acc, count, target, h_unpert, unpert_next):
    """p(target) of the discriminator when the next-token distribution comes from `past` (positions before `last`)
    and the rest as in generation: `last`'s unperturbed hidden state, the look-ahead on the unperturbed cache. So
    the perturbation counts only by what it does to the next token."""
    with torch.no_grad():
        logits, _, _ = _step(lm, last, past)
        loss = discriminator_loss(lm, head, logits, h_unpert, acc, count, unpert_next, target)
    return torch.exp(-loss)


def test_one_pplm_step_raises_the_target_probability(tiny):
    lm, head = tiny
    n, target = 6, 2
    prompt = torch.tensor([[0, 5, 9, 17, 3]] * n)
    with torch.no_grad():
        past = cache_tensors(output_cache(lm(input_ids=prompt[:, :-1], use_cache=True)))
        unpert_logits, h_unpert, unpert_next = _step(lm, prompt[:, -1:], past)
    acc = torch.zeros((n, 32))
    targets = torch.full((n,), target)
    before = target_prob(lm, head, past, prompt[:, -1:], acc, 0, targets, h_unpert, unpert_next)
    settings = PPLMSettings(iterations=1, stepsize=0.02, kl_scale=0.01)
    perturbed = perturb_past(lm, head, past, prompt[:, -1:], acc, 0, unpert_next,
                             torch.softmax(unpert_logits, -1), targets, settings)
    after = target_prob(lm, head, perturbed, prompt[:, -1:], acc, 0, targets, h_unpert, unpert_next)
    assert torch.all(after > before), (before, after)
    # the perturbation touched the cached keys/values, not their shape
    assert [k.shape for k, _ in perturbed] == [k.shape for k, _ in past]


def test_the_discriminator_loss_reaches_the_past_only_through_the_next_token(tiny):
    """PPLM detaches the current token's hidden state: with the next-token distribution held fixed, the
    perturbation cannot lower the head's loss (else it would, by moving that state, without changing the text)."""
    lm, head = tiny
    n = 4
    prompt = torch.tensor([[0, 5, 9, 17, 3]] * n)
    with torch.no_grad():
        past = cache_tensors(output_cache(lm(input_ids=prompt[:, :-1], use_cache=True)))
        _, _, unpert_next = _step(lm, prompt[:, -1:], past)
    deltas = [torch.zeros_like(k, requires_grad=True) for k, _ in past]
    logits, h_last, _ = _step(lm, prompt[:, -1:], [(k + d, v) for (k, v), d in zip(past, deltas, strict=True)])
    targets = torch.full((n,), 1)
    acc = torch.zeros((n, 32))
    fixed_next = discriminator_loss(lm, head, logits.detach(), h_last, acc, 0, unpert_next, targets).sum()
    assert not fixed_next.requires_grad  # no path from the past to the loss but the next token's distribution
    steered = discriminator_loss(lm, head, logits, h_last, acc, 0, unpert_next, targets).sum()
    assert any(torch.count_nonzero(g) > 0 for g in torch.autograd.grad(steered, deltas))


def test_nucleus_sampling_with_tiny_top_p_is_greedy():
    probs = torch.tensor([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]])
    got = nucleus_sample(probs, 0.05, torch.Generator().manual_seed(0))
    assert got.tolist() == [1, 0]


@pytest.mark.parametrize("prompt", [[0, 5, 9], [0, 5, 0]])  # SEP 9, or SEP = the BOS/EOS token (the default)
def test_generators_return_token_lists_cut_at_eos(tiny, prompt):
    """Only generated tokens are cut at EOS: a prompt ending in the EOS token does not end every sample empty."""
    lm, head = tiny
    g = torch.Generator().manual_seed(1)
    plain = generate_plain(lm, prompt, 3, 5, 0.9, 1.0, eos=0, generator=g)
    steered = generate_pplm(lm, head, prompt, 1, 3, 5, 0.9, 1.0, 0, g, PPLMSettings(iterations=1))
    for out in (plain, steered):
        assert len(out) == 3 and all(len(ids) <= 5 and 0 not in ids for ids in out)
        assert sum(map(len, out)) > 0
