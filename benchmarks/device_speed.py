"""CPU or GPU (SEQPATE_DEVICE): seconds per SeqPATE teacher on each, for the presets' model sizes.

A teacher is fine-tuned on its partition and run once over the distillation positions, with the code runs use
(core.seqpate.teachers.teacher_group_sum); the teacher phase is M times this. Timed over --teachers teachers after
one warm-up teacher, per model size: tiny's and quick's GPT-2 (2 layers, 128 wide), paper's (4 layers, 256 wide)
and GPT-2 small's shape (12 layers, 768 wide, its 50,257-token vocabulary), as a local checkout would be.

    python benchmarks/device_speed.py [--teachers 3] [--sentences 20] [--distill 300] [--sizes tiny,paper,gpt2]

Prints per size the seconds per teacher on the CPU (all of SEQPATE_THREADS' threads) and, where torch sees a GPU,
on it, and their ratio. The private sentences per teacher (20) and distillation sentences (300) are quick's.
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


def seconds_per_teacher(job, teacher_data, device: str) -> float:
    import torch

    from core.seqpate.teachers import teacher_group_sum

    job = dataclasses.replace(job, device=device)
    teacher_group_sum(job, teacher_data[:1])  # warm-up: CUDA context, kernels, allocator
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    teacher_group_sum(job, teacher_data[1:])
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / (len(teacher_data) - 1)


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
        times = {device: seconds_per_teacher(job, teacher_data, device) for device in devices}
        params = sum(p.numel() for p in sized.parameters()) / 1e6
        line = f"{name:6s} ({layers} layers, {width} wide, {params:.1f}M parameters): cpu {times['cpu']:.3f} s/teacher"
        if "cuda" in times:
            line += f", cuda {times['cuda']:.3f} s/teacher: GPU {times['cpu'] / times['cuda']:.1f}x faster"
        print(line, flush=True)


if __name__ == "__main__":
    main()
