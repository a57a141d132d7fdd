"""Tokenizer: byte-level BPE trained on PUBLIC text only, or an existing tokenizer from a local directory.

Privacy rule: the vocabulary is public information, so only public sentences may reach `train_tokenizer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

SPECIAL = "<|endoftext|>"  # GPT-2's single special token: begin, end and padding of every sentence


class ModelLoadError(ValueError):
    """A local model or tokenizer path that cannot be loaded; one-line message."""


def train_tokenizer(public_texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """GPT-2 style byte-level BPE, wrapped so transformers APIs (padding, decode, save_pretrained) work."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(public_texts), trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=SPECIAL, eos_token=SPECIAL, pad_token=SPECIAL)
    fast.padding_side = "right"
    return fast


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    """A tokenizer saved with save_pretrained (e.g. a local GPT-2 checkout); never touches a hub."""
    path = Path(path)
    if not path.is_dir():
        raise ModelLoadError(f"tokenizer path is not a directory: {path}")
    try:
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers raises many types; the user needs one line
        tok = _load_own_tokenizer_file(path)
        if tok is None:
            raise ModelLoadError(f"no usable tokenizer in {path}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    if len(tok) <= 1:  # what transformers builds from a folder without tokenizer files: it encodes text to []
        raise ModelLoadError(f"no usable tokenizer in {path}: {len(tok)} token(s)")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"
    return tok


def _load_own_tokenizer_file(path: Path) -> PreTrainedTokenizerFast | None:
    """A tokenizer of ours (the cached base model's, a run's kept model) saved under transformers 5, read by 4.x.

    transformers 5 records our tokenizer's class as TokenizersBackend, which 4.x cannot import, but tokenizer.json
    holds the whole tokenizer. None for anything else (a user's checkout that fails to load keeps its error)."""
    try:
        config = json.loads((path / "tokenizer_config.json").read_text())
        if config.get("tokenizer_class") != "TokenizersBackend" or config.get("bos_token") != SPECIAL:
            return None
        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    except Exception:  # missing or unreadable files: not a tokenizer of ours
        return None
    return wrap(tok) if tok.token_to_id(SPECIAL) is not None else None


def encode_sentences(tokenizer, texts: Iterable[str], max_tokens: int) -> list[list[int]]:
    """[BOS] + tokens + [EOS], cut to max_tokens: every token after BOS is predicted (and counted in PPL)."""
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    out = []
    for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
        out.append(([bos] + ids + [eos])[:max_tokens])
    return out


def encode_prefixes(tokenizer, prefixes: Iterable[str]) -> list[list[int]]:
    bos = tokenizer.bos_token_id
    return [[bos] + ids for ids in tokenizer(list(prefixes), add_special_tokens=False)["input_ids"]]
