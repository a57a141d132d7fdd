"""One run from config to finished run directory: data -> public base model -> method -> evaluation.

Every method returns a `MethodResult`; evaluation is identical for all of them (same test sentences, same test
prefixes, same seeded decoding), so the dashboard can compare runs fairly.
"""

from __future__ import annotations

import math
import signal
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from core.base import base_is_cached, load_or_train_base
from core.config import RunConfig, check_device_executor, check_private_size
from core.data import load_prepared, split_prefix
from core.evaluation import (
    bleu_scores,
    complete,
    completion_seed,
    perplexity_from_nll,
    sentence_nll,
    total_nll,
)
from core.models import compute_device, cpu_info, set_threads
from core.runs.store import METHOD_END, METHOD_START_CACHED, METHOD_START_TRAINING, RunDir
from core.workspace import MethodResult, Workspace


class Cancelled(BaseException):
    """Raised inside a job when it is asked to stop (SIGTERM or a cancel marker). Like KeyboardInterrupt, a stop is
    not an error: no `except Exception` on the run's path (a model load's, a tokenizer's) may turn it into one."""


class Terminated(Cancelled):
    """SIGTERM reached the job: a cancel when the run's cancel marker is there (jobs.cancel writes it first), a stop
    from outside the bench otherwise (a shutdown, a kill); jobs.record_stop tells them apart."""


ECHO_EVERY_S = 10.0  # at most one progress line on stderr this often, new stages, epochs and messages apart


def progress_line(entry: dict) -> str:
    """One progress.jsonl entry as a line a person reads: local time, stage, percent, then its fields (tables such
    as the teachers-per-user histogram stay in progress.jsonl)."""
    try:
        clock = datetime.fromisoformat(entry["time"]).astimezone().strftime("%H:%M:%S")  # stored in UTC
    except (KeyError, TypeError, ValueError):
        clock = "?"
    parts = [f"[{clock}]", str(entry.get("stage"))]
    if isinstance(entry.get("progress"), int | float):
        parts.append(f"{entry['progress']:.0%}")
    for key, value in entry.items():
        if key in ("time", "stage", "progress") or isinstance(value, dict | list):
            continue
        if key == "message":
            parts.append(str(value))
        elif isinstance(value, float):
            parts.append(f"{key}={value:.4g}")
        else:
            parts.append(f"{key}={value}")
    return "  ".join(parts)


def progress_logger(run: RunDir, should_stop: Callable[[], bool], echo: TextIO | None = None) -> Callable[..., None]:
    """log(stage, progress=None, **fields): a line in progress.jsonl (the dashboard's source), and on stderr (a
    terminal, or a job's log.txt) a readable copy of each new stage, epoch, message and loss (once an epoch), and
    otherwise at most one every ECHO_EVERY_S; raises Cancelled once should_stop() says so.

    The copy is a courtesy: a stderr that is closed or gone (`run ... 2>&1 | head -1`, a closed terminal) stops
    the copies, never the run."""
    state = {"stage": None, "epoch": None, "time": 0.0, "echo": echo if echo is not None else sys.stderr}

    def log(stage: str, progress: float | None = None, **fields) -> None:
        if should_stop():
            raise Cancelled()
        entry = run.log_progress(stage, **({"progress": progress} if progress is not None else {}), **fields)
        now = time.monotonic()
        # a new epoch, not a line that names its epoch: DP-SGD's step lines all do, and each was echoed (63 in 69 s);
        # an epoch's loss line too, which a step pulse of the same epoch came before
        new_epoch = "epoch" in fields and fields["epoch"] != state["epoch"]
        due = (stage != state["stage"] or new_epoch or "message" in fields or "loss" in fields
               or now - state["time"] >= ECHO_EVERY_S)
        if "epoch" in fields:
            state["epoch"] = fields["epoch"]
        if due and state["echo"] is not None:
            try:
                print(progress_line(entry), file=state["echo"], flush=True)
            except (OSError, ValueError):  # ValueError: a closed file
                state["echo"] = None
            state.update(stage=stage, time=now)

    return log


def evaluate(
    model, ws: Workspace, postprocess: Callable[[str], str] | None = None
) -> tuple[dict, list[dict], list[tuple[float, int]]]:
    """Corpus perplexity on private test sentences (and each sentence's NLL, for paired comparisons); seeded
    completions of test prefixes; BLEU-1..4."""
    cfg = ws.cfg
    test = ws.data.private_test
    test_nll = sentence_nll(model, ws.encode([s.text for s in test]), ws.pad_id)
    ppl = perplexity_from_nll(*total_nll(test_nll))
    if math.isnan(ppl):  # a run would finish "done" with a perplexity no table can order
        raise RuntimeError("the model's test loss is NaN: training diverged (a learning rate too high?) or the "
                           "weights it started from hold NaN or inf")
    chosen = test[: cfg.decode.n_completions]
    pairs = [split_prefix(s.text, cfg.data.prefix_words) for s in chosen]
    prefixes = [p for p, _ in pairs]
    references = [r for _, r in pairs]
    hyps = complete(model, ws.tokenizer, prefixes, cfg.decode, seed=completion_seed(cfg.seed))
    if postprocess is not None:
        hyps = [postprocess(h) for h in hyps]
    metrics = {
        "ppl": ppl,
        **bleu_scores(hyps, references),
        "n_test_sentences": len(test),
        "n_completions": len(chosen),
    }
    # Completions quote private test sentences (reference) by design: they are marked so.
    completions = [
        {
            "index": i,
            "prefix": p,
            "reference": r,
            "completion": h,
            "user_id": s.user_id,
            "contains_private_text": True,
        }
        for i, (s, p, r, h) in enumerate(zip(chosen, prefixes, references, hyps, strict=True))
    ]
    return metrics, completions, test_nll


def method_function(name: str) -> Callable[[Workspace], MethodResult]:
    from core.baselines import METHODS as BASELINES

    if name == "seqpate":
        from core.seqpate.run import run_seqpate

        return run_seqpate
    if name in BASELINES:
        return BASELINES[name]
    raise ValueError(f"method {name!r} is not implemented yet")


def execute(cfg: RunConfig, run: RunDir, should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Run every stage, writing progress as it goes; returns metrics. Raises on failure (the caller records it)."""
    threads = set_threads()
    device = compute_device()
    check_device_executor(cfg.method, cfg.seqpate.executor, device.type)  # a dashboard job or a sweep's run
    timings: dict[str, float] = {}
    t0 = time.time()

    log = progress_logger(run, should_stop)
    run.set_status(state="running", stage="data", progress=0.0, device=device.type)
    log("data", 0.01, message=f"loading {cfg.data.corpus}")
    data = load_prepared(cfg.data, cfg.seed)
    check_private_size(cfg, len(data.private_train))  # delta < 1/n etc., when the preset left n open
    log(
        "data",
        0.03,
        public_train=len(data.public_train),
        private_train=len(data.private_train),
        private_test=len(data.private_test),
    )
    timings["data_s"] = time.time() - t0

    t = time.time()
    # Training the base model can take longer than the method itself (19 of the 21 s of a tiny Pub-GPT run on a
    # fresh clone), so it gets half the progress bar when it trains. The split is chosen before the base's lock is
    # taken (a run that waits for another to train it keeps the half) and logged: pacing reads it.
    method_start = METHOD_START_CACHED if base_is_cached(cfg, device.type) else METHOD_START_TRAINING
    log("base-model", 0.04, method_start=method_start)
    model, tokenizer, base_info = load_or_train_base(cfg, data, log,
                                                     progress=lambda done: 0.04 + (method_start - 0.04) * done,
                                                     device=device)
    timings["base_model_s"] = time.time() - t

    ws = Workspace(
        cfg=cfg,
        data=data,
        tokenizer=tokenizer,
        base_model=model,
        base_info=base_info,
        log=log,
        should_stop=should_stop,
        progress_span=(method_start, METHOD_END),
        device=device.type,
    )
    t = time.time()
    log(cfg.method, method_start, message=f"method {cfg.method}")
    result = method_function(cfg.method)(ws)
    timings["method_s"] = time.time() - t

    t = time.time()
    log("evaluate", 0.92, message="perplexity and completions on private test data")
    metrics, completions, test_nll = evaluate(result.model, ws, result.postprocess)
    timings["evaluate_s"] = time.time() - t
    timings["total_s"] = time.time() - t0
    metrics = {**metrics, **result.metrics, "timings": timings, "base_model": base_info, "torch_threads": threads,
               "cpu": cpu_info(), "device": device.type}
    from core.analysis.audit import audit_run  # phrases.csv, statement.md, r_name, exposure
    from core.analysis.statement import privacy_labels

    metrics = audit_run(ws, result, metrics, completions, run)

    if result.postprocess is None:  # the blacklist's post-processing needs private names the run does not keep
        from core.runs.live import save_model

        save_model(result.model, ws.tokenizer, run)
    run.write_privacy({**result.privacy, **privacy_labels(cfg)})  # the target, and a heuristic said so
    run.write_completions(completions)
    run.write_test_nll(test_nll)
    run.write_metrics(metrics)
    run.log_progress("done", progress=1.0, ppl=metrics["ppl"], bleu4=metrics["bleu4"])
    run.set_status(state="done", stage="done", progress=1.0)
    return metrics


def install_sigterm_handler() -> None:
    """Turn SIGTERM (a cancel from the dashboard, or a stop from outside) into a clean Terminated exception."""

    def handler(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)
