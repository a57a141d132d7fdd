"""Peak resident memory of the teacher phase at M=1000 teachers against M=10 (target ratio <= 1.1).

Each M runs in a fresh subprocess that builds the same workload (private sentences, distillation set, tiny GPT-2)
and then the teacher phase; the child reports its ru_maxrss (peak resident set, a high-water mark) after the set-up
and after the teacher phase. The ratio of the peaks is the figure; the ratio of the teacher phase's own increments
(peak after minus peak before) is printed too, since the process baseline (torch, transformers, the corpus) can
hide growth.

    python benchmarks/teacher_memory.py [--teachers 10,1000] [--private 2000] [--epochs 2] [--distill 100]
                                        [--executor local]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

from common import machine_line, partitions, teacher_job, workload

TARGET = 1.1


def peak_mib(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux reports KiB


def child(args) -> None:
    from core.models import set_threads
    from core.seqpate.teachers import get_executor

    set_threads()
    private, distill, pad, model = workload(args.private, args.distill)
    job = teacher_job(model, distill, pad, args.epochs)
    data = partitions(private, args.child)
    del private
    before = peak_mib()
    get_executor(args.executor).run(job, data)
    print(json.dumps({"before": before, "after": peak_mib(), "children": peak_mib(resource.RUSAGE_CHILDREN),
                      "rows": job.n_rows}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teachers", default="10,1000")
    parser.add_argument("--private", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--distill", type=int, default=100)
    parser.add_argument("--executor", default="local")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    from core.models import set_threads

    set_threads()  # as the children do, so that the machine line shows their thread count
    print(machine_line())
    results = {}
    for m in [int(x) for x in args.teachers.split(",")]:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(m), "--private", str(args.private),
               "--epochs", str(args.epochs), "--distill", str(args.distill), "--executor", args.executor]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        r = results[m] = json.loads(out)
        workers = f", largest worker {r['children']:.0f} MiB" if args.executor != "local" else ""
        print(f"M={m:5d}: peak {r['after']:7.0f} MiB (after set-up {r['before']:6.0f} MiB, teacher phase "
              f"+{r['after'] - r['before']:5.0f} MiB{workers}; {r['rows']} distillation positions)", flush=True)
    lo, hi = results[min(results)], results[max(results)]
    ratio = hi["after"] / lo["after"]
    growth = (hi["after"] - hi["before"]) / max(lo["after"] - lo["before"], 1.0)
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"peak ratio M={max(results)} / M={min(results)}: {ratio:.3f} ({verdict} the target <= {TARGET}); "
          f"teacher-phase increment ratio {growth:.3f}")
    print(machine_line())


if __name__ == "__main__":
    main()
