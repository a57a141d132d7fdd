"""core.config.effective_config: which differences make another run, and which only another config hash."""

from __future__ import annotations

import re

import pytest

from core.config import (
    ConfigError,
    canonical_filter,
    effective_config,
    effective_hash,
    preset_config,
    stable_hash,
)


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
    # a DP-SGD method samples one of the two batch sizes (core.config.dpsgd_batch_size)
    ("noisysgd", dict(dpsgd__ghost_batch_size=64)),
    ("adp", dict(dpsgd__ghost_batch_size=64)),
    ("noisysgd-gc+pseudo", dict(dpsgd__batch_size=4)),
    # how teachers are executed, not what they compute (bitwise-identical results)
    ("seqpate", dict(seqpate__executor="process", seqpate__ray_address="auto")),
])
def test_fields_a_method_never_reads_leave_its_effective_config_unchanged(method, unread):
    assert stable_hash(preset_config("tiny", method=method, **unread).to_dict()) != stable_hash(
        preset_config("tiny", method=method).to_dict())
    assert hash_of(method, **unread) == hash_of(method)


def test_a_run_on_a_checkout_does_not_read_the_tiny_models_settings():
    """A checkout's run recorded the tiny model's n_embd 128 and vocab 8,192 as its settings (the checkout had 64 and
    529): unread, they are left out of what tells two runs apart and what Compare lists as read."""

    def on_checkout(method: str, **model) -> dict:
        config = preset_config("tiny", method=method).to_dict()  # a checkout path is validated: written in here
        config["model"].update(source="/models/gpt2", **model)
        return config

    assert effective_hash(on_checkout("pub-gpt", n_embd=64, pretrain_epochs=9)) == effective_hash(on_checkout("pub-gpt"))
    assert effective_config(on_checkout("seqpate"))["model"] == {"source": "/models/gpt2"}
    assert effective_hash(on_checkout("pub-gpt")) != hash_of("pub-gpt")
    # a synthetic-data run on a checkout as well: its base config's model section is the checkout alone
    synth = {"method": "synth-filter", "synth": {}, "base": {"model": {"source": "/models/gpt2", "n_embd": 128}}}
    assert effective_config(synth)["base"]["model"] == {"source": "/models/gpt2"}


@pytest.mark.parametrize("method, read", [
    ("pub-gpt", dict(decode__temperature=1.0)),  # completions are sampled for every method
    ("pub-gpt", dict(model__pretrain_epochs=2)),
    ("pub-gpt+pseudo", dict(seqpate__student_lr=1e-4)),  # the shared pseudo-data warm-up
    ("pub-gpt+pseudo", dict(decode__pseudo_temperature=0.7)),
    ("pri-gpt", dict(dpsgd__lr=1e-4)),  # Pri-GPT borrows DP-SGD's schedule
    ("pri-gpt-blacklist", dict(data__canaries="1,10")),
    ("noisysgd", dict(privacy__delta=1e-5)),
    ("noisysgd-gc+pseudo", dict(dpsgd__ghost_batch_size=256)),
    ("noisysgd+pseudo", dict(dpsgd__batch_size=4)),
    ("adp", dict(dpsgd__max_grad_norm=0.5)),
    ("seqpate", dict(seqpate__kd_lambda=5.0)),
])
def test_fields_a_method_reads_make_another_run(method, read):
    assert hash_of(method, **read) != hash_of(method)


def test_a_config_of_another_shape_is_kept_whole():
    synth = {"method": "synth-filter", "preset": "tiny", "privacy": {"epsilon": 3.0}}
    assert effective_config(synth) == synth


def test_a_synthetic_runs_base_config_counts_only_what_builds_its_base_model():
    """A synthetic-data run's "base" is the core config of its public base model, built from its data, model and
    seed; its ε (3 in an ε = ∞ run's report), SeqPATE and DP-SGD settings are never read."""
    def synth(**base_overrides):
        return {"method": "synth-multitask", "preset": "tiny", "seed": 0, "privacy": {"epsilon": 8.0},
                "synth": {"generator": "multitask"},
                "base": preset_config("tiny", method="pub-gpt", **base_overrides).to_dict()}

    plain = effective_hash(synth())
    assert effective_hash(synth(privacy__epsilon=8.0, seqpate__teachers=5, dpsgd__lr=1e-4)) == plain
    assert effective_hash({**synth(), "base": {**synth()["base"], "method": "seqpate"}}) == plain
    assert effective_hash(synth(data__public_train=500)) != plain  # another public base model
    assert effective_hash(synth(model__pretrain_epochs=2)) != plain
    assert effective_hash({**synth(), "privacy": {"epsilon": 3.0}}) != plain  # its own ε, read
    assert set(effective_config(synth())["base"]) == {"preset", "seed", "data", "model"}


def test_a_whole_number_in_a_float_field_is_the_same_setting():
    # a --config file may write 5 where the preset has 5.0: JSON (and the config hash) keep them apart
    config = preset_config("quick", method="seqpate").to_dict()
    written = {**config, "seqpate": {**config["seqpate"], "kd_lambda": 5}, "privacy": {**config["privacy"], "epsilon": 3}}
    assert effective_hash(written) == effective_hash(config)
    assert effective_config(written)["seqpate"]["teachers"] == 1000 and isinstance(
        effective_config(written)["seqpate"]["teachers"], int)  # an int field stays an int


@pytest.mark.parametrize("override, message", [
    # each passed validation, then failed at its stage or finished having done nothing
    (dict(dpsgd__epochs=0), "dpsgd.epochs must be at least 1, got 0"),
    (dict(dpsgd__batch_size=0), "dpsgd.batch_size must be at least 1"),
    (dict(dpsgd__lr=-1.0), "dpsgd.lr must be above 0"),
    (dict(dpsgd__max_grad_norm=0.0), "dpsgd.max_grad_norm must be above 0"),
    (dict(decode__n_completions=0), "decode.n_completions must be at least 1"),
    (dict(seqpate__kd_lambda=-1.0), "seqpate.kd_lambda must be at least 0"),
    (dict(model__n_head=3), "model.n_embd (128) must be a multiple of model.n_head (3)"),
    (dict(data__max_tokens=1), "data.max_tokens must be at least 8"),
    (dict(model__n_positions=16), "model.n_positions (16) must hold a training sentence"),
    (dict(data__canaries="1000000000"), "canary insertion counts must be from 1 to 10,000"),
    (dict(seqpate__filter="top-k:inf"), "needs a finite number"),
    # a walk's: every prefix became "all but the last 3 words"; ',' meant no canaries and '1,,10' 1,10 unseen
    (dict(data__prefix_words=-3), "data.prefix_words must be at least 1, got -3"),
    (dict(data__prefix_words=0), "data.prefix_words must be at least 1, got 0"),
    (dict(data__canaries=","), "canaries must be comma-separated insertion counts like 1,10,100, got ','"),
    (dict(data__canaries="1,,10"), "got '1,,10'"),
])
def test_sizes_no_stage_can_run_are_refused_up_front(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        preset_config("tiny", method="noisysgd", **override)


def test_no_canaries_is_an_empty_setting_and_spaces_are_no_empty_item():
    from core.data.secrets import parse_canary_counts

    assert parse_canary_counts("") == parse_canary_counts("  ") == ()
    assert parse_canary_counts(" 1, 10 ;100") == (1, 10, 100)
    assert preset_config("tiny", data__canaries=" 1, 10 ;100").data.canaries == " 1, 10 ;100"  # accepted as written


def test_zero_is_allowed_where_it_means_something():
    cfg = preset_config("tiny", method="seqpate", seqpate__warmup_epochs=0, seqpate__rank_threshold=0,
                        seqpate__kd_lambda=0.0)
    assert (cfg.seqpate.warmup_epochs, cfg.seqpate.rank_threshold) == (0, 0)


def test_one_filter_has_one_spelling():
    assert canonical_filter("top-p: 0.9") == "top-p:0.9" and canonical_filter("top-k:50.0") == "top-k:50"


def test_adp_takes_no_phrase_target_and_reads_no_batching():
    """ADP calibrates per sentence and samples its own batches: a stored phrase-avg made its statement claim an
    average phrase epsilon it never aimed at."""
    with pytest.raises(ConfigError, match="privacy target phrase-avg is for seqpate and the noisysgd methods"):
        preset_config("tiny", method="adp", privacy__target="phrase-avg")
    assert hash_of("adp", dpsgd__batching="users") == hash_of("adp")


def test_ablation_label_names_the_runs_made_with_the_earlier_minus_kl_loss():
    """Until 2026-11-27 the -KL cross-entropy (in -kl and -all) was over the candidate set; a finished run made
    since records its teacher_loss, so result tables can tell the two apart."""
    from core.config import TEACHER_LOSSES, ablation_label

    before = {"ppl": 900.0}
    assert ablation_label("-kl", before) == "-kl (made before 2026-11-27)"
    assert ablation_label("-all", before) == "-all (made before 2026-11-27)"
    assert ablation_label("-kl", {**before, "teacher_loss": TEACHER_LOSSES["ce"]}) == "-kl"
    assert ablation_label("-merge_p", before) == "-merge_p" and ablation_label("none", before) == "none"
    assert ablation_label("-kl", {}) == "-kl"  # not finished: nothing to say yet
