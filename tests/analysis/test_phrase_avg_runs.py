"""A phrase-avg run (paper Table 2) through the whole pipeline: the noise the training side calibrated before
training must give, in the audit's own phrase table, an AVERAGE name epsilon of the target.

The two sides are separate code: core.analysis.phrases' `*_for` helpers count each name's teachers, sentences or
batch holdings from the workspace before training; the audit recounts them from the finished run. A miscount
on either side (teachers for sentences, one batch per occurrence, the wrong phrases averaged) moves the mean.
"""

import csv
import json
import statistics

import pytest

from core.runs.pipeline import execute
from core.runs.store import RunDir
from tests.baselines.test_baselines_e2e import FAST
from tests.conftest import micro_config

FIRST = ["ka", "lo", "mi", "ze", "qu", "ro", "ta", "vi", "bu", "fe"]
NAMES = [(a + b).capitalize() for a in FIRST for b in ["ndor", "reya", "zbet", "lmir", "quen", "sand"]]  # 60, made up


def write_corpus(path):
    """Each user introduces themself once ("my name is X", which is how names are found in free text) and
    mentions the next user by name in 0 to 3 sentences of their own: of the sentences drawn into the private
    train set, a name then sits in one sentence or several, in one teacher or several, one batch or several."""
    rows = []
    for u, name in enumerate(NAMES):
        rows.append({"text": f"hello there my name is {name} and I like long walks", "user_id": f"user{u}"})
        for i in range(1, 10):
            text = (f"yesterday I saw {NAMES[(u + 1) % len(NAMES)]} at the market number {i}" if i <= u % 4
                    else f"we talked about the weather and the walk home number {u} {i}")
            rows.append({"text": text, "user_id": f"user{u}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# method, overrides, the calibration's relative tolerance (core.analysis.phrases: Poisson DP-SGD bisects PLDs
# to 1e-2; the Gaussian compositions to 1e-4), the basis the audit writes for a name held by two
@pytest.mark.parametrize("method,overrides,rtol,basis", [
    ("seqpate", {"seqpate__teachers": 4, "seqpate__partition": "by-user"}, 1e-4, "n_s=2 teachers"),
    ("noisysgd", {}, 1e-2, "n=2 sentences (group privacy)"),
    ("noisysgd-gc+pseudo", {"dpsgd__batching": "users"}, 1e-4, "2 batch(es) holding [1, 1]"),
])
def test_average_audited_name_epsilon_is_the_target(tmp_path, method, overrides, rtol, basis):
    sizes = dict(data__private_train=200, data__private_valid=20, data__private_test=20, data__public_train=100,
                 data__public_valid=10)
    cfg = micro_config(method=method, privacy__epsilon=3.0, privacy__target="phrase-avg",
                       data__corpus=str(write_corpus(tmp_path / "corpus.jsonl")), **{**FAST, **sizes, **overrides})
    run = RunDir.create(tmp_path / "run", cfg.to_dict(), cfg.seed)
    execute(cfg, run)
    with open(run.path / "phrases.csv", newline="") as f:
        names = [r for r in csv.DictReader(f) if r["kind"] == "name" and int(r["occurrences"]) > 0]
    epsilons = [float(r["epsilon"]) for r in names]
    # the data is what the test meant: names held once and more, so the average is not the one-holder epsilon
    assert len(names) >= 10 and {r["basis"] for r in names} >= {basis}
    assert min(epsilons) < 3.0 < max(epsilons)
    # calibrated never above the target, and within the calibration's tolerance below it
    assert 3.0 * (1 - rtol) <= statistics.fmean(epsilons) <= 3.0
    # the run's own (one-sentence) epsilon is that of a name held once: below the average it was chosen for
    privacy = json.loads((run.path / "privacy.json").read_text())
    assert privacy["target"] == "phrase-avg" and privacy["epsilon"] == pytest.approx(min(epsilons), rel=1e-9)
