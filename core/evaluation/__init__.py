from core.evaluation.bleu import bleu_scores
from core.evaluation.completions import complete, completion_seed
from core.evaluation.perplexity import (
    perplexity_from_nll,
    sentence_nll,
    total_nll,
)

__all__ = ["bleu_scores", "complete", "completion_seed", "perplexity_from_nll", "sentence_nll", "total_nll"]
