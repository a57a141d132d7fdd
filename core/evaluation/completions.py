"""Completions of test prefixes with one recorded, seeded decoding config shared by every method."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.config import DecodeConfig
from core.tokenizer import encode_prefixes


@torch.inference_mode()
def complete(model, tokenizer, prefixes: Sequence[str], decode: DecodeConfig, seed: int, batch_size: int = 64) -> list[str]:
    """Sample a continuation for each prefix; returns only the generated continuation text."""
    model.eval()
    torch.manual_seed(seed)
    pad = tokenizer.pad_token_id
    encoded = encode_prefixes(tokenizer, prefixes)
    max_positions = model.config.n_positions
    outputs: list[str] = []
    for start in range(0, len(encoded), batch_size):
        chunk = encoded[start : start + batch_size]
        length = max(len(s) for s in chunk)
        # left padding so every row continues from its last real token
        ids = torch.full((len(chunk), length), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), length), dtype=torch.long)
        for i, s in enumerate(chunk):
            ids[i, length - len(s):] = torch.as_tensor(s)
            mask[i, length - len(s):] = 1
        new_tokens = min(decode.max_new_tokens, max_positions - length)
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            top_k=decode.top_k,
            top_p=decode.top_p,
            temperature=decode.temperature,
            max_new_tokens=new_tokens,
            pad_token_id=pad,
            eos_token_id=tokenizer.eos_token_id,
        )
        for row in out[:, length:].tolist():
            if tokenizer.eos_token_id in row:
                row = row[: row.index(tokenizer.eos_token_id)]
            outputs.append(tokenizer.decode(row, skip_special_tokens=True).strip())
    return outputs
