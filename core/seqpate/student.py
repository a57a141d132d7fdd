"""Student distillation (paper Sec. 4.3, Eq. 2-4, Algorithm 1 lines 10-26).

A position is "hard" when the pseudo label's rank under the student exceeds the threshold (efficient KD); hard
positions get a teacher answer while the budget lasts. Loss per batch:
    mean NLL(pseudo label) + lambda * mean over answered positions of KL(p_agg || p_student restricted to C),
with the KL summed over the candidate set C (not divided by |V| as the published code does). The -KL ablation
replaces the KL by cross-entropy over the vocabulary on the teachers' noisy top-1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.seqpate.aggregate import TeacherOracle, candidate_set
from core.seqpate.teachers import row_starts
from core.train import batch_indices, pad_batch, predicted_logits


@dataclass(frozen=True)
class DistillSettings:
    filter_kind: str  # top-k | top-p
    filter_value: float
    rank_threshold: int
    kd_lambda: float
    epochs: int
    lr: float
    batch_size: int
    seed: int
    teacher_loss: str = "kl"  # kl | ce (cross-entropy over V on the noisy top-1: the -KL ablation)
    pseudo_loss: bool = True  # False: the -L_pseudo ablation
    efficient_kd: bool = True  # False: query every position (the -Effi KD ablation)
    use_votes: bool = False  # True: aggregate votes instead of distributions (the -Merge_P ablation)


def pseudo_label_rank(probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """1-based rank of each target under the student (1 = the student's top choice)."""
    target_p = probs.gather(-1, targets.unsqueeze(-1))
    return (probs > target_p).sum(-1) + 1


def teacher_term(logits: torch.Tensor, candidates: torch.Tensor, dist: torch.Tensor, kind: str) -> torch.Tensor:
    """Loss of one answered position, from the student's (V,) logits and the distribution released over C.

    `kl`: KL(dist || student renormalised over C). `ce` (the -KL ablation): the usual next-token cross-entropy
    over the whole vocabulary, with the teachers' noisy top-1 as the label (as PATE trains its student). Over C
    alone it would be 0 whenever C holds one token (`--filter top-k:1`), while the answer's budget is spent."""
    if kind == "ce":
        return -torch.log_softmax(logits, dim=-1)[candidates[int(dist.argmax())]]
    log_student = torch.log_softmax(logits[candidates], dim=-1)
    return (torch.xlogy(dist, dist) - dist * log_student).sum()


def teacher_terms(logits: torch.Tensor, positions: list[int], answers: list, kind: str) -> torch.Tensor:
    """`teacher_term` for many answered positions at once: one gather from the (P, V) logits, so the backward
    pass scatters into one logits-sized gradient instead of one per answered position. Candidate sets have
    different sizes: rows are padded with -inf logits (zero weight after the softmax)."""
    width = max(len(a.candidates) for a in answers)
    cands = torch.zeros(len(answers), width, dtype=torch.long)
    dist = torch.zeros(len(answers), width)
    valid = torch.zeros(len(answers), width, dtype=torch.bool)
    for i, a in enumerate(answers):
        k = len(a.candidates)
        cands[i, :k], dist[i, :k], valid[i, :k] = a.candidates, a.distribution, True
    rows, cands, dist, valid = (t.to(logits.device) for t in (torch.as_tensor(positions), cands, dist, valid))
    if kind == "ce":
        top1 = cands.gather(1, dist.argmax(1, keepdim=True)).squeeze(1)
        return torch.nn.functional.cross_entropy(logits[rows], top1, reduction="none")
    picked = logits[rows[:, None], cands].masked_fill(~valid, float("-inf"))
    log_student = torch.log_softmax(picked, dim=-1).masked_fill(~valid, 0.0)
    return (torch.xlogy(dist, dist) - dist * log_student).sum(1)


def distill(
    student,
    seqs: Sequence[Sequence[int]],
    oracle: TeacherOracle,
    s: DistillSettings,
    pad_id: int,
    on_epoch: Callable[[int, dict], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict:
    torch.manual_seed(s.seed)
    rng = np.random.default_rng(s.seed)
    offsets = row_starts(seqs)[:-1]  # each sentence's first row in the teacher-sum table
    opt = torch.optim.Adam(student.parameters(), lr=s.lr)
    stats = {"answered_positions": 0, "hard_positions": 0, "positions": 0}
    for epoch in range(s.epochs):
        student.train()
        # NLL on public pseudo labels plus KL to released answers: post-processing, free to log (summed on the
        # model's device, read once an epoch; batches with nothing to learn from are left out of the mean)
        loss_sum, loss_batches = 0.0, 0
        for idx in batch_indices(len(seqs), s.batch_size, rng):
            if should_stop is not None and should_stop():
                return stats
            ids, mask = pad_batch([seqs[i] for i in idx], pad_id)
            # logits at the predicted positions only, row-major: position j is predicted.nonzero()[j]
            logits, targets, predicted = predicted_logits(student, ids, mask)
            nll = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
            with torch.no_grad():
                probs = torch.softmax(logits.float(), dim=-1)
                hard = pseudo_label_rank(probs, targets) > s.rank_threshold
                if not s.efficient_kd:
                    hard = torch.ones_like(hard)
                probs = probs.cpu()  # candidate sets index the teacher sums, which live on the CPU
            positions, answers = [], []
            for j, ((b, t), is_hard) in enumerate(zip(predicted.nonzero().tolist(), hard.tolist(), strict=True)):
                row = int(offsets[idx[b]]) + t
                answer = oracle.cached(row)  # answers released earlier are reused at no privacy cost
                if answer is None and is_hard:
                    cands = candidate_set(probs[j], s.filter_kind, s.filter_value)
                    answer = oracle.release(row, cands, use_votes=s.use_votes)
                if answer is not None and answer.distribution is not None:
                    positions.append(j)
                    answers.append(answer)
            loss = nll.mean() if s.pseudo_loss and len(nll) else torch.zeros(())
            if answers:
                loss = loss + s.kd_lambda * teacher_terms(logits, positions, answers, s.teacher_loss).mean()
            if loss.requires_grad:
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                loss_sum, loss_batches = loss_sum + loss.detach(), loss_batches + 1
            if epoch == 0:
                stats["positions"] += len(targets)
                stats["hard_positions"] += int(hard.sum())
            stats["answered_positions"] += len(answers)  # every epoch: a cached answer counts each time it is reused
        if on_epoch is not None:
            on_epoch(epoch, {**stats, **({"loss": float(loss_sum) / loss_batches} if loss_batches else {})})
    student.eval()
    return stats
