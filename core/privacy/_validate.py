"""Input checks shared by the privacy modules: one-line ValueErrors, since the numbers come from configs."""

from __future__ import annotations

import math

from core.config import check_delta_range, check_epsilon_range  # the ranges the engine honours, and why


def check_real(name: str, x: object) -> None:
    """A Python int or float: what the events store and write to JSON as they are. bool is an int subclass (True as
    a noise level is a bug, not 1.0); a numpy float32 is named as such rather than told it is out of range."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{name} must be a Python int or float, got {type(x).__name__} {x!r}")


def check_delta(delta: float) -> None:
    """A delta to report an epsilon at: any in (0, 1) (reporting gives a valid bound, if a loose one)."""
    check_real("delta", delta)
    if not 0 < delta < 1:  # NaN fails every comparison
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def check_target(epsilon: float, delta: float) -> None:
    """A target to calibrate noise for: within the ranges where the calibration is tight and finishes (the same
    checks as a run's config; their ConfigError is a ValueError)."""
    check_epsilon_range(epsilon)
    check_delta_range(delta)


def check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_rate(sampling_rate: float) -> None:
    check_real("sampling_rate", sampling_rate)
    if not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")


def check_positive_finite(name: str, value: float) -> None:
    check_real(name, value)
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")


def check_nonneg_finite(name: str, value: float) -> None:
    check_real(name, value)
    if not 0 <= value < math.inf:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
