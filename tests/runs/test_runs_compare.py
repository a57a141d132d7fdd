"""Paired comparison of two runs' test perplexity: per-sentence NLL on disk, the bootstrap interval's coverage,
and refusal of runs that were not scored on the same sentences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.evaluation.bleu import bleu_scores
from core.runs.compare import (
    NotComparableError,
    compare_bleu,
    compare_bleu_draws,
    compare_perplexity,
    compare_runs,
)
from core.runs.store import RunDir, RunFormatError
from tests.dashboard.fake_runs import write_run


def population(size: int, rng: np.random.Generator, per_token_gap: float):
    """Synthetic test sentences: token counts, NLL under model A, and under B (worse by per_token_gap on average,
    with sentence-level noise that does not vanish when averaged over a few hundred sentences)."""
    tokens = rng.integers(4, 40, size)
    nll_a = tokens * rng.normal(5.0, 0.6, size)
    nll_b = nll_a + tokens * (per_token_gap + rng.normal(0.0, 0.25, size))
    return tokens, nll_a, nll_b


def test_ratio_is_the_ratio_of_corpus_perplexities():
    tokens, a, b = population(300, np.random.default_rng(0), 0.03)
    result = compare_perplexity(a, b, tokens, n_resamples=999)
    assert result.ppl_a == pytest.approx(math.exp(a.sum() / tokens.sum()), rel=1e-12)
    assert result.ppl_b == pytest.approx(math.exp(b.sum() / tokens.sum()), rel=1e-12)
    assert result.ratio == pytest.approx(result.ppl_a / result.ppl_b, rel=1e-12)
    assert result.low < result.ratio < result.high


def test_interval_covers_the_population_ratio_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    tokens, a, b = population(50_000, rng, 0.01)
    true_ratio = math.exp((a.sum() - b.sum()) / tokens.sum())
    covered = 0
    trials = 200
    for trial in range(trials):
        pick = rng.integers(0, tokens.size, 300)  # a test set drawn from the population
        result = compare_perplexity(a[pick], b[pick], tokens[pick], n_resamples=999, seed=trial)
        covered += result.low <= true_ratio <= result.high
    assert 0.90 <= covered / trials <= 0.99


def test_verdicts():
    tokens, a, b = population(1000, np.random.default_rng(2), 0.05)
    assert compare_perplexity(a, b, tokens, n_resamples=999).verdict == "A is lower"
    assert compare_perplexity(b, a, tokens, n_resamples=999).verdict == "B is lower"
    tokens, a, b = population(1000, np.random.default_rng(3), 0.0)
    assert compare_perplexity(a, b, tokens, n_resamples=999).verdict == "no clear difference"


def test_identical_or_uniformly_shifted_runs_give_a_zero_width_interval():
    tokens, a, _ = population(200, np.random.default_rng(4), 0.0)
    same = compare_perplexity(a, a, tokens)
    assert (same.ratio, same.low, same.high, same.verdict) == (1.0, 1.0, 1.0, "no clear difference")
    shifted = compare_perplexity(a, a + 0.1 * tokens, tokens)  # every resample gives exp(-0.1): BCa is undefined
    assert shifted.low == pytest.approx(math.exp(-0.1)) and shifted.high == pytest.approx(math.exp(-0.1))
    assert shifted.verdict == "A is lower"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same number"):
        compare_perplexity([1.0, 2.0], [1.0], [1, 1])
    with pytest.raises(ValueError, match="confidence"):
        compare_perplexity([1.0, 2.0], [1.5, 2.0], [1, 1], confidence=95)


def nll_rows(seed: int, n: int = 50, gap: float = 0.0):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(3, 20, n)
    return [(float(t * (5 + gap) + rng.normal()), int(t)) for t in tokens]


def test_test_nll_round_trips_exactly_and_rejects_a_broken_file(tmp_path):
    run = write_run(tmp_path, "a")
    assert run.test_nll() is None  # older runs have none
    rows = nll_rows(0)
    run.write_test_nll(rows)
    assert run.test_nll() == rows
    run.file("test_nll.csv").write_text("index,tokens,nll\n0,3,1.5\n2,4,abc\n")
    with pytest.raises(RunFormatError, match="line 3"):
        run.test_nll()


def test_compare_runs_needs_the_same_test_sentences(tmp_path):
    a = write_run(tmp_path, "a", method="seqpate")
    b = write_run(tmp_path, "b", method="pub-gpt")
    with pytest.raises(NotComparableError, match="no test_nll.csv"):
        compare_runs(a, b)
    a.write_test_nll(nll_rows(0))
    b.write_test_nll([(nll + 0.2 * tokens, tokens) for nll, tokens in nll_rows(0)])
    result = compare_runs(a, b, n_resamples=999)
    assert result.verdict == "A is lower" and result.ratio == pytest.approx(math.exp(-0.2))

    other_seed = write_run(tmp_path, "c", method="pub-gpt", seed=1)
    other_seed.write_test_nll(nll_rows(0))
    with pytest.raises(NotComparableError, match="data config, base model or seed"):
        compare_runs(a, other_seed)
    shorter = write_run(tmp_path, "d", method="pub-gpt")  # the same test set, a file that lost a line
    shorter.write_test_nll(nll_rows(0)[:-1])
    with pytest.raises(NotComparableError, match="^test_nll.csv of a holds 50 sentences and of d 49, for the same "
                                                 "test set: one was cut short$"):
        compare_runs(a, shorter)
    retokenized = write_run(tmp_path, "e", method="pub-gpt")
    retokenized.write_test_nll([(nll, tokens + (i == 0)) for i, (nll, tokens) in enumerate(nll_rows(0))])
    with pytest.raises(NotComparableError, match="token counts"):
        compare_runs(a, retokenized)
    # canaries touch only the private train data: a canary run shares the test sentences ("the runs differ in data
    # config" refused a walk's phrase run against SeqPATE at ε 3, on identical sentences and tokens)
    canaries = write_run(tmp_path, "f", method="seqpate", canaries="1,10,100", config={"data__canary_seed": 7})
    canaries.write_test_nll(nll_rows(0))
    assert compare_runs(a, canaries, n_resamples=999).ratio == 1.0
    smaller = write_run(tmp_path, "g", method="seqpate", config={"data__private_test": 100})
    smaller.write_test_nll(nll_rows(0))
    with pytest.raises(NotComparableError, match="data config, base model or seed"):  # another test set
        compare_runs(a, smaller)


def test_cached_runs_are_compared_read_only(tmp_path):
    # a shipped run is read-only, but reading its test_nll.csv must work
    live = write_run(tmp_path, "x")
    live.write_test_nll(nll_rows(5))
    shipped = RunDir(live.path, source="cached")
    assert shipped.test_nll() == nll_rows(5)


REFERENCES = [f"the {w} went to the market on day {i} with a friend" for i, w in enumerate(["cat", "dog", "man"] * 20)]


def test_bleu_comparison_scores_as_the_runs_do_and_tests_the_difference():
    good = [r.replace("friend", "pal") for r in REFERENCES]  # near copies of the references
    poor = [f"i think {i} is a number" for i in range(len(REFERENCES))]
    result = compare_bleu(good, poor, REFERENCES, trials=2000)
    assert result.bleu_a == pytest.approx(bleu_scores(good, REFERENCES)["bleu4"], rel=1e-12)
    assert result.bleu_b == pytest.approx(bleu_scores(poor, REFERENCES)["bleu4"], rel=1e-12)
    assert result.p_value < 0.01 and result.verdict == "A is higher"
    # 8 of each near copy's 9 4-grams match (all but the one ending in "pal"); the poor ones share none
    assert (result.fourgrams_a, result.fourgrams_b) == (8 * 60, 0)
    # no matching 4-gram at all still scores above 0 (sacrebleu's exp smoothing): the count says what it rests on
    assert result.bleu_b > 0.1 and "(480 matching 4-grams) vs B 0.16 (0)" in result.summary()
    assert compare_bleu(poor, good, REFERENCES, trials=2000).verdict == "B is higher"
    # where neither run matches a 4-gram, the verdict says what BLEU-4 then measures (a walk read a tiny "B is
    # higher", 0.21 against 0.55 with none on either side, as a real lead)
    shorter = [f"i think {i}" for i in range(len(REFERENCES))]
    neither = compare_bleu(shorter, poor, REFERENCES, trials=2000)
    assert neither.summary().endswith(
        ": B is higher; neither run matches a 4-gram of the references, so BLEU-4 here is the smoothed 1- to 3-gram "
        "precisions and the length penalty, of one sampled completion per prefix (--draws N, for runs that kept "
        "their weights, tests over several)")
    assert "neither run" not in result.summary()
    # two halves of the same quality, swapped: no difference the test can see
    mixed_a = good[:30] + poor[30:]
    mixed_b = poor[:30] + good[30:]
    assert compare_bleu(mixed_a, mixed_b, REFERENCES, trials=2000).verdict == "no clear difference"
    # the same completions twice: every shuffle ties (sacrebleu's strict count gave p = 1 / (trials + 1))
    assert compare_bleu(good, good, REFERENCES, trials=2000).p_value == 1.0
    with pytest.raises(ValueError, match="same number"):
        compare_bleu(good, poor[:-1], REFERENCES)


def test_one_draw_is_sacrebleus_own_paired_test():
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    rng = np.random.default_rng(3)
    words = "the a cat dog went to market on day with friend i think is number".split()
    noisy = [[" ".join(rng.choice(words, size=rng.integers(4, 12))) for _ in REFERENCES] for _ in range(2)]
    for hyps_a, hyps_b in [(noisy[0], noisy[1]), ([r.replace("friend", "pal") for r in REFERENCES], noisy[0])]:
        ours = compare_bleu(hyps_a, hyps_b, REFERENCES, trials=500)
        theirs = PairedTest([("B", hyps_b), ("A", hyps_a)], {"BLEU": BLEU()}, [REFERENCES], test_type="ar",
                            n_samples=500)()[1]["BLEU"]
        assert (ours.bleu_b, ours.bleu_a) == (theirs[0].score, theirs[1].score)
        assert ours.p_value == theirs[1].p_value  # the same shuffles from the same seed


def test_a_lead_resting_on_one_prefix_of_a_few_is_not_clear():
    good, poor = REFERENCES[0].replace("friend", "pal"), "i think 0 is a number"
    # one prefix: every shuffle either keeps the difference or mirrors it, a tie (sacrebleu: p = 1 / (trials + 1))
    assert compare_bleu([good], [poor], REFERENCES[:1], trials=500).p_value == 1.0
    assert compare_bleu_draws([[good]] * 5, [[poor]] * 5, REFERENCES[:1], trials=500).p_value == 1.0
    # three prefixes, A ahead on one and the same on the others: every shuffle keeps or mirrors the lead
    others = [r.replace("friend", "pal") for r in REFERENCES[1:3]]
    result = compare_bleu([good, *others], [poor, *others], REFERENCES[:3], trials=2000)
    assert result.p_value == 1.0 and result.verdict == "no clear difference"


def naive_p_value(draws_a, draws_b, references, trials: int) -> float:
    """The test written out on strings: each shuffle builds both runs' swapped completions and scores every draw
    with sacrebleu's corpus_score (slow; for checking compare_bleu_draws on small inputs)."""
    from sacrebleu.metrics import BLEU

    def score(draws):
        return np.mean([BLEU().corpus_score(list(d), [list(references)]).score for d in draws])

    observed = abs(score(draws_a) - score(draws_b))
    swap = np.random.default_rng(12345).integers(2, size=(trials, len(references)), dtype=bool)
    at_least = 0
    for row in swap:
        a = [[db[i] if row[i] else da[i] for i in range(len(references))] for da, db in zip(draws_a, draws_b, strict=True)]
        b = [[da[i] if row[i] else db[i] for i in range(len(references))] for da, db in zip(draws_a, draws_b, strict=True)]
        at_least += abs(score(a) - score(b)) >= observed - 1e-9
    return (at_least + 1) / (trials + 1)


@pytest.mark.parametrize("prefixes, draws, seed", [(6, 1, 0), (12, 3, 1), (20, 4, 2)])
def test_draws_test_is_the_test_written_out_on_strings(prefixes, draws, seed, monkeypatch):
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    rng = np.random.default_rng(seed)
    words = "the a cat dog man went to market on day with friend i think is number".split()
    refs = REFERENCES[:prefixes]

    def system():
        return [[" ".join(rng.choice(words, size=rng.integers(3, 12))) if rng.random() < 0.7 else ref
                 for ref in refs] for _ in range(draws)]

    a, b = system(), system()
    result = compare_bleu_draws(a, b, refs, trials=150)
    assert result.p_value == pytest.approx(naive_p_value(a, b, refs, trials=150), abs=1e-12)
    # matching 4-grams summed over every draw, as BLEU clips them per completion
    from sacrebleu.metrics import BLEU

    assert result.fourgrams_a == sum(BLEU().corpus_score(d, [refs]).counts[3] for d in a) > 0


def sampled_system(copy_rates, draws: int, seed: int) -> list[list[str]]:
    """A stand-in for a sampling model: each completion of prefix i copies its reference with probability
    copy_rates[i] (one number: every prefix alike), else says something unrelated."""
    rng = np.random.default_rng(seed)
    rates = np.broadcast_to(copy_rates, len(REFERENCES))
    return [[ref if rng.random() < rate else f"i think {i} is a number" for i, (ref, rate) in
             enumerate(zip(REFERENCES, rates, strict=True))] for _ in range(draws)]


def test_more_draws_find_a_difference_that_one_draw_leaves_to_sampling_noise():
    better, worse = sampled_system(0.12, 40, seed=5), sampled_system(0.09, 40, seed=6)
    one = compare_bleu_draws(better[:1], worse[:1], REFERENCES, trials=2000)
    many = compare_bleu_draws(better, worse, REFERENCES, trials=2000)
    assert one.verdict == "no clear difference" and one.draws == 1 and one.n_completions == 60
    assert many.verdict == "A is higher" and many.p_value < 0.01
    # a run's score: each draw's corpus BLEU-4 (every completion against its own prefix's reference), averaged
    mean_bleu = np.mean([bleu_scores(draw, REFERENCES)["bleu4"] for draw in better])
    assert many.bleu_a == pytest.approx(mean_bleu, rel=1e-12)
    assert many.n_completions == 2400 and many.draws == 40
    assert "60 test prefixes x 40 draws (2400 completions; BLEU-4: mean of the draws')" in many.summary()
    # two draws sets of one system: no difference
    again = sampled_system(0.12, 40, seed=7)
    assert compare_bleu_draws(better, again, REFERENCES, trials=2000).verdict == "no clear difference"
    with pytest.raises(ValueError, match="same number"):
        compare_bleu_draws(better, worse[:3], REFERENCES)
    with pytest.raises(ValueError, match="every draw"):
        compare_bleu_draws(better[:1], [worse[0][:-1]], REFERENCES)


def test_a_lead_from_which_prefixes_favour_a_run_is_not_evidence_however_many_draws():
    # each prefix favours one run (a fair coin: neither run is better on a new prefix); here 33 of the 60 favour A
    favours_a = np.zeros(len(REFERENCES), dtype=bool)
    favours_a[np.random.default_rng(0).permutation(len(REFERENCES))[:33]] = True
    a = sampled_system(np.where(favours_a, 0.5, 0.0), 40, seed=8)
    b = sampled_system(np.where(favours_a, 0.0, 0.5), 40, seed=9)
    assert compare_bleu_draws(a, b, REFERENCES, trials=2000).verdict == "no clear difference"
    # counting each completion as its own evidence (as if every draw were a new prefix) calls it a clear lead
    flat = [h for draw in a for h in draw], [h for draw in b for h in draw]
    assert compare_bleu(*flat, REFERENCES * 40, trials=2000).verdict == "A is higher"
