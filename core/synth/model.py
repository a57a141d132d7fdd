"""Conditional LM with a discriminator head: "BOS label SEP text" formatting, prefix features, the multitask loss.

The discriminator reads the MEAN final hidden state over the text so far (the SEP position and the text tokens),
as PPLM's attribute model does; a linear head maps it to label logits. For the multitask loss (paper Sec. 5.1.3)
the head sees "BOS rand SEP text" (the label replaced by a random token, so the head cannot read the label) and
is scored at every `prefix_step`-th text token, the k-th prefix weighted by k so longer prefixes count more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.train import on_model_device

NEWLINE = "\n"  # texts are whitespace-normalised, so a newline never occurs inside one: an unambiguous SEP
TEXT_START = 2  # index of SEP in a discriminator row [BOS, rand, SEP, x1, ...]: features start there


@dataclass(frozen=True)
class Formatter:
    """Token layouts: LM rows "BOS label SEP text EOS", discriminator rows "BOS rand SEP text", prompts."""

    bos: int
    sep: int
    eos: int
    pad: int
    vocab_size: int
    labels: tuple[str, ...]
    label_ids: tuple[tuple[int, ...], ...]
    max_tokens: int

    @classmethod
    def build(cls, tokenizer, labels: Sequence[str], max_tokens: int, separator: str) -> Formatter:
        """separator `bos`: SEP is the BOS token, so the text follows the token the public base model was trained
        to start a text after (core.tokenizer.encode_sentences); `newline`: SEP is "\\n", which it never saw."""
        sep = ([tokenizer.bos_token_id] if separator == "bos"
               else tokenizer(NEWLINE, add_special_tokens=False)["input_ids"])
        if len(sep) != 1:
            raise ValueError(f"the tokenizer splits the separator {NEWLINE!r} into {len(sep)} tokens")
        # a leading space makes a label the word token the public model knows (" smell"), not subword pieces
        label_ids = tuple(tuple(tokenizer(" " + label, add_special_tokens=False)["input_ids"]) for label in labels)
        return cls(tokenizer.bos_token_id, sep[0], tokenizer.eos_token_id, tokenizer.pad_token_id, len(tokenizer),
                   tuple(labels), label_ids, max_tokens)

    def prompt(self, label: int) -> list[int]:
        return [self.bos, *self.label_ids[label], self.sep]

    def lm_row(self, label: int, text_ids: Sequence[int]) -> list[int]:
        return ([*self.prompt(label), *text_ids, self.eos])[: self.max_tokens]

    def disc_row(self, rand_id: int, text_ids: Sequence[int]) -> list[int]:
        return [self.bos, rand_id, self.sep, *text_ids][: self.max_tokens]

    def random_tokens(self, n: int, generator: torch.Generator) -> list[int]:
        """Uniform random ordinary tokens (never BOS/EOS/SEP) standing in for the label."""
        special = {self.bos, self.eos, self.sep, self.pad}
        ids = torch.randint(0, self.vocab_size, (n,), generator=generator).tolist()
        return [i if i not in special else (i + 1) % self.vocab_size for i in ids]


def encode_texts(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    out = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [ids if ids else [tokenizer.eos_token_id] for ids in out]


# ------------------------------------------------------------------------------------------------------------
# Discriminator features and the multitask loss (pure tensor functions)
# ------------------------------------------------------------------------------------------------------------


def prefix_features(hidden: torch.Tensor, start: int = TEXT_START) -> torch.Tensor:
    """(B, L, H) hidden states -> (B, L-start-1, H): entry k-1 is the mean of positions start..start+k, i.e. the
    discriminator's input after k text tokens."""
    sums = hidden[:, start:].cumsum(dim=1)[:, 1:]
    counts = torch.arange(2, sums.size(1) + 2, dtype=hidden.dtype, device=hidden.device)
    return sums / counts[None, :, None]


def prefix_weights(text_lengths: torch.Tensor, max_k: int, step: int) -> torch.Tensor:
    """(B, max_k) weights of the prefix losses: prefix k (k text tokens) counts when k is a multiple of step and
    k <= the text length, with weight proportional to k/step (linear: the first prefix least, the last most);
    rows sum to 1. A text shorter than step is scored once, on its full length."""
    k = torch.arange(1, max_k + 1, device=text_lengths.device)[None, :]
    n = text_lengths[:, None].clamp(min=1, max=max_k)
    w = torch.where((k % step == 0) & (k <= n), (k // step).to(torch.float32), torch.zeros((), device=k.device))
    short = w.sum(dim=1) == 0
    if short.any():
        w[short] = (k == n[short]).to(torch.float32)
    return w / w.sum(dim=1, keepdim=True)


def weighted_prefix_loss(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Per-example loss (B,): cross-entropy of the label at every prefix (logits (B, K, A)), weighted by weights."""
    ce = F.cross_entropy(logits.flatten(0, 1), labels.repeat_interleave(logits.size(1)), reduction="none")
    return (ce.view_as(weights) * weights).sum(dim=1)


def full_features(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, H): the feature of the whole text of each discriminator row (its last real prefix)."""
    feats = prefix_features(hidden)
    last = (mask[:, TEXT_START + 1 :].sum(dim=1) - 1).clamp(min=0)
    return feats[torch.arange(feats.size(0)), last]


# ------------------------------------------------------------------------------------------------------------
# The model: GPT-2 LM + linear discriminator head, one module so opacus clips both together
# ------------------------------------------------------------------------------------------------------------


class SynthLM(nn.Module):
    """GPT2LMHeadModel plus a linear head on the mean hidden state (PPLM's ClassificationHead)."""

    def __init__(self, lm, n_labels: int) -> None:
        super().__init__()
        self.lm = lm
        self.head = nn.Linear(lm.config.n_embd, n_labels)

    def hidden(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Final hidden states (after the last layer norm) of right-padded rows."""
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0).repeat(ids.size(0), 1)
        return self.lm.transformer(input_ids=ids, attention_mask=mask.long(), position_ids=positions).last_hidden_state

    def forward(self, ids: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, keep: int):
        """One pass over rows (attention: a (B, L) padding mask, or pack's 4-D boolean mask); returns (logits of
        the last `keep` positions, all final hidden states). A 4-D mask goes in additive form: eager attention
        adds it to its scores, so a boolean one let packed sequences see each other (hidden states off by 0.33);
        sdpa takes either."""
        if attention.dim() == 4:
            dtype = self.lm.dtype
            blocked = torch.zeros(attention.shape, dtype=dtype, device=attention.device)
            attention = blocked.masked_fill(~attention, torch.finfo(dtype).min)
        out = self.lm(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=keep,
                      output_hidden_states=True)
        return out.logits, out.hidden_states[-1]


def freeze_for_training(model: SynthLM, trainable: str) -> None:
    """`blocks`: train the transformer blocks, the final norm and the heads, keep the (public) token and position
    embeddings fixed: fewer noisy coordinates under DP; `all`: train everything."""
    for name, p in model.named_parameters():
        p.requires_grad_(trainable == "all" or not (name.startswith("lm.transformer.wte")
                                                    or name.startswith("lm.transformer.wpe")))


# ------------------------------------------------------------------------------------------------------------
# Packed rows: [discriminator row ; LM row] in one sequence with a block-diagonal causal mask
# ------------------------------------------------------------------------------------------------------------


def pack(disc_rows: Sequence[Sequence[int]], lm_rows: Sequence[Sequence[int]], pad: int):
    """One row per example holding both of its sequences, each attending only to itself (causally).

    One example is then one row of one forward pass, which is what per-example clipping (opacus, ghost
    clipping included) needs: the example's gradient is that of its LM loss plus its discriminator loss.
    Returns ids, 4-D boolean attention (True = may attend), position ids, the discriminator mask and the LM mask.
    """
    la, lb = max(map(len, lm_rows)), max(map(len, disc_rows))
    b = len(lm_rows)
    ids = torch.full((b, lb + la), pad, dtype=torch.long)
    real = torch.zeros((b, lb + la), dtype=torch.bool)
    for i, (d, m) in enumerate(zip(disc_rows, lm_rows, strict=True)):
        ids[i, : len(d)] = torch.as_tensor(d)
        ids[i, lb : lb + len(m)] = torch.as_tensor(m)
        real[i, : len(d)] = True
        real[i, lb : lb + len(m)] = True
    segment = torch.cat([torch.zeros(lb, dtype=torch.long), torch.ones(la, dtype=torch.long)])
    causal = torch.tril(torch.ones(lb + la, lb + la, dtype=torch.bool))
    allowed = causal & (segment[:, None] == segment[None, :])
    # keys must be real tokens; a pad query still sees its segment's first token (BOS), so no row of the mask is
    # empty (sdpa would give nan there)
    attention = (allowed[None] & real[:, None, :])[:, None]
    positions = torch.cat([torch.arange(lb), torch.arange(la)]).unsqueeze(0).repeat(b, 1)
    return ids, attention, positions, real[:, :lb], real[:, lb:]


def lm_nll(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL per row (B,), over real targets; logits (B, L, V) aligned with ids (B, L)."""
    predicted = torch.cat([mask[:, 1:], mask.new_zeros((ids.size(0), 1))], dim=1)
    targets = torch.cat([ids[:, 1:], ids[:, :1]], dim=1)
    nll = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view_as(targets)
    nll = nll * predicted
    return nll.sum(dim=1) / predicted.sum(dim=1).clamp(min=1)


def multitask_losses(model: SynthLM, disc_rows, lm_rows, labels: torch.Tensor, pad: int, step: int,
                     disc_weight: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example (LM NLL, weighted prefix discriminator loss) from one packed forward pass."""
    ids, attention, positions, disc_mask, lm_mask, labels = on_model_device(model, *pack(disc_rows, lm_rows, pad),
                                                                             labels)
    lb, la = disc_mask.size(1), lm_mask.size(1)
    logits, hidden = model(ids, attention, positions, keep=la)
    lm = lm_nll(logits, ids[:, lb:], lm_mask)
    feats = prefix_features(hidden[:, :lb])
    weights = prefix_weights(disc_mask[:, TEXT_START + 1 :].sum(dim=1), feats.size(1), step)
    disc = weighted_prefix_loss(model.head(feats), labels, weights)
    return lm, disc_weight * disc
