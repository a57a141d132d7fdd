"""Would training several teachers in one vectorised step pay? Time per teacher-step, sequential against torch.func.

At M = 1000 on the tiny preset each teacher holds 2 sentences, so the teacher phase is 2,000 optimizer steps on
batches of 2 (one model on all the data: 250 steps on batches of 32) and benchmarks/teacher_overhead.py misses its
1.2 target (2.51). This script measures whether stacking G teachers' parameters and running them as one vmapped
model (torch.func.stack_module_state + functional_call + vmap, one fused Adam over the stacked tensors) would remove
the per-step cost, and what no implementation can remove: every teacher-step updates all 2.4 M parameters with Adam
and materialises dense gradients of the 8k-row embedding and head.

    python benchmarks/vectorised_teachers.py [--groups 1,4,8,16,32] [--batch 2] [--steps 20]

Prints, per G: forward, backward and Adam time of one vmapped step and the time per teacher-step; the sequential
path (core.train.lm_loss + fused Adam on one model) for reference; and the Adam share of a teacher-step.
"""

from __future__ import annotations

import argparse
import copy
import time

from common import machine_line, workload


def timed_steps(step, steps: int, warmup: int = 3) -> tuple[float, float, float]:
    """Mean (forward, backward, optimizer) seconds of `step`, which returns the three durations of one step."""
    totals = [0.0, 0.0, 0.0]
    for i in range(steps + warmup):
        parts = step()
        if i >= warmup:
            totals = [t + p for t, p in zip(totals, parts, strict=True)]
    return tuple(t / steps for t in totals)


def sequential_step(model, ids, mask):
    from core.train import adam, lm_loss

    opt = adam(model, 1e-3)

    def step():
        t0 = time.perf_counter()
        loss = lm_loss(model, ids, mask)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    return step


def vmapped_step(model, ids, mask, groups: int):
    """G copies of the model as stacked parameters; each copy gets its own batch (ids: G x B x L)."""
    import torch
    import torch.nn.functional as F
    from torch.func import functional_call, stack_module_state, vmap

    params, buffers = stack_module_state([model] * groups)
    skeleton = copy.deepcopy(model).to("meta")

    def teacher_loss(p, b, ids, mask):  # mean next-token NLL of one teacher's batch
        logits = functional_call(skeleton, (p, b), (ids,)).logits[:, :-1]
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1), reduction="none")
        weight = mask[:, 1:].reshape(-1).float()
        return (nll * weight).sum() / weight.sum()

    losses = vmap(teacher_loss, randomness="different")  # dropout: independent per teacher
    opt = torch.optim.Adam(list(params.values()), lr=1e-3, fused=True)
    ids, mask = ids.expand(groups, *ids.shape).contiguous(), mask.expand(groups, *mask.shape).contiguous()

    def step():
        t0 = time.perf_counter()
        loss = losses(params, buffers, ids, mask).sum()  # teachers share nothing: each gets its own gradient
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1,4,8,16,32", help="teachers per vectorised step")
    parser.add_argument("--batch", type=int, default=2, help="sentences per teacher-step (tiny, M=1000: 2)")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    from core.models import set_threads
    from core.train import pad_batch

    set_threads()
    private, _, pad, model = workload(2000, 10)
    model.train()
    ids, mask = pad_batch(private[: args.batch], pad)
    params = sum(p.numel() for p in model.parameters())
    print(machine_line())
    print(f"tiny GPT-2, {params / 1e6:.2f} M parameters; {args.batch} sentences ({ids.shape[1]} tokens padded) per "
          f"teacher-step; mean of {args.steps} steps")
    print(f"{'path':>14s} {'forward (ms)':>13s} {'backward (ms)':>14s} {'Adam (ms)':>10s} {'per teacher-step (ms)':>22s}")
    fwd, bwd, opt = timed_steps(sequential_step(copy.deepcopy(model), ids, mask), args.steps)
    sequential = fwd + bwd + opt
    print(f"{'sequential':>14s} {fwd * 1e3:13.2f} {bwd * 1e3:14.2f} {opt * 1e3:10.2f} {sequential * 1e3:22.2f}")
    for g in [int(x) for x in args.groups.split(",")]:
        fwd, bwd, opt = timed_steps(vmapped_step(model, ids, mask, g), args.steps)
        per = (fwd + bwd + opt) / g
        print(f"{f'vmap G={g}':>14s} {fwd * 1e3:13.2f} {bwd * 1e3:14.2f} {opt * 1e3:10.2f} {per * 1e3:22.2f}"
              f"   ({sequential / per:.2f}x the sequential path)", flush=True)
    print(machine_line())


if __name__ == "__main__":
    main()
