"""Wall time of whole runs through the same pipeline the CLI and dashboard use (core.runs.pipeline.execute).

Targets: SeqPATE on the `quick` preset under 10 minutes on 2 cores, on `tiny` under 1 minute (at the preset's
number of teachers, or at --teachers M). The public base model
is trained once per preset and cached (every later run, of any method, loads it), so it is trained and timed
separately first; each method's wall time then covers data, method and evaluation. SeqPATE runs first and so
pays for generating the pseudo data, which later methods (pub-gpt+pseudo, noisysgd+pseudo...) load from the cache.

    python benchmarks/end_to_end.py [--preset quick,tiny] [--methods all | seqpate,pri-gpt,...]
                                    [--executor local|process|ray] [--teachers M] [--cache DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from common import machine_line

TARGETS = {"quick": 600.0, "tiny": 60.0}  # SeqPATE wall time, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick,tiny")
    parser.add_argument("--methods", default="all", help="comma list, or all (SeqPATE first, then the baselines)")
    parser.add_argument("--executor", default="local", help="SeqPATE teacher-phase executor")
    parser.add_argument("--teachers", type=int, help="SeqPATE teachers for every preset given (default: each preset's)")
    parser.add_argument("--cache", help="artefact cache (default: a fresh temporary folder)")
    parser.add_argument("--keep", help="write the run folders here instead of a temporary folder")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="e2e-"))
    os.environ["SEQPATE_CACHE"] = args.cache or str(work / "cache")  # before core reads it

    from core.base import load_or_train_base
    from core.config import METHODS, preset_config
    from core.data import load_prepared
    from core.models import compute_device, set_threads
    from core.runs.pipeline import execute
    from core.runs.store import RunDir

    set_threads()
    methods = ["seqpate", *[m for m in METHODS if m != "seqpate"]] if args.methods == "all" else args.methods.split(",")
    print(machine_line(), flush=True)
    rows = []
    for preset in args.preset.split(","):
        cfg = preset_config(preset, seqpate__executor=args.executor)
        t = time.perf_counter()
        _, _, info = load_or_train_base(cfg, load_prepared(cfg.data, cfg.seed), device=compute_device())
        base_s = time.perf_counter() - t
        print(f"[{preset}] base model ({'cached' if info.get('cached') else 'trained'}): {base_s:.1f} s", flush=True)
        for method in methods:
            overrides = {"seqpate__teachers": args.teachers} if args.teachers else {}
            cfg = preset_config(preset, method=method, seqpate__executor=args.executor, **overrides)
            run = RunDir.create(work / f"{preset}-{method}", cfg.to_dict(), cfg.seed)
            t = time.perf_counter()
            metrics = execute(cfg, run)
            wall = time.perf_counter() - t
            parts = {**metrics["timings"], **metrics.get("seqpate_timings", {})}
            detail = ", ".join(f"{k.removesuffix('_s')} {v:.0f}" for k, v in parts.items()
                               if k.endswith("_s") and k not in ("total_s", "base_model_s"))
            rows.append((preset, method, wall, metrics.get("ppl"), detail))
            print(f"[{preset}] {method:20s} {wall:7.1f} s  ppl {metrics.get('ppl', float('nan')):8.2f}  ({detail})  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            if method == "seqpate" and preset in TARGETS:
                verdict = "meets" if wall <= TARGETS[preset] else "misses"
                print(f"[{preset}] seqpate (M = {cfg.seqpate.teachers}) {wall:.0f} s {verdict} the target "
                      f"< {TARGETS[preset]:.0f} s "
                      f"(+ {base_s:.0f} s base model once per preset)", flush=True)
    print("\npreset  method               wall (s)")
    for preset, method, wall, _, _ in rows:
        print(f"{preset:7s} {method:20s} {wall:8.1f}")
    print(machine_line())
    print(f"runs in {work}")


if __name__ == "__main__":
    main()
