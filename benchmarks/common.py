"""Shared set-up for the benchmarks: the machine line every script prints, and a teacher-phase workload built from
the real corpus (private train sentences of the tiny preset, tokenised by a tokenizer trained on public text)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing


def machine_line() -> str:
    import torch

    from core.models import cpu_info

    cpu = cpu_info()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"machine: {os.cpu_count()} CPUs, {cpu['model']} ({cpu['capability']}), torch "
            f"{torch.__version__} with {torch.get_num_threads()} thread(s); load average (1, 5, 15 min): {load}")


def workload(private: int, distill: int, vocab: int = 8192, seed: int = 0):
    """(private sequences, distillation sequences, pad id, a fresh tiny GPT-2): what the teacher phase sees."""
    import torch

    from core.config import ModelConfig, preset_config
    from core.data import load_prepared
    from core.models import build_tiny_gpt2
    from core.tokenizer import encode_sentences, train_tokenizer

    cfg = preset_config("tiny", data__private_train=private)
    data = load_prepared(cfg.data, seed)
    public = [s.text for s in data.public_train]
    tokenizer = train_tokenizer(public, vocab)
    private_seqs = encode_sentences(tokenizer, [s.text for s in data.private_train], cfg.data.max_tokens)
    distill_seqs = encode_sentences(tokenizer, public[:distill], cfg.data.max_tokens)  # stands in for pseudo data
    torch.manual_seed(seed)
    model = build_tiny_gpt2(ModelConfig(), len(tokenizer))
    return private_seqs, distill_seqs, tokenizer.pad_token_id, model


def teacher_job(model, distill_seqs, pad_id: int, epochs: int, batch_size: int = 32, lr: float = 1e-3):
    from core.seqpate.teachers import TeacherJob, count_rows

    return TeacherJob(base_state={k: v.detach().clone() for k, v in model.state_dict().items()},
                      base_config=model.config.to_dict(), distill_seqs=distill_seqs, n_rows=count_rows(distill_seqs),
                      pad_id=pad_id, epochs=epochs, lr=lr, batch_size=batch_size, seed=0, want_votes=False)


def partitions(seqs, m: int):
    """The random partition SeqPATE uses: [(teacher, its sequences)]."""
    import numpy as np

    from core.seqpate.partition import partition_random

    owner = partition_random(len(seqs), m, 0)
    return [(t, [seqs[i] for i in np.flatnonzero(owner == t)]) for t in range(m)]
