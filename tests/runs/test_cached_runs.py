"""The runs shipped in cached_runs/: complete, consistent with their config, small, and reproducible."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.config import RunConfig, stable_hash, validate
from core.runs.store import RunDir

CACHED = Path(__file__).resolve().parents[2] / "cached_runs"
ALL_RUNS = sorted(p for p in CACHED.iterdir() if p.is_dir()) if CACHED.is_dir() else []


def is_synth(path: Path) -> bool:
    return str(((RunDir(path).config() or {}).get("config") or {}).get("method", "")).startswith("synth-")


RUNS = [p for p in ALL_RUNS if not is_synth(p)]  # `python -m core run` / sweep runs
SYNTH_RUNS = [p for p in ALL_RUNS if is_synth(p)]  # `python -m core synth` runs
MAX_TOTAL_BYTES = 30 * 1024 * 1024


def test_cached_runs_ship_and_stay_small():
    assert len(RUNS) >= 20, f"expected the sweep plans' runs in {CACHED}, found {len(RUNS)}"
    total = sum(f.stat().st_size for f in CACHED.rglob("*") if f.is_file())
    assert total < MAX_TOTAL_BYTES, f"cached_runs/ holds {total / 2**20:.1f} MiB"
    assert not [f for f in CACHED.rglob("*") if f.suffix in (".bin", ".safetensors", ".pt", ".pth")], "weights"
    assert (CACHED / "REPORT.md").is_file()


@pytest.mark.parametrize("path", RUNS, ids=[p.name for p in RUNS])
def test_cached_run_is_complete_and_matches_its_config(path):
    run = RunDir(path, source="cached")
    assert run.is_complete(), f"{path.name}: missing {run.missing_files()} or state {run.state()}"
    stored = run.config()
    cfg = validate(run.run_config())
    assert stored["config_hash"] == stable_hash(stored["config"])
    assert cfg.to_dict() == RunConfig.from_dict(stored["config"]).to_dict()
    metrics, privacy = run.metrics(), run.privacy()
    assert math.isfinite(metrics["ppl"]) and metrics["ppl"] > 1
    assert 0 <= metrics["bleu4"] <= 100
    assert len(run.completions()) == metrics["n_completions"] == cfg.decode.n_completions
    if cfg.method in ("pub-gpt", "pub-gpt+pseudo"):
        assert privacy["epsilon"] == 0.0
    elif cfg.method in ("pri-gpt", "pri-gpt-blacklist"):
        assert math.isinf(privacy["epsilon"])
    elif cfg.privacy.target == "sample" and math.isfinite(cfg.privacy.epsilon):
        # the epsilon recomputed from the recorded events never exceeds the target
        assert privacy["epsilon"] <= cfg.privacy.epsilon + 1e-6
        assert privacy["events"], "a DP run must record its mechanism events"


@pytest.mark.parametrize("path", SYNTH_RUNS, ids=[p.name for p in SYNTH_RUNS])
def test_cached_synth_run_is_complete_and_matches_its_config(path):
    from core.synth.config import SynthConfig

    run = RunDir(path, source="cached")
    assert run.is_complete(), f"{path.name}: missing {run.missing_files()} or state {run.state()}"
    stored = run.config()
    assert stored["config_hash"] == stable_hash(stored["config"])
    synth = SynthConfig.from_dict(stored["config"]["synth"])
    metrics, privacy = run.metrics(), run.privacy()
    assert metrics["generator"] == synth.generator and stored["config"]["method"] == f"synth-{synth.generator}"
    assert 0.0 <= metrics["accuracy_synthetic"] <= 1.0 and 0.0 <= metrics["accuracy_real"] <= 1.0
    samples = [json.loads(line) for line in run.read_text("samples.jsonl").splitlines()]
    assert len(samples) == metrics["n_synthetic"] and {s["label"] for s in samples} <= set(metrics["data"]["labels"])
    if math.isinf(synth.epsilon):
        assert math.isinf(privacy["epsilon"])
    else:
        assert privacy["epsilon"] <= synth.epsilon + 1e-6 and privacy["events"]


def test_rerunning_a_cached_run_reproduces_its_metrics(tmp_path, monkeypatch):
    """Seeded reruns agree: the tiny Pri-GPT run (base model and fine-tuning from scratch, about a minute on 2
    cores) gives the same perplexity within 2%. The shipped runs were made with 2 torch threads; another thread
    count changes float summation order (measured with 1 thread: 278.47 against the shipped 275.04, 1.2%). Runs that sample pseudo data are not used here: a last-bit difference in
    the base model changes which tokens are sampled, and measured across thread counts the tiny Pub-GPT+pseudo
    perplexity moved by 7% (988.8 -> 919.0), so their seeded reproducibility holds for the same threads only."""
    from core.runs.pipeline import execute

    source = next(p for p in RUNS if (RunDir(p).config() or {}).get("config", {}).get("method") == "pri-gpt"
                  and RunDir(p).config()["config"]["preset"] == "tiny" and not RunDir(p).config()["config"]["data"]
                  ["canaries"])
    cached = RunDir(source, source="cached")
    cfg = cached.run_config()
    run = RunDir.create(tmp_path / "rerun", cfg.to_dict(), cfg.seed)
    monkeypatch.setenv("SEQPATE_THREADS", "2")
    metrics = execute(cfg, run)
    assert metrics["ppl"] == pytest.approx(cached.metrics()["ppl"], rel=0.02)
