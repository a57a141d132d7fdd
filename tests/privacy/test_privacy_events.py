"""Events are the privacy.json contract: exact JSON names, lossless round trip, clear errors."""

import json
import math

import numpy as np
import pytest

from core.privacy import (
    GaussianEvent,
    LaplaceEvent,
    SubsampledGaussianEvent,
    delta_for_epsilon,
    epsilon_from_events,
    event_from_dict,
    events_from_dicts,
    events_to_dicts,
)


def test_json_names_match_design():
    assert GaussianEvent(69.04, math.sqrt(2), 1000).to_dict() == {
        "mechanism": "gaussian",
        "noise_std": 69.04,
        "sensitivity": math.sqrt(2),
        "count": 1000,
    }
    assert LaplaceEvent(0.5, 2.0, 3).to_dict() == {
        "mechanism": "laplace",
        "scale": 0.5,
        "sensitivity_l1": 2.0,
        "count": 3,
    }
    assert SubsampledGaussianEvent(1.1, 0.01, 500).to_dict() == {
        "mechanism": "subsampled_gaussian",
        "noise_multiplier": 1.1,
        "sampling_rate": 0.01,
        "steps": 500,
    }


def test_round_trip_through_json_text():
    events = [GaussianEvent(3.0, 1.5, 7), LaplaceEvent(0.25, 2.0, 1), SubsampledGaussianEvent(0.9, 0.004, 10)]
    text = json.dumps({"events": events_to_dicts(events)})
    assert events_from_dicts(json.loads(text)["events"]) == events


def test_integral_float_count_is_accepted_and_extra_keys_ignored():
    e = event_from_dict(
        {"mechanism": "gaussian", "noise_std": 2, "sensitivity": 1, "count": 10.0, "note": "x"}
    )
    assert e == GaussianEvent(2.0, 1.0, 10)
    assert isinstance(e.count, int)


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({"mechanism": "exponential", "count": 1}, "unknown mechanism 'exponential'"),
        ({"noise_std": 1.0, "sensitivity": 1.0, "count": 1}, "no 'mechanism'"),
        ({"mechanism": "gaussian", "noise_std": 1.0, "count": 1}, "missing field(s) ['sensitivity']"),
        ({"mechanism": "laplace", "scale": 1.0, "sensitivity_l1": 1.0, "count": 1.5}, "must be an integer"),
        (
            {"mechanism": "subsampled_gaussian", "noise_multiplier": "1", "sampling_rate": 0.1, "steps": 1},
            "number",
        ),
    ],
)
def test_bad_dicts_raise_clear_errors(d, message):
    with pytest.raises(ValueError) as err:
        event_from_dict(d)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GaussianEvent(-1.0, 1.0, 1),
        lambda: GaussianEvent(1.0, math.inf, 1),
        lambda: GaussianEvent(1.0, 1.0, -1),
        lambda: GaussianEvent(1.0, 1.0, True),
        lambda: LaplaceEvent(math.nan, 1.0, 1),
        lambda: SubsampledGaussianEvent(1.0, 1.5, 10),
        lambda: SubsampledGaussianEvent(1.0, 0.1, 2.0),
    ],
)
def test_invalid_events_are_refused(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: GaussianEvent(np.float32(10.0), 1.0, 1), "noise_std must be a Python int or float, got float32"),
        (lambda: SubsampledGaussianEvent(1.0, np.float32(0.1), 10), "sampling_rate must be a Python int or float"),
        (lambda: epsilon_from_events([GaussianEvent(10.0, 1.0, 5)], np.float32(1e-6)),
         "delta must be a Python int or float, got float32"),
        (lambda: delta_for_epsilon([GaussianEvent(10.0, 1.0, 5)], "1"), "epsilon must be a Python int or float, got str"),
    ],
)
def test_numbers_of_another_type_are_named_as_such(call, message):
    """A numpy float32 delta of 1e-6 was refused as "delta must be in (0, 1), got np.float32(1e-06)": the events
    keep Python numbers (they go to JSON as they are), and the error says that is what is wrong."""
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_events_are_frozen_and_hashable():
    e = GaussianEvent(1.0, 1.0, 1)
    with pytest.raises(AttributeError):
        e.count = 2  # type: ignore[misc]
    assert len({e, GaussianEvent(1.0, 1.0, 1)}) == 1
