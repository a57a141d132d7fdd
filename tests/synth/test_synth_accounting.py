"""Privacy of a synth run: delta = 1/|train|, noise fixed before training, epsilon recomputed from the events."""

from __future__ import annotations

import math

import pytest

from core.config import ConfigError
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


def test_separate_clipping_doubles_the_releases_and_keeps_the_budget():
    joint_cfg = synth_config("tiny", generator="multitask", epsilon=3.0, multitask_clipping="joint")
    separate_cfg = synth_config("tiny", generator="multitask", epsilon=3.0)  # the paper's Algorithm 1, the default
    joint, separate = plan_privacy(joint_cfg, N), plan_privacy(separate_cfg, N)
    # same steps, same accounted z; each of the two releases per step carries sqrt(2) times that noise
    assert separate["noise_multiplier"] == joint["noise_multiplier"] == joint["release_noise_multiplier"]
    assert separate["releases_per_step"] == 2 and joint["releases_per_step"] == 1
    assert separate["release_noise_multiplier"] == pytest.approx(math.sqrt(2) * joint["noise_multiplier"], rel=1e-12)
    record = privacy_record(separate_cfg, separate, separate["lm_steps"], 0)
    event = events_from_dicts(record["events"])[0]
    assert event.noise_multiplier == pytest.approx(separate["release_noise_multiplier"] / math.sqrt(2), rel=1e-12)
    assert 3.0 * 0.99 < epsilon_from_events([event], record["delta"]).epsilon == record["epsilon"] <= 3.0
    assert record["releases_per_step"] == 2 and "separately" in record["clipping"]
    # the baselines have one release per step whatever the setting says
    filter_cfg = synth_config("tiny", generator="filter", epsilon=3.0, multitask_clipping="separate")
    assert plan_privacy(filter_cfg, N)["releases_per_step"] == 1


def test_unknown_clipping_mode_is_refused():
    with pytest.raises(ConfigError, match="multitask_clipping"):
        synth_config("tiny", multitask_clipping="both")
