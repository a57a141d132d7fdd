"""Completions of test prefixes with one recorded, seeded decoding config shared by every method.

A lean sampling loop instead of `model.generate`: left-padded batches, a KV cache, the LM head on the last position
only, top-k / top-p applied to the k best scores, and inverse-CDF sampling (one uniform per row). torch.multinomial,
which `generate` uses, draws one exponential per vocabulary entry on CPU (the exponential trick) and was the single
largest cost of generation. The distribution sampled from is the one `generate` samples from (temperature, then
top-k, then top-p); the draws differ, so completions differ from `generate`'s but stay seeded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from core.config import DecodeConfig
from core.models import output_cache, with_cache
from core.tokenizer import encode_prefixes
from core.train import on_model_device


def left_pad(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left padding so every row continues from its last real token; returns (ids, mask)."""
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, length - len(s) :] = torch.as_tensor(s)
        mask[i, length - len(s) :] = 1
    return ids, mask


def sampling_distribution(logits: torch.Tensor, decode: DecodeConfig) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weights, tokens): softmax(logits / T) over the top-k (top_k 0: the whole vocabulary), zeroed outside the
    top-p nucleus. Truncated rows come sorted with their token ids; tokens is None for the untouched vocabulary."""
    scores, tokens = logits.float() / decode.temperature, None
    if 0 < decode.top_k < scores.size(-1):
        scores, tokens = torch.topk(scores, decode.top_k)  # sorted, best first
    elif decode.top_p < 1.0:
        scores, tokens = torch.sort(scores, dim=-1, descending=True)
    probs = torch.softmax(scores, dim=-1)
    if decode.top_p < 1.0:
        # keep a token while the mass strictly above it is below p (the best token is always kept)
        probs = probs * ((probs.cumsum(-1) - probs) < decode.top_p)
    return probs, tokens


def sample_next(logits: torch.Tensor, decode: DecodeConfig, generator: torch.Generator) -> torch.Tensor:
    """One token per row (greedy when the temperature is 0), by inverse-CDF sampling: one uniform draw per row,
    where torch.multinomial draws one exponential per vocabulary entry."""
    if decode.temperature <= 0:
        return logits.argmax(-1)
    probs, tokens = sampling_distribution(logits, decode)
    cdf = probs.cumsum(-1)
    # drawn on the CPU's generator wherever the model runs: the same seed draws the same uniforms on a GPU
    u = torch.rand(len(probs), 1, generator=generator).to(cdf.device) * cdf[:, -1:]  # weights need not sum to 1
    choice = torch.searchsorted(cdf, u, right=True).clamp(max=probs.size(-1) - 1)  # first cdf > u: weight > 0
    return (choice if tokens is None else tokens.gather(1, choice)).squeeze(1)


@torch.inference_mode()
def sample_batch(model, ids: torch.Tensor, mask: torch.Tensor, decode: DecodeConfig, new_tokens: int, eos: int,
                 generator: torch.Generator) -> torch.Tensor:
    """Sampled continuations (B, <= new_tokens); stops early once every row has produced EOS."""
    body, head = model.base_model, model.get_output_embeddings()
    ids, mask = on_model_device(model, ids, mask)
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    out = body(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
    cache, steps = output_cache(out), []
    finished = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
    for step in range(new_tokens):
        token = sample_next(head(out.last_hidden_state[:, -1]), decode, generator)
        steps.append(token)
        finished |= token == eos
        if bool(finished.all()) or step == new_tokens - 1:
            break
        mask = torch.cat([mask, mask.new_ones(mask.size(0), 1)], dim=1)
        positions = positions[:, -1:] + 1
        out = body(input_ids=token[:, None], attention_mask=mask, position_ids=positions, **with_cache(cache),
                   use_cache=True)
    return torch.stack(steps, dim=1) if steps else ids.new_zeros((ids.size(0), 0))


def completion_seed(run_seed: int, draw: int = 0) -> int:
    """The sampling seed of a run's test completions (draw 0: completions.jsonl; further draws for comparisons that
    average out sampling noise)."""
    return run_seed + 1 + draw


def complete(model, tokenizer, prefixes: Sequence[str], decode: DecodeConfig, seed: int, batch_size: int = 256,
             on_batch: Callable[[int, int], None] = lambda done, total: None) -> list[str]:
    """Sample a continuation for each prefix; returns only the generated continuation text. on_batch(prefixes
    done, prefixes in all) after each batch."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    eos = tokenizer.eos_token_id
    encoded = encode_prefixes(tokenizer, prefixes)
    outputs: list[str] = []
    for start in range(0, len(encoded), batch_size):
        ids, mask = left_pad(encoded[start : start + batch_size], tokenizer.pad_token_id)
        new_tokens = min(decode.max_new_tokens, model.config.n_positions - ids.size(1))
        for row in sample_batch(model, ids, mask, decode, new_tokens, eos, generator).tolist():
            if eos in row:
                row = row[: row.index(eos)]
            outputs.append(tokenizer.decode(row, skip_special_tokens=True).strip())
        on_batch(len(outputs), len(encoded))
    return outputs
