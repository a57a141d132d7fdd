import math
from collections import defaultdict

import numpy as np
import pytest

from core.seqpate.partition import crowding_note, partition_by_user, partition_random, teachers_per_user


def test_random_partition_is_disjoint_complete_and_balanced():
    teacher = partition_random(103, 10, seed=1)
    sizes = np.bincount(teacher, minlength=10)
    assert sizes.sum() == 103 and sizes.max() - sizes.min() <= 1
    assert not np.array_equal(teacher, partition_random(103, 10, seed=2))
    assert np.array_equal(teacher, partition_random(103, 10, seed=1))


def test_more_teachers_than_sentences_is_refused():
    with pytest.raises(ValueError, match="teachers"):
        partition_random(5, 6, seed=0)


def skewed_users(seed=0):
    rng = np.random.default_rng(seed)
    users = []
    for u in range(300):
        users += [f"u{u}"] * int(rng.zipf(1.8) if u else 400)  # one very large user, many small ones
    return users


def test_by_user_keeps_small_users_in_one_teacher_and_balances_sizes():
    users = skewed_users()
    m = 20
    teacher = partition_by_user(users, m, seed=0)
    sizes = np.bincount(teacher, minlength=m)
    assert len(users) % m and sizes.max() - sizes.min() <= 1  # as balanced as n sentences in m teachers can be
    spans = defaultdict(set)
    for u, t in zip(users, teacher, strict=True):
        spans[u].add(int(t))
    cap = math.ceil(len(users) / m)
    for u in spans:
        size = users.count(u)
        if size <= cap // 2:
            assert len(spans[u]) == 1, u
    # the big user needs at least ceil(400 / cap) teachers and uses close to that
    assert math.ceil(400 / cap) <= len(spans["u0"]) <= math.ceil(400 / cap) + 1
    hist = teachers_per_user(users, teacher)
    assert hist["1"] + hist["2"] + hist["3"] + hist[">3"] == len(spans)
    assert hist["1"] / len(spans) > 0.9


def test_by_user_leaves_no_teacher_empty_when_the_teachers_do_not_divide_the_sentences():
    """Every teacher had room for ceil(n / M): the spare room gathered in the last teachers, which got nothing
    (2,000 sentences in 300 teachers: 14 empty), each contributing the base model's distribution in silence."""
    users = [f"u{i}" for i in range(2000)]  # 2,000 users of one sentence: 286 teachers of 7, then 14 of none
    sizes = np.bincount(partition_by_user(users, 300, seed=0), minlength=300)
    assert sizes.sum() == 2000 and (sizes.min(), sizes.max()) == (6, 7)
    sizes = np.bincount(partition_by_user(skewed_users(), 7, seed=0), minlength=7)
    assert sizes.max() - sizes.min() <= 1


def test_by_user_beats_random_on_teachers_per_user():
    users = skewed_users(1)
    by_user = teachers_per_user(users, partition_by_user(users, 20, seed=0))["mean"]
    random = teachers_per_user(users, partition_random(len(users), 20, seed=0))["mean"]
    assert by_user < random


def test_more_teachers_than_users_is_flagged_with_the_mean_teachers_per_user():
    users = [f"u{i % 4}" for i in range(40)]  # 4 users of 10 sentences
    teacher = partition_by_user(users, 8, seed=0)
    hist = teachers_per_user(users, teacher)
    assert hist["mean"] == 2.0  # 5 sentences per teacher: every user split in two
    assert crowding_note(8, hist) == ("8 teachers for 4 users: a user sits in 2.00 teachers on average; "
                                      "fewer teachers keep phrase epsilons lower")
    assert crowding_note(4, teachers_per_user(users, partition_by_user(users, 4, seed=0))) is None
