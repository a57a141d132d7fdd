"""Completing a prefix the user types, with the model a finished run saved (run/model/).

Runs keep their final weights (save_model, called by the pipeline) unless their method post-processes its output
with state the run does not keep (the blacklist baseline's list of private names). Shipped runs keep no weights
(git ignores them), so only runs made on this machine can complete new prefixes.
"""

from __future__ import annotations

import shutil

from core.evaluation import complete, completion_seed
from core.models import compute_device, load_local_model
from core.runs.store import MODEL, RunDir, RunError, is_synth
from core.tokenizer import encode_prefixes, load_tokenizer


def save_model(model, tokenizer, run: RunDir) -> None:
    """model/ in the run folder (weights and tokenizer), written beside it and renamed into place."""
    tmp = run.path / f"{MODEL}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    final = run.path / MODEL
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def check_saved_model(run: RunDir) -> None:
    """RunError unless the run is finished and kept its model in run/model/."""
    if reason := run.incomplete_reason():  # a failed or unfinished run has no final model, whatever it kept
        raise RunError(f"{run.run_id} is not a finished run ({reason})")
    if is_synth(run.config() or {}):
        raise RunError(f"{run.run_id} is a synthetic-data run: it keeps no model (its samples are in samples.jsonl)")
    if not (run.path / MODEL / "config.json").is_file():
        raise RunError(f"{run.run_id} kept no model weights (shipped runs and the blacklist baseline keep none)")


def saved_model(run: RunDir):
    """(model, tokenizer) a finished run saved in run/model/, the model on the device SEQPATE_DEVICE names (as
    runs compute; cuda without a GPU is refused before the weights are read)."""
    device = compute_device()
    check_saved_model(run)
    return load_local_model(run.path / MODEL).to(device), load_tokenizer(run.path / MODEL)


def complete_prefix(run: RunDir, prefix: str, seed: int = 0) -> str:
    """One seeded completion of `prefix` by the run's saved model, decoded with the run's own settings."""
    text = " ".join(prefix.split())
    if not any(ch.isprintable() and not ch.isspace() for ch in text):  # control characters alone read as empty
        raise ValueError("type a prefix to complete")
    model, tokenizer = saved_model(run)
    length = len(encode_prefixes(tokenizer, [text])[0])
    if length >= model.config.n_positions:
        raise ValueError(f"the prefix is {length} tokens; this model reads at most {model.config.n_positions - 1}")
    return complete(model, tokenizer, [text], run.run_config().decode, seed=seed)[0]


def resample_completions(run: RunDir, draws: int) -> list[list[str]]:
    """`draws` seeded completions of every test prefix the run completed, by its saved model with its own
    decoding settings: one list per draw, in completions.jsonl's order. Draw 0 repeats completions.jsonl (the same
    seed and batches as the pipeline; at another torch thread count than the run's, or on another device than the
    one the run computed on, float rounding can change a rare token)."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    model, tokenizer = saved_model(run)
    cfg = run.run_config()
    prefixes = [row["prefix"] for row in run.completions()]
    return [complete(model, tokenizer, prefixes, cfg.decode, seed=completion_seed(cfg.seed, draw))
            for draw in range(draws)]
