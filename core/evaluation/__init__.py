from core.evaluation.bleu import bleu_scores
from core.evaluation.completions import complete
from core.evaluation.perplexity import (
    corpus_nll,
    corpus_perplexity,
    perplexity_from_nll,
    sentence_nll,
    total_nll,
)

__all__ = ["bleu_scores", "complete", "corpus_nll", "corpus_perplexity", "perplexity_from_nll", "sentence_nll", "total_nll"]
