"""Privacy mechanisms recorded as data.

Every released noisy answer is logged as an event; epsilon is only ever computed from these records
(core.privacy.accountant), never typed in. The JSON names are the contract of `privacy.json` (README: "A run on disk").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from core.privacy._validate import check_int, check_nonneg_finite


@dataclass(frozen=True)
class GaussianEvent:
    """`count` releases of a Gaussian with standard deviation `noise_std` and L2 sensitivity `sensitivity`."""

    noise_std: float
    sensitivity: float
    count: int
    mechanism: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        check_nonneg_finite("noise_std", self.noise_std)
        check_nonneg_finite("sensitivity", self.sensitivity)
        check_int("count", self.count, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "noise_std": float(self.noise_std),
            "sensitivity": float(self.sensitivity),
            "count": int(self.count),
        }


@dataclass(frozen=True)
class LaplaceEvent:
    """`count` releases of a Laplace with scale `scale` and L1 sensitivity `sensitivity_l1`."""

    scale: float
    sensitivity_l1: float
    count: int
    mechanism: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        check_nonneg_finite("scale", self.scale)
        check_nonneg_finite("sensitivity_l1", self.sensitivity_l1)
        check_int("count", self.count, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "scale": float(self.scale),
            "sensitivity_l1": float(self.sensitivity_l1),
            "count": int(self.count),
        }


@dataclass(frozen=True)
class SubsampledGaussianEvent:
    """`steps` DP-SGD steps: Poisson sampling at `sampling_rate`, clipped sum + N(0, (z*C)^2), z = noise_multiplier."""

    noise_multiplier: float
    sampling_rate: float
    steps: int
    mechanism: ClassVar[str] = "subsampled_gaussian"

    def __post_init__(self) -> None:
        check_nonneg_finite("noise_multiplier", self.noise_multiplier)
        check_nonneg_finite("sampling_rate", self.sampling_rate)
        if self.sampling_rate > 1:
            raise ValueError(f"sampling_rate must be in [0, 1], got {self.sampling_rate!r}")
        check_int("steps", self.steps, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "noise_multiplier": float(self.noise_multiplier),
            "sampling_rate": float(self.sampling_rate),
            "steps": int(self.steps),
        }


PrivacyEvent = GaussianEvent | LaplaceEvent | SubsampledGaussianEvent

# mechanism name -> (class, float fields, integer fields), in constructor order
_SCHEMA: dict[str, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    "gaussian": (GaussianEvent, ("noise_std", "sensitivity"), ("count",)),
    "laplace": (LaplaceEvent, ("scale", "sensitivity_l1"), ("count",)),
    "subsampled_gaussian": (SubsampledGaussianEvent, ("noise_multiplier", "sampling_rate"), ("steps",)),
}


def _as_int(mechanism: str, name: str, value: Any) -> int:
    # JSON writers sometimes turn 1000 into 1000.0; accept that, refuse 1000.5
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{mechanism} event field {name!r} must be an integer, got {value!r}")
    return value


def _as_float(mechanism: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{mechanism} event field {name!r} must be a number, got {value!r}")
    return float(value)


def event_from_dict(d: Mapping[str, Any]) -> PrivacyEvent:
    """Rebuild an event from its `privacy.json` form; extra keys (labels, notes) are ignored."""
    if not isinstance(d, Mapping):
        raise ValueError(f"an event must be a JSON object, got {type(d).__name__}")
    if "mechanism" not in d:
        raise ValueError(f"event has no 'mechanism' field: {dict(d)!r}")
    mechanism = d["mechanism"]
    if mechanism not in _SCHEMA:
        raise ValueError(f"unknown mechanism {mechanism!r}; expected one of {sorted(_SCHEMA)}")
    cls, float_fields, int_fields = _SCHEMA[mechanism]
    missing = [f for f in (*float_fields, *int_fields) if f not in d]
    if missing:
        raise ValueError(f"{mechanism} event is missing field(s) {missing}")
    kwargs: dict[str, Any] = {f: _as_float(mechanism, f, d[f]) for f in float_fields}
    kwargs.update({f: _as_int(mechanism, f, d[f]) for f in int_fields})
    return cls(**kwargs)


def events_to_dicts(events: Iterable[PrivacyEvent]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def events_from_dicts(ds: Sequence[Mapping[str, Any]]) -> list[PrivacyEvent]:
    return [event_from_dict(d) for d in ds]
