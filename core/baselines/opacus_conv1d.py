"""Per-sample gradients and ghost norms for transformers' Conv1D (GPT-2's attention and MLP layers) in opacus.

opacus ships samplers for nn.Linear but not for Conv1D, so without these it falls back to functorch
(vmap over the batch) for every attention and MLP weight, which is the slow path in both clipping modes.
Conv1D is a Linear with the weight stored transposed: y = x @ W + b with W of shape (in, out).
Importing this module registers both samplers (opacus' own extension mechanism).
"""

from __future__ import annotations

import torch
from opacus.grad_sample import register_grad_sampler, register_norm_sampler
from transformers.pytorch_utils import Conv1D


@register_grad_sampler(Conv1D)
def conv1d_grad_sample(layer: Conv1D, activations: list[torch.Tensor], backprops: torch.Tensor):
    """Per-sample gradients: W_n = sum_t x_nt^T g_nt (shape in x out), b_n = sum_t g_nt."""
    x = activations[0].to(backprops.dtype)
    out = {}
    if layer.weight.requires_grad:
        out[layer.weight] = torch.einsum("n...i,n...j->nij", x, backprops)
    if layer.bias is not None and layer.bias.requires_grad:
        out[layer.bias] = torch.einsum("n...k->nk", backprops)
    return out


@register_norm_sampler(Conv1D)
def conv1d_norm_sample(layer: Conv1D, activations: list[torch.Tensor], backprops: torch.Tensor):
    """Per-sample gradient norms without forming the gradients (ghost clipping, Li et al. 2022):
    |sum_t x_t^T g_t|_F^2 = sum_{t,s} (x_t . x_s)(g_t . g_s), from two T x T Gram matrices per sample."""
    x = activations[0].to(backprops.dtype)
    if backprops.dim() == 2:  # no time axis
        x, backprops = x.unsqueeze(1), backprops.unsqueeze(1)
    out = {}
    if layer.weight.requires_grad:
        gram_g = torch.bmm(backprops, backprops.transpose(1, 2))
        gram_x = torch.bmm(x, x.transpose(1, 2))
        out[layer.weight] = (gram_g * gram_x).sum(dim=(1, 2)).clamp(min=0).sqrt()
    if layer.bias is not None and layer.bias.requires_grad:
        out[layer.bias] = backprops.sum(dim=1).norm(dim=1)
    return out
