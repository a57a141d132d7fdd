"""SeqPATE end to end: pseudo data -> partition -> calibrate -> teachers -> warm-up -> distillation -> privacy."""

from __future__ import annotations

import math
import time

import numpy as np

from core import train  # train.PULSE_EVERY_S read when used: one setting for every pulse
from core.config import ABLATION_SWITCHES, TEACHER_LOSSES, parse_filter
from core.privacy import (
    SEQPATE_L1_SENSITIVITY,
    SEQPATE_L2_SENSITIVITY,
    epsilon_from_events,
    events_to_dicts,
    gaussian_std,
    laplace_scale,
)
from core.privacy.streams import SEQPATE_NOISE, stream_seed
from core.seqpate.aggregate import TeacherOracle
from core.seqpate.partition import assign_teachers, crowding_note, teachers_per_user
from core.seqpate.student import DistillSettings, distill
from core.seqpate.teachers import TeacherJob, count_rows, get_executor
from core.workspace import MethodResult, Workspace


def calibrate_noise(noise: str, epsilon: float, delta: float, budget: int) -> tuple[str, float]:
    """Noise fixed BEFORE the first query from (epsilon, delta, query budget Q)."""
    if math.isinf(epsilon):
        return "none", 0.0
    if noise == "laplace":
        return "laplace", laplace_scale(epsilon, delta, budget, SEQPATE_L1_SENSITIVITY)
    return "gaussian", gaussian_std(epsilon, delta, budget, SEQPATE_L2_SENSITIVITY)


def partition_private(ws: Workspace) -> tuple[np.ndarray, dict, list]:
    """Step 2: the private train set cut into one disjoint part per teacher (by sentence, or by user); returns the
    teacher of each sentence, the teachers-per-user histogram (Table 5) and [(teacher, its token sequences)]."""
    sp = ws.cfg.seqpate
    private = ws.data.private_train
    users = [s.user_id for s in private]
    teacher_of = assign_teachers(sp.partition, users, sp.teachers, ws.cfg.seed)
    private_seqs = ws.encode([s.text for s in private])
    teacher_data = [(m, [private_seqs[i] for i in np.flatnonzero(teacher_of == m)]) for m in range(sp.teachers)]
    return teacher_of, teachers_per_user(users, teacher_of), teacher_data


def train_teachers(ws: Workspace, job: TeacherJob, teacher_data: list) -> tuple:
    """Step 4 (Algorithm 1, lines 4-9): every teacher trained on its part and run once over the distillation
    positions, on the executor the config names; returns (teacher sum, votes or None). Its progress moves the bar
    over 0.06-0.70 of the method's share, teacher by teacher and epoch by epoch."""
    sp = ws.cfg.seqpate
    # teachers may finish out of order and train several at once (a process pool): count them, not their index
    teachers = {"done": 0, "logged": time.monotonic()}
    epochs_in_training: dict[int, int] = {}  # teacher index -> epochs it has ended, until it is folded in

    def teachers_progress() -> float:
        trained = teachers["done"] + sum(epochs_in_training.values()) / sp.teacher_epochs
        return ws.method_progress(0.06 + 0.64 * trained / sp.teachers)

    def on_teacher(index: int) -> None:
        teachers["done"] += 1
        teachers["logged"] = time.monotonic()
        epochs_in_training.pop(index, None)
        ws.log("teachers", teachers_progress(), teacher=teachers["done"], teachers=sp.teachers)

    def on_epoch(index: int, epoch: int) -> None:
        """An epoch's end of a teacher in training, logged where no teacher line came for PULSE_EVERY_S: with few
        teachers on much data one took minutes without a line (M = 1: 4.7 min at 15%), while quick's 100 teachers
        each log on finishing, seconds apart. The bar counts every teacher's epochs, so it moves on, never back,
        when several train at once."""
        # its last epoch is the teacher's own line, logged (and counted) as it is folded in
        if epoch == sp.teacher_epochs:
            return
        epochs_in_training[index] = epoch
        if time.monotonic() - teachers["logged"] < train.PULSE_EVERY_S:
            return
        teachers["logged"] = time.monotonic()
        # "teacher" counts the teachers folded in, on every line; this one names the teacher whose epoch ended
        ws.log("teachers", teachers_progress(), teacher=teachers["done"], teachers=sp.teachers,
               training_teacher=index + 1, epoch=epoch, epochs=sp.teacher_epochs)

    return get_executor(sp.executor, sp.ray_address).run(job, teacher_data, on_teacher, ws.should_stop,
                                                         on_epoch=on_epoch)


def privacy_record(ws: Workspace, oracle: TeacherOracle, noise: str, scale: float, histogram: dict) -> dict:
    """privacy.json of a SeqPATE run: epsilon recomputed from the releases the oracle recorded, the settings that
    calibrated them and the partition (its teachers-per-user histogram, Table 5)."""
    cfg, sp = ws.cfg, ws.cfg.seqpate
    events = oracle.events()
    report = epsilon_from_events(events, cfg.privacy.delta)
    return {
        "epsilon": report.epsilon, "delta": report.delta, "accountant": report.accountant,
        "unit": "sample" if noise != "none" else "none", "events": events_to_dicts(events),
        "target_epsilon": cfg.privacy.epsilon, "mechanism": noise, "noise_scale": scale,
        "sensitivity": SEQPATE_L1_SENSITIVITY if noise == "laplace" else SEQPATE_L2_SENSITIVITY,
        "query_budget": sp.query_budget, "queries_spent": oracle.spent, "vanished_answers": oracle.vanished,
        "teachers": sp.teachers, "partition": sp.partition, "teachers_per_user": histogram,
        "non_private": noise == "none", "random_streams": [SEQPATE_NOISE],
    }


def run_seqpate(ws: Workspace) -> MethodResult:
    cfg, sp = ws.cfg, ws.cfg.seqpate
    switches = ABLATION_SWITCHES[sp.ablation]
    timings: dict[str, float] = {}

    # 1. Pseudo data from public prefixes (public).
    t = time.time()
    distill_seqs = ws.pseudo_seqs[: sp.distill_sentences]  # the distillation set: the first pseudo sentences
    n_rows = count_rows(distill_seqs)
    timings["pseudo_s"] = time.time() - t

    # 2. Disjoint partitions of the private train set.
    teacher_of, histogram, teacher_data = partition_private(ws)
    note = crowding_note(sp.teachers, histogram) if sp.partition == "by-user" else None
    ws.log("partition", ws.method_progress(0.05), teachers=sp.teachers, partition=sp.partition,
           teachers_per_user=histogram, distill_positions=n_rows, **({"message": note} if note else {}))

    # 3. Calibrate before any query.
    noise, scale = calibrate_noise(switches.get("noise", "gaussian"), cfg.privacy.epsilon, cfg.privacy.delta,
                                   sp.query_budget)
    if cfg.privacy.target == "phrase-avg" and noise == "gaussian":
        # Table 2: the AVERAGE secret-phrase epsilon (sensitivity sqrt(2) * n_s) hits the target instead
        from core.analysis.phrases import seqpate_phrase_avg_std_for

        scale = seqpate_phrase_avg_std_for(ws, teacher_of, sp.query_budget)
    ws.log("calibrate", ws.method_progress(0.06), noise=noise, noise_scale=scale, query_budget=sp.query_budget)

    # 4. Teachers: train, infer once over the distillation positions, fold into the running sum, discard.
    t = time.time()
    job = TeacherJob(
        base_state={k: v.detach().cpu().clone() for k, v in ws.base_model.state_dict().items()},
        base_config=ws.base_model.config.to_dict(), distill_seqs=distill_seqs, n_rows=n_rows, pad_id=ws.pad_id,
        epochs=sp.teacher_epochs, lr=sp.teacher_lr, batch_size=sp.batch_size, seed=cfg.seed,
        want_votes=switches.get("use_votes", False), device=ws.device,
    )

    teacher_sum, teacher_votes = train_teachers(ws, job, teacher_data)
    timings["teachers_s"] = time.time() - t

    # 5. Student: warm-up on pseudo data, then distillation with noisy teacher answers.
    t = time.time()
    student = ws.pseudo_warm_model("warm-up", span=(0.70, 0.72))
    timings["warmup_s"] = time.time() - t

    # the noise draws from a random stream of its own, apart from every batch order (core.privacy.streams; the
    # runs made before it had one are named by core.config.shared_noise_streams)
    oracle = TeacherOracle(teacher_sum, noise, scale, sp.query_budget, seed=stream_seed(cfg.seed, SEQPATE_NOISE),
                           teacher_votes=teacher_votes)
    kind, value = parse_filter(sp.filter)
    settings = DistillSettings(
        filter_kind=kind, filter_value=value, rank_threshold=sp.rank_threshold, kd_lambda=sp.kd_lambda,
        epochs=sp.student_epochs, lr=sp.student_lr, batch_size=sp.batch_size, seed=cfg.seed,
        teacher_loss=switches.get("teacher_loss", "kl"), pseudo_loss=switches.get("pseudo_loss", True),
        efficient_kd=switches.get("efficient_kd", True), use_votes=switches.get("use_votes", False),
    )

    def on_student_epoch(epoch: int, stats: dict) -> None:
        spent = epsilon_from_events(oracle.events(), cfg.privacy.delta).epsilon
        ws.log("student", ws.method_progress(0.75 + 0.25 * (epoch + 1) / sp.student_epochs), epoch=epoch + 1,
               epochs=sp.student_epochs, queries_spent=oracle.spent, query_budget=sp.query_budget,
               epsilon_spent=spent, **stats)

    t = time.time()
    stats = distill(student, distill_seqs, oracle, settings, ws.pad_id, on_student_epoch, ws.should_stop)
    timings["distill_s"] = time.time() - t

    # 6. Privacy: recomputed from what was actually released.
    privacy = privacy_record(ws, oracle, noise, scale, histogram)
    metrics = {"queries_spent": oracle.spent, "query_budget": sp.query_budget, **stats,
               "distill_positions": n_rows, "teachers": sp.teachers,
               "teacher_loss": TEACHER_LOSSES[settings.teacher_loss], "seqpate_timings": timings}
    return MethodResult(student, privacy, metrics)
