"""Adaptive Differential Privacy (ADP, Wu, Gong & Xiong 2022; seed 002) as a baseline, with honest accounting.

The paper's recipe: privacy probability rho(s) = normalize(PPL(s)) of each training sequence under a language
model (Eq. 3-4), batch weight gamma_B = mean rho over the batch (Eq. 5), noise gamma_B * N(0, C^2 sigma^2)
(Eq. 6) inside DP-Adam (Algorithm 1). Sequences that look common (low perplexity) thus get less noise.

What this module reports:
- epsilon_claimed: what the paper's setting would claim on our reading (the paper reports epsilons but states
  no accounting method), every step treated as if it had the AVERAGE effective multiplier mean_t(gamma_t) * sigma (PLD here, so
  the gap to the valid number is the recipe, not the accountant);
- epsilon (a valid bound only if the noise schedule were public, which it is not: rho comes from the private
  sentences): every step at the SMALLEST multiplier actually used,
  min_t(gamma_t) * sigma, composed with the same PLD accountant. The base sigma is calibrated before training
  from the pre-drawn batch schedule so that this number meets the target epsilon.
See STATEMENT for why the claimed number is not a guarantee and why even the valid one leaks.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from core.baselines.dpsgd import Plan, make_private, poisson_schedule, run_schedule, unwrap
from core.config import dpsgd_batch_size
from core.privacy import (
    SubsampledGaussianEvent,
    dpsgd_noise_multiplier,
    epsilon_from_events,
    events_to_dicts,
    poisson_shape,
)
from core.privacy.streams import DPSGD, dp_sgd_streams
from core.train import pad_batch, token_nll
from core.workspace import MethodResult, Workspace

ACCOUNTANT_CLAIMED = "ADP paper recipe: every step at the mean multiplier mean(gamma_B)*sigma (PLD)"
ACCOUNTANT_VALID = "pld (dp_accounting), every step at the smallest multiplier min(gamma_B)*sigma"

# gamma_B of an empty Poisson batch (Eq. 5 is undefined there): the full base noise
EMPTY_BATCH_GAMMA = 1.0
# keeps sigma / min(gamma) finite if a batch held only the single lowest-perplexity sentence (rho = 0)
GAMMA_FLOOR = 1e-3

STATEMENT = (
    "The ADP recipe scales each batch's noise by gamma_B, the mean 'privacy probability' of its sentences, and "
    "its accounting treats the run as if every step had the average noise; that is epsilon_claimed. It is not a "
    "valid differential-privacy guarantee: DP must hold for every pair of neighbouring data sets at every step, "
    "and a batch whose sentences are judged less private gets less noise, so the privacy loss is governed by the "
    "smallest noise actually used, not the average. 'epsilon' accounts every step at that smallest noise, and "
    "the base noise was calibrated so that this number meets the target. Even this is optimistic: rho comes from "
    "the perplexity of the private sentences themselves, so each step's noise level depends on private data; "
    "that dependence is a leak in itself (the noise scale reveals something about who is in the batch) that no "
    "Gaussian-mechanism accounting covers. Treat the ADP run as a heuristic, not as a DP guarantee."
)


@torch.inference_mode()
def sequence_perplexities(model, seqs, pad_id: int, batch_size: int = 64) -> np.ndarray:
    """exp(mean next-token NLL) of every sequence under `model` (Eq. 3)."""
    model.eval()
    out = []
    for start in range(0, len(seqs), batch_size):
        ids, mask = pad_batch(seqs[start : start + batch_size], pad_id)
        nll, predicted = token_nll(model, ids, mask)
        mean_nll = (nll * predicted).sum(dim=1) / predicted.sum(dim=1).clamp(min=1)
        out.append(torch.exp(mean_nll).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def privacy_probabilities(perplexities: np.ndarray) -> np.ndarray:
    """rho(s) = normalize(PPL(s)) (Eq. 4): min-max over the data set, so rho lies in [0, 1].

    The paper only says "a normalization operator that transforms values into probability values"; min-max
    over the training set is the plain reading. All equal -> rho = 1 (no sentence looks less private).
    """
    lo, hi = float(np.min(perplexities)), float(np.max(perplexities))
    if hi - lo <= 0:
        return np.ones_like(perplexities, dtype=float)
    return (perplexities - lo) / (hi - lo)


def batch_gammas(schedule: list[list[int]], rho: np.ndarray) -> np.ndarray:
    """gamma_B = mean rho over each batch (Eq. 5), floored; empty batches get the full noise."""
    gammas = [float(np.mean(rho[idx])) if idx else EMPTY_BATCH_GAMMA for idx in schedule]
    return np.maximum(np.asarray(gammas, dtype=float), GAMMA_FLOOR)


def adp_accounting(sigma: float, gammas: np.ndarray, sampling_rate: float, delta: float) -> dict:
    """Claimed (mean multiplier) and valid (smallest multiplier) epsilon of steps with multipliers gamma_t*sigma."""
    steps = len(gammas)
    claimed = [SubsampledGaussianEvent(float(np.mean(gammas)) * sigma, sampling_rate, steps)]
    valid = [SubsampledGaussianEvent(float(np.min(gammas)) * sigma, sampling_rate, steps)]
    return {
        "valid": epsilon_from_events(valid, delta),
        "valid_events": valid,
        "claimed": epsilon_from_events(claimed, delta),
        "claimed_events": claimed,
    }


def adp(ws: Workspace) -> MethodResult:
    cfg, dp = ws.cfg, ws.cfg.dpsgd
    eps, delta = cfg.privacy.epsilon, cfg.privacy.delta
    seqs = ws.encode([s.text for s in ws.data.private_train])
    torch.manual_seed(cfg.seed)
    timings: dict[str, float] = {}
    if dp.batching == "users":
        ws.log("adp-train", ws.method_progress(0.0), message="ADP samples batches (Algorithm 1): batching users ignored")

    # 1. privacy probabilities from the public base model's perplexity of each PRIVATE sentence
    t0 = time.time()
    ws.log("adp-train", ws.method_progress(0.0),  # quick: a minute and a half before the next line
           message=f"the base model's perplexity of each of the {len(seqs)} private sentences (privacy probabilities)")
    rho = privacy_probabilities(sequence_perplexities(ws.base_model, seqs, ws.pad_id))
    timings["rho_s"] = time.time() - t0

    # 2. the Poisson schedule, drawn up front, fixes every gamma_t; sigma is set so that the smallest
    #    multiplier min(gamma) * sigma equals what plain DP-SGD needs for the target
    t0 = time.time()
    batch_size = dpsgd_batch_size(ws.cfg)
    q, steps = poisson_shape(len(seqs), batch_size, dp.epochs)
    z_dpsgd = dpsgd_noise_multiplier(eps, delta, q, steps)
    model, optimizer, loader = make_private(ws.fresh_base(), len(seqs), batch_size, z_dpsgd, dp.max_grad_norm,
                                            dp.lr, ghost=False, poisson=True, seed=cfg.seed, stream=DPSGD)
    schedule = poisson_schedule(loader, dp.epochs)
    assert len(schedule) == steps, (len(schedule), steps)  # z_dpsgd is calibrated for the steps it runs
    assert math.isclose(loader.sample_rate, q), (loader.sample_rate, q)  # ... and the rate it samples at
    gammas = batch_gammas(schedule, rho)
    sigma = z_dpsgd / float(np.min(gammas)) * (1 + 1e-12)  # hair of slack: min(gamma)*sigma never rounds below
    timings["calibrate_s"] = time.time() - t0
    ws.log("adp-train", ws.method_progress(0.0), noise_multiplier=float(np.min(gammas)) * sigma,
           message=f"base sigma {sigma:.4g}; per-step multipliers {float(np.min(gammas)) * sigma:.4g}.."
                   f"{float(np.max(gammas)) * sigma:.4g}")

    # 3. Adaptive-DP-Adam: noise std gamma_t * sigma * C at step t
    t0 = time.time()
    plan = Plan(schedule, len(loader), sigma, q)
    taken = run_schedule(ws, model, optimizer, seqs, plan, "adp-train",
                         multiplier_of_step=lambda t: float(gammas[t]) * sigma)
    timings["train_s"] = time.time() - t0

    used = gammas[:taken]
    acc = adp_accounting(sigma, used, q, delta) if taken else None
    privacy = adp_privacy(acc, eps, delta, sigma, used, q, taken)
    metrics = {
        "steps": taken,
        "planned_steps": len(schedule),
        # the multiplier every step is accounted at (the smallest used); sigma is only the base gamma_t scales
        "noise_multiplier": privacy.get("noise_multiplier"),
        "base_sigma": sigma,
        "sampling_rate": q,
        "batching": "samples",
        "gamma": {"min": float(np.min(used)), "mean": float(np.mean(used)), "max": float(np.max(used))} if taken else {},
        "rho": {"min": float(rho.min()), "mean": float(rho.mean()), "median": float(np.median(rho)),
                "max": float(rho.max())},
        "epsilon_claimed": privacy["epsilon_claimed"],
        "dp_timings": {**timings, "step_ms": 1000 * timings["train_s"] / max(taken, 1)},
    }
    return MethodResult(unwrap(model), privacy, metrics)


def adp_privacy(acc: dict | None, target: float, delta: float, sigma: float, gammas: np.ndarray, q: float,
                steps: int) -> dict:
    if acc is None:  # stopped before the first step: nothing released
        return {"epsilon": 0.0, "delta": delta, "accountant": "none (no step taken)", "unit": "sample",
                "events": [], "epsilon_claimed": 0.0, "statement": STATEMENT}
    return {
        "epsilon": acc["valid"].epsilon,
        "delta": delta,
        "accountant": ACCOUNTANT_VALID if math.isfinite(acc["valid"].epsilon) else acc["valid"].accountant,
        "unit": "sample",
        "events": events_to_dicts(acc["valid_events"]),
        "target_epsilon": target,
        "epsilon_claimed": acc["claimed"].epsilon,
        "accountant_claimed": ACCOUNTANT_CLAIMED,
        "events_claimed": events_to_dicts(acc["claimed_events"]),
        # what the steps added: gamma_t * sigma, accounted at the smallest (the valid events hold it)
        "noise_multiplier": acc["valid_events"][0].noise_multiplier,
        "noise_multiplier_range": [float(np.min(gammas)) * sigma, float(np.max(gammas)) * sigma],
        "base_sigma": sigma,
        "sampling_rate": q,
        "steps": steps,
        "rho": "min-max normalised perplexity under the public base model, over the private train set",
        "statement": STATEMENT,
        "random_streams": list(dp_sgd_streams(DPSGD).values()),
    }
