"""distill() against a TeacherOracle: which positions are queried, how the answers enter the loss, which table
(-Merge_P: votes) is released, and the reuse of cached answers. Expected values are computed here from a
separate forward pass of the (dropout-free) student, one sentence at a time, with no padding."""

from __future__ import annotations

import math

import pytest
import torch

from core.config import ModelConfig
from core.models import build_tiny_gpt2
from core.seqpate.aggregate import TeacherOracle
from core.seqpate.student import DistillSettings, distill

VOCAB = 20
SEQS = [[1, 5, 9, 3, 7], [2, 4, 6], [8, 3, 11, 17, 5, 2]]
ROWS = sum(len(s) - 1 for s in SEQS)  # 4 + 2 + 5 = 11 predicted positions, one teacher-table row each


def tiny_student():
    """A 1-layer GPT-2 with every dropout off, so train mode gives the same logits as our reference pass."""
    torch.manual_seed(0)
    model = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), VOCAB)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def make_settings(**overrides) -> DistillSettings:
    base = dict(filter_kind="top-k", filter_value=3, rank_threshold=0, kd_lambda=1.0, epochs=1, lr=0.0,
                batch_size=2, seed=0)
    return DistillSettings(**{**base, **overrides})


def make_oracle(teacher_sum=None, budget=1000, teacher_votes=None) -> TeacherOracle:
    if teacher_sum is None:
        teacher_sum = torch.rand(ROWS, VOCAB, generator=torch.Generator().manual_seed(1)) + 0.1
    return TeacherOracle(teacher_sum, "none", 0.0, budget, seed=0, teacher_votes=teacher_votes)


def reference_positions(model) -> list[tuple[torch.Tensor, int]]:
    """(logits, target) for every predicted position, in teacher-table row order (sentence by sentence)."""
    out = []
    with torch.no_grad():
        for seq in SEQS:
            logits = model(torch.tensor([seq])).logits[0].double()
            out += [(logits[t], seq[t + 1]) for t in range(len(seq) - 1)]
    return out


def rank_by_argsort(logits: torch.Tensor, target: int) -> int:
    """1-based position of the target when the vocabulary is sorted by decreasing logit."""
    order = torch.argsort(logits, descending=True).tolist()
    return order.index(target) + 1


def test_only_positions_ranked_strictly_above_the_threshold_are_queried():
    """Efficient KD queries a position iff the pseudo label's rank > threshold: `>=` would also spend budget on
    the positions ranked exactly at the threshold. Checked at every threshold that actually occurs."""
    student = tiny_student()
    ranks = [rank_by_argsort(logits, target) for logits, target in reference_positions(student)]
    assert len(set(ranks)) >= 3  # the thresholds below split the positions in several ways
    for threshold in [0, *sorted(set(ranks))]:
        oracle = make_oracle()
        stats = distill(student, SEQS, oracle, make_settings(rank_threshold=threshold), pad_id=0)
        expected_rows = {row for row, rank in enumerate(ranks) if rank > threshold}
        assert stats["positions"] == ROWS
        assert stats["hard_positions"] == oracle.spent == len(expected_rows), threshold
        assert set(oracle.cache) == expected_rows, threshold


def test_kd_lambda_zero_leaves_the_student_untouched_by_the_teachers():
    """With no pseudo loss and kd_lambda = 0 the loss is 0 * KL: zero gradients, and Adam (no weight decay) takes
    a zero step. A distill ignoring kd_lambda trains on the KL and moves the weights."""
    student = tiny_student()
    before = {name: p.detach().clone() for name, p in student.named_parameters()}
    oracle = make_oracle()
    stats = distill(student, SEQS, oracle, make_settings(kd_lambda=0.0, pseudo_loss=False, lr=1e-2), pad_id=0)
    assert oracle.spent == stats["answered_positions"] == ROWS  # the teachers were asked everywhere
    for name, p in student.named_parameters():
        assert torch.equal(p, before[name]), name

    # the same run with kd_lambda = 1 does move them: the check above can see a change
    distill(student, SEQS, make_oracle(), make_settings(kd_lambda=1.0, pseudo_loss=False, lr=1e-2), pad_id=0)
    assert any(not torch.equal(p, before[name]) for name, p in student.named_parameters())


def test_logged_loss_is_nll_plus_kd_lambda_times_the_mean_kl_over_candidates():
    """One batch, lr = 0, every position answered without noise: the epoch loss is
    mean NLL + kd_lambda * mean KL(teachers' sum renormalised over C || student renormalised over C),
    C = the student's top-3. Guards the weighting by kd_lambda (Eq. 4), not just kd_lambda = 0."""
    student = tiny_student()
    oracle = make_oracle()
    table = oracle.teacher_sum.double()
    nlls, kls = [], []
    for row, (logits, target) in enumerate(reference_positions(student)):
        log_p = torch.log_softmax(logits, dim=-1)
        nlls.append(-float(log_p[target]))
        cands = torch.argsort(logits, descending=True)[:3]
        teacher = table[row, cands] / table[row, cands].sum()
        student_c = torch.softmax(logits[cands], dim=-1)
        kls.append(sum(float(q) * math.log(float(q) / float(s)) for q, s in zip(teacher, student_c, strict=True)))
    mean_nll, mean_kl = sum(nlls) / ROWS, sum(kls) / ROWS
    assert mean_kl > 0.01  # large enough that a wrong weight shows

    logged = []
    distill(student, SEQS, oracle, make_settings(kd_lambda=0.5, batch_size=len(SEQS)), pad_id=0,
            on_epoch=lambda epoch, info: logged.append(info["loss"]))
    assert logged == [pytest.approx(mean_nll + 0.5 * mean_kl, rel=1e-5)]


@pytest.mark.parametrize("use_votes", [True, False])
def test_use_votes_releases_the_vote_shares_not_the_summed_distributions(use_votes):
    """-Merge_P: with use_votes the answer is the teachers' votes over C renormalised; distill must pass the flag
    on to the oracle. Every row: 3 of 4 teachers vote token 1, one votes token 2; the summed distributions are
    uniform. C = the whole vocabulary (top-20), so the expected answers are known by hand."""
    votes = torch.zeros(ROWS, VOCAB)
    votes[:, 1], votes[:, 2] = 3.0, 1.0
    summed = torch.full((ROWS, VOCAB), 4.0 / VOCAB)
    oracle = make_oracle(teacher_sum=summed, teacher_votes=votes)
    student = tiny_student()
    distill(student, SEQS, oracle, make_settings(filter_value=VOCAB, use_votes=use_votes), pad_id=0)
    assert sorted(oracle.cache) == list(range(ROWS))
    for row, answer in oracle.cache.items():
        released = dict(zip(answer.candidates.tolist(), answer.distribution.tolist(), strict=True))
        assert sorted(released) == list(range(VOCAB)), row
        for token, share in released.items():
            expected = {1: 0.75, 2: 0.25}.get(token, 0.0) if use_votes else 1 / VOCAB
            assert share == pytest.approx(expected, abs=1e-6), (row, token)


def test_cached_answers_are_reused_where_the_position_is_not_hard():
    """Answers released earlier apply in every later epoch even where the position is no longer hard (README: free
    post-processing). No position can rank above the vocabulary size, so none is hard: only the three rows
    released by hand are answered, once per epoch, and no budget is spent."""
    oracle = make_oracle()
    released_rows = [0, 5, 10]  # first position of sentence 1, last of sentence 2, last of sentence 3
    for row in released_rows:
        oracle.release(row, torch.tensor([1, 2, 3]))
    assert oracle.spent == 3

    per_epoch = []
    stats = distill(tiny_student(), SEQS, oracle, make_settings(rank_threshold=VOCAB, epochs=2, lr=1e-2), pad_id=0,
                    on_epoch=lambda epoch, info: per_epoch.append(info["answered_positions"]))
    assert stats["hard_positions"] == 0
    assert per_epoch == [3, 6]  # the count is cumulative: 3 cached answers used in each of the 2 epochs
    assert oracle.spent == 3 and sorted(oracle.cache) == released_rows
