"""Batching users (SeqPATE App. M): every user in the fewest possible batches, every sentence once per epoch."""

import math
from collections import Counter

import pytest
import torch

from core.baselines.batching import batch_of_sentence, pack_users, users_schedule
from core.privacy import poisson_rate, poisson_shape


def users_example():
    # sizes 7, 5, 4, 3, 2, 1, 1 with batch size 4: minimum batches per user 2, 2, 1, 1, 1, 1, 1
    sizes = {"a": 7, "b": 5, "c": 4, "d": 3, "e": 2, "f": 1, "g": 1}
    ids = [u for u, k in sizes.items() for _ in range(k)]
    order = [5, 17, 0, 9, 22, 3, 12, 20, 1, 14, 7, 18, 2, 11, 6, 21, 4, 16, 8, 13, 10, 19, 15]  # interleave users
    return sizes, [ids[i] for i in order]


def test_each_user_in_the_minimum_number_of_batches():
    sizes, user_ids = users_example()
    batches = pack_users(user_ids, 4)
    assert all(len(b) <= 4 for b in batches)
    assert sorted(i for b in batches for i in b) == list(range(len(user_ids)))  # a partition
    for user, n in sizes.items():
        held = {k for k, b in enumerate(batches) if any(user_ids[i] == user for i in b)}
        assert len(held) == math.ceil(n / 4), user
    assert len(batches) == math.ceil(len(user_ids) / 4)  # and here no extra batch was needed


def test_schedule_visits_every_batch_once_per_epoch_in_shuffled_order():
    _, user_ids = users_example()
    batches = pack_users(user_ids, 4)
    schedule = users_schedule(batches, epochs=3, seed=0)
    assert len(schedule) == 3 * len(batches)
    assert Counter(i for b in schedule for i in b) == Counter({i: 3 for i in range(len(user_ids))})
    epochs = [schedule[k * len(batches) : (k + 1) * len(batches)] for k in range(3)]
    assert epochs[0] != epochs[1] or epochs[1] != epochs[2]
    owner = batch_of_sentence(batches, len(user_ids))
    assert all(i in batches[owner[i]] for i in range(len(user_ids)))


@pytest.mark.parametrize("n,batch", [(2000, 32), (2970, 32), (93, 1), (100, 512)])
def test_poisson_shape_is_what_opacus_runs(n, batch):
    """Noise is calibrated for poisson_shape's steps: they must be the steps opacus' DPDataLoader draws. At n = 2970
    (93 batches of 32) it draws 92 per epoch (int(1 / (1 / 93)) = 92), where ceil(n / batch) said 93."""
    from opacus.data_loader import DPDataLoader
    from torch.utils.data import DataLoader, TensorDataset

    loader = DPDataLoader.from_data_loader(DataLoader(TensorDataset(torch.arange(n)), batch_size=batch))
    q, steps = poisson_shape(n, batch, epochs=2)
    assert q == loader.sample_rate == poisson_rate(n, batch) and steps == 2 * len(loader)
    if n == 2970:
        assert math.ceil(n / batch) == 93 and steps == 2 * 92
    assert poisson_rate(2000, 32) == 1 / 63 and poisson_rate(100, 512) == 1.0
