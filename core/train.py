"""Plain (non-private) causal language-model training shared by the base model, teachers and baselines."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

PULSE_EVERY_S = 10.0  # a long epoch says where it is this often (train_lm's on_pulse), between its epoch ends


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token lists; returns (input_ids, mask) where mask marks real tokens."""
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        mask[i, : len(s)] = True
    return ids, mask


def model_device(model) -> torch.device:
    """Where a model's weights are (an opacus wrapper's too; the CPU for a model without any): batches are built
    on the CPU and moved there."""
    weight = next(model.parameters(), None)
    return torch.device("cpu") if weight is None else weight.device


def on_model_device(model, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    device = model_device(model)
    return tuple(t.to(device) for t in tensors)


def batch_indices(n: int, batch_size: int, rng: np.random.Generator | None) -> list[np.ndarray]:
    order = rng.permutation(n) if rng is not None else np.arange(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def hidden_states(model, ids: torch.Tensor) -> torch.Tensor:
    """Last hidden states of a right-padded batch, shape (B, L, H).

    No attention mask: with right padding and causal attention a real token only ever sees real tokens, so the
    outputs at real positions are those of the masked call, and the cheaper causal path is used.
    """
    (ids,) = on_model_device(model, ids)
    return model.base_model(input_ids=ids).last_hidden_state


def predicted_logits(model, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits, targets, predicted) at the predicted positions only, in row-major (sentence) order.

    The LM head (the largest matmul of a small GPT-2) and the softmax over the vocabulary run only where the
    target is a real token, not on padding. All three are on the model's device.
    """
    ids, mask = on_model_device(model, ids, mask)
    predicted = mask[:, 1:]
    hidden = hidden_states(model, ids)[:, :-1][predicted]
    return model.get_output_embeddings()(hidden), ids[:, 1:][predicted], predicted


def next_token_logits(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits for predicting token t+1 from tokens <= t: shape (B, L-1, V)."""
    ids, mask = on_model_device(model, ids, mask)
    return model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]


def token_nll(model, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position NLL of the next token and the mask of positions that are predicted (target is real), on the
    model's device."""
    ids, mask = on_model_device(model, ids, mask)
    logits = next_token_logits(model, ids, mask)
    targets = ids[:, 1:]
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none")
    return nll.view_as(targets), mask[:, 1:]


def lm_loss(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL over the predicted positions of the batch."""
    logits, targets, _ = predicted_logits(model, ids, mask)
    return F.cross_entropy(logits, targets) if targets.numel() else logits.sum() * 0.0


def adam(model, lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (CPU or CUDA): one pass over the parameters instead of a Python loop per tensor."""
    return torch.optim.Adam(model.parameters(), lr=lr, fused=True)


def epoch_lines(report: Callable[..., None], epochs: int) -> dict[str, Callable]:
    """train_lm's on_epoch and on_pulse as progress lines: report(share of the epochs done, **fields), an epoch's end
    with its mean loss, a pulse with its step (no loss)."""
    return {
        "on_epoch": lambda epoch, loss: report((epoch + 1) / epochs, epoch=epoch + 1, epochs=epochs,
                                               loss=round(loss, 4)),
        "on_pulse": lambda epoch, step, steps: report((epoch + step / steps) / epochs, epoch=epoch + 1,
                                                      epochs=epochs, step=step, steps=steps),
    }


def train_lm(
    model,
    seqs: Sequence[Sequence[int]],
    *,
    pad_id: int,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    on_epoch: Callable[[int, float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_pulse: Callable[[int, int, int], None] | None = None,
):
    """Fine-tune with Adam on next-token NLL; returns the model (trained in place). on_epoch(epoch, mean loss) at
    each epoch's end; on_pulse(epoch, steps done, steps in the epoch) within an epoch where neither came for
    PULSE_EVERY_S (quick's epochs take 1-2 minutes), with nothing computed from the data."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = adam(model, lr)
    model.train()
    last_line = time.monotonic()
    for epoch in range(epochs):
        total, count = 0.0, 0
        batches = batch_indices(len(seqs), batch_size, rng)
        for step, idx in enumerate(batches, start=1):
            if should_stop is not None and should_stop():
                model.eval()
                return model
            ids, mask = pad_batch([seqs[i] for i in idx], pad_id)
            loss = lm_loss(model, ids, mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
            if on_pulse is not None and step < len(batches) and time.monotonic() - last_line >= PULSE_EVERY_S:
                on_pulse(epoch, step, len(batches))
                last_line = time.monotonic()
        if on_epoch is not None:
            on_epoch(epoch, total / max(count, 1))
            last_line = time.monotonic()
    model.eval()
    return model
