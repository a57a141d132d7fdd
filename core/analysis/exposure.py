"""Canary exposure (Carlini et al. 2019, "The Secret Sharer"; ADP paper Sec. 5.2).

exposure = log2 |R| - log2 rank(canary), where R is the candidate space (every number with the canary's digit
count, 10^digits of them) and rank is the canary's position when all candidates are ordered by the model's
log-perplexity of the canary sentence (total next-token NLL, lower = more likely = ranked first; ties go in
the canary's favour, i.e. rank = 1 + #candidates strictly more likely). Exposure log2|R| means the model likes
the inserted number best; about 1 means it is an average candidate.

- |R| <= exact_limit (default 10^4): every candidate is scored, the rank is exact.
- larger spaces: Carlini's sampling estimate. S (default 4096) candidates other than the canary are drawn
  uniformly without replacement; with k of them more likely than the canary, rank ~ 1 + (|R| - 1) k / S, with a 95%
  Clopper-Pearson interval on k / S carried over to the exposure. With k = 0 the estimate is log2|R|, and only
  the interval's lower end is supported by the data: 1 - 0.025^(1/S) for k / S, i.e. 10.1 bits for S = 4,096 and
  |R| = 10^6, about 2 bits below log2 S.
Scoring only needs the tokens after the part all candidates share (the constant prefix cancels in the ranking).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from core.data.secrets import Canary

EXACT_LIMIT = 10_000  # score every candidate up to this |R| (10^4 candidates: ~20 s, tiny model, 2 busy cores)
SAMPLES = 4_096  # candidates drawn for the estimate beyond it
Scorer = Callable[[Sequence[str]], np.ndarray]  # texts -> log-perplexity (lower = more likely)


@dataclass(frozen=True)
class ExposureResult:
    canary_id: str
    inserted: int
    candidates: int  # |R|
    method: str  # "exact" | "sampled"
    scored: int  # candidates scored besides the canary
    more_likely: int  # of those, strictly more likely than the canary
    rank: float  # exact rank, or the estimate
    exposure: float
    exposure_low: float  # 95% interval (equal to exposure when exact)
    exposure_high: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def exposure_from_rank(rank: float, candidates: int) -> float:
    return math.log2(candidates) - math.log2(rank)


def candidate_text(template: str, number: int, digits: int) -> str:
    return template.format(secret=f"{number:0{digits}d}")


def _clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def canary_exposure(score: Scorer, canary: Canary, exact_limit: int = EXACT_LIMIT, samples: int | None = None,
                    seed: int = 0) -> ExposureResult:
    """Exposure of one canary under a scorer; exact when 10^digits <= exact_limit, else sampled (S = samples or
    SAMPLES)."""
    size = 10**canary.digits
    secret = int(canary.secret)
    if size <= exact_limit:
        others = np.array([i for i in range(size) if i != secret], dtype=np.int64)
        method = "exact"
    else:
        s = min(samples or SAMPLES, size - 1)
        draw = np.random.default_rng(seed).choice(size - 1, size=s, replace=False)
        others = draw + (draw >= secret)  # skip the canary's own number
        method = "sampled"
    numbers = np.concatenate([[secret], others])
    # one call: the scorer may drop the tokens all texts of a call share, so every score must come from it
    scores = np.asarray(score([candidate_text(canary.template, int(i), canary.digits) for i in numbers]),
                        dtype=np.float64)
    mine, rest = scores[0], scores[1:]
    k = int(np.sum(rest < mine))
    if method == "exact":
        rank = 1.0 + k
        exp = exposure_from_rank(rank, size)
        return ExposureResult(canary.canary_id, canary.inserted, size, method, len(rest), k, rank, exp, exp, exp)
    n = len(rest)
    rank = 1.0 + (size - 1) * k / n
    p_lo, p_hi = _clopper_pearson(k, n)
    return ExposureResult(canary.canary_id, canary.inserted, size, method, n, k, rank,
                          exposure_from_rank(rank, size),
                          exposure_from_rank(1.0 + (size - 1) * p_hi, size),
                          exposure_from_rank(1.0 + (size - 1) * p_lo, size))


# ----------------------------------------------------------------------------------------------------------------
# Scoring with a causal LM
# ----------------------------------------------------------------------------------------------------------------


def model_scorer(model, tokenizer, max_tokens: int = 64, batch_size: int = 512) -> Scorer:
    """texts -> NLL (nats) of each text's tokens after the prefix that ALL texts of the call share (a constant
    that cancels in any ranking within one call), each text encoded as [BOS] tokens [EOS] like every sentence
    the models train on. Scores from different calls are not comparable.

    The shared prefix runs through the model once; its key/value cache is reused for every candidate, so only
    the differing tokens (the digits, the full stop, EOS) are computed per candidate. Where a model does not
    take a cache that way, every candidate is run in full (same numbers, slower).
    """
    import torch

    from core.tokenizer import encode_sentences
    from core.train import model_device

    device = model_device(model)

    def suffix_nll(ids: torch.Tensor, first: int, prefix_state) -> torch.Tensor:
        """Sum of NLL of targets ids[:, first:] (first >= 1), all rows of equal length."""
        length = ids.size(1)
        if prefix_state is not None:
            try:
                return _cached_suffix_nll(model, ids, first, prefix_state)
            except Exception:  # any API mismatch of the cache: fall back to full sequences
                prefix_state.clear()
        logits = model(input_ids=ids).logits[:, first - 1 : length - 1]
        logp = torch.log_softmax(logits.float(), dim=-1)
        return -logp.gather(-1, ids[:, first:length].unsqueeze(-1)).squeeze(-1).sum(dim=1)

    @torch.inference_mode()
    def score(texts: Sequence[str]) -> np.ndarray:
        model.eval()
        seqs = encode_sentences(tokenizer, texts, max_tokens)
        shared = _shared_prefix(seqs)
        out = np.empty(len(seqs), dtype=np.float64)
        by_len: dict[int, list[int]] = {}
        for i, s in enumerate(seqs):
            by_len.setdefault(len(s), []).append(i)
        prefix_state = _prefix_state(model, seqs[0][:shared], device) if shared >= 2 and seqs else None
        for length, rows in by_len.items():
            first = max(min(shared, length - 1), 1)  # first target position that is scored
            state = prefix_state if first == shared else None
            for j in range(0, len(rows), batch_size):
                idx = rows[j : j + batch_size]
                ids = torch.tensor([seqs[i] for i in idx], dtype=torch.long, device=device)
                out[idx] = suffix_nll(ids, first, state).double().cpu().numpy()
        return out

    return score


def _prefix_state(model, prefix: Sequence[int], device) -> dict | None:
    """Key/value tensors of the shared prefix and the log-distribution of the token after it."""
    import torch

    from core.models import cache_tensors, output_cache

    try:
        out = model(input_ids=torch.tensor([list(prefix)], dtype=torch.long, device=device), use_cache=True)
        kv = cache_tensors(output_cache(out))
    except Exception:
        return None
    return {"kv": kv, "next_logp": torch.log_softmax(out.logits[0, -1].float(), dim=-1), "length": len(prefix)}


def _cached_suffix_nll(model, ids, first: int, state: dict):
    """NLL of targets ids[:, first:] where ids[:, :first] is the cached prefix."""
    import torch

    from core.models import make_cache, with_cache

    if not state:
        raise RuntimeError("prefix cache unavailable")
    b = ids.size(0)
    nll = -state["next_logp"][ids[:, first]]  # the first differing token: predicted from the prefix alone
    if ids.size(1) - first > 1:
        cache = make_cache([(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in state["kv"]])
        logits = model(input_ids=ids[:, first:-1], **with_cache(cache), use_cache=True).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        nll = nll + -logp.gather(-1, ids[:, first + 1 :].unsqueeze(-1)).squeeze(-1).sum(dim=1)
    return nll


def _shared_prefix(seqs: Sequence[Sequence[int]]) -> int:
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        k = 0
        while k < n and s[k] == first[k]:
            k += 1
        n = k
    return n


def canary_exposures(model, tokenizer, canaries: Sequence[Canary], max_tokens: int = 64,
                     exact_limit: int = EXACT_LIMIT, samples: int | None = None, seed: int = 0
                     ) -> dict[str, Any]:
    """metrics["exposure"] = {str(inserted): exposure} and metrics["exposure_detail"] = [ExposureResult...].

    Several canaries with the same insertion count are averaged under that count (each is in the detail).
    """
    score = model_scorer(model, tokenizer, max_tokens)
    details = [canary_exposure(score, c, exact_limit, samples, seed + i) for i, c in enumerate(canaries)]
    by_count: dict[str, list[float]] = {}
    for d in details:
        by_count.setdefault(str(d.inserted), []).append(d.exposure)
    return {
        "exposure": {k: float(np.mean(v)) for k, v in sorted(by_count.items(), key=lambda kv: int(kv[0]))},
        "exposure_detail": [d.to_dict() for d in details],
    }
