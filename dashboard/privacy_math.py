"""Privacy math for the what-if panels (Launch, Calculator), cached per input. core.privacy pulls autodp and
scipy (1-2 s on a cold start), so it is imported lazily, and warmed in a background thread when the app opens."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import streamlit as st

from core.config import RunConfig

_WARMED = threading.Event()


def warm_privacy_import() -> None:
    """Import core.privacy (scipy, autodp: 1-2 s) in a background thread, once per server process, so the first
    visit to Launch or Calculator does not wait for it. Plain imports only: no st.* call from the thread."""
    if _WARMED.is_set():
        return
    _WARMED.set()

    def work() -> None:
        try:
            _privacy()
        except Exception:  # noqa: BLE001 (the page that needs it reports the real error)
            pass

    threading.Thread(target=work, name="warm-core-privacy", daemon=True).start()


def _privacy():
    import core.privacy as privacy  # lazy: autodp and scipy take 1-2 s to import

    return privacy


@st.cache_data(show_spinner="Partitioning the private users by user…", max_entries=64)
def by_user_partition(data_json: str, seed: int, teachers: int) -> dict[str, Any]:
    """What a by-user SeqPATE run will record before training: its teachers-per-user histogram (Table 5), the
    number of private train users and the engine's crowding note, from the same data and partition (about 2 s on
    quick; no torch). ValueError where the partition is impossible (more teachers than sentences)."""
    from core.data import load_prepared
    from core.seqpate.partition import crowding_note, partition_by_user, teachers_per_user

    data = RunConfig.from_dict({"data": json.loads(data_json)}).data
    users = [s.user_id for s in load_prepared(data, seed).private_train]
    histogram = teachers_per_user(users, partition_by_user(users, teachers, seed))
    return {"histogram": histogram, "users": len(set(users)), "note": crowding_note(teachers, histogram)}


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_noise(epsilon: float, delta: float, queries: int) -> dict[str, float]:
    """Noise multiplier z (std / L2 sensitivity) and the std a run calibrates (gaussian_std: z * sqrt(2), raised
    where float rounding left it a hair short) for Q Gaussian releases (SeqPATE)."""
    privacy = _privacy()
    z = privacy.gaussian_noise_multiplier(float(epsilon), float(delta), int(queries))
    return {"z": z, "std": privacy.gaussian_std(float(epsilon), float(delta), int(queries))}


@st.cache_data(show_spinner=False, max_entries=500)
def seqpate_laplace_scale(epsilon: float, delta: float, queries: int) -> float:
    """Laplace scale b for Q releases with L1 sensitivity 2 (SeqPATE's -gaussian and -all ablations; PLD)."""
    privacy = _privacy()
    return privacy.laplace_scale(float(epsilon), float(delta), int(queries), privacy.SEQPATE_L1_SENSITIVITY)


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_epsilon(noise_std: float, queries: int, delta: float) -> float:
    privacy = _privacy()
    return privacy.epsilon_for_gaussian(float(noise_std), int(queries), float(delta), privacy.SEQPATE_L2_SENSITIVITY)


@st.cache_data(show_spinner=False, max_entries=2000)
def seqpate_max_queries(epsilon: float, delta: float, noise_std: float) -> int:
    """Most Gaussian releases with this std that stay within (epsilon, delta): Q = floor((z / z_1)^2)."""
    z1 = _privacy().gaussian_noise_multiplier(float(epsilon), float(delta), 1)
    z = float(noise_std) / _privacy().SEQPATE_L2_SENSITIVITY
    if z1 <= 0:
        return 0
    q = int(math.floor((z / z1) ** 2 * (1 + 1e-12)))
    while q > 1 and seqpate_epsilon(noise_std, q, delta) > epsilon:
        q -= 1
    return max(q, 0)


@st.cache_data(show_spinner=False, max_entries=500)
def dpsgd_noise(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    return _privacy().dpsgd_noise_multiplier(float(epsilon), float(delta), float(sampling_rate), int(steps))


def poisson_shape(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sampling rate q, steps) of a Poisson DP-SGD run, as the runs compute them (core.privacy.poisson_shape)."""
    return _privacy().poisson_shape(int(n), int(batch_size), int(epochs))


@st.cache_data(show_spinner=False, max_entries=500)
def dpsgd_eps(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    return _privacy().dpsgd_epsilon(float(noise_multiplier), float(sampling_rate), int(steps), float(delta))
