"""Pseudo data (paper Sec. 4.1): the public base model completes PUBLIC prefixes into pseudo sentences.

Only public prefixes and the public model are used, so the pseudo data carries no private information.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from core.config import DecodeConfig, stable_hash
from core.evaluation import complete
from core.models import cache_root


def pseudo_sentences(
    model, tokenizer, prefixes: Sequence[str], decode: DecodeConfig, seed: int, base_key: str,
    on_batch: Callable[[int, int], None] = lambda done, total: None,
) -> list[str]:
    """prefix + sampled continuation for each public prefix; cached on disk by (base model, decoding, prefixes).
    on_batch(prefixes done, prefixes in all) as they are sampled (not called on a cache hit)."""
    key = stable_hash({"base": base_key, "decode": decode.__dict__, "seed": seed, "prefixes": stable_hash(list(prefixes))})
    path = cache_root() / "pseudo" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    sampling = replace(decode, top_k=decode.pseudo_top_k, temperature=decode.pseudo_temperature)
    continuations = complete(model, tokenizer, prefixes, sampling, seed=seed, on_batch=on_batch)
    sentences = [f"{p} {c}".strip() for p, c in zip(prefixes, continuations, strict=True)]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two runs may write the same entry at once
    tmp.write_text(json.dumps(sentences))
    tmp.replace(path)
    return sentences
