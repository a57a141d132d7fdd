"""The real chitchat corpus: counts, and the user-level split on it (loaded once for the module)."""

import json

import pytest

from core.config import PRESETS, DataConfig, preset_config
from core.data import (
    chitchat_path,
    corpus_stats,
    data_stats,
    load_chitchat,
    load_prepared,
    prepare,
    split_users,
)


@pytest.fixture(scope="module")
def records():
    return load_chitchat()


def test_raw_file_has_all_utterances():
    data = json.loads(chitchat_path().read_text())
    utterances = [u for conv in data.values() for m in conv["messages"] for u in m]
    assert len(data) == 7168
    assert len(utterances) == 258_145
    assert sum(not u["text"].strip() for u in utterances) == 33  # blank ones the loader drops


def test_counts(records):
    assert corpus_stats(records, min_words=8) == {"users": 1315, "records": 258_112, "records_min_words": 123_503}


def test_record_shape(records):
    r = records[0]
    assert r.text == "Hello"
    assert r.user_id == "720840be-e522-47ba-9e9f-143f66372673"
    assert set(r.meta) == {"conversation", "prompt"}
    assert all("  " not in r.text and r.text == r.text.strip() for r in records[:5000])
    json.dumps(r.meta)


@pytest.mark.parametrize("seed", [0, 1])
def test_user_split_is_disjoint_and_near_target(records, seed):
    kept = [r for r in records if len(r.text.split()) >= 8]
    public, private = split_users(kept, 0.25, seed)
    assert public.isdisjoint(private)
    assert public | private == {r.user_id for r in kept}
    share = sum(r.user_id in public for r in kept) / len(kept)
    assert abs(share - 0.25) < 0.02


def test_split_is_seeded(records):
    kept = [r for r in records if len(r.text.split()) >= 8]
    assert split_users(kept, 0.25, 0) == split_users(kept, 0.25, 0)
    assert split_users(kept, 0.25, 0)[0] != split_users(kept, 0.25, 1)[0]


@pytest.mark.parametrize("preset", ["tiny", "quick"])
def test_preset_sizes_honoured(records, preset):
    cfg = preset_config(preset).data
    prepared = prepare(records, cfg, seed=0)
    assert prepared.sizes == {name: PRESETS[preset]["data"][name] for name in prepared.sizes}
    stats = data_stats(prepared)
    assert stats["disjoint_users"] is True
    assert abs(stats["public_share"] - 0.25) < 0.02
    assert {s.user_id for s in prepared.public} <= prepared.public_users
    assert {s.user_id for s in prepared.private} <= prepared.private_users
    assert all(s.n_words >= 8 for s in prepared.public + prepared.private)
    json.dumps(stats)


def test_prepare_is_deterministic(records):
    cfg = preset_config("tiny").data
    a, b, c = prepare(records, cfg, 3), prepare(records, cfg, 3), prepare(records, cfg, 4)
    assert a == b
    assert a.private_test != c.private_test


def test_no_sentence_in_two_splits(records):
    """Each corpus record is used at most once over all splits (a sentence copied into a second split, private
    train and test say, would be counted twice here: the objects' ids alone would not see a copy)."""
    from collections import Counter

    prepared = prepare(records, preset_config("tiny").data, 0)
    used = Counter((s.user_id, s.text) for split in prepared.splits.values() for s in split)
    assert used.total() > 0 and not used - Counter((r.user_id, r.text) for r in records)


def test_too_many_sentences_asked(records):
    cfg = DataConfig(private_train=10**6)
    with pytest.raises(ValueError, match=r"private side has only \d+ sentences"):
        prepare(records, cfg, 0)


def test_load_prepared_caches():
    cfg = DataConfig()
    assert load_prepared(cfg, 0) is load_prepared(cfg, 0)
