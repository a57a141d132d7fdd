"""Disjoint partitions of the private train set into teacher data sets (paper Sec. 5.2-5.3, App. F)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np


def assign_teachers(partition: str, user_ids: Sequence[str], n_teachers: int, seed: int) -> np.ndarray:
    """Teacher index of every private train sentence under a run's partition ("random" or "by-user"). The SeqPATE
    run and the phrase audit (core.analysis.phrases) both call this, so the audit counts the run's teachers."""
    if partition == "by-user":
        return partition_by_user(list(user_ids), n_teachers, seed)
    return partition_random(len(user_ids), n_teachers, seed)


def partition_random(n_sentences: int, n_teachers: int, seed: int) -> np.ndarray:
    """Teacher index of every sentence: a seeded shuffle cut into equal parts (sample-level privacy)."""
    if n_teachers > n_sentences:
        raise ValueError(f"{n_teachers} teachers but only {n_sentences} private training sentences")
    order = np.random.default_rng(seed).permutation(n_sentences)
    teacher = np.empty(n_sentences, dtype=np.int64)
    teacher[order] = np.arange(n_sentences) % n_teachers
    return teacher


def partition_by_user(user_ids: Sequence[str], n_teachers: int, seed: int) -> np.ndarray:
    """Each user in as few teachers as possible, teacher sizes balanced (App. F).

    Best-fit decreasing with splitting: users from largest to smallest go whole into the fullest teacher that
    still has room; a user larger than any remaining room fills the emptiest teacher and the rest continues.
    The rooms add up to n (n mod M teachers hold ceil(n / M) sentences, the others floor(n / M)), so every teacher
    ends full and sizes differ by at most one. (With ceil(n / M) for all, the spare room gathered in the last
    teachers filled: 9 of the paper preset's 2,000 teachers got no sentence, the base model in their place.)
    """
    n = len(user_ids)
    if n_teachers > n:
        raise ValueError(f"{n_teachers} teachers but only {n} private training sentences")
    by_user: dict[str, list[int]] = defaultdict(list)
    for i, u in enumerate(user_ids):
        by_user[u].append(i)
    rng = np.random.default_rng(seed)
    users = list(by_user)
    rng.shuffle(users)  # seeded tie-break among users of equal size
    users.sort(key=lambda u: -len(by_user[u]))
    room = np.full(n_teachers, n // n_teachers, dtype=np.int64)
    room[: n % n_teachers] += 1
    teacher = np.empty(n, dtype=np.int64)
    for u in users:
        rows = by_user[u]
        while rows:
            fits = np.flatnonzero(room >= len(rows))
            if len(fits):
                j = fits[np.argmin(room[fits])]  # best fit keeps big rooms for big users
            else:
                j = int(np.argmax(room))
            take = min(len(rows), int(room[j]))
            teacher[rows[:take]] = j
            room[j] -= take
            rows = rows[take:]
    return teacher


def teachers_per_user(user_ids: Sequence[str], teacher: np.ndarray) -> dict[str, int]:
    """Histogram as in the paper's Table 5: how many users have data in 1, 2, 3 or more than 3 teachers."""
    sets: dict[str, set[int]] = defaultdict(set)
    for u, t in zip(user_ids, teacher.tolist(), strict=True):
        sets[u].add(t)
    counts = Counter(len(s) for s in sets.values())
    return {"1": counts.get(1, 0), "2": counts.get(2, 0), "3": counts.get(3, 0),
            ">3": sum(v for k, v in counts.items() if k > 3),
            "mean": float(np.mean([len(s) for s in sets.values()])) if sets else 0.0}


def crowding_note(n_teachers: int, histogram: dict[str, float]) -> str | None:
    """A warning when a by-user partition has more teachers than users (teachers_per_user's histogram counts
    them): App. F assumes many more users than teachers, and a user split over several teachers gets a larger
    phrase epsilon."""
    n_users = sum(int(histogram[k]) for k in ("1", "2", "3", ">3"))
    if n_teachers <= n_users:
        return None
    return (f"{n_teachers} teachers for {n_users} users: a user sits in {histogram['mean']:.2f} teachers on average; "
            "fewer teachers keep phrase epsilons lower")
