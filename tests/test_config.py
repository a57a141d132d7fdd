"""core.config.effective_config: which differences make another run, and which only another config hash."""

from __future__ import annotations

import pytest

from core.config import effective_config, effective_hash, preset_config


def hash_of(method: str, **overrides) -> str:
    return effective_hash(preset_config("tiny", method=method, **overrides).to_dict())


@pytest.mark.parametrize("method, unread", [
    # the SeqPATE section, pseudo-data sampling, epsilon and DP-SGD settings mean nothing to Pub-GPT
    ("pub-gpt", dict(seqpate__kd_lambda=5.0, decode__pseudo_top_k=50, privacy__epsilon=8.0, dpsgd__lr=1e-4)),
    # a +pseudo method reads the shared warm-up, not SeqPATE's teachers or distillation
    ("pub-gpt+pseudo", dict(seqpate__teachers=100, seqpate__kd_lambda=5.0, seqpate__ray_address="auto")),
    # Pri-GPT fine-tunes without noise: no epsilon, delta or clipping
    ("pri-gpt", dict(privacy__epsilon=8.0, privacy__delta=1e-5, dpsgd__max_grad_norm=0.1, dpsgd__batching="users")),
    ("noisysgd", dict(decode__pseudo_top_k=50, seqpate__warmup_epochs=3, seqpate__filter="top-k:10")),
    ("seqpate", dict(dpsgd__lr=1e-4, dpsgd__batching="users")),
    # how teachers are executed, not what they compute (bitwise-identical results)
    ("seqpate", dict(seqpate__executor="process", seqpate__ray_address="auto")),
])
def test_fields_a_method_never_reads_leave_its_effective_config_unchanged(method, unread):
    assert preset_config("tiny", method=method, **unread).config_hash() != preset_config("tiny", method=method) \
        .config_hash()
    assert hash_of(method, **unread) == hash_of(method)


@pytest.mark.parametrize("method, read", [
    ("pub-gpt", dict(decode__temperature=1.0)),  # completions are sampled for every method
    ("pub-gpt", dict(model__pretrain_epochs=2)),
    ("pub-gpt+pseudo", dict(seqpate__student_lr=1e-4)),  # the shared pseudo-data warm-up
    ("pub-gpt+pseudo", dict(decode__pseudo_temperature=0.7)),
    ("pri-gpt", dict(dpsgd__lr=1e-4)),  # Pri-GPT borrows DP-SGD's schedule
    ("pri-gpt-blacklist", dict(data__canaries="1,10")),
    ("noisysgd", dict(privacy__delta=1e-5)),
    ("noisysgd-gc+pseudo", dict(dpsgd__ghost_batch_size=256)),
    ("adp", dict(dpsgd__max_grad_norm=0.5)),
    ("seqpate", dict(seqpate__kd_lambda=5.0)),
])
def test_fields_a_method_reads_make_another_run(method, read):
    assert hash_of(method, **read) != hash_of(method)


def test_a_config_of_another_shape_is_kept_whole():
    synth = {"method": "synth-filter", "preset": "tiny", "privacy": {"epsilon": 3.0}}
    assert effective_config(synth) == synth


def test_a_whole_number_in_a_float_field_is_the_same_setting():
    # a --config file may write 5 where the preset has 5.0: JSON (and the config hash) keep them apart
    config = preset_config("quick", method="seqpate").to_dict()
    written = {**config, "seqpate": {**config["seqpate"], "kd_lambda": 5}, "privacy": {**config["privacy"], "epsilon": 3}}
    assert effective_hash(written) == effective_hash(config)
    assert effective_config(written)["seqpate"]["teachers"] == 1000 and isinstance(
        effective_config(written)["seqpate"]["teachers"], int)  # an int field stays an int
