"""Fake runs in the real run format, written with core.runs.store.RunDir (no training).

Used by the dashboard tests and by benchmarks/cold_load.py (which fills a cached-runs folder with ~100 of them).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from core.config import ABLATION_SWITCHES, TEACHER_LOSSES, preset_config
from core.runs.store import RunDir

PREFIXES = [
    "my name is really",
    "I went to the",
    "do you like to",
    "what did you think",
    "we should meet at",
    "my favourite food is",
]
REFERENCES = [
    "Alice Smith and I live in Provo with my two cats.",
    "store yesterday to buy some apples for the pie.",
    "go hiking in the mountains on the weekend?",
    "of the movie we saw with Bob last night?",
    "the library at noon to study for the exam.",
    "pizza with extra cheese and a lot of olives.",
]
PHRASES = ["Alice Smith", "Bob", "Provo", "Carol Jones", "Dave"]

ACCOUNTANTS = {
    "seqpate": "analytic-gaussian (exact composition)",
    "noisysgd": "pld (dp_accounting)",
    "noisysgd+pseudo": "pld (dp_accounting)",
    "noisysgd-gc+pseudo": "pld (dp_accounting)",
    "adp": "pld (dp_accounting)",
}


def privacy_for(method: str, epsilon: float, delta: float = 1e-6, teachers: int = 10,
                query_budget: int = 1000, teachers_per_user: dict | None = None) -> dict[str, Any]:
    if method in ("pub-gpt", "pub-gpt+pseudo"):
        return {"epsilon": 0.0, "delta": 0.0, "accountant": "none (public data only)", "unit": "none", "events": []}
    if method in ("pri-gpt", "pri-gpt-blacklist"):
        return {"epsilon": math.inf, "delta": 0.0, "accountant": "none (private data without protection)",
                "unit": "none", "events": []}
    if method == "seqpate":
        privacy = {
            "epsilon": epsilon * 0.9995, "delta": delta, "accountant": ACCOUNTANTS["seqpate"], "unit": "sample",
            "events": [{"mechanism": "gaussian", "noise_std": 60.0, "sensitivity": math.sqrt(2),
                        "count": query_budget}],
            "query_budget": query_budget, "queries_spent": query_budget, "teachers": teachers,
            "random_streams": ["seqpate noise"],  # as runs record them since 2026-11-27 (core.privacy.streams)
        }
        if teachers_per_user is not None:
            privacy["teachers_per_user"] = teachers_per_user
        return privacy
    return {"epsilon": epsilon * 0.999, "delta": delta, "accountant": ACCOUNTANTS.get(method, "pld (dp_accounting)"),
            "unit": "sample",
            "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 1.1, "sampling_rate": 0.016,
                        "steps": 125}], "random_streams": ["dp-sgd sampling", "dp-sgd noise"]}


def write_run(
    root: Path,
    run_id: str,
    method: str = "seqpate",
    *,
    preset: str = "tiny",
    epsilon: float = 3.0,
    delta: float = 1e-6,
    ppl: float = 120.0,
    bleu4: float = 2.5,
    seed: int = 0,
    state: str = "done",
    stage: str | None = None,
    progress: float | None = None,
    error: str | None = None,
    teachers: int | None = None,
    filter: str | None = None,
    partition: str | None = None,
    ablation: str | None = None,
    canaries: str | None = None,
    r_name: float | None = None,
    phrases: list[dict[str, Any]] | None = None,
    completions: list[str] | None = None,
    teachers_per_user: dict | None = None,
    log: str | None = None,
    config: dict[str, Any] | None = None,
) -> RunDir:
    """One run folder under root. state done writes every artefact; failed/running/queued only the status.
    config: further preset_config overrides (section__field=value)."""
    overrides: dict[str, Any] = {"method": method, "privacy__epsilon": epsilon, "privacy__delta": delta,
                                 "seed": seed}
    for key, value in (("teachers", teachers), ("filter", filter), ("partition", partition),
                       ("ablation", ablation)):
        if value is not None:
            overrides[f"seqpate__{key}"] = value
    if canaries is not None:
        overrides["data__canaries"] = canaries
    cfg = preset_config(preset, **overrides, **(config or {}))
    run = RunDir.create(Path(root) / run_id, cfg.to_dict(), seed)
    if log is not None:
        run.log_path.write_text(log)
    if state == "queued":
        return run
    run.set_status(state="running", stage="data", progress=0.0)
    run.log_progress("data", progress=0.03)
    run.log_progress("base-model", progress=0.1, epoch=1, loss=6.0)
    run.log_progress(method, progress=0.5, loss=4.5, epsilon_spent=epsilon / 2)
    if state == "running":
        run.set_status(stage=stage or method, progress=0.4 if progress is None else progress)
        return run
    if state in ("failed", "cancelled"):
        run.set_status(state=state, stage=stage or method, error=error)
        return run
    run.write_privacy(privacy_for(method, epsilon, delta, cfg.seqpate.teachers, cfg.seqpate.query_budget,
                                  teachers_per_user))
    metrics = {"ppl": ppl, "bleu1": bleu4 * 4, "bleu2": bleu4 * 2, "bleu3": bleu4 * 1.5, "bleu4": bleu4,
               "n_completions": len(PREFIXES), "timings": {"total_s": 61.5}}
    if r_name is not None:
        metrics["r_name"] = r_name
    if method == "seqpate":  # its student's loss on answers, as core.seqpate.run records it
        metrics["teacher_loss"] = TEACHER_LOSSES[ABLATION_SWITCHES[cfg.seqpate.ablation].get("teacher_loss", "kl")]
    run.write_metrics(metrics)
    texts = completions or [f"{method} says something about item {i}" for i in range(len(PREFIXES))]
    run.write_completions([
        {"index": i, "prefix": p, "reference": r, "completion": t, "user_id": f"u{i}", "contains_private_text": True}
        for i, (p, r, t) in enumerate(zip(PREFIXES, REFERENCES, texts, strict=False))
    ])
    if phrases is not None:
        run.write_phrases(phrases)
    run.log_progress("done", progress=1.0, ppl=ppl, bleu4=bleu4)
    run.set_status(state="done", stage="done", progress=1.0)
    return run


def phrase_rows(epsilon_scale: float = 1.0) -> list[dict[str, Any]]:
    return [
        {"phrase": p, "occurrences": 3 + i, "users": 1 + i % 2, "teachers": 1 + i, "epsilon": epsilon_scale * (1 + i)}
        for i, p in enumerate(PHRASES)
    ]


def populate(root: Path, n: int = 100, seed: int = 0) -> list[str]:
    """About n finished runs of every main method over several epsilons and seeds (for the cold-load benchmark)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    plan: list[tuple[str, float, dict[str, Any]]] = []
    for eps in (0.5, 1.0, 3.0, 8.0):
        plan.append(("seqpate", eps, {}))
        plan.append(("noisysgd+pseudo", eps, {}))
        plan.append(("noisysgd", eps, {}))
    for ablation in ("-merge_p", "-kl", "-pseudo", "-effi_kd", "-gaussian"):
        plan.append(("seqpate", 3.0, {"ablation": ablation}))
    for teachers in (2, 5, 20, 50):
        plan.append(("seqpate", 3.0, {"teachers": teachers}))
    plan.append(("seqpate", 3.0, {"filter": "top-k:50"}))
    plan += [("pub-gpt", 3.0, {}), ("pub-gpt+pseudo", 3.0, {}), ("pri-gpt", 3.0, {})]
    i = 0
    while len(ids) < n:
        method, eps, extra = plan[i % len(plan)]
        seed_i = i // len(plan)
        run_id = f"bench-{i:03d}-{method.replace('+', '-')}-eps{eps:g}-s{seed_i}"
        quality = {"pub-gpt": 0.0, "pub-gpt+pseudo": 0.4, "pri-gpt": 4.0}.get(method, 1.0 + math.log1p(eps))
        write_run(
            root, run_id, method, epsilon=eps, seed=seed_i, ppl=300 / (1 + quality) + rng.random() * 5,
            bleu4=quality + rng.random() * 0.3, r_name=0.01 * quality,
            phrases=phrase_rows(eps / 3) if method == "seqpate" else None,
            teachers_per_user={"1": 800, "2": 120, "3": 30, ">3": 10, "mean": 1.3} if method == "seqpate" else None,
            **extra,
        )
        ids.append(run_id)
        i += 1
    return ids


SYNTH_LABELS = ("film", "music", "smell")


def write_synth_run(root: Path, run_id: str, generator: str, epsilon: float, accuracy: float,
                    n_test: int = 400, separability: float = 0.4, size_matched: dict | None = None) -> None:
    """A finished `python -m core synth` run in the real run format (samples, embeddings, n-gram ratios).
    size_matched: its ngram_ratios_size_matched (runs made before 2026-11-27 have none until audited)."""
    config = {"method": f"synth-{generator}", "preset": "tiny", "seed": 0,
              "privacy": {"epsilon": epsilon, "delta": 1 / 600}, "synth": {"generator": generator},
              "base": preset_config("tiny", method="pub-gpt").to_dict()}  # the public base model's core config
    run = RunDir.create(root / run_id, config, 0)
    run.write_privacy({"epsilon": epsilon if math.isinf(epsilon) else epsilon * 0.999, "delta": 1 / 600,
                       "accountant": "pld (dp_accounting)", "unit": "none" if math.isinf(epsilon) else "sample",
                       "events": [], "random_streams": ["synth lm", "synth head init"]})
    run.write_metrics({"accuracy_synthetic": accuracy, "accuracy_real": 0.6, "separability": separability,
                       "synthetic_label_agreement": 0.5, "n_synthetic": 6, "projection": "umap",
                       "ngram_ratios": {str(n): 0.1 / n for n in range(3, 8)},
                       "ngram_ratios_real_test": {str(n): 0.2 / n for n in range(3, 8)},
                       "data": {"labels": list(SYNTH_LABELS), "test": n_test},
                       **({"ngram_ratios_size_matched": size_matched} if size_matched else {}),
                       **({"generation": {"candidates": 24, "accepted": 2, "filled": 4, "empty": 0,
                                          "acceptance_rate": 2 / 24}} if generator == "filter" else {})})
    samples = [{"label": label, "text": f"a {label} sample {k}", "disc_prob": 0.5, "kept": "accepted"}
               for label in SYNTH_LABELS for k in range(2)]
    run.write_text("samples.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
    run.write_text("embeddings.csv", "x,y,label\n" + "".join(f"{i},{i * 2},{SYNTH_LABELS[i % 3]}\n" for i in range(9)))
    run.write_completions([{"index": i, "prefix": f"BOS {s['label']} SEP", "reference": "", "completion": s["text"],
                            "label": s["label"], "synthetic": True,
                            "contains_private_text": math.isinf(epsilon)}  # as core.synth.run marks them
                           for i, s in enumerate(samples)])
    run.log_progress("done", progress=1.0)
    run.set_status(state="done", stage="done", progress=1.0)
