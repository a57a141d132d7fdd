"""Training step time when several jobs run at once: every job with all cores as torch threads (torch's default)
against each job with its share of the cores (what core.runs.jobs.launch gives a job, job_threads).

Each job is a separate process training the `quick` preset's GPT-2 (B=32 sentences of L=32 tokens, Adam) for a
fixed number of steps; all jobs of a row start together. The figure is the median step time per job. The two thread
counts alternate, --repeats times each, since oversubscribed threads make the slow figure vary widely from one
try to the next; the script prints every try's ratio and their median.

    python benchmarks/concurrent_jobs.py [--steps 30] [--jobs 1 2 3] [--repeats 3]

With --launch it instead starts real background jobs the way the dashboard does (core.runs.jobs.launch, with
SEQPATE_MAX_JOBS=N): N `tiny` Pri-GPT runs (seeds 0..N-1, base models from the artefact cache once trained), first
with each job's share of the cores, then with all cores each, and prints their wall time from launch to done.

    python benchmarks/concurrent_jobs.py --launch [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from common import machine_line  # also puts the repository on sys.path


def train_steps(threads: int, steps: int) -> float:
    """Median seconds per training step of the quick model with `threads` torch threads (3 warm-up steps)."""
    import torch

    from core.config import preset_config
    from core.models import build_tiny_gpt2

    torch.set_num_threads(threads)
    cfg = preset_config("quick").model
    torch.manual_seed(0)
    model = build_tiny_gpt2(cfg, cfg.vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(1, cfg.vocab_size, (32, 32), generator=torch.Generator().manual_seed(0))
    times = []
    for k in range(3 + steps):
        start = time.perf_counter()
        loss = model(ids, labels=ids).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if k >= 3:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_together(jobs: int, threads: int, steps: int) -> float:
    """Start `jobs` processes at once; the mean of their median step times."""
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(threads), "--steps", str(steps)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(jobs)]
    return statistics.mean(json.loads(p.communicate()[0]) for p in procs)


def launch_together(n_jobs: int, threads: str | None) -> tuple[float, list[float]]:
    """Launch n_jobs tiny Pri-GPT runs as background jobs (SEQPATE_MAX_JOBS=n_jobs; SEQPATE_THREADS=threads, or
    unset for job_threads' share); wall seconds until all are done, and each run's own total."""
    import tempfile

    from core.config import preset_config
    from core.runs import jobs

    os.environ["SEQPATE_MAX_JOBS"] = str(n_jobs)
    if threads is None:
        os.environ.pop("SEQPATE_THREADS", None)
    else:
        os.environ["SEQPATE_THREADS"] = threads
    with tempfile.TemporaryDirectory() as root:
        start = time.perf_counter()
        runs = [jobs.launch(preset_config("tiny", method="pri-gpt", seed=seed).to_dict(), root)
                for seed in range(n_jobs)]
        while any(run.state() not in ("done", "failed", "cancelled") for run in runs):
            time.sleep(0.5)
        wall = time.perf_counter() - start
        if any(run.state() != "done" for run in runs):
            raise SystemExit("a job did not finish: " + "; ".join(run.log_tail() for run in runs))
        return wall, [run.metrics()["timings"]["total_s"] for run in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per job (after 3 warm-up steps)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 3], help="how many jobs run at once")
    parser.add_argument("--repeats", type=int, default=3, help="tries of each thread count, alternating")
    parser.add_argument("--launch", action="store_true", help="time real tiny background jobs instead")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: one job with this many threads
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(train_steps(args.worker, args.steps)))
        return

    from core.runs.jobs import job_threads

    cores = os.cpu_count() or 1
    print(machine_line())
    if args.launch:
        for n_jobs in [j for j in args.jobs if j > 1] or [2]:
            shared, shared_runs = launch_together(n_jobs, None)
            every, every_runs = launch_together(n_jobs, str(cores))
            print(f"{n_jobs} tiny Pri-GPT jobs launched at once, SEQPATE_MAX_JOBS={n_jobs}: {shared:.1f} s with "
                  f"{job_threads(n_jobs)} thread(s) each (runs' totals {', '.join(f'{t:.1f}' for t in shared_runs)} s)"
                  f", {every:.1f} s with {cores} each ({', '.join(f'{t:.1f}' for t in every_runs)} s) = "
                  f"{every / shared:.2f}x", flush=True)
        return
    print(f"quick model, B=32 L=32, median of {args.steps} steps per job; {cores} cores")
    for jobs in args.jobs:
        share = job_threads(jobs)
        if share == cores:
            print(f"{jobs} job(s) at once, {share} thread(s) each: {run_together(jobs, share, args.steps) * 1000:.0f} "
                  "ms/step (job_threads gives all cores)", flush=True)
            continue
        tries = [(run_together(jobs, share, args.steps), run_together(jobs, cores, args.steps))
                 for _ in range(args.repeats)]
        ratios = [every / shared for shared, every in tries]
        print(f"{jobs} job(s) at once, ms/step with {share} thread(s) each (job_threads) vs {cores} each (all cores): "
              + ", ".join(f"{shared * 1000:.0f} vs {every * 1000:.0f}" for shared, every in tries)
              + f"; ratio median {statistics.median(ratios):.2f}x (tries: "
              + ", ".join(f"{r:.2f}x" for r in ratios) + ")", flush=True)

if __name__ == "__main__":
    main()
