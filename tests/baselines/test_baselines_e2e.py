"""One micro run per baseline through core.runs.pipeline.execute: privacy.json and metrics.json as promised."""

import json
import math

import numpy as np
import pytest

from core.privacy import ACCOUNTANT_PLD, epsilon_from_events, events_from_dicts
from core.runs.pipeline import execute
from core.runs.store import RunDir
from tests.conftest import (
    PRIVATE_TRAINING_STAGES,
    check_private_training_releases_nothing_unaccounted,
    micro_config,
)

# smaller than the micro preset: these runs check the plumbing, not the quality (a 1-layer, 32-wide model)
FAST = dict(data__private_train=160, data__private_test=20, data__public_train=160, decode__n_completions=8,
            decode__max_new_tokens=6, model__vocab_size=512, model__n_layer=1, model__n_embd=32, model__n_head=2,
            model__n_positions=32, model__pretrain_epochs=1, data__max_tokens=24, dpsgd__ghost_batch_size=64)


STEPS: list[tuple[float, float]] = []  # (noise multiplier, clipping norm) of the optimizer at each DP step taken


def run_method(tmp_path, method, **overrides):
    cfg = micro_config(method=method, privacy__epsilon=3.0, **{**FAST, **overrides})
    run = RunDir.create(tmp_path / method.replace("+", "_"), cfg.to_dict(), cfg.seed)
    from core.baselines import dpsgd

    real_step = dpsgd.dp_step

    def recorded_step(model, optimizer, *args, **kwargs):  # what reaches opacus, not what the plan says
        STEPS.append((optimizer.noise_multiplier, optimizer.max_grad_norm))
        return real_step(model, optimizer, *args, **kwargs)

    STEPS.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dpsgd, "dp_step", recorded_step)
        metrics = execute(cfg, run)
    privacy = json.loads((run.path / "privacy.json").read_text())
    if method in PRIVATE_TRAINING_STAGES:
        check_private_training_releases_nothing_unaccounted(run.progress(), metrics, method)
    return cfg, privacy, metrics


def check_recomputed(epsilon, accountant, events, delta):
    """The epsilon written is what core.privacy's accountant computes from the events written beside it (not typed
    in, not from other events), and it names that accountant (ADP's label adds how its events were chosen)."""
    today = epsilon_from_events(events_from_dicts(events), delta)
    assert epsilon == pytest.approx(today.epsilon, rel=1e-6)
    assert accountant.startswith(today.accountant)
    return today


def check_dp(privacy, metrics, target=3.0):
    for key in ("epsilon", "delta", "accountant", "unit", "events"):
        assert key in privacy
    assert math.isfinite(privacy["epsilon"]) and 0 < privacy["epsilon"] <= target
    assert privacy["unit"] == "sample" and privacy["events"]
    check_recomputed(privacy["epsilon"], privacy["accountant"], privacy["events"], privacy["delta"])
    # every run here is calibrated to the target before training and takes all its steps, so it spends nearly
    # all of it (calibration stops within 1e-3 of the target: tests/privacy); much less means noise was wasted
    assert privacy["epsilon"] >= 0.99 * target
    # core.privacy.streams: fixed user batches sample nothing
    sampled = privacy["sampling_rate"] is not None
    assert privacy["random_streams"] == (["dp-sgd sampling"] if sampled else []) + ["dp-sgd noise"]
    for key in ("steps", "noise_multiplier", "sampling_rate", "dp_timings"):
        assert key in metrics
    assert metrics["steps"] > 0 and metrics["noise_multiplier"] > 0
    assert math.isfinite(metrics["ppl"])


@pytest.mark.parametrize("method", ["noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo"])
def test_dpsgd_methods_poisson(tmp_path, method):
    cfg, privacy, metrics = run_method(tmp_path, method)
    check_dp(privacy, metrics)
    # every step the optimizer took added the noise the accountant was told of, at the clipping norm recorded
    assert STEPS == [(privacy["events"][0]["noise_multiplier"], cfg.dpsgd.max_grad_norm)] * metrics["steps"]
    assert (tmp_path / method.replace("+", "_") / "model" / "model.safetensors").is_file()  # weights kept
    assert privacy["events"][0]["mechanism"] == "subsampled_gaussian"
    assert privacy["events"][0]["steps"] == metrics["steps"]


def test_ghost_clipping_batching_users(tmp_path):
    cfg, privacy, metrics = run_method(tmp_path, "noisysgd-gc+pseudo", dpsgd__batching="users")
    check_dp(privacy, metrics)
    assert STEPS == [(metrics["noise_multiplier"], cfg.dpsgd.max_grad_norm)] * metrics["steps"]
    assert privacy["events"] == [{"mechanism": "gaussian", "noise_std": metrics["noise_multiplier"],
                                  "sensitivity": 1.0, "count": cfg.dpsgd.epochs}]
    owner = metrics["batch_of_sentence"]
    assert len(owner) == cfg.data.private_train and min(owner) == 0 and max(owner) == metrics["n_batches"] - 1


def test_adp_reports_valid_and_claimed_epsilon(tmp_path):
    _, privacy, metrics = run_method(tmp_path, "adp")
    check_dp(privacy, metrics)
    # each step's multiplier gamma_t * sigma: its smallest is the one every step is accounted at (the valid
    # epsilon), its mean the one the paper's recipe claims
    multipliers = np.array([z for z, _ in STEPS])
    assert len(multipliers) == metrics["steps"] and multipliers.max() > multipliers.min()
    assert multipliers.min() == pytest.approx(privacy["events"][0]["noise_multiplier"], rel=1e-12)
    assert multipliers.mean() == pytest.approx(privacy["events_claimed"][0]["noise_multiplier"], rel=1e-9)
    # the multiplier it states is the accounted one, not the base sigma (which no step used: a review found the
    # statement saying 63.0 for a run whose steps added 0.59 to 2.96), and the range is what the steps added
    assert privacy["noise_multiplier"] == metrics["noise_multiplier"] == privacy["events"][0]["noise_multiplier"]
    assert privacy["noise_multiplier_range"] == pytest.approx([multipliers.min(), multipliers.max()], rel=1e-12)
    assert privacy["base_sigma"] == metrics["base_sigma"] > multipliers.max()
    from core.analysis.statement import adp_mechanism_line

    line = adp_mechanism_line(privacy)
    assert f"smallest multiplier any step used, {multipliers.min():.4g}, the largest {multipliers.max():.4g}" in line
    assert privacy["epsilon_claimed"] <= privacy["epsilon"]
    # the claimed epsilon too is the PLD accountant's number for the claimed (mean-multiplier) events it records
    check_recomputed(privacy["epsilon_claimed"], ACCOUNTANT_PLD, privacy["events_claimed"], privacy["delta"])
    assert privacy["accountant_claimed"].endswith("(PLD)")
    assert "statement" in privacy and "accountant_claimed" in privacy
    # read alone, privacy.json says its epsilon is a heuristic (noise chosen from the private sentences)
    assert privacy["target"] == "sample" and "perplexity" in privacy["heuristic"]


def test_adps_privacy_probabilities_come_from_the_public_base_model(tmp_path, monkeypatch):
    """rho is each private sentence's perplexity under the PUBLIC base model (README): scored by a model trained on
    private data it would be one more unaccounted release. The model ADP scores with holds the base model's weights,
    as the cache holds them, and scores every private train sentence."""
    import importlib

    import torch

    from core.base import load_or_train_base
    from core.data import load_prepared

    adp = importlib.import_module("core.baselines.adp")  # the package's `adp` is the method function
    scored = {}
    real = adp.sequence_perplexities

    def recording(model, seqs, pad_id, **kwargs):
        scored["weights"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        scored["sentences"] = len(seqs)
        return real(model, seqs, pad_id, **kwargs)

    monkeypatch.setattr(adp, "sequence_perplexities", recording)
    cfg, _, _ = run_method(tmp_path, "adp")
    prepared = load_prepared(cfg.data, cfg.seed)
    base, _, info = load_or_train_base(cfg, prepared)
    assert info["cached"] and scored["sentences"] == len(prepared.private_train)
    public = base.state_dict()
    assert scored["weights"].keys() == public.keys()
    assert all(torch.equal(scored["weights"][k].cpu(), public[k].cpu()) for k in public)


def test_pri_gpt_blacklist(tmp_path, monkeypatch):
    from core.baselines import blacklist

    filtered: list[tuple[str, str]] = []  # (generated, as scored)

    def recorded(text, blacklist_items):
        out = real(text, blacklist_items)
        filtered.append((text, out))
        return out

    real = blacklist.apply_blacklist
    monkeypatch.setattr(blacklist, "apply_blacklist", lambda text, blacklist: recorded(text, blacklist))
    _, privacy, metrics = run_method(tmp_path, "pri-gpt-blacklist")
    # every completion scored and written is the filtered one (the pipeline applies the method's post-processing)
    written = [row["completion"] for row in RunDir(tmp_path / "pri-gpt-blacklist").completions()]
    assert len(filtered) == metrics["n_completions"] == len(written) and [out for _, out in filtered] == written
    assert privacy["epsilon"] == math.inf and privacy["unit"] == "none"
    assert privacy["accountant"].startswith("none")
    assert metrics["postprocess"] == "blacklist" and metrics["blacklist_size"] > 0
    # its completions need the list of private names, which the run does not keep: so no weights either
    assert not (tmp_path / "pri-gpt-blacklist" / "model").exists()


def test_pri_gpt_blacklist_leaves_no_private_name_in_its_completions(tmp_path):
    """On a corpus whose users introduce themselves by name: Pri-GPT's completions name private users, the
    blacklisted ones name none (R_name, which matches names in any case, is 0 of the same names; 0.05 with the
    blacklist of capitalised words absent from public text alone)."""
    from tests.analysis.test_phrase_avg_runs import write_corpus

    corpus = str(write_corpus(tmp_path / "named.jsonl"))
    sizes = dict(data__corpus=corpus, data__private_train=200, data__private_valid=20, data__private_test=20,
                 data__public_train=100, data__public_valid=10, decode__n_completions=20, decode__max_new_tokens=12)
    _, _, plain = run_method(tmp_path, "pri-gpt", **sizes)
    _, _, filtered = run_method(tmp_path, "pri-gpt-blacklist", **sizes)
    assert plain["r_name_counts"]["names"] == filtered["r_name_counts"]["names"] >= 10
    assert plain["r_name"] > 0 and filtered["r_name"] == 0.0
    assert filtered["blacklist_names"] >= filtered["r_name_counts"]["names"]
