"""The runs shipped in cached_runs/: complete, consistent with their config, small, and reproducible."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.analysis.statement import privacy_labels
from core.config import RunConfig, stable_hash, validate
from core.runs.store import RunDir
from tests.conftest import PRIVATE_TRAINING_STAGES, check_private_training_releases_nothing_unaccounted

CACHED = Path(__file__).resolve().parents[2] / "cached_runs"
ALL_RUNS = sorted(p for p in CACHED.iterdir() if p.is_dir()) if CACHED.is_dir() else []


PPLM_SETTINGS = {"pplm_iterations", "pplm_stepsize", "pplm_kl_scale", "pplm_gm_scale", "pplm_gamma"}
FILTER_SETTINGS = {"filter_threshold", "filter_rounds"}
MULTITASK_SETTINGS = {"multitask_clipping", "disc_weight"}


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


def test_every_shipped_leak_rate_recounts_from_the_runs_own_completions_and_names():
    """R_name (App. O) is the share of completions holding a private user's name: recounted here from each shipped
    run's completions.jsonl and the names of its phrases.csv, with a plain whole-word search, not the audit's
    matcher. One run leaks (quick Pri-GPT, seed 2: 0.001), so a recount that found no names would not pass."""
    recounted = {}
    for path in RUNS:
        run = RunDir(path, source="cached")
        names = [row["phrase"] for row in run.phrases() if row["kind"] == "name"]
        if not names or run.metrics().get("r_name") is None:
            continue
        # a name's words in a row, anything but a word character between them (as the audit splits a phrase)
        spelled = ["\\W+".join(map(re.escape, re.findall(r"\w+", name))) for name in names]
        named = re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)", re.IGNORECASE)
        completions = run.completions()
        recounted[path.name] = (sum(bool(named.search(row["completion"])) for row in completions) / len(completions),
                                run.metrics()["r_name"])
    assert len(recounted) > 50 and any(stored > 0 for _, stored in recounted.values())
    assert {name: pair for name, pair in recounted.items() if pair[0] != pytest.approx(pair[1], abs=1e-12)} == {}


def test_the_runs_whose_noise_shared_a_stream_are_the_ones_their_statements_name():
    """core.config.shared_noise_streams (which the dashboard's summaries and privacy cards read) against the
    statements, written from the mechanism kinds: the DP-SGD, ADP and synthetic-data runs made before 2026-11-27
    at a finite epsilon, and SeqPATE's at seed 0 with more than 7 teachers."""
    from core.config import shared_noise_streams

    flagged = set()
    for path in ALL_RUNS:
        stored = RunDir(path).config() or {}
        cfg = stored.get("config") or {}
        method = cfg.get("method", "")
        teachers = (cfg.get("seqpate") or {}).get("teachers", 0) if method == "seqpate" else 0
        shared = shared_noise_streams(method, RunDir(path).privacy(), int(cfg.get("seed", stored.get("seed", 0))),
                                      teachers)
        said = "Made before the noise had random streams of its own" in (path / "statement.md").read_text()
        assert shared == said, path.name
        flagged |= {path.name} if shared else set()
    assert len(flagged) == 89  # of the 94 private runs: SeqPATE's at seeds 1 and 2 and with 1 teacher shared none
    assert {"quick-seqpate-eps3", "tiny-noisysgd-eps3", "synth-quick-filter-eps3", "tiny-adp-eps3"} <= flagged
    assert not {"quick-seqpate-eps3-seed1", "tiny-seqpate-teachers1", "tiny-pri-gpt"} & flagged


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
    check_epsilon_is_recomputed_from_its_events(privacy)
    # privacy.json names its target and says where its epsilon is a heuristic (noise chosen from private data),
    # read alone as well
    labels = privacy_labels(cfg)
    assert {key: privacy.get(key) for key in labels} == labels and privacy.get("heuristic") == labels.get("heuristic")
    if cfg.method in PRIVATE_TRAINING_STAGES:
        check_private_training_releases_nothing_unaccounted(run.progress(), metrics, cfg.method)


def check_epsilon_is_recomputed_from_its_events(privacy: dict) -> None:
    """The shipped epsilon is what core.privacy computes today from the events the run recorded, with the same
    accountant (ADP's label adds how its events were chosen): not typed in, not stale."""
    from core.privacy import epsilon_from_events, events_from_dicts

    if not privacy.get("events"):
        return
    today = epsilon_from_events(events_from_dicts(privacy["events"]), privacy["delta"])
    assert today.epsilon == pytest.approx(privacy["epsilon"], rel=1e-6)
    assert privacy["accountant"].startswith(today.accountant)


@pytest.mark.parametrize("path", SYNTH_RUNS, ids=[p.name for p in SYNTH_RUNS])
def test_cached_synth_run_is_complete_and_matches_its_config(path):
    from core.synth.config import SynthConfig, synth_config
    from core.synth.job import synth_base_config

    run = RunDir(path, source="cached")
    assert run.is_complete(), f"{path.name}: missing {run.missing_files()} or state {run.state()}"
    stored = run.config()
    assert stored["config_hash"] == stable_hash(stored["config"])
    synth = SynthConfig.from_dict(stored["config"]["synth"])
    # shipped runs use today's settings of their preset (the README's tables describe the defaults), apart from
    # settings their generator never reads
    today = synth_config(synth.preset, generator=synth.generator, epsilon=synth.epsilon, seed=synth.seed,
                         corpus=synth.corpus)
    unread = {"filter": PPLM_SETTINGS | MULTITASK_SETTINGS, "pplm": FILTER_SETTINGS | MULTITASK_SETTINGS,
              "multitask": FILTER_SETTINGS}[synth.generator]
    assert {k: v for k, v in synth.to_dict().items() if k not in unread} == {
        k: v for k, v in today.to_dict().items() if k not in unread}
    # the public base model is the one the synth preset names today (quick: trained on all public text)
    base = synth_base_config(synth)
    assert stored["config"]["base"]["data"] == base.to_dict()["data"]
    assert stored["config"]["base"]["model"] == base.to_dict()["model"]
    metrics, privacy = run.metrics(), run.privacy()
    assert metrics["generator"] == synth.generator and stored["config"]["method"] == f"synth-{synth.generator}"
    assert 0.0 <= metrics["accuracy_synthetic"] <= 1.0 and 0.0 <= metrics["accuracy_real"] <= 1.0
    samples = [json.loads(line) for line in run.read_text("samples.jsonl").splitlines()]
    assert len(samples) == metrics["n_synthetic"] and {s["label"] for s in samples} <= set(metrics["data"]["labels"])
    if math.isinf(synth.epsilon):
        assert math.isinf(privacy["epsilon"])
    else:
        assert privacy["epsilon"] <= synth.epsilon + 1e-6 and privacy["events"]
    check_epsilon_is_recomputed_from_its_events(privacy)


@pytest.mark.slow
def test_rerunning_a_cached_run_reproduces_its_metrics(tmp_path):
    """A seeded rerun from the shipped config, as a user does it (`python -m core run --config`, a fresh process,
    an empty artefact cache, 2 torch threads like the shipped runs): the tiny Pri-GPT run, base model and
    fine-tuning from scratch (about a minute on 2 cores).

    Noise stated, measured on one machine: with the public base model retrained from scratch the test perplexity
    of this run came out at 264.3, 275.0, 278.5 (1 thread) and 288.2 against the shipped 275.0, although the
    tokenizer and the data are bitwise identical across processes: the shipped runs' base model drew its initial
    weights before any seed was set (torch seeds itself anew in each process), so no rerun recreates it (seeded
    since; test_models.py checks that the seed now fixes them). Hence 6% here. With the base model (and pseudo
    data) already in the artefact cache a rerun is exact: benchmarks/end_to_end.py reproduced 7 shipped tiny runs
    to every printed digit. Marked slow: a from-scratch rerun is a minute, and the spread makes it a check of gross breakage."""
    source = next(p for p in RUNS if (RunDir(p).config() or {}).get("config", {}).get("method") == "pri-gpt"
                  and RunDir(p).config()["config"]["preset"] == "tiny" and not RunDir(p).config()["config"]["data"]
                  ["canaries"])
    cached = RunDir(source, source="cached")
    env = {**os.environ, "SEQPATE_THREADS": "2", "SEQPATE_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "core", "run", "--config", str(source / "config.json"),
                           "--run-dir", str(tmp_path / "rerun")], env=env, capture_output=True, text=True,
                          timeout=1800, cwd=CACHED.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    rerun = RunDir(tmp_path / "rerun")
    # the same effective config (a run made before a field existed gets that field's default)
    assert rerun.run_config().to_dict() == cached.run_config().to_dict()
    assert rerun.metrics()["ppl"] == pytest.approx(cached.metrics()["ppl"], rel=0.06)
