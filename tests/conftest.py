"""Shared fixtures: a micro configuration (seconds, not minutes) and an isolated artefact cache."""

from __future__ import annotations

import sys

import pytest

from core.config import preset_config


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Trained artefacts go to a per-session folder, never the developer's .cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SEQPATE_CACHE", str(tmp_path_factory.mktemp("cache")))
    mp.setenv("SEQPATE_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    yield
    mp.undo()


MICRO = dict(
    data__private_train=400, data__private_valid=50, data__private_test=60,
    data__public_train=400, data__public_valid=50,
    model__vocab_size=2048, model__pretrain_epochs=2, model__n_positions=48,
    decode__n_completions=30, decode__max_new_tokens=12,
    seqpate__teachers=4, seqpate__distill_sentences=80, seqpate__query_budget=200, seqpate__teacher_epochs=1,
    seqpate__warmup_epochs=1, seqpate__student_epochs=1,
    dpsgd__epochs=1,
)


def micro_config(**overrides):
    return preset_config("tiny", **{**MICRO, **overrides})


@pytest.fixture
def micro():
    return micro_config


@pytest.fixture(autouse=True)
def keep_main_module():
    """AppTest leaves the app script as sys.modules["__main__"], and a spawned process re-runs __main__ before its
    work: the process executor's workers, later in the same session, ran the whole dashboard (and failed once
    app.py read its page's title). Each test gets back the main module it started with."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


# What a progress line of DP-SGD's or ADP's private training may say: where the run is, and the noise set before it
# began. A batch's size or loss is computed from the private sentences without noise: outside any epsilon. (ADP's
# noise levels themselves come from the private sentences: its disclosed heuristic, not checked here.)
PRIVATE_TRAINING_STAGES = {"noisysgd": "dp-train", "noisysgd+pseudo": "dp-train", "noisysgd-gc+pseudo": "dp-train",
                           "adp": "adp-train"}
PUBLIC_PROGRESS_FIELDS = {"time", "stage", "progress", "step", "steps", "epoch", "message", "noise_multiplier"}


def check_private_training_releases_nothing_unaccounted(progress: list[dict], metrics: dict, method: str) -> None:
    stage = PRIVATE_TRAINING_STAGES[method]
    fields = set().union(*(line.keys() for line in progress if line.get("stage") == stage))
    assert "step" in fields, f"no progress line of stage {stage}"
    assert fields <= PUBLIC_PROGRESS_FIELDS, fields - PUBLIC_PROGRESS_FIELDS
    assert "epoch_losses" not in metrics
