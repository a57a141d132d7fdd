"""CPU or GPU (SEQPATE_DEVICE): seconds per SeqPATE teacher on each, for the presets' model sizes.

A teacher is fine-tuned on its partition and run once over the distillation positions, with the code runs use
(core.seqpate.teachers.teacher_group_sum), per model size: tiny's and quick's GPT-2 (2 layers, 128 wide), paper's
(4 layers, 256 wide) and GPT-2 small's shape (12 layers, 768 wide, its 50,257-token vocabulary), as a local checkout
would be. A run trains its teachers in at most 16 groups (M / 16 teachers each at quick's M = 1,000), and every
group pays once for building its model and zeroing its positions x vocabulary table (on a GPU, a table there and
its copy back: 170 MB at 8,192 tokens, 1 GB at 50,257). So a group of one teacher and a group of 1 + --teachers are
timed, and the difference divided by --teachers is the cost of one more teacher (the teacher phase is about M times
it); the group's own cost is printed beside it. (The script's first version, whose H100 figures
benchmarks/RESULTS.md keeps, timed one group of 3 teachers with that cost in.)

    python benchmarks/device_speed.py [--teachers 3] [--sentences 20] [--distill 300] [--sizes tiny,paper,gpt2]

Prints per size the seconds per teacher and per group on the CPU (all of SEQPATE_THREADS' threads) and, where
torch sees a GPU, on it, and the per-teacher ratio. The private sentences per teacher (20) and distillation
sentences (300) are quick's.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from common import machine_line, teacher_job, workload

SIZES = {  # name: (layers, width, heads, vocabulary or None for the workload tokenizer's 8,192)
    "tiny": (2, 128, 4, None),
    "paper": (4, 256, 4, None),
    "gpt2": (12, 768, 12, 50257),
}


def group_seconds(job, teacher_data, device: str) -> float:
    import torch

    from core.seqpate.teachers import teacher_group_sum

    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    teacher_group_sum(job, teacher_data)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t


def teacher_seconds(job, teacher_data, device: str) -> tuple[float, float]:
    """(seconds of one more teacher in a group, the group's fixed seconds), after a warm-up group."""
    job = dataclasses.replace(job, device=device)
    group_seconds(job, teacher_data[:1], device)  # warm-up: CUDA context, kernels, allocator
    one = group_seconds(job, teacher_data[:1], device)
    more = group_seconds(job, teacher_data, device)
    per_teacher = (more - one) / (len(teacher_data) - 1)
    return per_teacher, one - per_teacher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teachers", type=int, default=3, help="timed teachers per size and device")
    parser.add_argument("--sentences", type=int, default=20, help="private sentences per teacher (quick: 20)")
    parser.add_argument("--distill", type=int, default=300, help="distillation sentences (quick: 300)")
    parser.add_argument("--epochs", type=int, default=3, help="teacher epochs (quick: 3)")
    parser.add_argument("--sizes", default=",".join(SIZES))
    args = parser.parse_args()

    import torch

    from core.config import ModelConfig
    from core.models import build_tiny_gpt2, set_threads

    set_threads()
    private, distill, pad, model = workload(args.sentences * (args.teachers + 1), args.distill)
    teacher_data = [(t, private[t * args.sentences : (t + 1) * args.sentences]) for t in range(args.teachers + 1)]
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(machine_line())
    if "cuda" in devices:
        print(f"GPU: {torch.cuda.get_device_name(0)}")
    print(f"{args.teachers} timed teachers of {args.sentences} sentences, {args.epochs} epochs, {args.distill} "
          f"distillation sentences ({sum(len(s) - 1 for s in distill)} positions)")
    for name in args.sizes.split(","):
        layers, width, heads, vocab = SIZES[name]
        torch.manual_seed(0)
        sized = build_tiny_gpt2(ModelConfig(n_layer=layers, n_embd=width, n_head=heads),
                                vocab or model.config.vocab_size)
        job = teacher_job(sized, distill, pad, args.epochs)
        times = {device: teacher_seconds(job, teacher_data, device) for device in devices}
        params = sum(p.numel() for p in sized.parameters()) / 1e6
        line = (f"{name:6s} ({layers} layers, {width} wide, {params:.1f}M parameters): cpu {times['cpu'][0]:.3f} "
                f"s/teacher (+{times['cpu'][1]:.2f} s per group)")
        if "cuda" in times:
            line += (f", cuda {times['cuda'][0]:.3f} s/teacher (+{times['cuda'][1]:.2f} s per group): GPU "
                     f"{times['cpu'][0] / times['cuda'][0]:.1f}x faster per teacher")
        print(line, flush=True)


if __name__ == "__main__":
    main()
