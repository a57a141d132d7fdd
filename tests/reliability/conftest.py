"""Fixtures of the reliability tests: the real command line, real background jobs, a small real corpus.

Jobs here are the real engine (`python -m core job`), not the stand-in scripts of tests/runs, so they are kept
tiny: a corpus of a few hundred real chitchat sentences (loads at once) and sizes a fraction of micro_config's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.data import load_chitchat
from core.runs import jobs
from core.runs.store import TERMINAL, RunDir, pid_alive
from tests.conftest import micro_config
from tests.dashboard.fake_runs import write_run
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]

# Sizes for real jobs: seconds of work after the imports (which dominate on a busy 2-core machine).
NANO = dict(
    data__private_train=120, data__private_valid=10, data__private_test=20,
    data__public_train=80, data__public_valid=10,
    model__vocab_size=512, model__pretrain_epochs=1,
    decode__n_completions=10, decode__max_new_tokens=8,
    seqpate__teachers=3, seqpate__distill_sentences=20, seqpate__query_budget=30,
)


def cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m core ...` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO_ROOT, env=env)


def one_line_error(out: subprocess.CompletedProcess, message: str) -> None:
    """The contract for bad input: exit code 2, exactly one stderr line holding message, no traceback."""
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert message in lines[0], lines[0]


def tree_snapshot(path: Path) -> dict[str, bytes]:
    """Every file under path with its bytes (hidden lock files included): equal snapshots = untouched."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> Path:
    """The first 700 real chitchat utterances of 8+ words, with their sender ids, as a .jsonl corpus."""
    records = [r for r in load_chitchat() if len(r.text.split()) >= 8][:700]
    path = tmp_path_factory.mktemp("corpus") / "chitchat-small.jsonl"
    path.write_text("".join(json.dumps({"text": r.text, "user_id": r.user_id}) + "\n" for r in records))
    return path


@pytest.fixture(scope="session")
def nano(small_corpus) -> Callable[..., object]:
    """nano(**overrides) -> RunConfig: micro_config shrunk further, on the small corpus."""

    def make(**overrides):
        return micro_config(**{**NANO, "data__corpus": str(small_corpus), **overrides})

    return make


def make_roots(base: Path) -> dict[str, Path]:
    """A live root, a cached root and an artefact cache under base."""
    paths = {"live": base / "runs", "cached": base / "cached_runs", "cache": base / "cache"}
    for p in paths.values():
        p.mkdir(parents=True, exist_ok=True)
    return paths


@contextmanager
def roots_env(roots: dict[str, Path], max_jobs: int = 1) -> Iterator[None]:
    """Point the engine (and the jobs launched meanwhile, which inherit os.environ) at these roots."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEQPATE_RUNS_DIR", str(roots["live"]))
        mp.setenv("SEQPATE_CACHED_RUNS_DIR", str(roots["cached"]))
        mp.setenv("SEQPATE_CACHE", str(roots["cache"]))
        mp.setenv("SEQPATE_MAX_JOBS", str(max_jobs))
        mp.setenv("SEQPATE_THREADS", "1")
        yield


@contextmanager
def no_stray_jobs(launched: list[RunDir]) -> Iterator[None]:
    """Jobs run in sessions of their own: should a scenario fail half-way, stop what it launched."""
    try:
        yield
    finally:
        for run in launched:
            status = run.status() or {}
            if status.get("state") not in TERMINAL and pid_alive(status.get("pid")):  # a killed one stays as is
                jobs.cancel(run, grace_seconds=1.0)


@pytest.fixture(scope="session")
def three_jobs(tmp_path_factory, nano):
    """Three real jobs (pub-gpt, pri-gpt, seqpate) launched at once with two slots, so one has to queue.

    Returns (roots, {method: RunDir}, the private sentences of their data)."""
    from core.data import load_prepared

    roots = make_roots(tmp_path_factory.mktemp("three-jobs"))
    configs = {m: nano(method=m) for m in ("pub-gpt", "pri-gpt", "seqpate")}
    runs: dict[str, RunDir] = {}
    launched: list[RunDir] = []
    with roots_env(roots, max_jobs=2), no_stray_jobs(launched):
        for method, cfg in configs.items():
            runs[method] = jobs.launch(cfg.to_dict(), roots["live"], run_id=f"job-{method}")
            launched.append(runs[method])
        finished = wait_for(lambda: all(r.state() in TERMINAL for r in runs.values()), 300, 0.2)
    assert finished, {m: (r.status(), r.log_tail(20)) for m, r in runs.items()}
    cfg = configs["seqpate"]
    data = load_prepared(cfg.data, cfg.seed)
    return roots, runs, {s.text for s in data.private}


def _training(run: RunDir) -> bool:
    """True once the base model has finished at least one epoch: the job is mid-training."""
    return any(row.get("stage") == "base-model" and "epoch" in row for row in run.progress())


@pytest.fixture(scope="session")
def faults(tmp_path_factory, nano):
    """Two real jobs launched together next to two finished runs: one SIGKILLed mid-training, one cancelled
    mid-training."""
    roots = make_roots(tmp_path_factory.mktemp("faults"))
    bystanders = [write_run(roots["live"], "bystander-done", "pub-gpt", ppl=77.0),
                  write_run(roots["live"], "bystander-failed", "seqpate", state="failed", error="earlier failure")]
    # Many base-model epochs (and a seed of their own, so no cached base is reused): both jobs are surely
    # mid-training when they are stopped.
    victim_cfg = nano(method="pri-gpt", seed=11, model__pretrain_epochs=60)
    cancel_cfg = nano(method="pri-gpt", seed=12, model__pretrain_epochs=60)
    launched: list[RunDir] = []
    with roots_env(roots, max_jobs=2), no_stray_jobs(launched):
        before = {run.run_id: tree_snapshot(run.path) for run in bystanders}
        victim = jobs.launch(victim_cfg.to_dict(), roots["live"], run_id="victim")
        cancelled = jobs.launch(cancel_cfg.to_dict(), roots["live"], run_id="cancelled")
        launched += [victim, cancelled]
        assert wait_for(lambda: _training(victim), 180), victim.log_tail()
        pid = victim.status()["pid"]
        os.killpg(pid, signal.SIGKILL)  # the job leads its own process group (start_new_session)
        assert wait_for(lambda: not pid_alive(pid), 10)
        raw_after_kill = victim.status()  # nobody has looked yet: the file still says running

        assert wait_for(lambda: _training(cancelled), 180), cancelled.log_tail()
        cancel_pid = cancelled.status()["pid"]
        t0 = time.monotonic()
        jobs.cancel(cancelled)  # what the Runs page's Cancel button calls
        cancel_seconds = time.monotonic() - t0
    return {"roots": roots, "victim": victim, "cancelled": cancelled,
            "raw_after_kill": raw_after_kill, "cancel_seconds": cancel_seconds, "cancel_pid": cancel_pid,
            "bystanders": bystanders, "before": before}


__all__ = ["NANO", "cli", "make_roots", "one_line_error", "roots_env", "tree_snapshot", "wait_for"]
