"""Pseudo data is cached on disk per (base model and its weights, decoding, seed, prefixes), written atomically."""

from __future__ import annotations

import pytest

from core.config import DecodeConfig
from core.seqpate import pseudo
from core.workspace import Workspace
from tests.conftest import micro_config


def test_pseudo_sentences_are_cached_and_leave_no_partial_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path))
    calls = []

    def fake_complete(model, tokenizer, prefixes, decode, seed, on_batch):
        calls.append((decode.top_k, decode.temperature, seed))
        on_batch(len(prefixes), len(prefixes))
        return [f"continued {i}" for i in range(len(prefixes))]

    monkeypatch.setattr(pseudo, "complete", fake_complete)
    decode = DecodeConfig(pseudo_top_k=0, pseudo_temperature=1.0)
    batches = []
    first = pseudo.pseudo_sentences(None, None, ["hello there", "how are"], decode, seed=3, base_key="b1",
                                    on_batch=lambda done, total: batches.append((done, total)))
    assert first == ["hello there continued 0", "how are continued 1"]
    assert calls == [(0, 1.0, 3)]  # sampled with the pseudo-data settings, not the completions' top-k 40
    assert batches == [(2, 2)]  # the sampling's progress reaches the caller
    (entry,) = (tmp_path / "pseudo").iterdir()
    assert entry.suffix == ".json"  # the per-process temporary file was renamed into place
    monkeypatch.setattr(pseudo, "complete", lambda *a, **k: pytest.fail("the cache was not used"))
    assert pseudo.pseudo_sentences(None, None, ["hello there", "how are"], decode, seed=3, base_key="b1") == first


def test_a_retrained_base_does_not_reuse_another_bases_pseudo_data(tmp_path, monkeypatch):
    # the cache is keyed by the base model's weights digest as well as its config: a base retrained after its own
    # cache was cleared (another thread count gives other weights) must complete the prefixes itself
    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path))
    cfg = micro_config(method="pub-gpt+pseudo")

    def workspace(info):
        return Workspace(cfg=cfg, data=None, tokenizer=None, base_model=None, base_info=info, log=lambda *a, **k: None)

    old, retrained = workspace({"weights_sha256": "aaaa"}), workspace({"weights_sha256": "bbbb"})
    assert old.base_model_key != retrained.base_model_key
    assert workspace({"weights_sha256": "aaaa"}).base_model_key == old.base_model_key
    # local checkouts: the config
    assert workspace({"source": "/a/checkout"}).base_model_key == workspace({}).base_model_key
    # ... and a checkout's tokenizer: swapped under the same weights, it encodes other tokens
    swapped = workspace({"weights_sha256": "aaaa", "tokenizer_sha256": "cccc"})
    assert swapped.base_model_key not in (old.base_model_key,
                                          workspace({"weights_sha256": "aaaa", "tokenizer_sha256": "dddd"}).base_model_key)
    on_gpu = Workspace(cfg=cfg, data=None, tokenizer=None, base_model=None, base_info={"weights_sha256": "aaaa"},
                       log=lambda *a, **k: None, device="cuda")
    assert on_gpu.base_model_key != old.base_model_key  # pseudo data sampled on a GPU is never a CPU run's

    monkeypatch.setattr(pseudo, "complete", lambda model, tok, prefixes, decode, seed, on_batch: [str(model)] * len(prefixes))
    decode = DecodeConfig()
    made = [pseudo.pseudo_sentences(name, None, ["hi"], decode, seed=0, base_key=ws.base_model_key)
            for name, ws in (("old", old), ("retrained", retrained))]
    assert made == [["hi old"], ["hi retrained"]]
