"""The batched teacher term equals the per-position one (value and gradient), for KL and the -KL ablation's CE."""

from __future__ import annotations

import pytest
import torch

from core.seqpate.aggregate import Answer
from core.seqpate.student import teacher_term, teacher_terms


@pytest.mark.parametrize("kind", ["kl", "ce"])
def test_batched_teacher_terms_equal_the_one_at_a_time_terms(kind):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 30, generator=g, requires_grad=True)
    positions = [0, 2, 5]
    answers = []
    for size in (3, 7, 1):
        cands = torch.randperm(30, generator=g)[:size]
        dist = torch.rand(size, generator=g)
        answers.append(Answer(cands, dist / dist.sum()))
    one_by_one = torch.stack([teacher_term(logits[j], a.candidates, a.distribution, kind)
                              for j, a in zip(positions, answers, strict=True)])
    (expected_grad,) = torch.autograd.grad(one_by_one.mean(), logits)
    batched = teacher_terms(logits, positions, answers, kind)
    (grad,) = torch.autograd.grad(batched.mean(), logits)
    assert torch.allclose(batched, one_by_one, atol=1e-6)
    assert torch.allclose(grad, expected_grad, atol=1e-6)
