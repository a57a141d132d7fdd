"""The public base model ("Pub-GPT") and its tokenizer: trained on PUBLIC text only, cached by config hash."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import GPT2LMHeadModel

from core.config import MODEL_WEIGHT_FILES, PRIVATE_ONLY_DATA_FIELDS, RunConfig, stable_hash
from core.data import PreparedData, corpus_digest
from core.models import build_tiny_gpt2, cache_root, load_local_model
from core.tokenizer import encode_sentences, load_tokenizer, train_tokenizer
from core.train import epoch_lines, train_lm


def base_key(cfg: RunConfig, device: torch.device | str = "cpu") -> str:
    """Names the base model (and, with its digest, the pseudo data) in the artefact cache. One trained or used on a
    GPU is another artefact than the CPU's: its key names the device, so a CPU run never loads it (the CPU's key
    for chitchat is the one it always was). A corpus given as a file is keyed by its bytes as well, and so is
    chitchat once a release bundles another file than the one it always did (core.data.corpus_digest)."""
    data = {k: v for k, v in cfg.to_dict()["data"].items() if k not in PRIVATE_ONLY_DATA_FIELDS}
    key = {"data": data, "model": cfg.to_dict()["model"], "seed": cfg.seed}
    if (digest := corpus_digest(cfg.data)) is not None:
        # a corpus file's content, not only its path: an edited file moves users between the public and private
        # sides, and a base cached before the edit would be "public" while trained on sentences now private
        key["corpus_sha256"] = digest
    device = getattr(device, "type", device)  # a torch.device or its name
    return stable_hash(key if device == "cpu" else {**key, "device": device})


def loaded_weight_files(folder: Path) -> list[Path]:
    """The files from_pretrained reads (core.config.MODEL_WEIGHT_FILES): a sharded checkpoint's shards as its index
    names them. (A checkout often holds both formats; only one is read.)"""
    for single, index in MODEL_WEIGHT_FILES:
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            shards = json.loads((folder / index).read_text(encoding="utf-8")).get("weight_map", {}).values()
            return [folder / name for name in sorted(set(shards))]
    return []


def weights_digest(folder: Path) -> str:
    """First 16 hex digits of the sha256 over the weight files a model loads from folder, read in chunks (a real
    GPT-2's weights are gigabytes); for one file, the file's own sha256."""
    digest = hashlib.sha256()
    for file in loaded_weight_files(folder):
        with open(file, "rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 24), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


# what AutoTokenizer reads from a GPT-2 checkout: a changed tokenizer with the same weights encodes other tokens
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json")


def tokenizer_digest(folder: Path) -> str:
    """First 16 hex digits of the sha256 over the tokenizer files a checkout holds (each named, in a fixed order)."""
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        if (folder / name).is_file():
            digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def base_is_cached(cfg: RunConfig, device: torch.device | str = "cpu") -> bool:
    """Whether load_or_train_base will load (a local checkout, or a tiny base trained before) rather than train."""
    return cfg.model.source != "tiny" or (cache_root() / "base" / base_key(cfg, device) / "done.json").exists()


def load_or_train_base(
    cfg: RunConfig,
    data: PreparedData,
    log: Callable[..., None] = lambda *a, **k: None,
    progress: Callable[[float], float | None] = lambda fraction: None,
    device: torch.device | str = "cpu",
) -> tuple[GPT2LMHeadModel, object, dict]:
    """(model, tokenizer, info), the model on `device` (trained there). A local checkout is loaded as is; the tiny
    model is trained once per config. Each training epoch is logged with progress(share of the epochs done)."""
    if cfg.model.source != "tiny":
        model = load_local_model(cfg.model.source).to(device)
        tokenizer = load_tokenizer(cfg.model.source)
        # the digests tell runs on one path apart when the checkout there changed (and key their pseudo data: a
        # tokenizer swapped under the same weights reused sentences sampled with the old one)
        return model, tokenizer, {"source": cfg.model.source, "cached": True,
                                  "weights_sha256": weights_digest(Path(cfg.model.source)),
                                  "tokenizer_sha256": tokenizer_digest(Path(cfg.model.source))}

    folder = cache_root() / "base" / base_key(cfg, device)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # One process trains a given base; others wait on the lock and then load it.
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "done.json").exists():
            info = json.loads((folder / "done.json").read_text())
            if "weights_sha256" not in info:  # cached before digests (setdefault would hash every time)
                info["weights_sha256"] = weights_digest(folder)
            return load_local_model(folder).to(device), load_tokenizer(folder), {**info, "cached": True}
        public_texts = [s.text for s in data.public_train]
        log("base-model", message="training tokenizer on public text", public_sentences=len(public_texts))
        tokenizer = train_tokenizer(public_texts, cfg.model.vocab_size)
        torch.manual_seed(cfg.seed)  # the initial weights too: torch seeds itself per process otherwise
        model = build_tiny_gpt2(cfg.model, len(tokenizer)).to(device)  # built on the CPU: the same start anywhere
        seqs = encode_sentences(tokenizer, public_texts, cfg.data.max_tokens)

        epochs = cfg.model.pretrain_epochs
        train_lm(
            model, seqs, pad_id=tokenizer.pad_token_id, epochs=epochs, lr=cfg.model.pretrain_lr,
            batch_size=cfg.model.batch_size, seed=cfg.seed,
            **epoch_lines(lambda done, **fields: log("base-model", progress(done), **fields), epochs),
        )
        tmp = Path(str(folder) + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # left by a process that died mid-save
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # The weights' digest lets a reader check that two runs compared with each other share one base model.
        info = {"source": "tiny", "public_sentences": len(public_texts), "vocab_size": len(tokenizer),
                "parameters": sum(p.numel() for p in model.parameters()),
                "weights_sha256": weights_digest(tmp)}
        (tmp / "done.json").write_text(json.dumps(info))
        tmp.rename(folder)
        return model, tokenizer, {**info, "cached": False}
