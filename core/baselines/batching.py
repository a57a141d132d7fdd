"""Batch schedules for DP-SGD: Poisson sampling (opacus) or fixed "batching users" batches (SeqPATE App. M).

A schedule is the list of index lists, one per optimizer step, fixed before training starts. Fixing it up
front lets a method calibrate from it (adaptive DP) and lets the run record which batch held which sentence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np


def pack_users(user_ids: Sequence[str], batch_size: int) -> list[list[int]]:
    """Fixed batches of at most `batch_size` sentences holding each user's data in as few batches as possible.

    First-fit decreasing: users sorted by size (largest first) fill whole batches of their own, and the rest of
    each user's sentences goes as one piece into the first batch with room, or a new batch. A user with n
    sentences therefore sits in exactly ceil(n / batch_size) batches, the minimum possible.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    by_user: dict[str, list[int]] = defaultdict(list)
    for i, user in enumerate(user_ids):
        by_user[user].append(i)
    # sort by size, then by id, so the packing is deterministic
    users = sorted(by_user, key=lambda u: (-len(by_user[u]), str(u)))
    batches: list[list[int]] = []
    for user in users:
        rows = by_user[user]
        full, rest = divmod(len(rows), batch_size)
        for k in range(full):
            batches.append(rows[k * batch_size : (k + 1) * batch_size])
        if rest:
            piece = rows[full * batch_size :]
            target = next((b for b in batches if len(b) + rest <= batch_size), None)
            if target is None:
                batches.append(list(piece))
            else:
                target.extend(piece)
    return batches


def batch_of_sentence(batches: Sequence[Sequence[int]], n: int) -> list[int]:
    """Inverse of a packing: the batch index of every sentence (-1 if a sentence is in no batch)."""
    owner = [-1] * n
    for b, rows in enumerate(batches):
        for i in rows:
            owner[i] = b
    return owner


def users_schedule(batches: Sequence[Sequence[int]], epochs: int, seed: int) -> list[list[int]]:
    """Every fixed batch once per epoch, in a fresh random order each epoch (no subsampling)."""
    rng = np.random.default_rng(seed)
    return [list(batches[b]) for _ in range(epochs) for b in rng.permutation(len(batches))]
