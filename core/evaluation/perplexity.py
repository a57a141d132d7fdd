"""Corpus-level perplexity: exp(total NLL / total predicted tokens), not a mean of per-batch exponentials."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from core.train import pad_batch, token_nll


def perplexity_from_nll(total_nll: float, n_tokens: int) -> float:
    if n_tokens <= 0:
        raise ValueError("perplexity needs at least one predicted token")
    return math.exp(total_nll / n_tokens)


@torch.inference_mode()
def sentence_nll(model, seqs: Sequence[Sequence[int]], pad_id: int, batch_size: int = 64) -> list[tuple[float, int]]:
    """Per sequence: (summed next-token NLL, number of predicted tokens). Kept per sentence so two models scored
    on the same test set can be compared pairwise (core.runs.compare)."""
    model.eval()
    rows: list[tuple[float, int]] = []
    for start in range(0, len(seqs), batch_size):
        ids, mask = pad_batch(seqs[start : start + batch_size], pad_id)
        nll, predicted = token_nll(model, ids, mask)
        sums = (nll.double() * predicted).sum(dim=1).tolist()
        counts = predicted.sum(dim=1).tolist()
        rows.extend((float(s), int(c)) for s, c in zip(sums, counts, strict=True))
    return rows


def total_nll(rows: Sequence[tuple[float, int]]) -> tuple[float, int]:
    """Per-sentence (NLL, tokens) rows summed into the corpus's (NLL, tokens)."""
    return math.fsum(nll for nll, _ in rows), sum(tokens for _, tokens in rows)
