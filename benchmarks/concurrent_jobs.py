"""Training step time when several jobs run at once: every job with all cores as torch threads (torch's default)
against each job with its share of the cores (what core.runs.jobs.launch gives a job, job_threads).

Each job is a separate process training the `quick` preset's GPT-2 (B=32 sentences of L=32 tokens, Adam) for a
fixed number of steps; all jobs of a row start together. The figure is the median step time per job. The two thread
counts alternate, --repeats times each, since oversubscribed threads make the slow figure vary widely from one
try to the next; the script prints every try's ratio and their median.

    python benchmarks/concurrent_jobs.py [--steps 30] [--jobs 1 2 3] [--repeats 3]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per job (after 3 warm-up steps)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 3], help="how many jobs run at once")
    parser.add_argument("--repeats", type=int, default=3, help="tries of each thread count, alternating")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: one job with this many threads
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(train_steps(args.worker, args.steps)))
        return

    from core.runs.jobs import job_threads

    cores = os.cpu_count() or 1
    print(machine_line())
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
