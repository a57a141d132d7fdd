"""SeqPATE end to end on a micro configuration, through the same pipeline the CLI and dashboard use."""

from __future__ import annotations

import math

import pytest

from core.privacy import epsilon_from_events, events_from_dicts, gaussian_std
from core.privacy.streams import SEQPATE_NOISE, stream_seed
from core.runs.pipeline import execute
from core.runs.store import RunDir
from core.seqpate.teachers import teacher_seed
from tests.conftest import micro_config


def run(tmp_path, name, **overrides):
    cfg = micro_config(method="seqpate", **overrides)
    run_dir = RunDir.create(tmp_path / name, cfg.to_dict(), cfg.seed)
    execute(cfg, run_dir)
    return cfg, run_dir


TEACHER_DATA: dict[str, list] = {}  # what the run handed its executor, recorded by seqpate_run
ENCODED: list[tuple[list[str], list]] = []  # (texts, token ids) of every Workspace.encode call of that run
ORACLE_SEEDS: list[int] = []  # the seed of the teacher oracle's noise in that run


@pytest.fixture(scope="module")
def seqpate_run(tmp_path_factory):
    from core.seqpate import run as seqpate_module
    from core.workspace import Workspace

    real = seqpate_module.get_executor
    real_encode = Workspace.encode
    real_oracle = seqpate_module.TeacherOracle

    def oracle_recorded(*args, seed, **kwargs):
        ORACLE_SEEDS.append(seed)
        return real_oracle(*args, seed=seed, **kwargs)

    def encode_recorded(self, texts):
        out = real_encode(self, texts)
        ENCODED.append((list(texts), out))
        return out

    def recording(name, ray_address=""):
        executor = real(name, ray_address)
        run_teachers = executor.run

        def run_recorded(job, teacher_data, *args, **kwargs):
            TEACHER_DATA["eps3"] = teacher_data
            return run_teachers(job, teacher_data, *args, **kwargs)

        executor.run = run_recorded
        return executor

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seqpate_module, "get_executor", recording)
        patch.setattr(Workspace, "encode", encode_recorded)
        patch.setattr(seqpate_module, "TeacherOracle", oracle_recorded)
        return run(tmp_path_factory.mktemp("seqpate"), "eps3", privacy__epsilon=3.0)


def test_privacy_is_recomputed_from_released_queries(seqpate_run):
    cfg, run_dir = seqpate_run
    privacy = run_dir.privacy()
    assert privacy["accountant"].startswith("analytic-gaussian")
    assert 0 < privacy["queries_spent"] <= privacy["query_budget"] == cfg.seqpate.query_budget
    # sigma was calibrated for the whole budget before the first query
    assert privacy["noise_scale"] == pytest.approx(gaussian_std(3.0, cfg.privacy.delta, cfg.seqpate.query_budget))
    (event,) = privacy["events"]
    assert event["count"] == privacy["queries_spent"] and event["sensitivity"] == pytest.approx(math.sqrt(2))
    recomputed = epsilon_from_events(events_from_dicts(privacy["events"]), cfg.privacy.delta).epsilon
    assert privacy["epsilon"] == pytest.approx(recomputed, abs=1e-9)
    assert privacy["epsilon"] <= 3.0 + 1e-9
    # the noise's own stream (core.privacy.streams), so the statement has no line on what it shared; seeded
    # cfg.seed + 7 it was teacher 7's at seed 0 (the micro run's 2 teachers make no collision here to see)
    assert ORACLE_SEEDS == [stream_seed(cfg.seed, SEQPATE_NOISE)]
    assert ORACLE_SEEDS[0] not in {cfg.seed} | {teacher_seed(cfg.seed, i) for i in range(2000)}
    assert privacy["random_streams"] == [SEQPATE_NOISE]
    assert "Made before the noise" not in run_dir.read_text("statement.md")


def test_progress_shows_each_teacher_and_student_epochs(seqpate_run):
    cfg, run_dir = seqpate_run
    progress = run_dir.progress()
    # a teacher's own lines (a slow machine may add epoch lines where a teacher takes 10 s: their own test)
    teachers = [p["teacher"] for p in progress if p["stage"] == "teachers" and "epoch" not in p]
    assert teachers == list(range(1, cfg.seqpate.teachers + 1))
    student = [p for p in progress if p["stage"] == "student"]
    assert student and student[-1]["queries_spent"] == run_dir.privacy()["queries_spent"]
    assert student[-1]["epsilon_spent"] == pytest.approx(run_dir.privacy()["epsilon"])
    # the student's loss per epoch (NLL on public pseudo labels + KL to released answers: post-processing), so the
    # progress chart shows the distillation; the teachers, trained on private data without noise, log none
    assert len(student) == cfg.seqpate.student_epochs and all(0 < p["loss"] < 20 for p in student)
    assert not any("loss" in p for p in progress if p["stage"] == "teachers")
    assert run_dir.status()["state"] == "done"


def test_each_private_sentence_trains_exactly_one_teacher(seqpate_run):
    """sqrt(2) bounds one sentence's effect only if it sits in one teacher's data: the teachers the run trained get
    disjoint parts of the private train set, together all of it, as assign_teachers cut it."""
    import numpy as np

    from core.data import load_prepared
    from core.seqpate.partition import assign_teachers

    cfg, _ = seqpate_run
    private = load_prepared(cfg.data, cfg.seed).private_train
    users = [s.user_id for s in private]
    teacher_of = assign_teachers(cfg.seqpate.partition, users, cfg.seqpate.teachers, cfg.seed)
    (private_seqs,) = [ids for texts, ids in ENCODED if texts == [s.text for s in private]]
    handed = TEACHER_DATA["eps3"]
    assert [m for m, _ in handed] == list(range(cfg.seqpate.teachers))
    for m, seqs in handed:  # teacher m gets exactly the sentences assign_teachers gave it
        assert seqs == [private_seqs[i] for i in np.flatnonzero(teacher_of == m)]
    assert sum(len(seqs) for _, seqs in handed) == len(private) and len(set(teacher_of.tolist())) > 1


def test_metrics_and_completions_are_complete(seqpate_run):
    _, run_dir = seqpate_run
    metrics = run_dir.metrics()
    assert math.isfinite(metrics["ppl"]) and metrics["ppl"] > 1
    assert len(run_dir.completions()) == metrics["n_completions"]
    assert run_dir.is_complete()


def test_a_teacher_slow_to_train_logs_its_epochs(tmp_path, monkeypatch):
    """A single teacher on the whole private set took 4.7 minutes without a progress line, its bar at 15%: where no
    teacher line came for PULSE_EVERY_S, each of its epochs logs one (here every epoch: the interval set to 0), the
    bar moving on within the teacher and never back, and no loss (the teachers train on private data)."""
    import core.train

    monkeypatch.setattr(core.train, "PULSE_EVERY_S", 0.0)
    cfg, run_dir = run(tmp_path, "pulse", seqpate__teachers=2, seqpate__teacher_epochs=3, seqpate__query_budget=20)
    lines = [p for p in run_dir.progress() if p["stage"] == "teachers"]
    # "teacher" counts the teachers folded in on every line; the last epoch's end is the teacher's own line
    assert [(p["teacher"], p.get("training_teacher"), p.get("epoch")) for p in lines] == [
        (0, 1, 1), (0, 1, 2), (1, None, None), (1, 2, 1), (1, 2, 2), (2, None, None)]
    assert all(p["teachers"] == 2 and "loss" not in p for p in lines)
    assert all(p.get("epochs") == 3 for p in lines if "epoch" in p)
    bar = [p["progress"] for p in lines]
    assert bar == sorted(bar) and len(set(bar)) == len(bar)


def test_teachers_training_at_once_move_the_bar_on_never_back(tmp_path, monkeypatch):
    """A process pool or Ray trains several teachers at once and reports their epochs as they end: the bar counts
    every teacher's epochs, so teacher 2's first epoch after teacher 1's second moves it on (it counted only the
    epoch just reported, after the teachers folded in, and went back), and a line names the teacher whose epoch
    ended."""
    import core.seqpate.run
    import core.train
    from core.seqpate.teachers import LocalExecutor

    class Interleaving:  # the local sums, their reports replayed in an order two workers may give
        def run(self, job, teacher_data, on_teacher, should_stop, on_epoch):
            sums = LocalExecutor().run(job, teacher_data)
            for index, epoch in ((0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)):
                on_epoch(index, epoch)
            on_teacher(1)
            on_teacher(0)
            return sums

    monkeypatch.setattr(core.train, "PULSE_EVERY_S", 0.0)
    monkeypatch.setattr(core.seqpate.run, "get_executor", lambda *args: Interleaving())
    cfg, run_dir = run(tmp_path, "at-once", seqpate__teachers=2, seqpate__teacher_epochs=3, seqpate__query_budget=20)
    lines = [p for p in run_dir.progress() if p["stage"] == "teachers"]
    assert [(p["teacher"], p.get("training_teacher"), p.get("epoch")) for p in lines] == [
        (0, 1, 1), (0, 2, 1), (0, 1, 2), (0, 2, 2), (1, None, None), (2, None, None)]
    bar = [p["progress"] for p in lines]
    assert bar == sorted(bar) and len(set(bar)) == len(bar)
    # teachers take 0.06 to 0.70 of the method's share of the bar, in sixths here (2 teachers of 3 epochs); teacher
    # 2's line still counts teacher 1's two epochs ended, not its third, which its own line counts
    method = next(p["progress"] for p in run_dir.progress() if str(p.get("message", "")).startswith("method "))
    share = (bar[-1] - method) / 0.70
    assert bar == pytest.approx([method + share * (0.06 + 0.64 * k / 6) for k in (1, 2, 3, 4, 5, 6)])


def test_the_students_warm_up_reports_its_steps_within_its_share_of_the_bar(tmp_path, monkeypatch):
    """The warm-up is the shared pseudo-data one (Workspace.pseudo_warm_model), on 0.70-0.72 of the method's bar:
    a tiny run's took a minute without a line; where PULSE_EVERY_S passed (here 0) each step logs one."""
    import core.train

    monkeypatch.setattr(core.train, "PULSE_EVERY_S", 0.0)
    cfg, run_dir = run(tmp_path, "warm", seqpate__query_budget=20, seqpate__warmup_epochs=2)
    lines = run_dir.progress()
    warm = [p for p in lines if p["stage"] == "warm-up" and "epoch" in p]
    steps = warm[0]["steps"]
    assert steps == math.ceil(cfg.data.public_train / cfg.seqpate.batch_size) > 1  # the pseudo sentences' batches
    assert [(p["epoch"], p.get("step")) for p in warm] == [(e, s) for e in (1, 2) for s in [*range(1, steps), None]]
    method = next(p["progress"] for p in lines if str(p.get("message", "")).startswith("method "))
    teachers_end = max(p["progress"] for p in lines if p["stage"] == "teachers")
    share = (teachers_end - method) / 0.70  # the teachers end at 0.70 of the method's share
    bar = [p["progress"] for p in warm]
    assert bar == sorted(bar) and len(set(bar)) == len(bar)
    assert bar[-1] == pytest.approx(method + 0.72 * share) and bar[0] > teachers_end


def test_laplace_ablation_is_accounted_with_pld(tmp_path):
    cfg, run_dir = run(tmp_path, "laplace", privacy__epsilon=3.0, seqpate__ablation="-gaussian",
                       seqpate__query_budget=50)
    privacy = run_dir.privacy()
    assert privacy["mechanism"] == "laplace" and privacy["events"][0]["mechanism"] == "laplace"
    assert privacy["accountant"].startswith("pld")
    assert privacy["epsilon"] <= 3.0 + 1e-9 and privacy["queries_spent"] <= 50
    # the scale calibrated for the whole budget at L1 sensitivity 2 (one teacher moves the sum by 2 in L1)
    from core.privacy import SEQPATE_L1_SENSITIVITY, laplace_scale

    assert privacy["noise_scale"] == pytest.approx(laplace_scale(3.0, cfg.privacy.delta, 50, SEQPATE_L1_SENSITIVITY))
    assert privacy["sensitivity"] == SEQPATE_L1_SENSITIVITY == 2
    # the micro run has more hard positions than 50: the whole budget is spent, at its epsilon, not far below it
    assert privacy["queries_spent"] == 50 and privacy["epsilon"] >= 0.99 * 3.0
    # its student learned from the answers by KL (only -kl and -all switch that), and says so
    assert run_dir.metrics()["teacher_loss"] == "KL to the noisy answer over the candidate set"


def test_infinite_epsilon_is_labelled_non_private(tmp_path):
    _, run_dir = run(tmp_path, "inf", privacy__epsilon=math.inf, seqpate__query_budget=30)
    privacy = run_dir.privacy()
    assert math.isinf(privacy["epsilon"]) and privacy["non_private"] is True and privacy["unit"] == "none"
