"""Loading a local GPT-2 checkout (the real-model path) and refusing paths that are not models."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models

from core.base import (
    base_is_cached,
    base_key,
    load_or_train_base,
    loaded_weight_files,
    tokenizer_digest,
    weights_digest,
)
from core.config import ModelConfig
from core.data import load_prepared
from core.models import (
    CACHE_NAME,
    build_tiny_gpt2,
    cache_tensors,
    load_local_model,
    make_cache,
    output_cache,
    untie,
    with_cache,
)
from core.runs.pipeline import execute
from core.runs.store import RunDir
from core.tokenizer import ModelLoadError, load_tokenizer, train_tokenizer
from tests.conftest import micro_config


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A GPT-2 checkout on disk as save_pretrained writes it, with TIED embeddings like the real GPT-2."""
    path = tmp_path_factory.mktemp("gpt2")
    tok = train_tokenizer(["hello there how are you today my friend"] * 50 + ["a public sentence of words"] * 50, 300)
    model = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=64), len(tok))
    model.config.tie_word_embeddings = True
    model.tie_weights()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_local_checkout_loads_untied_with_its_tokenizer(checkout):
    model = load_local_model(checkout)
    assert model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr()
    assert (model.lm_head.weight == model.transformer.wte.weight).all()  # same values, separate tensors
    tok = load_tokenizer(checkout)
    assert tok.pad_token is not None and tok.decode(tok("hello there")["input_ids"]) == "hello there"
    assert untie(model) is model


def test_run_with_a_local_model_uses_it(checkout, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQPATE_THREADS", "1")
    monkeypatch.delenv("SEQPATE_DEVICE", raising=False)
    cfg = micro_config(method="pub-gpt", model__source=str(checkout))
    run = RunDir.create(tmp_path / "local", cfg.to_dict(), cfg.seed)
    metrics = execute(cfg, run)
    assert metrics["base_model"]["source"] == str(checkout)
    # the checkout's weights are named by their digest, as the tiny base model's are
    weights = (checkout / "model.safetensors").read_bytes()
    assert metrics["base_model"]["weights_sha256"] == hashlib.sha256(weights).hexdigest()[:16]
    assert metrics["ppl"] > 1 and run.is_complete()
    assert metrics["torch_threads"] == 1  # part of what reproduces a run (the order of float sums)
    # ... as is the CPU: torch and MKL pick kernels by its instruction set
    assert metrics["cpu"]["capability"] == torch.backends.cpu.get_cpu_capability() and metrics["cpu"]["model"]
    assert metrics["device"] == "cpu"  # SEQPATE_DEVICE unset: the CPU, as the shipped runs


def test_the_digest_covers_the_weight_files_a_checkout_loads_and_no_others(tmp_path):
    both = tmp_path / "both"  # as a Hugging Face GPT-2 checkout ships: one format is read, safetensors first
    both.mkdir()
    for name in ("model.safetensors", "pytorch_model.bin", "training_args.bin"):
        (both / name).write_bytes(name.encode())
    assert loaded_weight_files(both) == [both / "model.safetensors"]
    assert weights_digest(both) == hashlib.sha256(b"model.safetensors").hexdigest()[:16]
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    shards = ["model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors"]
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": shards[0], "b": shards[1],
                                                                                      "c": shards[0]}}))
    for name in shards:
        (sharded / name).write_bytes(name.encode())
    assert loaded_weight_files(sharded) == [sharded / shards[1], sharded / shards[0]]
    assert weights_digest(sharded) == hashlib.sha256((shards[1] + shards[0]).encode()).hexdigest()[:16]


def test_a_path_that_is_not_a_model_is_one_clear_line(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelLoadError, match="not a model directory"):
        load_local_model(tmp_path)
    out = subprocess.run([sys.executable, "-m", "core", "run", "--method", "pub-gpt", "--preset", "tiny",
                          "--model", str(tmp_path), "--run-dir", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "not a model directory" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "run").exists()


def test_a_checkouts_tokenizer_digest_follows_its_tokenizer_files_not_its_weights(checkout, tmp_path):
    """A walk replaced a checkout's tokenizer and kept its weights: the next run reused pseudo data sampled with the
    old tokenizer (keyed by the weights alone) and scored PPL 153, BLEU 0."""
    import shutil

    copy = tmp_path / "ck"
    shutil.copytree(checkout, copy)
    cfg = micro_config(method="pub-gpt", model__source=str(copy))
    data = load_prepared(cfg.data, cfg.seed)
    _, _, before = load_or_train_base(cfg, data)
    assert before["tokenizer_sha256"] == tokenizer_digest(checkout) and len(before["tokenizer_sha256"]) == 16
    train_tokenizer(["another text to learn from entirely"] * 50, 280).save_pretrained(copy)
    _, _, after = load_or_train_base(cfg, data)
    assert after["weights_sha256"] == before["weights_sha256"]
    assert after["tokenizer_sha256"] != before["tokenizer_sha256"]


def test_a_relative_corpus_or_model_path_is_stored_absolute(checkout, tmp_path, monkeypatch):
    """A run made with `--corpus ../data.txt` stored that text: `core audit` from another folder then reread another
    file of that name (and rewrote phrases.csv with names from it), or none; `run --config` did the same."""
    from core.cli import build_parser, config_from_args
    from core.synth.command import config_from_args as synth_config_from_args

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "europarl.txt").write_text("one line of text\n", encoding="utf-8")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    model = os.path.relpath(checkout)
    args = build_parser().parse_args(["run", "--method", "pub-gpt", "--corpus", "../data/europarl.txt",
                                      "--model", model, "--run-dir", "x"])
    cfg = config_from_args(args)
    assert cfg.data.corpus == str(tmp_path / "work" / "../data/europarl.txt")
    assert Path(cfg.model.source).is_absolute() and Path(cfg.model.source).resolve() == checkout.resolve()
    synth, base = synth_config_from_args(build_parser().parse_args(
        ["synth", "--corpus", "../data/europarl.txt", "--run-dir", "y"]))
    assert synth.corpus == str(tmp_path / "work" / "../data/europarl.txt")
    # joined to the folder, not normalised: through a symlink, link/../ is not the folder the link is in
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere" / "europarl.txt").write_text("another file\n", encoding="utf-8")
    (tmp_path / "work" / "link").symlink_to(tmp_path / "elsewhere" / "sub")
    args = build_parser().parse_args(["run", "--method", "pub-gpt", "--corpus", "link/../europarl.txt",
                                      "--run-dir", "x"])
    assert Path(config_from_args(args).data.corpus).read_text(encoding="utf-8") == "another file\n"
    # the built-in names, and a path that does not exist (refused later, as typed), are kept
    for corpus in ("chitchat", "../data/nosuch.txt"):
        args = build_parser().parse_args(["run", "--method", "pub-gpt", "--corpus", corpus, "--run-dir", "x"])
        assert (config_from_args(args).data.corpus, config_from_args(args).model.source) == (corpus, "tiny")


def test_a_checkout_missing_its_weights_or_tokenizer_or_of_another_kind_is_refused_up_front(checkout, tmp_path):
    """A folder of weights without tokenizer files ran to exit 0 with an empty tokenizer (every completion '',
    PPL 2,781); one without weights, or a BERT, failed at stage base-model after writing a run folder."""
    import shutil

    cases = {}
    for name, drop in (("no-tokenizer", ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")),
                       ("no-weights", ("model.safetensors",))):
        folder = tmp_path / name
        shutil.copytree(checkout, folder)
        for file in drop:
            (folder / file).unlink(missing_ok=True)
        cases[folder] = "no tokenizer" if name == "no-tokenizer" else "holds no weights"
    bert = tmp_path / "bert"
    shutil.copytree(checkout, bert)
    (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))
    cases[bert] = "'bert' model; a GPT-2 checkout is needed"
    # a walk's: these failed at stage base-model after writing a run folder, the second with its reason cut off
    cut = tmp_path / "cut"
    shutil.copytree(checkout, cut)
    os.truncate(cut / "model.safetensors", (cut / "model.safetensors").stat().st_size // 2)
    cases[cut] = f"model {cut}: model.safetensors: Error while deserializing header: incomplete metadata"
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:  # 4.x's GPT2Config takes any type and fails later
        field = tmp_path / "field"
        shutil.copytree(checkout, field)
        (field / "config.json").write_text(json.dumps({**json.loads((checkout / "config.json").read_text()),
                                                       "n_embd": "abc"}))
        cases[field] = f"model {field}: config.json: Validation error for field 'n_embd': TypeError: Field 'n_embd'"
    # a review's: these failed at evaluation, after training, with an IndexError or a TypeError
    def edited(name: str, file: str, **changes) -> Path:
        folder = tmp_path / name
        shutil.copytree(checkout, folder)
        body = {**json.loads((folder / file).read_text()), **changes}
        (folder / file).write_text(json.dumps({k: v for k, v in body.items() if v is not None}))
        return folder

    cases[edited("short", "config.json", n_positions=32)] = (
        "has 32 positions, fewer than data.max_tokens (40) a training sentence may take; set data.max_tokens to at "
        "most 32")
    vocab = json.loads((checkout / "config.json").read_text())["vocab_size"]
    cases[edited("small-vocab", "config.json", vocab_size=vocab - 10)] = (
        f"its tokenizer has {vocab} tokens, more than the model's vocab_size ({vocab - 10}): not the tokenizer it "
        "was trained with")
    cases[edited("no-bos", "tokenizer_config.json", tokenizer_class="PreTrainedTokenizerFast", bos_token=None,
                 eos_token=None, pad_token=None)] = "its tokenizer has no bos or eos token"
    for folder, message in cases.items():
        out = subprocess.run([sys.executable, "-m", "core", "run", "--method", "pub-gpt", "--preset", "tiny",
                              "--model", str(folder), "--run-dir", str(tmp_path / "run")],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
        assert not (tmp_path / "run").exists()
    with pytest.raises(ModelLoadError, match="no usable tokenizer"):  # the loader itself never hands one out
        load_tokenizer(tmp_path / "no-tokenizer")


def test_a_half_precision_checkout_loads_in_float32(checkout, tmp_path):
    """transformers 5 keeps a checkpoint in the dtype it was saved in: a float16 checkout trained in float16, and a
    review's run on one finished "done" with perplexity NaN and garbage completions."""
    import shutil

    half = tmp_path / "half"
    load_local_model(checkout).half().save_pretrained(half)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(checkout / name, half / name)
    assert json.loads((half / "config.json").read_text()).get("dtype") == "float16"
    model = load_local_model(half)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    original = load_local_model(checkout)
    assert torch.equal(model.transformer.wte.weight, original.transformer.wte.weight.half().float())


def test_a_run_whose_model_scores_nan_fails_rather_than_finishing(checkout, tmp_path, monkeypatch):
    """A perplexity of NaN (weights holding NaN, or training that diverged) made a run "done" that no table can
    order; it now fails at evaluation, naming the likely causes."""
    import shutil

    broken = tmp_path / "nan"
    model = load_local_model(checkout)
    with torch.no_grad():
        model.transformer.h[0].mlp.c_fc.weight[0, 0] = float("nan")
    model.save_pretrained(broken)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(checkout / name, broken / name)
    monkeypatch.setenv("SEQPATE_THREADS", "1")
    monkeypatch.delenv("SEQPATE_DEVICE", raising=False)
    cfg = micro_config(method="pub-gpt", model__source=str(broken))
    run = RunDir.create(tmp_path / "run", cfg.to_dict(), cfg.seed)
    with pytest.raises(RuntimeError, match="the model's test loss is NaN: training diverged"):
        execute(cfg, run)
    assert run.metrics() is None


def test_a_tokenizer_saved_by_another_transformers_version_still_loads(tmp_path, monkeypatch):
    """transformers 5 saves our tokenizer with tokenizer_class TokenizersBackend, which 4.x cannot import; the
    cached base model and a run's kept model must still load (from tokenizer.json) and encode as before."""
    tok = train_tokenizer(["hello there how are you today my friend"] * 50 + ["a public sentence of words"] * 50, 300)
    tok.save_pretrained(tmp_path / "ours")
    config = tmp_path / "ours" / "tokenizer_config.json"  # as transformers 5 writes it (4.x writes its own class)
    config.write_text(json.dumps({**json.loads(config.read_text()), "tokenizer_class": "TokenizersBackend"}))

    def as_4x_does(path, **kwargs):
        raise ValueError("Tokenizer class TokenizersBackend does not exist or is not currently imported.")

    monkeypatch.setattr("core.tokenizer.AutoTokenizer.from_pretrained", as_4x_does)
    loaded = load_tokenizer(tmp_path / "ours")
    text = "hello my friend, a sentence"
    assert loaded(text)["input_ids"] == tok(text)["input_ids"]
    assert (loaded.bos_token_id, loaded.eos_token_id, loaded.pad_token_id) == (0, 0, 0)
    # a user's checkout that fails to load keeps its error, though its tokenizer.json has <|endoftext|>
    config.write_text(json.dumps({**json.loads(config.read_text()), "tokenizer_class": "GPT2Tokenizer"}))
    with pytest.raises(ModelLoadError, match="no usable tokenizer .*TokenizersBackend does not exist"):
        load_tokenizer(tmp_path / "ours")
    # as does one that names our class but lacks GPT-2's special token
    (tmp_path / "foreign").mkdir()
    Tokenizer(models.WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]")).save(str(tmp_path / "foreign" / "tokenizer.json"))
    (tmp_path / "foreign" / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "TokenizersBackend", "bos_token": "<|endoftext|>"}))
    with pytest.raises(ModelLoadError, match="no usable tokenizer"):
        load_tokenizer(tmp_path / "foreign")


def _trained_base(cache, monkeypatch, seed: int) -> tuple[dict, str]:
    """(state dict, weights digest) of a base model trained afresh under its own artefact cache."""
    monkeypatch.setenv("SEQPATE_CACHE", str(cache))
    cfg = micro_config(method="pub-gpt", seed=seed, model__pretrain_epochs=1)
    model, _, info = load_or_train_base(cfg, load_prepared(cfg.data, cfg.seed))
    assert info["cached"] is False
    return model.state_dict(), info["weights_sha256"]


def test_the_seed_fixes_the_base_models_initial_weights(tmp_path, monkeypatch):
    # torch seeds itself anew in every process, so weights drawn before any manual_seed differed from run to run
    # (the same seed's base model, and every run on it, came out different); advancing the global generator
    # between the two trainings stands in for another process.
    first, first_digest = _trained_base(tmp_path / "a", monkeypatch, seed=0)
    torch.rand(1000)
    again, again_digest = _trained_base(tmp_path / "b", monkeypatch, seed=0)
    other, other_digest = _trained_base(tmp_path / "c", monkeypatch, seed=1)
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["transformer.wte.weight"], other["transformer.wte.weight"])
    assert first_digest == again_digest != other_digest and len(first_digest) == 16


def test_a_cached_base_reports_its_digest_even_if_cached_before_digests(tmp_path, monkeypatch):
    _, trained_digest = _trained_base(tmp_path, monkeypatch, seed=0)
    cfg = micro_config(method="pub-gpt", seed=0, model__pretrain_epochs=1)
    done = tmp_path / "base" / base_key(cfg) / "done.json"
    done.write_text(json.dumps({k: v for k, v in json.loads(done.read_text()).items() if k != "weights_sha256"}))
    _, _, info = load_or_train_base(cfg, load_prepared(cfg.data, cfg.seed))
    assert info["cached"] is True and info["weights_sha256"] == trained_digest
    # a GPU run does not take this CPU-trained base as its own (it trains one, cached under a key naming cuda)
    assert base_is_cached(cfg) and base_is_cached(cfg, "cpu") and not base_is_cached(cfg, "cuda")
    assert base_key(cfg, torch.device("cpu")) == base_key(cfg) != base_key(cfg, torch.device("cuda"))


def test_training_the_base_model_moves_the_progress_bar(tmp_path, monkeypatch):
    # a fresh clone trains the base model first, which can take the whole of a small run: progress per epoch
    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SEQPATE_THREADS", "1")
    cfg = micro_config(method="pub-gpt", model__pretrain_epochs=2)

    starts = {}

    def progress_lines(name: str) -> list[tuple[str, float]]:
        run = RunDir.create(tmp_path / name, cfg.to_dict(), cfg.seed)
        execute(cfg, run)
        lines = [json.loads(line) for line in (run.path / "progress.jsonl").read_text().splitlines()]
        starts[name] = [line["method_start"] for line in lines if "method_start" in line]
        return [(line["stage"], line["progress"]) for line in lines if "progress" in line]

    fresh = progress_lines("fresh")
    epochs = [p for stage, p in fresh if stage == "base-model"]
    assert epochs == [0.04, pytest.approx(0.27), pytest.approx(0.5)]  # start, then each of the 2 epochs
    assert ("pub-gpt", 0.5) in fresh  # the method starts where the base model's share ends
    cached = progress_lines("cached")
    assert [p for stage, p in cached if stage == "base-model"] == [0.04] and ("pub-gpt", 0.1) in cached
    # the start is logged up front on the first base-model line (the dashboard's pacing reads it from there)
    assert starts == {"fresh": [0.5], "cached": [0.1]}


def test_a_long_epoch_of_the_base_model_reports_its_steps(tmp_path, monkeypatch):
    """quick's base model took 85-118 s an epoch with no line between epochs: where PULSE_EVERY_S passed (here 0:
    every step) a line says the step, and the bar moves within the epoch, never back."""
    import core.train

    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(core.train, "PULSE_EVERY_S", 0.0)
    cfg = micro_config(method="pub-gpt", model__pretrain_epochs=2)
    run = RunDir.create(tmp_path / "run", cfg.to_dict(), cfg.seed)
    execute(cfg, run)
    lines = [line for line in run.progress() if line["stage"] == "base-model" and "epoch" in line]
    steps = max(line.get("steps", 0) for line in lines)  # 400 public sentences in batches of the tiny preset's
    assert steps == math.ceil(cfg.data.public_train / cfg.model.batch_size) > 1
    # each epoch: a line per step but its last, then the epoch's own line with its loss (public data)
    expected = [(e, s) for e in (1, 2) for s in [*range(1, steps), None]]
    assert [(line["epoch"], line.get("step")) for line in lines] == expected
    assert all(("loss" in line) == ("step" not in line) for line in lines)
    bar = [line["progress"] for line in lines]
    assert bar == sorted(bar) and len(set(bar)) == len(bar) and bar[-1] == pytest.approx(0.5)


def test_a_cached_forward_pass_matches_the_full_one_without_deprecation_warnings():
    """Completions, PPLM and canary exposure pass GPT-2 a key/value cache; transformers 5.24 renamed that argument
    (`past_key_values` -> `cache`, the old name going in 5.40). Through with_cache/output_cache the installed
    version takes it without a FutureWarning, and a token scored from the cache gets the full pass's logits."""
    torch.manual_seed(0)
    model = build_tiny_gpt2(ModelConfig(n_layer=2, n_embd=32, n_head=2, n_positions=64), 50).eval()
    ids = torch.randint(1, 50, (2, 7))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        full = model(input_ids=ids).logits[:, -1]
        prefix = cache_tensors(output_cache(model(input_ids=ids[:, :-1], use_cache=True)))
        step = model(input_ids=ids[:, -1:], **with_cache(make_cache(prefix)), use_cache=True).logits[:, -1]
    assert [k.shape for k, _ in prefix] == [(2, 2, 6, 16)] * 2
    # the output field has the argument's name (reading 5.24's old field name logs, it does not warn)
    assert CACHE_NAME in model(input_ids=ids, use_cache=True).keys()
    torch.testing.assert_close(step, full, atol=1e-5, rtol=1e-5)


def test_an_edited_corpus_file_gets_a_base_model_of_its_own(tmp_path):
    """The base model's cache was keyed by the corpus path alone: after lines were added to the file, users moved
    from the public side to the private one, and the base trained on their sentences was still loaded as the
    public model (a review measured 35 of its sentences on the private side)."""
    import os

    from core.data import clear_cache

    words = "we talked about the weather and the long walk home tonight".split()
    path = tmp_path / "corpus.jsonl"

    def write(users: range) -> None:
        rows = [{"text": f"{' '.join(words[(u + i) % 5:][:8])} number {u} {i}", "user_id": f"user{u}"}
                for u in users for i in range(15)]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    def public_and_key() -> tuple[set[str], str]:
        clear_cache()
        cfg = micro_config(data__corpus=str(path), data__private_train=200, data__private_valid=20,
                           data__private_test=20, data__public_train=100, data__public_valid=10)
        return {s.text for s in load_prepared(cfg.data, cfg.seed).public_train}, base_key(cfg)

    write(range(40))
    public, key = public_and_key()
    os.utime(path, ns=(1, 1))  # the same bytes with another time: the same base
    assert public_and_key() == (public, key)
    write(range(45))  # five users more: the seeded split moves some public users to the private side
    public_after, key_after = public_and_key()
    assert public - public_after  # sentences the first base trained on are no longer public ...
    assert key_after != key  # ... so it is not loaded as this corpus's public model


def test_a_chitchat_release_with_another_dataset_gets_a_base_of_its_own(tmp_path, monkeypatch):
    """pyproject admits any chitchat-dataset >= 0.3; one bundling another dataset.json splits users anew, and a
    base cached on the old split may have trained on users now private. The file every admitted release bundled
    keeps the key it always had (tests/test_device.py checks that key)."""
    prepare = sys.modules["core.data.prepare"]  # core.data.prepare names the function core.data re-exports
    # (the same goes for core.data.corpora, where corpus_path finds the bundled file)

    cfg = micro_config()
    bundled = base_key(cfg)
    other = tmp_path / "dataset.json"
    other.write_text(json.dumps({"c1": {"messages": [[{"text": "hello there", "sender": "a"}]]}}))
    monkeypatch.setattr(sys.modules["core.data.corpora"], "chitchat_path", lambda: other)
    assert base_key(cfg) != bundled
    assert prepare.corpus_digest(cfg.data) == hashlib.sha256(other.read_bytes()).hexdigest()


def test_a_stop_while_a_model_loads_stays_a_stop(tmp_path, monkeypatch):
    """A SIGTERM (Terminated) during from_pretrained became "ModelLoadError: cannot load ...": a shutdown's stop
    recorded as a broken model, and a sweep sent it went on to its next run."""
    from transformers import GPT2LMHeadModel

    from core.runs.pipeline import Terminated

    (tmp_path / "config.json").write_text("{}")

    def stopped(*args, **kwargs):
        raise Terminated()

    monkeypatch.setattr(GPT2LMHeadModel, "from_pretrained", stopped)
    with pytest.raises(Terminated):
        load_local_model(tmp_path)
