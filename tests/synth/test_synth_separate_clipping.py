"""Algorithm 1's separate releases: each loss's per-example gradient is clipped to C on its own."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import core.baselines.opacus_conv1d  # noqa: F401  (opacus samplers for GPT-2's Conv1D layers)
from core.baselines.dpsgd import ghost_backward, make_private, unwrap
from core.synth.model import SynthLM, disc_release_losses, freeze_for_training, lm_release_losses

C = 1e-3  # far below every per-example gradient norm: every example is clipped
PAD = 0
LM_ROWS = [[0, 5, 1, 7, 8, 9, 0], [0, 6, 1, 10, 11, 0], [0, 5, 1, 12, 13, 14, 15, 0]]
DISC_ROWS = [[0, 33, 1, 7, 8, 9], [0, 40, 1, 10, 11], [0, 21, 1, 12, 13, 14, 15]]
LABELS = torch.tensor([0, 1, 0])


def tiny_model() -> SynthLM:
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=48, n_positions=16, n_embd=16, n_layer=1, n_head=2, tie_word_embeddings=False,
                     bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = SynthLM(GPT2LMHeadModel(cfg), n_labels=2)
    freeze_for_training(model, "blocks")
    return model


def clipped_sum(model: SynthLM, loss_of) -> dict[str, torch.Tensor]:
    """sum_i min(1, C / |g_i|) g_i over the trainable weights, one example at a time with plain autograd."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    total = {n: torch.zeros_like(p) for n, p in params.items()}
    for i in range(len(LM_ROWS)):
        grads = torch.autograd.grad(loss_of(model, i).sum(), list(params.values()), allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params.values(), grads, strict=True)]
        norm = torch.sqrt(sum((g**2).sum() for g in grads))
        for n, g in zip(params, grads, strict=True):
            total[n] += g * min(1.0, C / float(norm))
    return total


def lm_loss(m, i):
    return lm_release_losses(m, [LM_ROWS[i]], PAD)


def disc_loss(m, i):
    return disc_release_losses(m, [DISC_ROWS[i]], LABELS[i : i + 1], PAD, step=2, disc_weight=1.0)


@pytest.mark.parametrize("release", ["lm", "disc"])
def test_each_release_clips_its_own_gradient(release):
    model = tiny_model()
    loss_of = lm_loss if release == "lm" else disc_loss
    expected = clipped_sum(model, loss_of)
    private, _, _ = make_private(model, len(LM_ROWS), 3, 0.0, C, 1e-3, ghost=True, poisson=False)
    if release == "lm":
        losses = lm_release_losses(private, LM_ROWS, PAD)
    else:
        losses = disc_release_losses(private, DISC_ROWS, LABELS, PAD, step=2, disc_weight=1.0)
    ghost_backward(private, losses)
    got = {n.removeprefix("_module."): p.grad for n, p in private.named_parameters() if p.requires_grad}
    unwrap(private)
    assert set(got) == set(expected)
    for name, grad in got.items():
        torch.testing.assert_close(grad, expected[name], rtol=1e-4, atol=1e-9)
    # each release moves only what its loss reads: the LM release never touches the discriminator head, the
    # discriminator release never the LM head; and the three examples each contribute norm C exactly
    untouched = "head." if release == "lm" else "lm.lm_head."
    assert all(float(g.abs().max()) == 0.0 for n, g in got.items() if n.startswith(untouched))
    assert any(float(g.abs().max()) > 0.0 for n, g in got.items() if not n.startswith(untouched))
