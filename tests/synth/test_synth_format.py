"""The conditional LM's token layout: where SEP comes from."""

from __future__ import annotations

from core.synth.model import Formatter
from core.tokenizer import encode_sentences, train_tokenizer

PUBLIC = ["the film was good", "I like peanut butter a lot", "what a lovely smell", "hello there my friend"] * 5


def test_sep_is_the_token_the_public_base_model_starts_every_text_after():
    """The base model is trained on [BOS] + text + [EOS] rows, so after the BOS token it has learned to start a
    text; with SEP = that token the DP model starts samples with words (a newline SEP, never seen by the base
    model, left 55-64% of quick's eps-3 samples starting with a word fragment)."""
    tok = train_tokenizer(PUBLIC, 300)
    text = tok("the film", add_special_tokens=False)["input_ids"]
    label = tok(" peanut butter", add_special_tokens=False)["input_ids"]
    fmt = Formatter.build(tok, ("film", "peanut butter"), 40, "bos")
    base_row = encode_sentences(tok, ["the film"], 40)[0]
    assert fmt.sep == base_row[0] == tok.bos_token_id
    assert fmt.lm_row(1, text) == [fmt.bos, *label, base_row[0], *text, fmt.eos]
    assert fmt.lm_row(1, text)[len(fmt.prompt(1)) - 1 :] == base_row  # SEP, text, EOS: a base-model row
    old = Formatter.build(tok, ("film", "peanut butter"), 40, "newline")
    assert tok.decode([old.sep]) == "\n" and old.sep != tok.bos_token_id
    assert old.prompt(1) == [fmt.bos, *label, old.sep]
