"""Pseudo data is cached on disk per (base model, decoding, seed, prefixes) and written atomically."""

from __future__ import annotations

import pytest

from core.config import DecodeConfig
from core.seqpate import pseudo


def test_pseudo_sentences_are_cached_and_leave_no_partial_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path))
    calls = []

    def fake_complete(model, tokenizer, prefixes, decode, seed):
        calls.append((decode.top_k, decode.temperature, seed))
        return [f"continued {i}" for i in range(len(prefixes))]

    monkeypatch.setattr(pseudo, "complete", fake_complete)
    decode = DecodeConfig(pseudo_top_k=0, pseudo_temperature=1.0)
    first = pseudo.pseudo_sentences(None, None, ["hello there", "how are"], decode, seed=3, base_key="b1")
    assert first == ["hello there continued 0", "how are continued 1"]
    assert calls == [(0, 1.0, 3)]  # sampled with the pseudo-data settings, not the completions' top-k 40
    (entry,) = (tmp_path / "pseudo").iterdir()
    assert entry.suffix == ".json"  # the per-process temporary file was renamed into place
    monkeypatch.setattr(pseudo, "complete", lambda *a, **k: pytest.fail("the cache was not used"))
    assert pseudo.pseudo_sentences(None, None, ["hello there", "how are"], decode, seed=3, base_key="b1") == first
