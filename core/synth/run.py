"""One synthetic-data run: labelled data -> public base model -> DP fine-tuning -> generation -> evaluation.

Writes a run directory in the common format (core.runs.store.RunDir) with method `synth-<generator>`, plus
samples.jsonl (label, text), embeddings.csv (x, y, label: 2-D projection of the real test embeddings) and
statement.md (what the epsilon covers, and what the run releases outside it).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import torch

from core.analysis.audit import STATEMENT
from core.analysis.statement import synth_statement
from core.base import load_or_train_base
from core.models import clone, compute_device, cpu_info, set_threads
from core.privacy.streams import SYNTH_GENERATION, SYNTH_HEAD_INIT, stream_seed
from core.runs.pipeline import progress_logger
from core.runs.store import RunDir, jsonl_text
from core.synth.config import SynthConfig
from core.synth.evaluate import (
    classifier_accuracy,
    ngram_ratios,
    project_2d,
    separability,
    size_matched_ratios,
)
from core.synth.job import SynthJob
from core.synth.model import Formatter, SynthLM, encode_texts
from core.synth.pplm import PPLMSettings, generate_plain, generate_pplm
from core.synth.train import (
    Batches,
    label_probs,
    lm_test_loss,
    plan_privacy,
    privacy_record,
    text_embeddings,
    train_head,
    train_lm,
)
from core.workspace import within

SAMPLES = "samples.jsonl"
EMBEDDINGS = "embeddings.csv"


# ------------------------------------------------------------------------------------------------------------
# Generation
# ------------------------------------------------------------------------------------------------------------


def _decode(tokenizer, ids: list[int]) -> str:
    return " ".join(tokenizer.decode(ids).split())


def synthesize(cfg: SynthConfig, model: SynthLM, fmt: Formatter, tokenizer, per_label: int,
               log: Callable[..., None]) -> tuple[list[dict], dict]:
    """per_label samples of every label; returns (rows with label, text, disc_prob, kept) and statistics."""
    generator = torch.Generator().manual_seed(stream_seed(cfg.seed, SYNTH_GENERATION))
    settings = PPLMSettings(cfg.pplm_iterations, cfg.pplm_stepsize, cfg.pplm_kl_scale, cfg.pplm_gm_scale,
                            cfg.pplm_gamma)
    rows: list[dict] = []
    stats: dict = {"candidates": 0, "accepted": 0, "filled": 0, "empty": 0, "accepted_per_label": {}}
    budget = per_label * (cfg.filter_rounds if cfg.generator == "filter" else 2)  # candidates per label at most
    for a, label in enumerate(fmt.labels):
        prompt = fmt.prompt(a)
        accepted: list[dict] = []
        rejected: list[dict] = []
        tried = 0
        while len(accepted) < per_label and tried < budget:
            n = min(cfg.gen_batch, budget - tried)
            if cfg.generator == "filter":
                outs = generate_plain(model.lm, prompt, n, cfg.max_new_tokens, cfg.top_p, cfg.temperature,
                                      fmt.eos, generator)
            else:
                outs = generate_pplm(model.lm, model.head, prompt, a, n, cfg.max_new_tokens, cfg.top_p,
                                     cfg.temperature, fmt.eos, generator, settings)
            tried += n
            texts = [_decode(tokenizer, ids) for ids in outs]
            stats["empty"] += sum(not t for t in texts)
            texts = [t for t in texts if t]
            if not texts:
                continue
            probs = label_probs(model, fmt, encode_texts(tokenizer, texts), cfg.seed)[:, a].tolist()
            for text, p in zip(texts, probs, strict=True):
                row = {"label": label, "text": text, "disc_prob": round(p, 4)}
                keep = cfg.generator != "filter" or p > cfg.filter_threshold
                (accepted if keep else rejected).append(row)
            log("generate", fraction=(a + min(len(accepted), per_label) / per_label) / len(fmt.labels),
                label=label, kept=min(len(accepted), per_label), tried=tried)
        stats["candidates"] += tried
        stats["accepted"] += min(len(accepted), per_label)
        stats["accepted_per_label"][label] = min(len(accepted), per_label)
        # too few passed the filter: fill up with the best-scored rejects, so every label has its share
        rejected.sort(key=lambda r: -r["disc_prob"])
        fill = rejected[: max(0, per_label - len(accepted))]
        stats["filled"] += len(fill)
        rows += [{**r, "kept": "accepted"} for r in accepted[:per_label]] + [{**r, "kept": "filled"} for r in fill]
    stats["acceptance_rate"] = stats["accepted"] / max(stats["candidates"], 1)
    return rows, stats


# ------------------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------------------


def evaluate(job: SynthJob, model: SynthLM, fmt: Formatter, tokenizer, samples: list[dict]) -> tuple[dict, list]:
    """Metrics (accuracy, n-gram ratios, separability, ...) and the embedding projection rows."""
    cfg, data = job.cfg, job.data
    train_texts, train_labels = [e.text for e in data.train], [e.label for e in data.train]
    test_texts, test_labels = [e.text for e in data.test], [e.label for e in data.test]
    syn_texts, syn_labels = [s["text"] for s in samples], [s["label"] for s in samples]
    real_acc, reference = classifier_accuracy(train_texts, train_labels, test_texts, test_labels)
    syn_acc, _ = classifier_accuracy(syn_texts, syn_labels, test_texts, test_labels)
    agreement = (float(np.mean(reference.predict(syn_texts) == np.asarray(syn_labels)))
                 if reference is not None and syn_texts else None)
    test_ids = encode_texts(tokenizer, test_texts)
    emb = text_embeddings(model, fmt, test_ids, cfg.seed).numpy()
    disc_acc = float(np.mean(np.argmax(emb @ model.head.weight.detach().cpu().numpy().T
                                       + model.head.bias.detach().cpu().numpy(), axis=1)
                             == np.asarray([data.index(y) for y in test_labels])))
    coords = project_2d(emb, cfg.seed, cfg.projection)
    points = [{"x": float(x), "y": float(y), "label": label}
              for (x, y), label in zip(coords, test_labels, strict=True)]
    metrics = {
        "accuracy_synthetic": syn_acc,  # classifier trained on synthetic data, tested on real test data
        "accuracy_real": real_acc,  # the same classifier trained on the real train set (reference)
        "synthetic_label_agreement": agreement,  # the reference classifier agrees with the synthetic labels
        "ngram_ratios": ngram_ratios(syn_texts, train_texts),  # memorisation: synthetic n-grams in train data
        "ngram_ratios_real_test": ngram_ratios(test_texts, train_texts),  # the same for unseen real text
        "ngram_ratios_size_matched": size_matched_ratios(syn_texts, train_texts, len(test_texts)),
        "separability": separability(emb, test_labels, cfg.rf_trees, cfg.cv_folds, cfg.seed),
        "discriminator_test_accuracy": disc_acc,
        "lm_test_loss": lm_test_loss(model, fmt, test_ids, [data.index(y) for y in test_labels]),
        "classifier": "tf-idf (word 1-2 grams, sublinear tf) + logistic regression (scikit-learn)",
        "separability_model": f"random forest ({cfg.rf_trees} trees), stratified {cfg.cv_folds}-fold CV on "
                              "mean embeddings of the real test texts",
        "projection": cfg.projection,
        "n_synthetic": len(samples),
        "synthetic_per_label": dict(Counter(syn_labels)),
        "data": data.stats(),
    }
    return metrics, points


def _csv(points: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["x", "y", "label"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(points)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------------------


def execute(job: SynthJob, run: RunDir, should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Every stage, writing progress as it goes; returns metrics. Raises on failure (the caller records it)."""
    threads = set_threads()
    device = compute_device()
    cfg, data = job.cfg, job.data
    timings: dict[str, float] = {}
    t0 = time.time()

    log = progress_logger(run, should_stop)

    def span(lo: float, hi: float) -> Callable[..., None]:
        def scaled(stage: str, fraction: float = 0.0, **fields) -> None:
            log(stage, within(lo, hi, fraction), **fields)

        return scaled

    run.set_status(state="running", stage="data", progress=0.0, device=device.type)
    log("data", 0.02, **{k: v for k, v in data.stats().items() if k != "source"}, message=data.source)
    base, tokenizer, base_info = load_or_train_base(job.base, job.prepared, log,
                                                    progress=lambda done: 0.02 + 0.08 * done, device=device)
    timings["base_model_s"] = time.time() - t0

    fmt = Formatter.build(tokenizer, data.labels, cfg.max_tokens, cfg.separator)
    train_ids = encode_texts(tokenizer, [e.text for e in data.train])
    train_y = [data.index(e.label) for e in data.train]
    plan = plan_privacy(cfg, len(train_ids))
    per_release = (f", {plan['release_noise_multiplier']:.4g} on each of the LM and discriminator releases"
                   if plan["releases_per_step"] > 1 else "")
    log("privacy", 0.1, message=f"noise multiplier {plan['noise_multiplier']:.4g}{per_release} for epsilon "
        f"{cfg.epsilon} (delta {plan['delta']:.3g}) over {plan['lm_steps'] + plan['head_steps']} steps",
        noise_multiplier=plan["noise_multiplier"], sampling_rate=plan["sampling_rate"])

    t = time.time()
    batches = Batches(fmt, train_ids, train_y, cfg.seed)
    model = SynthLM(clone(base), len(data.labels))
    # on the CPU (the same initial head on any device), from a stream of its own: seeded `cfg.seed`, its initial
    # weights were the numbers that then drew the first Poisson batch (core.privacy.streams)
    torch.manual_seed(stream_seed(cfg.seed, SYNTH_HEAD_INIT))
    model.head.reset_parameters()
    model = model.to(device)
    model, lm_taken, lm_losses = train_lm(model, batches, cfg, plan["noise_multiplier"], span(0.1, 0.5),
                                          should_stop)
    head_taken, head_losses = 0, []
    if cfg.generator != "multitask":
        model, head_taken, head_losses = train_head(model, batches, cfg, plan["noise_multiplier"],
                                                    span(0.5, 0.6), should_stop)
    privacy = privacy_record(cfg, plan, lm_taken, head_taken)
    timings["train_s"] = time.time() - t

    t = time.time()
    per_label = cfg.samples_per_label or len(data.train) // len(data.labels)
    samples, gen_stats = synthesize(cfg, model, fmt, tokenizer, per_label, span(0.6, 0.9))
    timings["generate_s"] = time.time() - t

    t = time.time()
    log("evaluate", 0.9, message="classifier on synthetic data, n-gram overlap, embedding separability")
    metrics, points = evaluate(job, model, fmt, tokenizer, samples)
    timings["evaluate_s"] = time.time() - t
    timings["total_s"] = time.time() - t0
    metrics.update({
        "generator": cfg.generator,
        "epsilon": privacy["epsilon"],
        "generation": gen_stats,
        "lm_epoch_losses": lm_losses,
        "head_epoch_losses": head_losses,
        "steps": lm_taken + head_taken,
        "noise_multiplier": plan["noise_multiplier"],
        "release_noise_multiplier": plan["release_noise_multiplier"],
        "base_model": base_info,
        "timings": timings,
        "torch_threads": threads,
        "cpu": cpu_info(),
        "device": device.type,
    })
    private = math.isfinite(privacy["epsilon"])
    run.write_privacy(privacy)
    run.write_text(SAMPLES, jsonl_text(samples))
    run.write_text(EMBEDDINGS, _csv(points))
    # completions.jsonl (required by the run format): the samples, prompt as prefix, no reference
    run.write_completions([{"index": i, "prefix": f"BOS {s['label']} SEP", "reference": "", "completion": s["text"],
                            "label": s["label"], "synthetic": True, "contains_private_text": not private}
                           for i, s in enumerate(samples)])
    run.write_metrics(metrics)
    run.write_text(STATEMENT, synth_statement(dataclasses.asdict(cfg), privacy, metrics, run.run_id,
                                                    base_model=job.base.model.source))
    run.log_progress("done", progress=1.0, accuracy_synthetic=metrics["accuracy_synthetic"],
                     separability=metrics["separability"])
    run.set_status(state="done", stage="done", progress=1.0)
    return metrics
