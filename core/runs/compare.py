"""Is one run really better than another? Paired tests over the shared test sentences.

Perplexity: two runs scored on the same private test sentences (same data config, seed and tokenizer) differ
sentence by sentence; resampling whole sentences, with each sentence's NLL from both runs kept together, gives a
confidence interval for the ratio of their corpus perplexities that accounts for which sentences happen to be in
the test set. BLEU-4: a paired approximate randomization test over the test prefixes both runs completed (the
completion each run saved, or several drawn from the runs' saved models), with sacrebleu's statistics and shuffles.
Neither says anything about training randomness (a rerun with another seed); see cached_runs/NOTES.md for that
spread.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from core.config import PRIVATE_ONLY_DATA_FIELDS
from core.runs.store import RunDir, RunError


class NotComparableError(RunError, ValueError):
    """The two runs were not scored on the same test sentences, or one of them kept no per-sentence NLL."""


@dataclass(frozen=True)
class PerplexityComparison:
    ppl_a: float
    ppl_b: float
    ratio: float  # ppl_a / ppl_b
    low: float  # confidence interval of the ratio
    high: float
    confidence: float
    n_sentences: int
    n_resamples: int

    @property
    def verdict(self) -> str:
        if self.high < 1.0:
            return "A is lower"
        if self.low > 1.0:
            return "B is lower"
        return "no clear difference"

    def summary(self) -> str:
        change = 100 * (self.ratio - 1)
        return (
            f"PPL A / B = {self.ratio:.4f} ({change:+.2f}%), {100 * self.confidence:g}% paired bootstrap interval "
            f"[{self.low:.4f}, {self.high:.4f}] over {self.n_sentences} test sentences: {self.verdict}"
        )


def _log_ratio(nll_a, nll_b, tokens, axis=-1):
    return (np.sum(nll_a, axis=axis) - np.sum(nll_b, axis=axis)) / np.sum(tokens, axis=axis)


BOOTSTRAP_BATCH = 2_000  # resamples held at once: 2,000 x the test sentences x 8 bytes per array


def _bootstrap_interval(data, confidence: float, n_resamples: int, seed: int, method: str):
    with warnings.catch_warnings():  # a degenerate BCa warns and returns nan; the caller falls back
        warnings.simplefilter("ignore")
        return stats.bootstrap(
            data,
            _log_ratio,
            paired=True,
            vectorized=True,
            confidence_level=confidence,
            n_resamples=n_resamples,
            batch=BOOTSTRAP_BATCH,  # memory bounded whatever the count (10^9 at once asked for 1.46 TiB)
            method=method,
            rng=np.random.default_rng(seed),
        ).confidence_interval


def compare_perplexity(
    nll_a: Sequence[float],
    nll_b: Sequence[float],
    tokens: Sequence[int],
    confidence: float = 0.95,
    n_resamples: int = 5000,
    seed: int = 0,
) -> PerplexityComparison:
    """Corpus PPL of A and B (exp of summed NLL over summed tokens) and a BCa bootstrap interval of their ratio,
    resampling sentences with replacement (paired: a sentence brings its NLL under both models)."""
    a, b, n = (np.asarray(x, dtype=float) for x in (nll_a, nll_b, tokens))
    if not (a.shape == b.shape == n.shape) or a.ndim != 1 or a.size < 2:
        raise ValueError("need the same number (>= 2) of per-sentence NLLs from both runs and token counts")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    total = n.sum()
    ci = _bootstrap_interval((a, b, n), confidence, n_resamples, seed, method="BCa")
    # BCa is undefined when every resample agrees (the same model twice, or a uniform per-token shift)
    if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
        ci = _bootstrap_interval((a, b, n), confidence, n_resamples, seed, method="percentile")
    return PerplexityComparison(
        ppl_a=float(np.exp(a.sum() / total)),
        ppl_b=float(np.exp(b.sum() / total)),
        ratio=float(np.exp(_log_ratio(a, b, n))),
        low=float(np.exp(ci.low)),
        high=float(np.exp(ci.high)),
        confidence=confidence,
        n_sentences=int(a.size),
        n_resamples=n_resamples,
    )


def _test_set_key(run: RunDir) -> tuple:
    """What fixes a run's test sentences and their tokens: its data config (but the canaries, which only touch the
    private train data), model config and seed."""
    stored = run.config() or {}
    config = stored.get("config") or {}
    data = config.get("data")
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in PRIVATE_ONLY_DATA_FIELDS}
    return data, config.get("model"), config.get("seed")


def compare_runs(run_a: RunDir, run_b: RunDir, confidence: float = 0.95, n_resamples: int = 5000) -> PerplexityComparison:
    """compare_perplexity on two runs' test_nll.csv, refusing runs that were not scored on the same sentences."""
    rows = []
    for run in (run_a, run_b):
        nll = run.test_nll()
        if nll is None:
            raise NotComparableError(
                f"{run.run_id} has no test_nll.csv (runs written before it existed keep only the corpus PPL)"
            )
        rows.append(nll)
    if _test_set_key(run_a) != _test_set_key(run_b):
        raise NotComparableError(
            "the runs differ in data config, base model or seed, so their test sentences or tokens differ"
        )
    tokens_a = [t for _, t in rows[0]]
    if len(rows[0]) != len(rows[1]):  # the same data, base model and seed: one file lost lines since
        raise NotComparableError(f"test_nll.csv of {run_a.run_id} holds {len(rows[0])} sentences and of "
                                 f"{run_b.run_id} {len(rows[1])}, for the same test set: one was cut short")
    if tokens_a != [t for _, t in rows[1]]:
        raise NotComparableError("the runs' test sentences have different token counts: not the same test set")
    return compare_perplexity(
        [x for x, _ in rows[0]], [x for x, _ in rows[1]], tokens_a, confidence=confidence, n_resamples=n_resamples
    )


@dataclass(frozen=True)
class BleuComparison:
    bleu_a: float  # corpus BLEU-4 of each draw, averaged over the draws (with one draw: the run's own BLEU-4)
    bleu_b: float
    p_value: float  # two-sided, paired approximate randomization over test prefixes
    n_completions: int  # completions scored per run (test prefixes x draws)
    trials: int
    fourgrams_a: int  # 4-grams of A's completions found in their references (clipped counts, as BLEU counts them)
    fourgrams_b: int
    draws: int = 1  # completions of each test prefix per run

    @property
    def verdict(self) -> str:
        if self.p_value >= 0.05:  # equal scores have p = 1: every shuffle ties or beats them
            return "no clear difference"
        return "A is higher" if self.bleu_a > self.bleu_b else "B is higher"

    def summary(self) -> str:
        scored = f"{self.n_completions} completions"
        if self.draws > 1:
            scored = f"{self.n_completions // self.draws} test prefixes x {self.draws} draws ({scored}; BLEU-4: mean of the draws')"
        grams = "4-gram" if self.fourgrams_a == 1 else "4-grams"
        # a handful of matching 4-grams (none at all is smoothed): BLEU-4 then mostly reflects length and smoothing
        caveat = ""
        if self.fourgrams_a == self.fourgrams_b == 0:  # "B is higher" would read as a real lead
            caveat = ("; neither run matches a 4-gram of the references, so BLEU-4 here is the smoothed 1- to 3-gram "
                      "precisions and the length penalty"
                      + (", of one sampled completion per prefix (--draws N, for runs that kept their weights, "
                         "tests over several)" if self.draws == 1 else ""))
        return (
            f"BLEU-4 A {self.bleu_a:.2f} ({self.fourgrams_a} matching {grams}) vs B {self.bleu_b:.2f} "
            f"({self.fourgrams_b}), paired approximate randomization p = {self.p_value:.3f} over {scored}: "
            f"{self.verdict}{caveat}"
        )


def _ar_seed() -> int | None:
    """The shuffles' seed as sacrebleu's tests take it: SACREBLEU_SEED, 12345 unless set ('none': unseeded). Unlike
    sacrebleu, which ignores a seed of 0, 0 seeds."""
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    return None if seed.lower() == "none" else int(seed)


def compare_bleu_draws(
    draws_a: Sequence[Sequence[str]], draws_b: Sequence[Sequence[str]], references: Sequence[str],
    trials: int = 10_000,
) -> BleuComparison:
    """Is A's BLEU-4 higher than B's? Each run completed every test prefix once per draw (one list per draw, in the
    order of `references`); a run's score is its draws' corpus BLEU-4 (as the runs' metrics compute it), averaged.

    Paired approximate randomization over test prefixes: could the difference arise if, prefix by prefix, which
    run wrote that prefix's completions were a coin flip? (Null: for each prefix the two runs' sets of completions
    are exchangeable.) A shuffle swaps everything the two runs wrote for one prefix, all its draws at once, so the
    prefix, not the completion, is the unit of evidence, as the sentence is in the perplexity bootstrap; swapping
    single completions would count a prefix's draws as independent evidence. More draws average out the sampling
    noise of a single completion per prefix, which dominates BLEU-4 differences of a point or less.

    With one draw these are sacrebleu's PairedTest shuffles (same seed, same mask), with one change: a shuffle
    whose difference ties the observed one counts as at least as large. sacrebleu counts only strictly larger ones
    (multeval's convention), which with ties gives p = 1/(trials+1) whatever the evidence: two identical runs, or a
    lead resting on one prefix of three, read as 'clearly different'. Without ties the p is sacrebleu's."""
    from sacrebleu.metrics import BLEU

    if len(draws_a) != len(draws_b) or not draws_a:
        raise ValueError("need the same number (>= 1) of draws from both runs")
    if not references or any(len(d) != len(references) for d in (*draws_a, *draws_b)):
        raise ValueError("need the same number (>= 1) of completions from both runs and references in every draw")
    if trials < 1:
        raise ValueError(f"need at least 1 shuffle, got {trials}")
    metric = BLEU()
    refs = [list(references)]
    # sufficient statistics (lengths, n-gram matches and totals) per draw and prefix: (draws, prefixes, stats)
    stats_a, stats_b = (np.array([metric._extract_corpus_statistics(list(d), refs) for d in draws], dtype=np.int64)
                        for draws in (draws_a, draws_b))

    def mean_bleu(per_draw_totals: np.ndarray) -> float:
        return float(np.mean([metric._compute_score_from_stats(total).score for total in per_draw_totals]))

    bleu_a, bleu_b = mean_bleu(stats_a.sum(1)), mean_bleu(stats_b.sum(1))
    observed = abs(bleu_a - bleu_b)
    # sacrebleu's shuffles (baseline B first): in shuffle t, A's side takes B's statistics for prefix i when
    # swap[t, i], and B's side takes A's
    swap = np.random.default_rng(_ar_seed()).integers(2, size=(trials, len(references)), dtype=bool)
    draws, prefixes, width = stats_a.shape
    by_prefix_a, by_prefix_b = (x.transpose(1, 0, 2).reshape(prefixes, draws * width).astype(float)
                                for x in (stats_a, stats_b))
    shuffled_a = np.rint(swap @ by_prefix_b + ~swap @ by_prefix_a).astype(np.int64).reshape(trials, draws, width)
    shuffled_b = stats_a.sum(1) + stats_b.sum(1) - shuffled_a  # each prefix's statistics go to one side or the other
    differences = np.array([abs(mean_bleu(sa) - mean_bleu(sb)) for sa, sb in zip(shuffled_a, shuffled_b, strict=True)])
    # a tie is a swap of equal scores, recomputed in another order: equal up to rounding
    at_least = np.sum(differences >= observed - 1e-9 * max(observed, 1.0))
    fourgrams = [int(metric._compute_score_from_stats(s.sum((0, 1))).counts[3]) for s in (stats_a, stats_b)]
    return BleuComparison(bleu_a=bleu_a, bleu_b=bleu_b, p_value=float((at_least + 1) / (trials + 1)),
                          n_completions=draws * prefixes, trials=trials, fourgrams_a=fourgrams[0],
                          fourgrams_b=fourgrams[1], draws=draws)


def compare_bleu(
    hyps_a: Sequence[str], hyps_b: Sequence[str], references: Sequence[str], trials: int = 10_000
) -> BleuComparison:
    """compare_bleu_draws with one completion of each test prefix per run: sacrebleu's paired approximate
    randomization test on BLEU-4, with ties counted as reaching the observed difference."""
    return compare_bleu_draws([hyps_a], [hyps_b], references, trials=trials)


def _paired_rows(run_a: RunDir, run_b: RunDir) -> tuple[list[dict], list[dict]]:
    """Both runs' completions.jsonl rows; NotComparableError when they completed different test prefixes."""
    rows_a, rows_b = run_a.completions(), run_b.completions()
    if [(r.get("prefix"), r.get("reference")) for r in rows_a] != [(r.get("prefix"), r.get("reference")) for r in rows_b]:
        raise NotComparableError("the runs completed different test prefixes (another data config, seed or size, or "
                                 "their corpus file changed between the runs)")
    return rows_a, rows_b


def shared_references(run_a: RunDir, run_b: RunDir) -> list[str]:
    """The references of the test prefixes both runs completed; NotComparableError when the prefixes differ."""
    return [r["reference"] for r in _paired_rows(run_a, run_b)[0]]


def compare_runs_bleu(run_a: RunDir, run_b: RunDir, trials: int = 10_000, draws: int = 1) -> BleuComparison:
    """compare_bleu on two runs' completions.jsonl, refusing runs that completed different test prefixes. With
    draws > 1, each run's saved model completes every prefix `draws` times (draw 0 is completions.jsonl)."""
    rows_a, rows_b = _paired_rows(run_a, run_b)
    references = [r["reference"] for r in rows_a]
    if draws == 1:
        return compare_bleu([r["completion"] for r in rows_a], [r["completion"] for r in rows_b], references,
                            trials=trials)
    from core.runs.live import resample_completions  # loads the models: torch only when asked for

    drawn_a = resample_completions(run_a, draws)
    drawn_b = drawn_a if run_b.path.resolve() == run_a.path.resolve() else resample_completions(run_b, draws)
    return compare_bleu_draws(drawn_a, drawn_b, references, trials=trials)
