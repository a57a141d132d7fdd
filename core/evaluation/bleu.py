"""BLEU-1..4 of completions against references with sacrebleu (the n-gram order is recorded: sacrebleu's
signature does not include it)."""

from __future__ import annotations

from collections.abc import Sequence

from sacrebleu.metrics import BLEU


def bleu_scores(hypotheses: Sequence[str], references: Sequence[str], max_order: int = 4) -> dict:
    """Cumulative BLEU-n (uniform weights over 1..n-grams) for n = 1..max_order, on the 0-100 scale."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scores: dict = {}
    signature = ""
    for n in range(1, max_order + 1):
        metric = BLEU(max_ngram_order=n)
        scores[f"bleu{n}"] = float(metric.corpus_score(list(hypotheses), [list(references)]).score)
        signature = str(metric.get_signature())
    scores["bleu_signature"] = f"{signature}|orders:1-{max_order}"
    return scores
