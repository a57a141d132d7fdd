import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from core.config import ModelConfig
from core.models import build_tiny_gpt2
from core.privacy import epsilon_from_events
from core.seqpate.aggregate import Answer, TeacherOracle, candidate_set, to_distribution
from core.seqpate.student import pseudo_label_rank, teacher_term, teacher_terms
from core.seqpate.teachers import TeacherJob, add_teacher_output, count_rows, row_starts, sentence_rows


def test_top_k_and_top_p_candidate_sets():
    probs = torch.tensor([0.05, 0.5, 0.3, 0.15])
    assert candidate_set(probs, "top-k", 2).tolist() == [1, 2]
    assert candidate_set(probs, "top-p", 0.8).tolist() == [1, 2]  # 0.5 + 0.3 reaches 0.8
    assert candidate_set(probs, "top-p", 0.81).tolist() == [1, 2, 3]
    assert candidate_set(probs, "top-p", 1.0).tolist() == [1, 2, 3, 0]


def test_release_clips_negatives_and_renormalises():
    assert to_distribution(np.array([2.0, -1.0, 2.0])).tolist() == [0.5, 0.0, 0.5]
    assert to_distribution(np.array([-1.0, -2.0])) is None


def make_oracle(budget=3, noise="gaussian", scale=1.0):
    table = torch.zeros(4, 5)
    table[:, 0] = 10.0
    table[:, 1] = 5.0
    return TeacherOracle(table, noise, scale, budget, seed=0)


def test_fresh_noise_per_released_answer():
    oracle = make_oracle()
    cands = torch.tensor([0, 1])
    a, b = oracle.release(0, cands), oracle.release(1, cands)  # identical teacher sums on both rows
    assert not torch.allclose(a.distribution, b.distribution)


@pytest.mark.parametrize("noise, scale, std_of_difference", [
    ("gaussian", 3.0, math.sqrt(2) * 3.0),  # N(0, s^2) on each candidate: the difference of two has std s sqrt(2)
    ("laplace", 2.0, 2 * 2.0),  # Laplace(b) has variance 2 b^2: the difference of two has std 2 b
])
def test_the_noise_released_has_the_scale_the_accountant_is_told(noise, scale, std_of_difference):
    """The events record noise_scale whether or not that noise was drawn: a release drawing a hundredth of it
    passed every other test. Two candidates with equal teacher sums S, far from clipping: the released
    distribution gives back the two noise draws' difference, (p0 - p1) * (2 S + n0 + n1) ~ (p0 - p1) * 2 S."""
    releases, total = 8000, 1000.0
    table = torch.zeros(releases, 3)
    table[:, :2] = total
    oracle = TeacherOracle(table, noise, scale, releases, seed=0)
    cands = torch.tensor([0, 1])
    answers = [oracle.release(row, cands).distribution.double() for row in range(releases)]
    differences = np.array([float(a[0] - a[1]) * 2 * total for a in answers])
    assert abs(differences.mean()) < 0.1 * std_of_difference  # centred
    assert differences.std() == pytest.approx(std_of_difference, rel=0.06)
    (event,) = oracle.events()
    assert event.count == releases and (event.noise_std if noise == "gaussian" else event.scale) == scale


def test_cached_answers_are_reused_without_new_accounting():
    oracle = make_oracle(budget=2)
    cands = torch.tensor([0, 1])
    first = oracle.release(0, cands)
    again = oracle.release(0, torch.tensor([0, 1, 2]))
    assert again is first and oracle.spent == 1
    assert oracle.events()[0].count == 1


def test_budget_stops_queries_and_events_count_releases():
    oracle = make_oracle(budget=2, scale=0.5)
    cands = torch.tensor([0, 1])
    assert oracle.release(0, cands) is not None and oracle.release(1, cands) is not None
    assert oracle.release(2, cands) is None and oracle.exhausted
    (event,) = oracle.events()
    assert (event.noise_std, event.sensitivity, event.count) == (0.5, math.sqrt(2), 2)
    # the epsilon reported is recomputed from the 2 releases: 2 Gaussians of std 0.5 and sensitivity sqrt(2) are
    # mu = sqrt(2 * 2 / 0.25) = 4 GDP, whose delta at that epsilon is the closed form's 1e-6
    eps = epsilon_from_events(oracle.events(), 1e-6).epsilon
    delta = norm.cdf(-eps / 4 + 2) - math.exp(eps) * norm.cdf(-eps / 4 - 2)
    assert delta == pytest.approx(1e-6, rel=1e-6) and delta <= 1e-6


def test_an_answer_whose_mass_all_vanished_is_still_charged():
    """A noisy answer clipped to all zeros teaches the student nothing, but its noise was drawn from the teachers'
    sum and released: it counts against the budget and in the events like any other (a mutation that charged only
    answers with mass left survived every test)."""
    oracle = TeacherOracle(torch.zeros(200, 3), "gaussian", 1.0, budget=200, seed=0)
    answers = [oracle.release(row, torch.tensor([0])) for row in range(200)]
    vanished = sum(answer.distribution is None for answer in answers)
    # one candidate at sum 0 plus N(0, 1): negative, hence clipped away, half the time
    assert 70 < vanished < 130 and oracle.vanished == vanished
    assert oracle.spent == 200 and oracle.events()[0].count == 200 and oracle.exhausted


def test_no_noise_release_is_exact_and_non_private():
    oracle = make_oracle(noise="none", scale=0.0)
    answer = oracle.release(0, torch.tensor([0, 1]))
    assert answer.distribution.tolist() == pytest.approx([2 / 3, 1 / 3])
    assert math.isinf(epsilon_from_events(oracle.events(), 1e-6).epsilon)


def tiny_job(distill, vocab=50):
    cfg = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16)
    base = build_tiny_gpt2(cfg, vocab)
    return base, TeacherJob(base_state=base.state_dict(), base_config=base.config.to_dict(), distill_seqs=distill,
                            n_rows=count_rows(distill), pad_id=0, epochs=1, lr=1e-3, batch_size=4, seed=0,
                            want_votes=True)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_changing_one_teacher_moves_the_sum_by_at_most_sqrt2(seed):
    """Sensitivity (Sec. 5.2): swap one teacher for any other model; every row of the sum moves <= sqrt(2) in L2."""
    rng = np.random.default_rng(seed)
    distill = [rng.integers(1, 50, size=rng.integers(3, 9)).tolist() for _ in range(5)]
    _, job = tiny_job(distill)
    torch.manual_seed(seed)
    teachers = [build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), 50) for _ in range(4)]
    replacement = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), 50)
    with torch.no_grad():  # make the replacement very different: sharp random logits
        replacement.lm_head.weight.mul_(50)

    def total(models):
        s = torch.zeros(job.n_rows, 50)
        v = torch.zeros(job.n_rows, 50)
        for m in models:
            add_teacher_output(m, job, s, v)
        return s, v

    s1, v1 = total(teachers)
    s2, v2 = total(teachers[:-1] + [replacement])
    assert (s1 - s2).norm(dim=1).max() <= math.sqrt(2) + 1e-5
    assert (v1 - v2).norm(dim=1).max() <= math.sqrt(2) + 1e-6
    assert torch.allclose(s1.sum(1), torch.full((job.n_rows,), 4.0), atol=1e-4)


def test_rows_follow_sentence_order():
    seqs = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    assert row_starts(seqs).tolist() == [0, 2, 3, 6]
    assert count_rows(seqs) == 6
    assert [rows.tolist() for rows in sentence_rows(seqs)] == [[0, 1], [2], [3, 4, 5]]


def test_pseudo_label_rank_and_kl_term():
    probs = torch.tensor([[0.1, 0.6, 0.3]])
    assert pseudo_label_rank(probs, torch.tensor([1])).tolist() == [1]
    assert pseudo_label_rank(probs, torch.tensor([0])).tolist() == [3]
    dist = torch.tensor([0.25, 0.75])
    cands = torch.tensor([2, 3])
    logits = torch.tensor([5.0, -1.0, *torch.log(dist).tolist()])  # tokens outside C do not enter the KL
    assert teacher_term(logits, cands, dist, "kl").item() == pytest.approx(0.0, abs=1e-6)
    # KL summed over C, not divided by |V|: KL((.25,.75) || (.5,.5))
    expected = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    assert teacher_term(torch.zeros(4), cands, dist, "kl").item() == pytest.approx(expected, rel=1e-5)


def test_the_minus_kl_ablation_is_cross_entropy_over_the_vocabulary_on_the_noisy_top1():
    """-KL (Table 3): the student's usual next-token loss with the teachers' top-1 as the label, over all of V;
    over C alone it was log |C| at uniform logits and exactly 0 for a one-token C (top-k:1)."""
    dist, cands = torch.tensor([0.25, 0.75]), torch.tensor([2, 3])
    assert teacher_term(torch.zeros(4), cands, dist, "ce").item() == pytest.approx(math.log(4))
    logits = torch.tensor([2.0, 0.5, -1.0, 3.0])
    one_token = teacher_term(logits, torch.tensor([1]), torch.tensor([1.0]), "ce")
    assert one_token.item() == pytest.approx(torch.nn.functional.cross_entropy(logits, torch.tensor(1)).item())
    log_partition = 3.0 + math.log(1 + math.exp(-1.0) + math.exp(-2.5) + math.exp(-4.0))  # max logit 3
    assert one_token.item() == pytest.approx(log_partition - 0.5, rel=1e-6)
    batched = teacher_terms(logits[None], [0], [Answer(torch.tensor([1]), torch.tensor([1.0]))], "ce")
    assert batched.item() == pytest.approx(log_partition - 0.5, rel=1e-6)  # the loss distillation uses
