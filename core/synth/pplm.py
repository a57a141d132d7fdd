"""Generation from the conditional LM: plain nucleus sampling from "BOS label SEP", and PPLM steering.

PPLM (Dathathri et al. 2020), written here compactly for GPT-2's key/value cache. Before each new token:
1. the unperturbed model gives the next-token distribution p_u from the cached keys/values (the "past");
2. a perturbation of the past is found by a few normalised gradient steps on
   CE(discriminator(mean hidden state), target label) + kl_scale * KL(p_perturbed || p_u), where the mean hidden
   state covers the text so far plus one soft step ahead (the expected embedding under p_perturbed), and, as
   in PPLM, only the soft step carries gradient;
3. the next token is sampled (nucleus) from the geometric-mean fusion p_perturbed^gm * p_u^(1-gm).
As in PPLM, the perturbed past is kept for the following tokens. Batched: every sample of a batch has the same
prompt, gradients are normalised per sample, so a batch behaves like its samples generated one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.models import cache_tensors, make_cache, output_cache, with_cache
from core.train import model_device

SMALL = 1e-15  # PPLM's SMALL_CONST: keeps logs and divisions finite


@dataclass(frozen=True)
class PPLMSettings:
    iterations: int = 3
    stepsize: float = 0.03
    kl_scale: float = 0.01
    gm_scale: float = 0.9
    gamma: float = 1.5


# ------------------------------------------------------------------------------------------------------------
# Sampling helpers
# ------------------------------------------------------------------------------------------------------------


def nucleus_sample(probs: torch.Tensor, top_p: float, generator: torch.Generator) -> torch.Tensor:
    """(B,) tokens sampled from the smallest set of top tokens holding top_p of the mass (Holtzman et al.)."""
    sorted_p, order = probs.sort(dim=-1, descending=True)
    keep = sorted_p.cumsum(dim=-1) - sorted_p < top_p  # always keeps the top token
    sorted_p = sorted_p * keep
    # drawn on the CPU's generator wherever the model runs: the same seed draws alike on a GPU
    choice = torch.multinomial((sorted_p / sorted_p.sum(dim=-1, keepdim=True)).cpu(), 1, generator=generator)
    return order.gather(-1, choice.to(order.device)).squeeze(-1)


def _step(lm, last: torch.Tensor, kv) -> tuple[torch.Tensor, torch.Tensor, list]:
    """(next-token logits (B, V), final hidden state of `last` (B, H), the cache after it) for one token."""
    out = lm(input_ids=last, **with_cache(make_cache(kv)), use_cache=True, output_hidden_states=True)
    return out.logits[:, -1], out.hidden_states[-1][:, -1], cache_tensors(output_cache(out))


def _finish(tokens: torch.Tensor, eos: int) -> list[list[int]]:
    """Generated ids of each sample, cut at its first EOS."""
    out = []
    for row in tokens.tolist():
        out.append(row[: row.index(eos)] if eos in row else row)
    return out


# ------------------------------------------------------------------------------------------------------------
# Plain conditional sampling
# ------------------------------------------------------------------------------------------------------------


@torch.no_grad()
def generate_plain(lm, prompt: Sequence[int], n: int, max_new: int, top_p: float, temperature: float, eos: int,
                   generator: torch.Generator) -> list[list[int]]:
    """n samples continuing `prompt` ("BOS label SEP"), nucleus sampling, each cut at its EOS."""
    lm.eval()
    ids = torch.tensor([list(prompt)] * n, device=model_device(lm))
    out = lm(input_ids=ids[:, :-1], use_cache=True)
    kv, last = cache_tensors(output_cache(out)), ids[:, -1:]
    tokens, done = [], torch.zeros(n, dtype=torch.bool, device=ids.device)
    for _ in range(max_new):
        logits, _, kv = _step(lm, last, kv)
        nxt = nucleus_sample(torch.softmax(logits / temperature, dim=-1), top_p, generator)
        tokens.append(nxt)
        done |= nxt == eos
        if done.all():
            break
        last = nxt[:, None]
    return _finish(torch.stack(tokens, dim=1), eos)


# ------------------------------------------------------------------------------------------------------------
# PPLM
# ------------------------------------------------------------------------------------------------------------


def discriminator_loss(lm, head, logits, h_last, acc_hidden, count, unpert_kv, target) -> torch.Tensor:
    """Per-sample CE of the target label on the mean hidden state: text so far + `last` + one soft step ahead.

    As in PPLM, `last`'s hidden state enters as a constant (detached): the loss reaches the perturbation only
    through the next-token distribution (the soft step), so lowering it means changing which token comes next.
    With a gradient through `last`'s own hidden state, the perturbation can satisfy the head by moving that
    state alone, which lowers the loss without changing the text."""
    probs = torch.softmax(logits, dim=-1)
    soft = probs @ lm.transformer.wte.weight  # expected embedding of the next token
    out = lm.transformer(inputs_embeds=soft[:, None], **with_cache(make_cache(unpert_kv)), use_cache=False)
    h_soft = out.last_hidden_state[:, -1]
    feature = (acc_hidden + h_last.detach() + h_soft) / (count + 2)
    return F.cross_entropy(head(feature), target, reduction="none")


def kl_to_unperturbed(logits: torch.Tensor, unpert_probs: torch.Tensor) -> torch.Tensor:
    """Per-sample KL(p || p_u) with PPLM's small-constant corrections."""
    probs = torch.softmax(logits, dim=-1)
    probs = probs + (SMALL * (probs <= SMALL)).detach()
    unpert = unpert_probs + SMALL * (unpert_probs <= SMALL)
    return (probs * (probs / unpert).log()).sum(dim=-1)


def perturb_past(lm, head, past, last, acc_hidden, count, unpert_kv, unpert_probs, target, s: PPLMSettings):
    """PPLM's inner loop: the past (keys/values before `last`) after s.iterations normalised gradient steps."""
    deltas = [(torch.zeros_like(k), torch.zeros_like(v)) for k, v in past]
    for _ in range(s.iterations):
        for dk, dv in deltas:
            dk.requires_grad_(True)
            dv.requires_grad_(True)
        kv = [(k + dk, v + dv) for (k, v), (dk, dv) in zip(past, deltas, strict=True)]
        logits, h_last, _ = _step(lm, last, kv)
        disc = discriminator_loss(lm, head, logits, h_last, acc_hidden, count, unpert_kv, target)
        loss = disc.sum()
        if s.kl_scale > 0:
            loss = loss + s.kl_scale * kl_to_unperturbed(logits, unpert_probs).sum()
        grads = torch.autograd.grad(loss, [t for pair in deltas for t in pair])
        with torch.no_grad():
            new = []
            for i, (dk, dv) in enumerate(deltas):
                gk, gv = grads[2 * i], grads[2 * i + 1]
                # per sample and layer, as PPLM normalises each layer's gradient (it runs one sample at a time)
                norm = (gk.pow(2).sum(dim=(1, 2, 3)) + gv.pow(2).sum(dim=(1, 2, 3))).sqrt() + SMALL
                scale = (s.stepsize / norm.pow(s.gamma))[:, None, None, None]
                new.append(((dk - scale * gk).detach(), (dv - scale * gv).detach()))
            deltas = new
    return [(k + dk, v + dv) for (k, v), (dk, dv) in zip(past, deltas, strict=True)]


def generate_pplm(lm, head, prompt: Sequence[int], target: int, n: int, max_new: int, top_p: float,
                  temperature: float, eos: int, generator: torch.Generator, s: PPLMSettings) -> list[list[int]]:
    """n samples continuing `prompt` ("BOS label SEP"), steered towards class `target` of `head`.

    The discriminator feature averages the hidden states from the SEP token (the prompt's last token) on, the
    positions its training rows "BOS rand SEP text" averaged.
    """
    lm.eval()
    for p in (*lm.parameters(), *head.parameters()):
        p.requires_grad_(False)
    ids = torch.tensor([list(prompt)] * n, device=model_device(lm))
    with torch.no_grad():
        out = lm(input_ids=ids[:, :-1], use_cache=True)
    past = cache_tensors(output_cache(out))  # perturbed history (PPLM keeps it)
    unpert_past = [(k.clone(), v.clone()) for k, v in past]
    last = ids[:, -1:]
    acc_hidden = torch.zeros((n, lm.config.n_embd), device=ids.device)
    targets = torch.full((n,), target, dtype=torch.long, device=ids.device)
    tokens, done = [], torch.zeros(n, dtype=torch.bool, device=ids.device)
    for count in range(max_new):
        with torch.no_grad():
            unpert_logits, h_unpert, unpert_next = _step(lm, last, unpert_past)
        unpert_probs = torch.softmax(unpert_logits, dim=-1)
        if s.iterations > 0:
            past = perturb_past(lm, head, past, last, acc_hidden, count, unpert_next, unpert_probs, targets, s)
        with torch.no_grad():
            pert_logits, _, past = _step(lm, last, past)
        pert = torch.softmax(pert_logits / temperature, dim=-1)
        base = torch.softmax(unpert_logits / temperature, dim=-1)
        fused = pert.pow(s.gm_scale) * base.pow(1.0 - s.gm_scale)
        nxt = nucleus_sample(fused / fused.sum(dim=-1, keepdim=True), top_p, generator)
        tokens.append(nxt)
        done |= nxt == eos
        if done.all():
            break
        # the unperturbed hidden state of `last` joins the running sum; both caches move on by one token
        acc_hidden = acc_hidden + h_unpert
        unpert_past = unpert_next
        past = [(k.detach(), v.detach()) for k, v in past]
        last = nxt[:, None]
    return _finish(torch.stack(tokens, dim=1), eos)
