"""Where runs compute (SEQPATE_DEVICE): the setting and its refusals everywhere, and the CUDA path on a machine that
has a GPU (those tests skip elsewhere; they ran on an H100, see the README's "Running on a GPU")."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
import torch

from core.config import ConfigError, device_setting
from core.runs.pipeline import execute
from core.runs.store import RunDir
from tests.conftest import micro_config

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_the_device_setting_is_cpu_unless_cuda_is_named(monkeypatch):
    monkeypatch.delenv("SEQPATE_DEVICE", raising=False)
    assert device_setting() == "cpu"  # the default: where a seed repeats a run bit for bit
    for value, expected in (("", "cpu"), (" CUDA ", "cuda"), ("cpu", "cpu")):
        monkeypatch.setenv("SEQPATE_DEVICE", value)
        assert device_setting() == expected
    monkeypatch.setenv("SEQPATE_DEVICE", "gpu")
    with pytest.raises(ConfigError, match="SEQPATE_DEVICE must be cpu or cuda, got 'gpu'"):
        device_setting()


COMMANDS = {"run": ["run", "--method", "pub-gpt", "--preset", "tiny"],
            "synth": ["synth", "--generator", "filter", "--epsilon", "3", "--preset", "tiny"]}


def run_cli(tmp_path, command: str, device: str):
    return core_cli(device, *COMMANDS[command], "--run-dir", str(tmp_path / "run"))


def core_cli(device: str, *args: str):
    env = dict(os.environ, SEQPATE_DEVICE=device)
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_device_is_refused_before_a_run_folder_is_made(tmp_path, command):
    out = run_cli(tmp_path, command, "gpu")
    assert out.returncode == 2 and out.stderr == "error: SEQPATE_DEVICE must be cpu or cuda, got 'gpu'\n"
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
@pytest.mark.parametrize("command", COMMANDS)
def test_cuda_without_a_gpu_is_refused_before_a_run_folder_is_made(tmp_path, command):
    out = run_cli(tmp_path, command, "cuda")
    assert out.returncode == 2 and "SEQPATE_DEVICE=cuda, but torch" in out.stderr and "sees no CUDA GPU" in out.stderr
    assert out.stderr.count("\n") == 1 and not (tmp_path / "run").exists()


def test_a_gpu_base_model_and_its_pseudo_data_are_cached_apart_from_the_cpu_ones():
    """A CPU run must never load a base trained on a GPU, nor pseudo data sampled there: its seed would no longer
    reproduce it (a review found both keyed without the device)."""
    from core.base import base_key
    from core.config import PRIVATE_ONLY_DATA_FIELDS, stable_hash

    cfg = micro_config(method="seqpate")
    data = {k: v for k, v in cfg.to_dict()["data"].items() if k not in PRIVATE_ONLY_DATA_FIELDS}
    before = stable_hash({"data": data, "model": cfg.to_dict()["model"], "seed": cfg.seed})  # the key until now
    assert base_key(cfg) == base_key(cfg, "cpu") == before  # CPU caches made before stay valid
    assert base_key(cfg, "cuda") != before


def test_seqpate_on_a_gpu_trains_its_teachers_with_the_local_executor():
    from core.config import check_device_executor

    for executor in ("process", "ray"):
        with pytest.raises(ConfigError, match=rf"^executor {executor} \(--executor, config seqpate.executor\) with "
                                              "SEQPATE_DEVICE=cuda"):
            check_device_executor("seqpate", executor, "cuda")
        check_device_executor("seqpate", executor, "cpu")  # CPU cores: what those executors spread teachers over
        check_device_executor("pub-gpt", executor, "cuda")  # no teachers to train
    check_device_executor("seqpate", "local", "cuda")


# ----------------------------------------------------------------------------------------------------------------
# The CUDA path (skipped without a GPU)
# ----------------------------------------------------------------------------------------------------------------


@needs_cuda
def test_teacher_sums_on_the_gpu_match_the_cpu():
    from core.seqpate.teachers import teacher_group_sum
    from tests.seqpate.test_executors import micro_job

    job, data = micro_job(4)
    # without dropout a teacher is the same function on both devices (their random streams differ), up to rounding
    no_dropout = {**job.base_config, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
    job = dataclasses.replace(job, base_config=no_dropout)
    on_cpu = teacher_group_sum(job, data)
    on_gpu = teacher_group_sum(dataclasses.replace(job, device="cuda"), data)
    assert on_gpu[0].device.type == "cpu"  # the partial sums come back to the CPU, where the executors add them
    assert torch.allclose(on_gpu[0], on_cpu[0], atol=1e-3)
    assert on_gpu[1].sum() == on_cpu[1].sum() == 4 * job.n_rows  # one vote per teacher and position
    # each vote on the token it goes to on the CPU: a vote may move only where a teacher's top two tokens tie to
    # rounding (a lost vote fails the count above, a misplaced one this)
    moved = (on_gpu[1] != on_cpu[1]).any(-1).float().mean().item()
    assert moved <= 0.02, f"{moved:.1%} of positions vote otherwise on the GPU"


@needs_cuda
def test_sampling_on_the_gpu_draws_what_the_cpu_draws():
    from core.config import DecodeConfig
    from core.evaluation.completions import sample_next

    logits = torch.randn(64, 500, generator=torch.Generator().manual_seed(1)) * 3
    decode = DecodeConfig(top_k=0, top_p=0.95, temperature=1.0)
    on_cpu = sample_next(logits, decode, torch.Generator().manual_seed(5))
    on_gpu = sample_next(logits.cuda(), decode, torch.Generator().manual_seed(5))
    assert (on_gpu.cpu() == on_cpu).float().mean() >= 0.98  # the same uniforms; a cumsum's last bits may differ


@needs_cuda
@pytest.mark.parametrize("method", ["seqpate", "noisysgd", "noisysgd-gc+pseudo", "adp"])
def test_a_run_on_the_gpu_has_the_cpu_run_privacy_and_close_numbers(tmp_path, monkeypatch, method):
    import core.base
    import core.runs.pipeline

    # The GPU run stands on the CPU run's base model and pseudo data, so that only the device differs: runs cache
    # them apart by device, and the micro base model (2 epochs) moves with every draw (on an H100, from their own
    # bases: SeqPATE's PPL 650.9 against 727.0, ADP's multiplier, read off the base model, 4.718 against 5.521).
    cpu_key = core.base.base_key
    for module in (core.base, core.runs.pipeline):
        monkeypatch.setattr(module, "base_key", lambda cfg, device="cpu": cpu_key(cfg))
    metrics, privacy = {}, {}
    for device in ("cpu", "cuda"):
        monkeypatch.setenv("SEQPATE_DEVICE", device)
        cfg = micro_config(method=method)
        run = RunDir.create(tmp_path / device, cfg.to_dict(), cfg.seed)
        metrics[device] = execute(cfg, run)
        privacy[device] = run.privacy()
        assert run.is_complete() and metrics[device]["device"] == device
    # the fields each method records (a key absent on both sides would compare None == None)
    fixed = {"seqpate": ("noise_scale", "query_budget"), "adp": ("noise_multiplier", "sampling_rate", "steps")}.get(
        method, ("noise_multiplier", "sampling_rate", "steps"))
    for key in (*fixed, "accountant", "delta"):
        assert key in privacy["cpu"] and key in privacy["cuda"], key
        if method == "adp" and key == "noise_multiplier":  # ADP's comes from the private sentences' perplexities
            assert privacy["cuda"][key] == pytest.approx(privacy["cpu"][key], rel=1e-6)  # (its heuristic)
            continue
        assert privacy["cuda"].get(key) == privacy["cpu"].get(key), key  # fixed before any private data is read
    if method != "seqpate":  # SeqPATE's spent queries depend on which positions the student finds hard
        assert privacy["cuda"]["epsilon"] == pytest.approx(privacy["cpu"]["epsilon"], abs=1e-9)
    assert metrics["cuda"]["base_model"]["weights_sha256"] == metrics["cpu"]["base_model"]["weights_sha256"]
    assert metrics["cuda"]["ppl"] == pytest.approx(metrics["cpu"]["ppl"], rel=0.05)


@needs_cuda
@pytest.mark.parametrize("generator", ["filter", "pplm", "multitask"])
def test_a_synthetic_data_run_on_the_gpu_has_the_cpu_run_privacy(tmp_path, generator):
    import json

    from tests.synth.test_synth_cli import MICRO

    config = tmp_path / "micro.json"
    config.write_text(json.dumps(MICRO))
    runs = {}
    for device in ("cpu", "cuda"):
        out = core_cli(device, "synth", "--generator", generator, "--epsilon", "3", "--config", str(config),
                       "--run-dir", str(tmp_path / device))
        assert out.returncode == 0, out.stderr[-2000:]
        runs[device] = RunDir(tmp_path / device)
        assert runs[device].metrics()["device"] == device
    cpu, gpu = (runs[d].privacy() for d in ("cpu", "cuda"))
    for key in ("epsilon", "delta", "noise_multiplier", "release_noise_multiplier", "steps_by_stage",
                "sampling_rate"):
        assert gpu.get(key) == cpu.get(key), key  # fixed before training: the same on any device
    samples = {d: (runs[d].path / "samples.jsonl").read_text().splitlines() for d in runs}
    assert len(samples["cuda"]) == len(samples["cpu"]) > 0
