"""DP-Adam fine-tuning for synthetic data (opacus, pieces of core.baselines.dpsgd), and the privacy plan.

- naive conditional LM (filter / pplm generators): per-example loss = NLL of "BOS label SEP text EOS";
- multitask LM (the paper's method): per-example loss = that NLL + the weighted prefix loss of the discriminator
  head on "BOS rand SEP text". `separate` (default, Algorithm 1 of the paper): per batch, the LM gradient and
  then the discriminator gradient are each clipped to C, noised and applied by an Adam step: two releases on the
  same batch, which at equal privacy need sqrt(2) times the noise each (core.privacy.per_release_noise_multiplier).
  `joint`: both sequences sit in one packed row, so one example is one clipped gradient (ghost clipping), one
  release per batch; the two losses share one clipping norm;
- discriminator head on the frozen fine-tuned model (filter / pplm): per-example gradients of a linear head
  (opacus hooks) on the mean hidden states; it reads private data, so it is DP-trained too and its steps are
  charged to the same budget.

Privacy: Poisson sampling at rate q, noise multiplier z calibrated by core.privacy BEFORE training for all
planned steps (LM + head) at (epsilon, delta = 1 / |train|); epsilon is recomputed from the steps taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

import core.baselines.opacus_conv1d  # noqa: F401  (opacus samplers for GPT-2's Conv1D layers)
from core.baselines.dpsgd import (
    clipped_noisy_step,
    make_private,
    poisson_schedule,
    unwrap,
)
from core.privacy import (
    SubsampledGaussianEvent,
    dpsgd_noise_multiplier,
    epsilon_from_events,
    events_to_dicts,
    per_release_noise_multiplier,
    poisson_shape,
)
from core.privacy.streams import SYNTH_LABEL_TOKENS, SYNTH_SCORING_TOKENS, dp_sgd_streams, stream_seed
from core.synth.config import SynthConfig
from core.synth.model import (
    TEXT_START,
    Formatter,
    SynthLM,
    freeze_for_training,
    full_features,
    lm_nll,
    multitask_losses,
    prefix_features,
    prefix_weights,
    weighted_prefix_loss,
)
from core.train import model_device, on_model_device, pad_batch

Log = Callable[..., None]


# ------------------------------------------------------------------------------------------------------------
# Privacy plan
# ------------------------------------------------------------------------------------------------------------


def releases_per_step(cfg: SynthConfig) -> int:
    """Gaussian releases per sampled batch of the LM stage: 2 for Algorithm 1's separate clipping, else 1."""
    return 2 if cfg.generator == "multitask" and cfg.multitask_clipping == "separate" else 1


def plan_privacy(cfg: SynthConfig, n_train: int) -> dict:
    """Noise for every DP stage of the generator, fixed before training: one z for LM and head steps alike.

    `noise_multiplier` is the accounted z of one step (its releases taken together); the LM stage adds
    `release_noise_multiplier` to each of its releases (the same unless the multitask gradients are separate).
    """
    q, lm_steps = poisson_shape(n_train, cfg.batch_size, cfg.epochs)
    head_steps = 0 if cfg.generator == "multitask" else poisson_shape(n_train, cfg.batch_size, cfg.head_epochs)[1]
    delta = 1.0 / n_train  # the paper's setting (App. A): delta = 1 / |D_train|
    z = dpsgd_noise_multiplier(cfg.epsilon, delta, q, lm_steps + head_steps) if math.isfinite(cfg.epsilon) else 0.0
    releases = releases_per_step(cfg)
    return {"sampling_rate": q, "lm_steps": lm_steps, "head_steps": head_steps, "delta": delta,
            "noise_multiplier": z, "releases_per_step": releases,
            "release_noise_multiplier": per_release_noise_multiplier(z, releases)}


def privacy_record(cfg: SynthConfig, plan: dict, lm_taken: int, head_taken: int) -> dict:
    """privacy.json: the steps actually taken as events, epsilon recomputed from them by core.privacy.

    A step of Algorithm 1 makes two releases of the SAME sampled batch: that is one event at the accounted z (see
    core.privacy.per_release_noise_multiplier), never two independent events at the per-release z, which would
    undercount (the batch is sampled once)."""
    event = SubsampledGaussianEvent(plan["noise_multiplier"], plan["sampling_rate"], lm_taken + head_taken)
    report = epsilon_from_events([event], plan["delta"])
    private = plan["noise_multiplier"] > 0
    releases = plan["releases_per_step"]
    per_step = (f"; each LM step releases {releases} gradients of its batch (LM and discriminator, each clipped to "
                f"C on its own, Algorithm 1), each with sqrt({releases}) times the accounted noise multiplier, "
                f"accounted together as one release" if releases > 1 else "")
    return {
        **report.to_dict(),
        "unit": "sample" if private else "none",
        "events": events_to_dicts([event]),
        "steps_by_stage": {"lm": lm_taken, "discriminator_head": head_taken},
        "target_epsilon": cfg.epsilon,
        "noise_multiplier": plan["noise_multiplier"],
        "releases_per_step": releases,
        "release_noise_multiplier": plan["release_noise_multiplier"],
        "sampling_rate": plan["sampling_rate"],
        "max_grad_norm": cfg.max_grad_norm,
        "clipping": "ghost (opacus)" + (", LM and discriminator gradients clipped separately (Algorithm 1)"
                                         if releases > 1 else ""),
        "delta_rule": "1 / |train|",
        "random_streams": [name for stage in training_stages(cfg)
                           for name in dp_sgd_streams(training_stream(stage)).values()],
        "note": ("epsilon=inf: clipped but no noise, NOT private" if not private else
                 "DP-Adam with Poisson sampling; one noise multiplier for every step (LM and discriminator head "
                 "alike), calibrated before training; generated samples are post-processing" + per_step),
    }


# ------------------------------------------------------------------------------------------------------------
# Per-example losses
# ------------------------------------------------------------------------------------------------------------


def _positions(ids: torch.Tensor) -> torch.Tensor:
    return torch.arange(ids.size(1), device=ids.device).unsqueeze(0).repeat(ids.size(0), 1)  # opacus issue #841


# Each loss below adds the head it does not use at weight 0: ghost clipping needs every trainable layer's hook to
# fire in every backward, and a weight-0 term gives that layer a gradient, and a share of the example's norm, of
# exactly 0.


def lm_losses(model, rows: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    """Mean NLL per "BOS label SEP text EOS" row (B,); the discriminator head joins at weight 0."""
    ids, mask = on_model_device(model, *pad_batch(rows, pad))
    logits, hidden = model(ids, mask.long(), _positions(ids), keep=0)
    return lm_nll(logits, ids, mask) + 0.0 * model.head(hidden[:, 0]).sum(dim=-1)


def disc_losses(model, rows: Sequence[Sequence[int]], labels: torch.Tensor, pad: int, step: int,
                weight: float) -> torch.Tensor:
    """Weighted prefix loss per "BOS rand SEP text" row (B,), times `weight`; the LM head joins at weight 0."""
    ids, mask, labels = on_model_device(model, *pad_batch(rows, pad), labels)
    logits, hidden = model(ids, mask.long(), _positions(ids), keep=1)
    feats = prefix_features(hidden)
    weights = prefix_weights(mask[:, TEXT_START + 1 :].sum(dim=1), feats.size(1), step)
    return weight * weighted_prefix_loss(model.head(feats), labels, weights) + 0.0 * logits.sum(dim=(1, 2))


def training_stages(cfg: SynthConfig) -> list[str]:
    """The DP training stages of the generator, in order (their progress lines' stage names)."""
    if cfg.generator == "multitask":
        return ["multitask-finetune"]
    return ["conditional-finetune", "discriminator-head"]


def training_stream(stage: str) -> str:
    """The name of a DP training stage's streams (core.privacy.streams): its Poisson sampling's and its noise's."""
    return f"synth {stage}"


def label_token_seed(seed: int) -> int:
    """Seed of the random tokens that stand in for the label: a stream of its own. Seeded with `seed`, they
    replayed the stream that then drew the Poisson batches, so an example's token came from the same random word
    as another example's inclusion in a batch, a dependence the accounting does not allow for (a privacy review)."""
    return stream_seed(seed, SYNTH_LABEL_TOKENS)


class Batches:
    """Builds the rows of a batch of example indices; fresh random label tokens every time (Algorithm 1)."""

    def __init__(self, fmt: Formatter, text_ids: Sequence[Sequence[int]], labels: Sequence[int], seed: int):
        self.fmt, self.text_ids, self.labels = fmt, text_ids, labels
        self.generator = torch.Generator().manual_seed(label_token_seed(seed))

    def lm_rows(self, idx: Sequence[int]) -> list[list[int]]:
        return [self.fmt.lm_row(self.labels[i], self.text_ids[i]) for i in idx]

    def disc_rows(self, idx: Sequence[int]) -> list[list[int]]:
        rand = self.fmt.random_tokens(len(idx), self.generator)
        return [self.fmt.disc_row(r, self.text_ids[i]) for r, i in zip(rand, idx, strict=True)]

    def label_tensor(self, idx: Sequence[int]) -> torch.Tensor:
        return torch.tensor([self.labels[i] for i in idx], dtype=torch.long)


# ------------------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """One noisy DP-Adam step per sampled batch: the per-example losses it clips, and the trainable parameters
    those losses do not read. Their gradient is pure noise, so it is dropped before Adam (post-processing, free):
    as in Algorithm 1, the LM step never moves the discriminator head, nor the discriminator step the LM head."""

    losses: Callable
    unread: tuple[torch.nn.Parameter, ...] = ()


def _update(optimizer, unread: Sequence[torch.nn.Parameter]) -> None:
    """opacus' step (clipped sum + noise, then Adam), the noisy gradients of `unread` dropped before Adam."""
    if optimizer.pre_step():
        for p in unread:
            p.grad = None  # Adam skips it and leaves its moments alone
        optimizer.original_optimizer.step()


def _step(model, optimizer, idx: Sequence[int], release: Release) -> float:
    """One DP-Adam step of a release on the sampled batch (clipped_noisy_step), its unread gradients dropped."""
    return clipped_noisy_step(model, optimizer, idx, lambda chunk: release.losses(model, chunk),
                              update=lambda: _update(optimizer, release.unread))


def adam_with_fast_head(head_params: Sequence[torch.nn.Parameter], head_lr: float) -> Callable:
    """An optimizer factory for make_private: Adam, the discriminator head in its own group with head_lr.

    A freshly initialised head needs a larger step than the pretrained transformer to learn in a few hundred
    steps; the noise is the same for every parameter (opacus adds it before the optimizer's update).
    """
    ids = {id(p) for p in head_params}

    def make(params, lr: float) -> torch.optim.Optimizer:
        params = list(params)
        groups = [{"params": [p for p in params if id(p) not in ids]},
                  {"params": [p for p in params if id(p) in ids], "lr": head_lr}]
        return torch.optim.Adam([g for g in groups if g["params"]], lr=lr)

    return make


def _run(model, n: int, cfg: SynthConfig, z: float, epochs: int, lr: float, ghost: bool,
         releases: Sequence[Release], stage: str, log: Log, should_stop: Callable[[], bool],
         optimizer_cls: Callable = torch.optim.Adam) -> tuple[object, int, list[float]]:
    """DP-Adam over the Poisson schedule: per sampled batch, one noisy step per release, noise multiplier z each."""
    model, optimizer, loader = make_private(model, n, cfg.batch_size, z, cfg.max_grad_norm, lr, ghost,
                                            poisson=True, seed=cfg.seed, stream=training_stream(stage),
                                            optimizer_cls=optimizer_cls)
    schedule = poisson_schedule(loader, epochs)
    q, steps = poisson_shape(n, cfg.batch_size, epochs)  # what plan_privacy calibrated z for and accounts
    if not (math.isclose(loader.sample_rate, q) and len(schedule) == steps):  # as dpsgd.train_dp checks its own
        raise RuntimeError(f"the {stage} schedule ({len(schedule)} steps at q {loader.sample_rate:g}) is not the one "
                           f"its noise was calibrated for ({steps} steps at q {q:g})")
    per_epoch = len(loader)
    losses, running, taken = [], [], 0
    for t, idx in enumerate(schedule):
        if should_stop():
            break
        loss = sum(_step(model, optimizer, [int(i) for i in idx], release) for release in releases)
        taken = t + 1
        if not math.isnan(loss):
            running.append(loss)
        if taken % per_epoch == 0 or taken == len(schedule):
            losses.append(float(np.mean(running)) if running else math.nan)
            running = []
            log(stage, fraction=taken / len(schedule), step=taken, steps=len(schedule), loss=round(losses[-1], 4))
    return unwrap(model), taken, losses


def train_lm(model: SynthLM, batches: Batches, cfg: SynthConfig, z: float, log: Log,
             should_stop: Callable[[], bool] = lambda: False) -> tuple[SynthLM, int, list[float]]:
    """DP fine-tuning of the conditional LM; with generator multitask, jointly with the discriminator head.

    z is plan_privacy's noise_multiplier, the accounted z of one step; each release carries its share."""
    multitask = cfg.generator == "multitask"
    freeze_for_training(model, cfg.trainable)
    model.head.requires_grad_(multitask)  # ghost clipping needs every trainable layer in every loss
    torch.manual_seed(cfg.seed)
    pad = batches.fmt.pad

    def lm(m, idx):
        return lm_losses(m, batches.lm_rows(idx), pad)

    def disc(m, idx):
        return disc_losses(m, batches.disc_rows(idx), batches.label_tensor(idx), pad, cfg.prefix_step,
                           cfg.disc_weight)

    def joint(m, idx):
        lm_part, disc_part = multitask_losses(m, batches.disc_rows(idx), batches.lm_rows(idx),
                                              batches.label_tensor(idx), pad, cfg.prefix_step, cfg.disc_weight)
        return lm_part + disc_part

    if not multitask:
        releases = [Release(lm)]
    elif releases_per_step(cfg) == 1:
        releases = [Release(joint)]
    else:  # Algorithm 1
        lm_head = tuple(p for p in model.lm.lm_head.parameters() if p.requires_grad)
        releases = [Release(lm, unread=tuple(model.head.parameters())), Release(disc, unread=lm_head)]
    assert len(releases) == releases_per_step(cfg)
    z_release = per_release_noise_multiplier(z, len(releases))
    stage = training_stages(cfg)[0]
    model, taken, losses = _run(model, len(batches.labels), cfg, z_release, cfg.epochs, cfg.lr, True, releases,
                                stage, log, should_stop,
                                adam_with_fast_head(list(model.head.parameters()), cfg.head_lr))
    for p in model.parameters():
        p.requires_grad_(False)
    return model, taken, losses


@torch.no_grad()
def disc_inputs(model: SynthLM, rows: Sequence[Sequence[int]], pad: int, batch: int = 128):
    """Prefix features (N, K, H) and text lengths (N,) of discriminator rows under a frozen model."""
    k_max = max(len(r) for r in rows) - TEXT_START - 1
    device = model_device(model)
    feats = torch.zeros((len(rows), k_max, model.lm.config.n_embd), device=device)
    lengths = torch.zeros(len(rows), dtype=torch.long, device=device)
    model.eval()
    for s in range(0, len(rows), batch):
        ids, mask = on_model_device(model, *pad_batch(rows[s : s + batch], pad))
        f = prefix_features(model.hidden(ids, mask))
        feats[s : s + len(f), : f.size(1)] = f
        lengths[s : s + len(f)] = mask[:, TEXT_START + 1 :].sum(dim=1)
    return feats, lengths


def train_head(model: SynthLM, batches: Batches, cfg: SynthConfig, z: float, log: Log,
               should_stop: Callable[[], bool] = lambda: False) -> tuple[SynthLM, int, list[float]]:
    """DP training of the linear discriminator head on the FROZEN fine-tuned model (PPLM's set-up, baselines)."""
    n = len(batches.labels)
    feats, lengths = disc_inputs(model, batches.disc_rows(range(n)), batches.fmt.pad)
    weights = prefix_weights(lengths, feats.size(1), cfg.prefix_step)
    labels = torch.tensor(batches.labels, dtype=torch.long, device=feats.device)
    head = model.head
    head.requires_grad_(True)

    def loss_of(h, idx):
        return weighted_prefix_loss(h(feats[idx]), labels[idx], weights[idx])

    head, taken, losses = _run(head, n, cfg, z, cfg.head_epochs, cfg.head_lr, False, [Release(loss_of)],
                               training_stages(cfg)[-1], log, should_stop)
    head.requires_grad_(False)
    model.head = head
    return model, taken, losses


# ------------------------------------------------------------------------------------------------------------
# Scores of a trained model
# ------------------------------------------------------------------------------------------------------------


@torch.no_grad()
def text_embeddings(model: SynthLM, fmt: Formatter, text_ids: Sequence[Sequence[int]], seed: int,
                    batch: int = 128) -> torch.Tensor:
    """(N, H) mean hidden state of each text under "BOS rand SEP text" (the label never shown), on the CPU; the
    random tokens from a stream of their own (seeded `seed` they were the first Poisson batch's numbers)."""
    rand = fmt.random_tokens(len(text_ids), torch.Generator().manual_seed(stream_seed(seed, SYNTH_SCORING_TOKENS)))
    rows = [fmt.disc_row(r, t) for r, t in zip(rand, text_ids, strict=True)]
    model.eval()
    out = []
    for s in range(0, len(rows), batch):
        ids, mask = on_model_device(model, *pad_batch(rows[s : s + batch], fmt.pad))
        out.append(full_features(model.hidden(ids, mask), mask).cpu())
    return torch.cat(out)


@torch.no_grad()
def label_probs(model: SynthLM, fmt: Formatter, text_ids: Sequence[Sequence[int]], seed: int) -> torch.Tensor:
    """(N, A) discriminator probabilities p(a | text), on the CPU."""
    (embeddings,) = on_model_device(model, text_embeddings(model, fmt, text_ids, seed))
    return torch.softmax(model.head(embeddings), dim=-1).cpu()


@torch.no_grad()
def lm_test_loss(model: SynthLM, fmt: Formatter, text_ids, labels, batch: int = 128) -> float:
    """Token-level NLL of "BOS label SEP text EOS" on held-out rows (the paper's Table 4 test loss)."""
    model.eval()
    total, count = 0.0, 0
    for s in range(0, len(text_ids), batch):
        rows = [fmt.lm_row(y, t) for y, t in zip(labels[s : s + batch], text_ids[s : s + batch], strict=True)]
        ids, mask = on_model_device(model, *pad_batch(rows, fmt.pad))
        logits = model.lm(input_ids=ids, attention_mask=mask.long()).logits
        per_row = lm_nll(logits, ids, mask)
        n_pred = (mask.sum(dim=1) - 1).clamp(min=1)
        total += float((per_row * n_pred).sum())
        count += int(n_pred.sum())
    return total / max(count, 1)
