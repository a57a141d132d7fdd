"""NoisySGD baselines of the paper (DP-Adam with opacus): plain, after a pseudo-data warm start, ghost clipping.

One training engine serves every variant:
- batches: Poisson sampling through opacus' DPDataLoader (rate q, `batching samples`), or fixed batches that
  keep each user's sentences together (`batching users`, SeqPATE App. M), each seen once per epoch;
- clipping: per-sample gradients from opacus hooks, or ghost clipping (norms without per-sample gradients),
  a large logical batch processed in physical chunks;
- noise: calibrated BEFORE the first step from (epsilon, delta) and the planned schedule; the events of the
  steps actually taken are recorded and epsilon is recomputed from them by core.privacy.

The privacy unit is one sentence: each sentence's loss is its mean next-token NLL, clipped as one gradient.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from opacus import PrivacyEngine
from opacus.optimizers import DPOptimizerFastGradientClipping
from torch.utils.data import DataLoader, TensorDataset

import core.baselines.opacus_conv1d  # noqa: F401  (registers opacus samplers for GPT-2's Conv1D layers)
from core.baselines.batching import batch_of_sentence, pack_users, users_schedule
from core.config import dpsgd_batch_size
from core.privacy import (
    GaussianEvent,
    SubsampledGaussianEvent,
    dpsgd_noise_multiplier,
    epsilon_from_events,
    events_to_dicts,
    gaussian_noise_multiplier,
    poisson_shape,
)
from core.privacy.streams import DPSGD, dp_sgd_streams, stream_seed
from core.train import on_model_device, pad_batch
from core.workspace import MethodResult, Workspace, within

# Expected here, and printed on every step otherwise: embeddings have no input that requires a gradient, so
# torch says their backward hook fires on outputs (as opacus intends); the secure RNG is for production runs.
warnings.filterwarnings("ignore", message="Full backward hook is firing")
warnings.filterwarnings("ignore", message="Secure RNG turned off")

IGNORE = -100  # target of positions that predict nothing (padding, the last token)

# Largest number of sentences in one forward/backward; a bigger logical batch is accumulated chunk by chunk.
PHYSICAL_BATCH = 64


# --------------------------------------------------------------------------------------------------------------
# One DP step
# --------------------------------------------------------------------------------------------------------------


def per_sample_loss(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL of each sentence, shape (B,): the loss whose gradient is clipped per sentence.

    Same value as core.train.token_nll averaged per sentence, but without slicing the (B, L, V) logits: the
    last position gets an ignored target instead, which spares every backward pass a logits-sized zero fill.
    """
    # opacus needs explicit, contiguous full-batch position ids with GPT-2 (opacus issue #841)
    ids, mask = on_model_device(model, ids, mask)
    positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0).repeat(ids.size(0), 1)
    logits = model(input_ids=ids, attention_mask=mask.long(), position_ids=positions).logits
    predicted = torch.cat([mask[:, 1:], mask.new_zeros((ids.size(0), 1))], dim=1)
    targets = torch.cat([ids[:, 1:], ids[:, :1]], dim=1).masked_fill(~predicted, IGNORE)
    nll = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="none")
    return nll.view_as(targets).sum(dim=1) / predicted.sum(dim=1).clamp(min=1)


def is_ghost(optimizer) -> bool:
    return isinstance(optimizer, DPOptimizerFastGradientClipping)


def noise_only_step(optimizer, step: Callable[[], object] | None = None) -> None:
    """An empty Poisson batch still gets its noisy update: skipping it would reveal that the batch was empty.
    `step` replaces optimizer.step (e.g. one that drops some noisy gradients before the update)."""
    for p in optimizer.params:
        p.grad = torch.zeros_like(p)
        if not is_ghost(optimizer):
            # the shape opacus gives an empty batch
            p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype, device=p.device)
    (step or optimizer.step)()
    optimizer.zero_grad(set_to_none=True)


def ghost_backward(model, losses: torch.Tensor) -> None:
    """Ghost clipping's two backward passes (as opacus' DPTensorFastGradientClipping.backward), leaving
    p.grad = sum_i clip_i * grad(loss_i).

    Pass 1 only has to run opacus' hooks, which need the gradients w.r.t. each layer's output, not the weight
    gradients: asking autograd for the (cheap, scatter-add) embedding-weight gradients alone gets every layer's
    hook to fire, since every layer lies between the embeddings and the loss, and skips the weight matmuls.
    """
    for p in model.trainable_parameters:
        p._norm_sample = None  # a layer whose hook did not fire must fail loudly, not reuse last step's norm
    embeddings = [p for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()
                  if p.requires_grad]
    if embeddings:
        torch.autograd.grad(losses.sum(), embeddings, retain_graph=True)
    else:
        losses.sum().backward(retain_graph=True)
        model.zero_grad(set_to_none=True)
    coeff = model.get_clipping_coef()  # min(1, C / per-sample norm), from the norms the hooks computed
    model.disable_hooks()
    (coeff.to(losses.dtype) * losses).sum().backward()
    model.enable_hooks()


def clipped_noisy_step(model, optimizer, batch: Sequence, losses_of: Callable[[Sequence], torch.Tensor],
                       update: Callable[[], object] | None = None, physical: int = PHYSICAL_BATCH) -> float:
    """One DP step on a logical batch: the per-example losses of each physical chunk (losses_of), their clipped
    gradients summed over the chunks, then one noise draw and one update (`update`, optimizer.step unless given).
    An empty Poisson batch still gets its noisy update. Returns the mean loss of the batch (nan if empty)."""
    update = update or optimizer.step
    if len(batch) == 0:
        noise_only_step(optimizer, step=update)
        return math.nan
    chunks = [batch[i : i + physical] for i in range(0, len(batch), physical)]
    total = 0.0
    for k, chunk in enumerate(chunks):
        losses = losses_of(chunk)
        if is_ghost(optimizer):
            ghost_backward(model, losses)
        else:
            losses.sum().backward()
        if k < len(chunks) - 1:
            optimizer.signal_skip_step(True)  # accumulate the clipped sum; noise and update only after the last
        update()
        optimizer.zero_grad(set_to_none=True)
        total += float(losses.detach().sum())
    return total / len(batch)


def dp_step(model, optimizer, seqs: Sequence[Sequence[int]], pad_id: int, physical: int = PHYSICAL_BATCH) -> float:
    """One DP-Adam step of a language model on a logical batch of token sequences (clipped_noisy_step)."""
    return clipped_noisy_step(model, optimizer, seqs, lambda chunk: per_sample_loss(model, *pad_batch(chunk, pad_id)),
                              physical=physical)


def make_private(model, n: int, batch_size: int, noise_multiplier: float, max_grad_norm: float, lr: float,
                 ghost: bool, poisson: bool, seed: int, stream: str, optimizer_cls=torch.optim.Adam):
    """opacus-wrapped (model, DP optimizer (DP-Adam by default), data loader over sentence indices).

    The Poisson sampling and the noise draw from generators of their own, seeded from the run's seed and the
    stream's name (core.privacy.streams), never from torch's global one, which the run seeds for everything else."""
    names = dp_sgd_streams(stream)
    sampling = torch.Generator().manual_seed(stream_seed(seed, names["sampling"]))  # opacus samples on the CPU
    device = next(model.parameters()).device
    noise = torch.Generator(device=device).manual_seed(stream_seed(seed, names["noise"]))  # where the grads are
    model.train()  # opacus refuses a model in eval mode
    loader = DataLoader(TensorDataset(torch.arange(n)), batch_size=batch_size, generator=sampling)
    optimizer = optimizer_cls(model.parameters(), lr=lr)
    out = PrivacyEngine().make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm, poisson_sampling=poisson, grad_sample_mode="ghost" if ghost else "hooks",
        loss_reduction="sum", criterion=torch.nn.CrossEntropyLoss(reduction="sum"),  # criterion: unused
        noise_generator=noise,
    )
    model, optimizer, loader = (out[0], out[1], out[-1])  # ghost mode also returns a criterion we do not use
    # Backward runs on the SUM of per-sentence losses, so the hooks see each sentence's own gradient as is
    # (no rescaling of every layer's backprops by the batch size); the optimizer still averages: it divides
    # the noisy clipped sum by the expected batch size.
    optimizer.loss_reduction = "mean"
    return model, optimizer, loader


def unwrap(model):
    """The plain transformers model back from opacus, hooks and per-sample attributes removed."""
    model.cleanup()
    inner = model._module
    inner.eval()
    return inner


# --------------------------------------------------------------------------------------------------------------
# Schedules and their privacy
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """Everything fixed before the first step: the batches and the noise they need."""

    schedule: list[list[int]]  # sentence indices of every step, all epochs
    steps_per_epoch: int
    noise_multiplier: float
    sampling_rate: float | None  # Poisson rate; None for fixed user batches
    batch_of_sentence: list[int] | None = None  # users batching: fixed batch of every sentence

    def events(self, steps_taken: int):
        if self.sampling_rate is not None:
            return [SubsampledGaussianEvent(self.noise_multiplier, self.sampling_rate, steps_taken)]
        # each sentence is in exactly one batch per epoch: one Gaussian release per epoch with sensitivity C and
        # std z*C (units of C), composed exactly; an epoch cut short still counts in full. C holds for zero-out
        # neighbours (the sentence's content removed, its place in the batches kept): the packing depends on
        # which user wrote each sentence, so adding or removing one could move others (the statement says so)
        epochs = math.ceil(steps_taken / self.steps_per_epoch)
        return [GaussianEvent(self.noise_multiplier, 1.0, epochs)]


def poisson_schedule(loader, epochs: int) -> list[list[int]]:
    """Poisson batches drawn by opacus' sampler (each sentence independently with probability q per step)."""
    return [list(idx) for _ in range(epochs) for idx in loader.batch_sampler]


def calibrate(ws: Workspace, sampling_rate: float | None, steps: int, batch_of: Sequence[int] | None) -> float:
    """Noise multiplier z for the target, fixed before training (never above it: core.privacy.calibrate).

    privacy.target "sample": sentence-level epsilon; "phrase-avg": the AVERAGE epsilon of the secret phrases
    (paper Table 2), from core.analysis.phrases. sampling_rate None means fixed user batches.
    """
    p, epochs = ws.cfg.privacy, ws.cfg.dpsgd.epochs
    phrase_avg = p.target == "phrase-avg" and math.isfinite(p.epsilon)
    if phrase_avg:
        from core.analysis.phrases import (
            dpsgd_phrase_avg_multiplier_for,
            user_batched_phrase_avg_multiplier_for,
        )

        if sampling_rate is None:
            return user_batched_phrase_avg_multiplier_for(ws, batch_of, epochs)
        return dpsgd_phrase_avg_multiplier_for(ws, sampling_rate, steps)
    if sampling_rate is None:
        return gaussian_noise_multiplier(p.epsilon, p.delta, epochs)
    return dpsgd_noise_multiplier(p.epsilon, p.delta, sampling_rate, steps)


# --------------------------------------------------------------------------------------------------------------
# Training loop
# --------------------------------------------------------------------------------------------------------------


def run_schedule(ws: Workspace, model, optimizer, seqs, plan: Plan, stage: str,
                 multiplier_of_step: Callable[[int], float] | None = None) -> int:
    """Train on the planned batches; returns the number of steps taken.

    `multiplier_of_step` overrides the noise multiplier step by step (adaptive DP); None keeps the plan's.
    Progress lines carry the step and epoch only: a batch's size and loss are computed from the private
    sentences without noise (the size says whether a sentence was sampled), so no epsilon covers them and
    they are never released.
    """
    steps = len(plan.schedule)
    log_every = max(1, steps // 50)
    model.train()
    taken = 0
    for t, idx in enumerate(plan.schedule):
        if ws.should_stop():
            break
        if multiplier_of_step is not None:
            optimizer.noise_multiplier = multiplier_of_step(t)
        dp_step(model, optimizer, [seqs[i] for i in idx], ws.pad_id)
        taken = t + 1
        if taken % plan.steps_per_epoch == 0 or taken == steps or taken % log_every == 0:
            ws.log(stage, ws.method_progress(taken / steps), step=taken, steps=steps,
                   epoch=math.ceil(taken / plan.steps_per_epoch))
    return taken


def train_dp(ws: Workspace, model, *, ghost: bool, batch_size: int, stage: str) -> tuple[object, dict, dict]:
    """DP-Adam on the private train set; returns (trained model, privacy.json body, metrics extras)."""
    cfg, dp = ws.cfg, ws.cfg.dpsgd
    eps, delta = cfg.privacy.epsilon, cfg.privacy.delta
    private = ws.data.private_train
    seqs = ws.encode([s.text for s in private])
    torch.manual_seed(cfg.seed)

    t0 = time.time()
    if dp.batching == "users":
        batches = pack_users([s.user_id for s in private], batch_size)
        owner = batch_of_sentence(batches, len(seqs))
        z = calibrate(ws, None, dp.epochs * len(batches), owner)
        plan = Plan(users_schedule(batches, dp.epochs, cfg.seed), len(batches), z, None, owner)
        model, optimizer, _ = make_private(model, len(seqs), batch_size, z, dp.max_grad_norm, dp.lr, ghost,
                                           poisson=False, seed=cfg.seed, stream=DPSGD)
        optimizer.expected_batch_size = batch_size  # fixed divisor: the sum's sensitivity stays C
    else:
        q, steps = poisson_shape(len(seqs), batch_size, dp.epochs)
        z = calibrate(ws, q, steps, None)
        model, optimizer, loader = make_private(model, len(seqs), batch_size, z, dp.max_grad_norm, dp.lr, ghost,
                                                poisson=True, seed=cfg.seed, stream=DPSGD)
        assert math.isclose(loader.sample_rate, q), (loader.sample_rate, q)
        plan = Plan(poisson_schedule(loader, dp.epochs), len(loader), z, q)
        assert len(plan.schedule) == steps, (len(plan.schedule), steps)  # z is calibrated for the steps it runs
    calibrate_s = time.time() - t0
    ws.log(stage, ws.method_progress(0.0), message=f"noise multiplier {plan.noise_multiplier:.4g} calibrated "
           f"for {target_text(eps, cfg.privacy.target)} over {len(plan.schedule)} steps",
           noise_multiplier=plan.noise_multiplier)

    t0 = time.time()
    taken = run_schedule(ws, model, optimizer, seqs, plan, stage)
    train_s = time.time() - t0

    events = plan.events(taken)
    report = epsilon_from_events(events, delta)
    privacy = {
        **report.to_dict(),
        "unit": "sample" if plan.noise_multiplier > 0 else "none",
        "events": events_to_dicts(events),
        "target_epsilon": eps,
        "target": cfg.privacy.target,
        "noise_multiplier": plan.noise_multiplier,
        "sampling_rate": plan.sampling_rate,
        "steps": taken,
        "max_grad_norm": dp.max_grad_norm,
        "batching": dp.batching,
        "clipping": "ghost (opacus)" if ghost else "per-sample (opacus hooks)",
        "note": privacy_note(plan, eps, cfg.privacy.target),
        "random_streams": [name for kind, name in dp_sgd_streams(DPSGD).items()
                           if kind == "noise" or plan.sampling_rate is not None],  # fixed user batches: no sampling
    }
    metrics = {
        "steps": taken,
        "planned_steps": len(plan.schedule),
        "noise_multiplier": plan.noise_multiplier,
        "sampling_rate": plan.sampling_rate,
        "logical_batch": batch_size,
        "batching": dp.batching,
        "dp_timings": {"calibrate_s": calibrate_s, "train_s": train_s,
                       "step_ms": 1000 * train_s / max(taken, 1)},
    }
    if plan.batch_of_sentence is not None:
        metrics["n_batches"] = plan.steps_per_epoch
        # index into ws.data.private_train -> fixed batch; lets the phrase table find the batches holding a phrase
        metrics["batch_of_sentence"] = plan.batch_of_sentence
    return unwrap(model), privacy, metrics


def target_text(epsilon: float, target: str) -> str:
    """What the noise was calibrated for: a phrase-avg run's epsilon is the average name phrase's, and the
    sentence-level epsilon it accounts comes out far lower (0.43 for an average of 3 on quick)."""
    if target == "phrase-avg":
        return f"an average secret-phrase epsilon of {epsilon} (privacy target phrase-avg)"
    return f"target epsilon {epsilon}"


def privacy_note(plan: Plan, epsilon: float, target: str = "sample") -> str:
    if plan.noise_multiplier == 0:
        return "epsilon=inf: clipped but no noise, NOT private"
    if plan.sampling_rate is None:
        return ("batching users: fixed batches, each sentence in one batch per epoch; one Gaussian release per "
                "epoch at sentence level, composed exactly (no subsampling amplification)"
                + (f"; noise calibrated before training for {target_text(epsilon, target)}"
                   if target == "phrase-avg" else ""))
    return f"DP-Adam, Poisson sampling; noise calibrated before training for {target_text(epsilon, target)}"


# --------------------------------------------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------------------------------------------


@contextmanager
def progress_share(ws: Workspace, start: float, end: float) -> Iterator[None]:
    """Map a stage's own 0..1 progress onto [start, end] of the method's share, so progress never goes back."""
    saved = ws.progress_span
    ws.progress_span = (within(*saved, start), within(*saved, end))
    try:
        yield
    finally:
        ws.progress_span = saved


def _result(model, privacy: dict, metrics: dict, extra_s: float = 0.0) -> MethodResult:
    if extra_s:
        metrics["dp_timings"]["pseudo_finetune_s"] = extra_s
    return MethodResult(model, privacy, metrics)


def noisysgd(ws: Workspace) -> MethodResult:
    """NoisySGD: DP-Adam on the private data, starting from the public base model."""
    model, privacy, metrics = train_dp(ws, ws.fresh_base(), ghost=False, batch_size=dpsgd_batch_size(ws.cfg),
                                       stage="dp-train")
    return _result(model, privacy, metrics)


def noisysgd_pseudo(ws: Workspace) -> MethodResult:
    """NoisySGD+pseudo: fine-tune on public pseudo data first (free), then the same DP training."""
    return _pseudo_then_dp(ws, ghost=False, batch_size=dpsgd_batch_size(ws.cfg))


def noisysgd_gc_pseudo(ws: Workspace) -> MethodResult:
    """NoisySGD+GC+pseudo: as above with ghost clipping and a large logical batch (cfg.dpsgd.ghost_batch_size)."""
    return _pseudo_then_dp(ws, ghost=True, batch_size=dpsgd_batch_size(ws.cfg))


def _pseudo_then_dp(ws: Workspace, *, ghost: bool, batch_size: int) -> MethodResult:
    t0 = time.time()
    with progress_share(ws, 0.0, 0.3):
        warm = ws.pseudo_warm_model("pseudo-finetune")  # public data: no privacy cost
    warm_s = time.time() - t0
    with progress_share(ws, 0.3, 1.0):
        model, privacy, metrics = train_dp(ws, warm, ghost=ghost, batch_size=batch_size, stage="dp-train")
    return _result(model, privacy, metrics, warm_s)
