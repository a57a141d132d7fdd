"""Teacher aggregation and the noisy release (paper Sec. 4.2, 5.2).

`TeacherOracle` holds the teachers' summed next-token distributions over the distillation positions (the only
private-derived state after the teacher phase) and answers the student's queries:
    release = sum_C + noise,   C = the student's candidate set (public information)
with FRESH noise per released answer, a budget fixed before the first query, and a cache so that a released
answer is reused for free (post-processing). Every release is recorded for the accountant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.privacy import SEQPATE_L1_SENSITIVITY, SEQPATE_L2_SENSITIVITY, GaussianEvent, LaplaceEvent


def candidate_set(probs: torch.Tensor, kind: str, value: float) -> torch.Tensor:
    """Indices of the student's top-k tokens, or the smallest set with cumulative probability >= p."""
    if kind == "top-k":
        return torch.topk(probs, k=min(int(value), probs.numel())).indices
    sorted_p, order = torch.sort(probs, descending=True)
    keep = int(torch.searchsorted(torch.cumsum(sorted_p, 0), torch.tensor(value, dtype=sorted_p.dtype)).item()) + 1
    return order[: min(keep, probs.numel())]


def to_distribution(noisy: np.ndarray) -> np.ndarray | None:
    """Clip negatives to 0 and renormalise (paper footnote 2); None when all mass vanished."""
    clipped = np.clip(noisy, 0.0, None)
    total = clipped.sum()
    if total <= 0:
        return None
    return clipped / total


@dataclass
class Answer:
    candidates: torch.Tensor  # token ids (the student's candidate set at release time)
    distribution: torch.Tensor | None  # released noisy distribution over candidates; None if all mass vanished


class TeacherOracle:
    def __init__(
        self,
        teacher_sum: torch.Tensor,
        noise: str,
        noise_scale: float,
        budget: int,
        seed: int,
        teacher_votes: torch.Tensor | None = None,
    ):
        self.teacher_sum = teacher_sum  # (positions, V): sum over teachers of p_teacher(. | context)
        self.teacher_votes = teacher_votes  # (positions, V) vote counts, for the -merge_p ablation
        self.noise = noise  # "gaussian" (std) | "laplace" (scale) | "none"
        self.noise_scale = noise_scale
        self.budget = budget
        self.rng = np.random.default_rng(seed)  # one stream: every draw is fresh noise
        self.cache: dict[int, Answer] = {}
        self.spent = 0
        self.vanished = 0

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.budget

    def cached(self, row: int) -> Answer | None:
        return self.cache.get(row)

    def release(self, row: int, candidates: torch.Tensor, use_votes: bool = False) -> Answer | None:
        """Noisy answer for one position; None when the budget is spent. Cached answers cost nothing."""
        if row in self.cache:
            return self.cache[row]
        if self.exhausted:
            return None
        source = self.teacher_votes if use_votes else self.teacher_sum
        values = source[row, candidates].double().numpy()
        if self.noise == "gaussian":
            values = values + self.rng.normal(0.0, self.noise_scale, size=values.shape)
        elif self.noise == "laplace":
            values = values + self.rng.laplace(0.0, self.noise_scale, size=values.shape)
        dist = to_distribution(values)
        self.spent += 1
        self.vanished += dist is None
        answer = Answer(candidates, None if dist is None else torch.as_tensor(dist, dtype=torch.float32))
        self.cache[row] = answer
        return answer

    def events(self) -> list:
        """What was actually released, as accountant events."""
        if self.spent == 0:
            return []
        if self.noise == "laplace":
            return [LaplaceEvent(scale=self.noise_scale, sensitivity_l1=SEQPATE_L1_SENSITIVITY, count=self.spent)]
        return [GaussianEvent(noise_std=self.noise_scale, sensitivity=SEQPATE_L2_SENSITIVITY, count=self.spent)]
