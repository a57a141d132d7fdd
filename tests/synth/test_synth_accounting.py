"""Privacy of a synth run: delta = 1/|train|, noise fixed before training, epsilon recomputed from the events."""

from __future__ import annotations

import math

import pytest

from core.privacy import epsilon_from_events, events_from_dicts
from core.synth.config import synth_config
from core.synth.train import plan_privacy, privacy_record

N = 640


@pytest.fixture(scope="module", params=["multitask", "filter"])
def planned(request):
    cfg = synth_config("tiny", generator=request.param, epsilon=3.0)
    return cfg, plan_privacy(cfg, N)


def test_recomputed_epsilon_is_within_target(planned):
    cfg, plan = planned
    generator, n = cfg.generator, N
    assert plan["delta"] == 1 / n
    assert plan["sampling_rate"] == 1 / 20 and plan["lm_steps"] == 60
    # the baselines' discriminator head reads private data too: its steps share the budget
    assert plan["head_steps"] == (0 if generator == "multitask" else 60)
    record = privacy_record(cfg, plan, plan["lm_steps"], plan["head_steps"])
    assert record["delta"] == 1 / n and record["unit"] == "sample"
    recomputed = epsilon_from_events(events_from_dicts(record["events"]), record["delta"]).epsilon
    assert recomputed == record["epsilon"] <= 3.0
    assert recomputed > 3.0 * 0.99  # calibrated, not just safe
    assert record["events"][0]["steps"] == plan["lm_steps"] + plan["head_steps"]


def test_fewer_steps_taken_cost_less(planned):
    cfg, plan = planned
    assert privacy_record(cfg, plan, 10, 0)["epsilon"] < privacy_record(cfg, plan, 60, 0)["epsilon"] <= 3.0


def test_infinite_epsilon_is_labelled_not_private():
    cfg = synth_config("tiny", epsilon=math.inf)
    plan = plan_privacy(cfg, 640)
    record = privacy_record(cfg, plan, plan["lm_steps"], 0)
    assert plan["noise_multiplier"] == 0.0
    assert record["epsilon"] == math.inf and record["unit"] == "none" and "NOT private" in record["note"]
