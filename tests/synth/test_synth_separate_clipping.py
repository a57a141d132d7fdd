"""Algorithm 1's separate releases: each loss's per-example gradient is clipped to C on its own."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import core.baselines.opacus_conv1d  # noqa: F401  (opacus samplers for GPT-2's Conv1D layers)
from core.baselines.dpsgd import ghost_backward, make_private, unwrap
from core.synth.model import SynthLM, freeze_for_training
from core.synth.train import disc_losses, lm_losses

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
    return lm_losses(m, [LM_ROWS[i]], PAD)


def disc_loss(m, i):
    return disc_losses(m, [DISC_ROWS[i]], LABELS[i : i + 1], PAD, step=2, weight=1.0)


@pytest.mark.parametrize("release", ["lm", "disc"])
def test_each_release_clips_its_own_gradient(release):
    model = tiny_model()
    loss_of = lm_loss if release == "lm" else disc_loss
    expected = clipped_sum(model, loss_of)
    private, _, _ = make_private(model, len(LM_ROWS), 3, 0.0, C, 1e-3, ghost=True, poisson=False, seed=0,
                                   stream="test")
    if release == "lm":
        losses = lm_losses(private, LM_ROWS, PAD)
    else:
        losses = disc_losses(private, DISC_ROWS, LABELS, PAD, step=2, weight=1.0)
    ghost_backward(private, losses)
    got = {n.removeprefix("_module."): p.grad for n, p in private.named_parameters() if p.requires_grad}
    unwrap(private)
    assert set(got) == set(expected)
    for name, grad in got.items():
        torch.testing.assert_close(grad, expected[name], rtol=1e-4, atol=1e-9)
    # each release's loss reads only its own head: the LM loss gives the discriminator head a zero gradient, the
    # discriminator loss the LM head
    untouched = "head." if release == "lm" else "lm.lm_head."
    assert all(float(g.abs().max()) == 0.0 for n, g in got.items() if n.startswith(untouched))
    assert any(float(g.abs().max()) > 0.0 for n, g in got.items() if not n.startswith(untouched))


def test_a_release_never_moves_the_head_it_does_not_read():
    """With noise, opacus gives every trainable weight a noisy gradient; the release drops the unread head's."""
    from core.synth.train import Release, _step

    model = tiny_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    head, lm_head = tuple(model.head.parameters()), tuple(model.lm.lm_head.parameters())
    private, optimizer, _ = make_private(model, len(LM_ROWS), 3, 1.0, C, 1e-2, ghost=True, poisson=False,
                                         seed=0, stream="test")
    lm_release = Release(lambda m, idx: lm_losses(m, [LM_ROWS[i] for i in idx], PAD), unread=head)
    disc_release = Release(lambda m, idx: disc_losses(m, [DISC_ROWS[i] for i in idx], LABELS[list(idx)], PAD, 2,
                                                      1.0), unread=lm_head)

    def moved():
        return {n.removeprefix("_module.") for n, p in private.named_parameters()
                if not torch.equal(p.detach(), before[n.removeprefix("_module.")])}

    _step(private, optimizer, [0, 1, 2], lm_release)
    assert "lm.lm_head.weight" in moved() and not {"head.weight", "head.bias"} & moved()
    _step(private, optimizer, [], disc_release)  # an empty Poisson batch: noise only, still not the LM head's
    _step(private, optimizer, [0, 1, 2], disc_release)
    assert {"head.weight", "head.bias"} <= moved()
    lm_head_now = dict(private.named_parameters())["_module.lm.lm_head.weight"].detach().clone()
    _step(private, optimizer, [], disc_release)
    assert torch.equal(dict(private.named_parameters())["_module.lm.lm_head.weight"].detach(), lm_head_now)
    unwrap(private)


@pytest.mark.parametrize(("clipping", "releases"), [("separate", 2), ("joint", 1)])
def test_train_lm_noises_each_release_with_its_share(monkeypatch, clipping, releases):
    """train_lm takes the accounted z; each of Algorithm 1's two releases per batch gets sqrt(2) z."""
    import math

    import core.synth.train as train
    from core.synth.config import synth_config
    from core.synth.model import Formatter

    seen = {}
    real_make_private, real_update = train.make_private, train._update

    def spy_make_private(model, n, batch_size, noise_multiplier, *args, **kwargs):
        seen["z"] = noise_multiplier
        return real_make_private(model, n, batch_size, noise_multiplier, *args, **kwargs)

    def spy_update(optimizer, unread):
        seen["updates"] = seen.get("updates", 0) + (not optimizer._check_skip_next_step(pop_next=False))
        real_update(optimizer, unread)

    monkeypatch.setattr(train, "make_private", spy_make_private)
    monkeypatch.setattr(train, "_update", spy_update)
    cfg = synth_config("tiny", generator="multitask", epochs=1, batch_size=2, multitask_clipping=clipping)
    fmt = Formatter(bos=0, sep=1, eos=0, pad=PAD, vocab_size=48, labels=("a", "b"), label_ids=((5,), (6,)),
                    max_tokens=16)
    texts = [[7, 8, 9], [10, 11], [12, 13, 14, 15], [16, 17]]
    batches = train.Batches(fmt, texts, [0, 1, 0, 1], seed=0)
    _, taken, _ = train.train_lm(tiny_model(), batches, cfg, 0.8, lambda *a, **k: None)
    assert seen["z"] == pytest.approx(0.8 * math.sqrt(releases), rel=1e-12)
    assert taken == 2 and seen["updates"] == releases * taken


def test_a_schedule_other_than_the_calibrated_one_stops_training(monkeypatch):
    """The noise is calibrated for plan_privacy's Poisson shape and the steps taken are accounted at its sampling
    rate: a schedule of another length (a change to one side only) must stop the run, not train unaccounted."""
    import core.synth.train as train
    from core.synth.config import synth_config
    from core.synth.model import Formatter

    cfg = synth_config("tiny", generator="filter", epochs=1, batch_size=2)
    fmt = Formatter(bos=0, sep=1, eos=0, pad=PAD, vocab_size=48, labels=("a", "b"), label_ids=((5,), (6,)),
                    max_tokens=16)
    batches = train.Batches(fmt, [[7, 8, 9], [10, 11], [12, 13, 14, 15], [16, 17]], [0, 1, 0, 1], seed=0)
    real_schedule = train.poisson_schedule
    monkeypatch.setattr(train, "poisson_schedule", lambda loader, epochs: real_schedule(loader, epochs + 1))
    with pytest.raises(RuntimeError, match=r"the conditional-finetune schedule \(4 steps at q 0.5\) is not the one "
                                           r"its noise was calibrated for \(2 steps at q 0.5\)"):
        train.train_lm(tiny_model(), batches, cfg, 0.8, lambda *a, **k: None)


def test_train_lm_releases_are_the_lm_loss_then_the_discriminator_loss(monkeypatch):
    """Algorithm 1: the first release clips the LM loss alone and drops the discriminator head's noise, the second
    the discriminator loss alone and drops the LM head's; a joint (summed) loss in either fails here."""
    import core.synth.train as train
    from core.synth.config import synth_config
    from core.synth.model import Formatter

    used = []
    real_step = train._step

    def spy_step(model, optimizer, idx, release):
        used.append(release)
        return real_step(model, optimizer, idx, release)

    monkeypatch.setattr(train, "_step", spy_step)
    cfg = synth_config("tiny", generator="multitask", epochs=1, batch_size=2, multitask_clipping="separate")
    fmt = Formatter(bos=0, sep=1, eos=0, pad=PAD, vocab_size=48, labels=("a", "b"), label_ids=((5,), (6,)),
                    max_tokens=16)
    batches = train.Batches(fmt, [[7, 8, 9], [10, 11], [12, 13, 14, 15], [16, 17]], [0, 1, 0, 1], seed=0)
    model, _, _ = train.train_lm(tiny_model(), batches, cfg, 0.8, lambda *a, **k: None)
    lm_release, disc_release = used[0], used[1]
    assert {id(p) for p in lm_release.unread} == {id(p) for p in model.head.parameters()}
    assert {id(p) for p in disc_release.unread} == {id(model.lm.lm_head.weight)}
    idx = [0, 1, 2, 3]
    random_labels = batches.generator.get_state()  # disc_rows draws fresh random label tokens: replay the same
    with torch.no_grad():
        expected_lm = lm_losses(model, batches.lm_rows(idx), PAD)
        expected_disc = disc_losses(model, batches.disc_rows(idx), batches.label_tensor(idx), PAD, cfg.prefix_step,
                                    cfg.disc_weight)
        batches.generator.set_state(random_labels)
        torch.testing.assert_close(lm_release.losses(model, idx), expected_lm)
        torch.testing.assert_close(disc_release.losses(model, idx), expected_disc)


def test_the_label_tokens_do_not_replay_the_stream_that_draws_the_batches():
    """The accounting takes the Poisson batches (and the noise), drawn from torch's global generator after
    torch.manual_seed(seed), to be independent of everything else. The random tokens standing in for the label
    used to come from a generator seeded with the same seed: token k and the k-th example's inclusion were read
    off one random word."""
    from core.synth import train
    from core.synth.model import Formatter

    fmt = Formatter(bos=0, sep=1, eos=0, pad=2, vocab_size=1 << 13, labels=("a", "b"), label_ids=((5,), (6,)),
                    max_tokens=16)
    n = 640
    for seed in (0, 1, 2):
        batches = train.Batches(fmt, [[7, 8]] * n, [0, 1] * (n // 2), seed=seed)
        tokens = [row[1] for row in batches.disc_rows(range(n))]  # "BOS rand SEP text": the stand-in is second
        replayed = fmt.random_tokens(n, torch.Generator().manual_seed(seed))  # the old, shared stream
        assert tokens != replayed
        assert len(set(tokens)) > n // 2  # still uniform-looking draws, not a constant
