"""Per-step time of DP-SGD (opacus per-sample hooks, ghost clipping) relative to non-private training.

Same tiny GPT-2 (the tiny preset's shape), same batch (B=32 sentences of L=32 tokens), one optimizer step each
(forward, backward, clip, noise, Adam). The three variants are timed round-robin in one process so that
machine load hits them alike; the ratios, not the absolute times, are the result.

    python benchmarks/dpsgd_step_time.py [--steps 30] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from common import machine_line  # also puts the repository on sys.path

from core.baselines.dpsgd import dp_step, make_private, per_sample_loss
from core.config import ModelConfig
from core.models import build_tiny_gpt2
from core.train import pad_batch

TARGET_GHOST_RATIO = 1.6


def tiny_model(vocab: int, seed: int = 0):
    torch.manual_seed(seed)
    return build_tiny_gpt2(ModelConfig(), vocab)


def plain_stepper(model, seqs, pad_id):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()

    def step():
        ids, mask = pad_batch(seqs, pad_id)
        loss = per_sample_loss(model, ids, mask).mean()  # the DP variants' loss, so only clipping differs
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def dp_stepper(model, seqs, pad_id, ghost: bool):
    model, optimizer, _ = make_private(model, len(seqs), len(seqs), 1.0, 1.0, 1e-3, ghost, poisson=False,
                                      seed=0, stream="benchmark")
    return lambda: dp_step(model, optimizer, seqs, pad_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=ModelConfig().vocab_size)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per variant (after 3 warm-up steps)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    g = torch.Generator().manual_seed(0)
    seqs = [torch.randint(1, args.vocab, (args.length,), generator=g).tolist() for _ in range(args.batch)]
    steppers = {
        "non-private": plain_stepper(tiny_model(args.vocab), seqs, 0),
        "per-sample (opacus hooks)": dp_stepper(tiny_model(args.vocab), seqs, 0, ghost=False),
        "ghost clipping": dp_stepper(tiny_model(args.vocab), seqs, 0, ghost=True),
    }
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for k in range(3 + args.steps):
        for name, step in steppers.items():  # round-robin: load changes affect every variant alike
            t0 = time.perf_counter()
            step()
            if k >= 3:
                times[name].append(time.perf_counter() - t0)

    base = statistics.median(times["non-private"])
    print(machine_line())
    print(f"B={args.batch} L={args.length} vocab={args.vocab} {ModelConfig().n_layer} layers x {ModelConfig().n_embd}"
          f", threads={torch.get_num_threads()}, median of {args.steps} steps")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:28s} {1000 * median:8.1f} ms/step   x{median / base:.2f}")
    ghost_ratio = statistics.median(times["ghost clipping"]) / base
    verdict = "meets" if ghost_ratio <= TARGET_GHOST_RATIO else "misses"
    print(f"ghost clipping / non-private = {ghost_ratio:.2f} ({verdict} the target <= {TARGET_GHOST_RATIO})")


if __name__ == "__main__":
    main()
