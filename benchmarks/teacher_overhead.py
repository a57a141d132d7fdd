"""Teacher-phase overhead: M teachers, each trained on 1/M of the private set, against one model on all of it.

    ratio(M) = time to train M teachers on their partitions / time to train one model on the whole private set,
               same epochs, batch size and tiny GPT-2 (target <= 1.2, paper App. I: "roughly equal")

Each teacher must also run once over the distillation positions; that inference costs M x (one pass over the
distillation set) by construction of the method, whatever the implementation, so it is measured once and reported
next to the ratio (and as a full-phase ratio) rather than hidden in it. The one-model time is measured right before
and right after each teacher phase and averaged, so that a change in machine load hits both sides alike.

    python benchmarks/teacher_overhead.py [--teachers 10,100,1000] [--private 2000] [--epochs 2] [--distill 400]
                                          [--executor local|process|ray] [--threads N]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

from common import machine_line, partitions, teacher_job, workload

TARGET = 1.2


def seconds(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teachers", default="10,100,1000")
    parser.add_argument("--private", type=int, default=2000, help="private training sentences (tiny preset: 2000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--distill", type=int, default=400, help="distillation sentences (tiny preset: 400)")
    parser.add_argument("--executor", default="local")
    parser.add_argument("--threads", type=int, help="torch threads (default: SEQPATE_THREADS or all cores)")
    args = parser.parse_args()

    import torch

    from core.models import set_threads
    from core.seqpate.teachers import add_teacher_output, get_executor
    from core.train import train_lm

    set_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    private, distill, pad, model = workload(args.private, args.distill)
    executor = get_executor(args.executor)
    train_only = teacher_job(model, [], pad, args.epochs)  # no distillation positions: training alone

    def train_one():
        train_lm(copy.deepcopy(model), private, pad_id=pad, epochs=args.epochs, lr=1e-3, batch_size=32, seed=0)

    full = teacher_job(model, distill, pad, args.epochs)
    total = torch.zeros(full.n_rows, model.config.vocab_size)
    infer_one = statistics.median(seconds(lambda: add_teacher_output(model, full, total, None)) for _ in range(3))

    print(machine_line())
    print(f"{len(private)} private sentences, {args.epochs} epochs, batch 32, executor {args.executor}; distillation "
          f"set {len(distill)} sentences = {full.n_rows} positions, one teacher's pass over it {infer_one:.2f} s")
    print(f"{'M':>5s} {'one model (s)':>14s} {'M teachers (s)':>15s} {'ratio':>6s}  "
          f"{'+ inference M x pass (s)':>25s} {'full-phase ratio':>17s}")
    for m in [int(x) for x in args.teachers.split(",")]:
        data = partitions(private, m)
        before = seconds(train_one)
        teachers = seconds(lambda data=data: executor.run(train_only, data))
        after = seconds(train_one)
        one = (before + after) / 2
        infer = m * infer_one
        verdict = "meets" if teachers / one <= TARGET else "misses"
        print(f"{m:5d} {one:14.1f} {teachers:15.1f} {teachers / one:6.2f}  {infer:25.1f} "
              f"{(teachers + infer) / one:17.2f}   ({verdict} <= {TARGET}; one model {before:.1f}/{after:.1f} s)",
              flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
