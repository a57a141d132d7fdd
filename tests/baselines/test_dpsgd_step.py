"""One DP-SGD step with opacus (hooks and ghost clipping) equals a naive clip-each-example loop."""

import math

import pytest
import torch

from core.baselines.dpsgd import dp_step, make_private, per_sample_loss, poisson_schedule, unwrap
from core.config import ModelConfig
from core.models import build_tiny_gpt2
from core.train import pad_batch

VOCAB, PAD = 40, 0
CLIP = 0.1  # small enough that every example's gradient is clipped
MIXED_CLIP = 2.6  # between the six examples' gradient norms (2.1 to 3.4): some are clipped, some left whole


def tiny_model(seed=0):
    torch.manual_seed(seed)
    model = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), VOCAB).double()
    for m in model.modules():  # dropout off: the per-example loop must see the same network
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


def random_seqs(n=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, 13, (n,), generator=g).tolist()
    return [torch.randint(1, VOCAB, (k,), generator=g).tolist() for k in lengths]


def naive_update(model, seqs, optimizer_cls, lr, clip):
    """Clip each example's gradient to `clip`, average over the batch, one optimizer step (no noise); also
    returns how many examples were clipped."""
    params = list(model.parameters())
    total = [torch.zeros_like(p) for p in params]
    clipped = 0
    for s in seqs:
        ids, mask = pad_batch([s], PAD)
        grads = torch.autograd.grad(per_sample_loss(model, ids, mask)[0], params)
        norm = torch.sqrt(sum((g**2).sum() for g in grads))
        # opacus' clip factor C / (norm + 1e-6): the 1e-6 guards against zero norms; without it Adam's first
        # step (about lr * sign(g)) would amplify the 1e-6 relative difference on near-zero coordinates
        factor = min(1.0, clip / (float(norm) + 1e-6))
        clipped += factor < 1.0
        for acc, g in zip(total, grads, strict=True):
            acc += factor * g
    opt = optimizer_cls(params, lr=lr)
    for p, acc in zip(params, total, strict=True):
        p.grad = acc / len(seqs)
    opt.step()
    return model, clipped


def dp_update(model, seqs, optimizer_cls, lr, ghost, physical, clip):
    model.train()
    wrapped, optimizer, _ = make_private(model, len(seqs), len(seqs), 0.0, clip, lr, ghost, poisson=False,
                                         seed=0, stream="test", optimizer_cls=optimizer_cls)
    assert optimizer.expected_batch_size == len(seqs)
    loss = dp_step(wrapped, optimizer, seqs, PAD, physical=physical)
    assert math.isfinite(loss)
    return unwrap(wrapped)


@pytest.mark.parametrize("clip", [CLIP, MIXED_CLIP], ids=["all-clipped", "some-clipped"])
@pytest.mark.parametrize("ghost", [False, True], ids=["hooks", "ghost"])
@pytest.mark.parametrize(
    "optimizer_cls,lr,physical",
    [(torch.optim.SGD, 1.0, 64), (torch.optim.Adam, 1e-2, 64), (torch.optim.SGD, 1.0, 4)],  # 4: two chunks
    ids=["sgd", "adam", "sgd-chunked"],
)
def test_dp_step_matches_naive_per_example_clipping(ghost, optimizer_cls, lr, physical, clip):
    """With every example clipped, a trainer that scaled every example to the bound, those under it too, would
    still pass; at MIXED_CLIP it must scale some examples and leave the others whole."""
    seqs = random_seqs()
    start = tiny_model()
    expected, clipped = naive_update(tiny_model(), seqs, optimizer_cls, lr, clip)
    assert clipped == (len(seqs) if clip == CLIP else 3)
    got = dp_update(tiny_model(), seqs, optimizer_cls, lr, ghost, physical, clip)
    moved = 0.0
    for (name, p0), p1, p2 in zip(start.named_parameters(), expected.parameters(), got.parameters(), strict=True):
        moved = max(moved, float((p1 - p0).detach().abs().max()))
        assert torch.allclose(p1, p2, atol=1e-6, rtol=0), name
    assert moved > 1e-4  # the step did something, so the comparison means something


@pytest.mark.parametrize("noise_multiplier", [1.0, 2.5])
def test_empty_batch_still_adds_noise_of_the_calibrated_size(noise_multiplier):
    """An empty Poisson batch still releases noise; with SGD at lr 1 the update IS the noise, N(0, (z C)^2) per
    coordinate divided by the expected batch size: the size the accountant was told of, not a fraction of it."""
    model = tiny_model()
    before = [p.detach().clone() for p in model.parameters()]
    batch = 4
    wrapped, optimizer, _ = make_private(model, batch, batch, noise_multiplier, CLIP, 1.0, False, poisson=False,
                                         seed=0, stream="test", optimizer_cls=torch.optim.SGD)
    assert optimizer.noise_multiplier == noise_multiplier and optimizer.max_grad_norm == CLIP
    assert math.isnan(dp_step(wrapped, optimizer, [], PAD))
    after = list(unwrap(wrapped).parameters())
    update = torch.cat([(a - b).flatten() for a, b in zip(after, before, strict=True)])
    assert bool((update != 0).all())
    assert float(update.mean()) == pytest.approx(0.0, abs=0.05 * noise_multiplier * CLIP / batch)
    assert float(update.std()) == pytest.approx(noise_multiplier * CLIP / batch, rel=0.05)


@pytest.mark.parametrize("ghost", [False, True], ids=["hooks", "ghost"])
def test_the_batches_and_the_noise_come_from_streams_of_their_own(ghost):
    """They drew from torch's global generator after torch.manual_seed(seed), as the public base model's training
    had (core.base, the same seed: its initial weights, its dropout), so the batches the amplification assumes
    hidden, and the noise, were functions of the released model's starting point. Now nothing of DP-SGD reads
    the global generator, and (seed, stream) alone fixes both."""

    def one_epoch(global_seed: int, stream: str = "dp-sgd"):
        model = tiny_model()
        torch.manual_seed(global_seed)
        state = torch.get_rng_state()
        wrapped, optimizer, loader = make_private(model, 40, 8, 1.0, CLIP, 1.0, ghost, poisson=True, seed=0,
                                                  stream=stream, optimizer_cls=torch.optim.SGD)
        schedule = poisson_schedule(loader, 1)
        dp_step(wrapped, optimizer, [], PAD)  # an empty batch: the update is the noise alone
        untouched = torch.equal(torch.get_rng_state(), state)
        return schedule, torch.cat([p.detach().flatten() for p in unwrap(wrapped).parameters()]), untouched

    schedule, weights, untouched = one_epoch(global_seed=0)
    assert untouched and sum(map(len, schedule)) > 0
    again, same_weights, untouched = one_epoch(global_seed=12345)
    assert untouched and again == schedule and torch.equal(same_weights, weights)
    other, other_weights, _ = one_epoch(global_seed=0, stream="another stage")
    assert other != schedule and not torch.equal(other_weights, weights)
