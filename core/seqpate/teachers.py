"""Teacher phase (Algorithm 1, lines 4-9; App. I): train each teacher on its partition, run it once over the
distillation positions, fold its output into a running sum, discard it. Memory and disk do not grow with M.

The work is split into groups of teachers; an executor runs `teacher_group_sum` on each group and adds the partial
sums. Only partial sums leave a worker, never a teacher or its private data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from core.train import pad_batch, train_lm


@dataclass(frozen=True)
class TeacherJob:
    """Everything needed to train and query teachers; picklable so it can travel to a worker process."""

    base_state: dict  # state_dict of the public base model
    base_config: dict  # its GPT2Config as a dict
    distill_seqs: list  # token ids of the distillation (pseudo) sentences
    n_rows: int  # number of predicted positions over distill_seqs
    pad_id: int
    epochs: int
    lr: float
    batch_size: int
    seed: int
    want_votes: bool


def count_rows(seqs: Sequence[Sequence[int]]) -> int:
    return sum(len(s) - 1 for s in seqs)


def build_model(job: TeacherJob):
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config.from_dict(job.base_config))
    model.load_state_dict(job.base_state)
    return model


@torch.inference_mode()
def add_teacher_output(model, job: TeacherJob, total: torch.Tensor, votes: torch.Tensor | None, batch: int = 64) -> None:
    """total[rows] += p_teacher(. | context) at every distillation position (rows in sentence order)."""
    model.eval()
    row = 0
    for start in range(0, len(job.distill_seqs), batch):
        ids, mask = pad_batch(job.distill_seqs[start : start + batch], job.pad_id)
        logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]
        predicted = mask[:, 1:]
        probs = torch.softmax(logits[predicted].float(), dim=-1)  # rows in row-major = sentence order
        n = probs.shape[0]
        total[row : row + n] += probs
        if votes is not None:
            votes[row : row + n].scatter_add_(1, probs.argmax(-1, keepdim=True), torch.ones(n, 1))
        row += n
    assert row == job.n_rows


def teacher_group_sum(
    job: TeacherJob,
    teacher_data: Sequence[tuple[int, list]],
    on_teacher: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Partial sums over a group of teachers: [(teacher index, its token sequences), ...]."""
    vocab = job.base_config["vocab_size"]
    total = torch.zeros(job.n_rows, vocab, dtype=torch.float32)
    votes = torch.zeros(job.n_rows, vocab, dtype=torch.float32) if job.want_votes else None
    for index, seqs in teacher_data:
        if should_stop is not None and should_stop():
            break
        model = build_model(job)
        train_lm(model, seqs, pad_id=job.pad_id, epochs=job.epochs, lr=job.lr, batch_size=job.batch_size,
                 seed=job.seed * 100_003 + index)
        add_teacher_output(model, job, total, votes)
        del model
        if on_teacher is not None:
            on_teacher(index)
    return total, votes


class LocalExecutor:
    """Sequential, in this process (the default)."""

    name = "local"

    def run(self, job: TeacherJob, teacher_data, on_teacher=None, should_stop=None):
        return teacher_group_sum(job, teacher_data, on_teacher, should_stop)


def get_executor(name: str):
    if name == "local":
        return LocalExecutor()
    raise ValueError(f"executor {name!r} is not available yet (local only)")
