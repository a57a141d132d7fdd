"""The dashboard's remaining-time estimate (dashboard/estimate.py), alone and as the Runs page's records carry it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from fake_runs import write_run

from core.runs.store import RunDir
from dashboard import estimate, loading


def test_timing_estimates_remaining_from_progress():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    started = (now - timedelta(seconds=100)).isoformat()
    elapsed, remaining = estimate.timing({"state": "running", "started": started, "progress": 0.25}, now)
    assert elapsed == 100 and remaining == 300
    finished = (now - timedelta(seconds=40)).isoformat()
    assert estimate.timing({"state": "done", "started": started, "finished": finished, "progress": 1.0}, now) == (60, 0)
    assert estimate.timing({"state": "queued"}, now) == (None, None)
    assert estimate.fmt_duration(3725) == "1h 02m" and estimate.fmt_duration(65) == "1m 05s" and estimate.fmt_duration(None) == "–"


def test_timing_counts_down_while_the_progress_stands_still():
    # 25% reached 20 s in, nothing since: 60 s remained then, 40 s of them have passed
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    started, moved = (now - timedelta(seconds=60)).isoformat(), (now - timedelta(seconds=40)).isoformat()
    status = {"state": "running", "started": started, "progressed": moved, "progress": 0.25}
    assert estimate.timing(status, now) == (60, 20)
    later = now + timedelta(seconds=30)  # past the estimate: unknown, not a negative or a growing number
    assert estimate.timing(status, later) == (90, None)


T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
# a finished run whose progress is not proportional to its time: half done at 100 s, its last 10% takes 100 s
PACE_LINES = [{"time": (T0 + timedelta(seconds=s)).isoformat(), "stage": "x", **({"progress": p} if p else {})}
              for s, p in ((0, 0.01), (10, 0.1), (20, 0.1), (60, None), (100, 0.5), (300, 0.9), (400, 1.0))]


def test_a_finished_runs_pace_is_where_it_first_reached_each_progress():
    assert estimate.progress_profile(PACE_LINES, T0.isoformat()) == [(0.01, 0), (0.1, 10), (0.5, 100), (0.9, 300),
                                                              (1.0, 400)]
    assert estimate.progress_profile(PACE_LINES, None) == [] and estimate.progress_profile([], T0.isoformat()) == []
    # a line that is no object or has no time is skipped; a clock set back does not make the pace run backwards
    odd = [3, {"progress": 0.2}, *PACE_LINES[:5], {**PACE_LINES[5], "time": PACE_LINES[1]["time"]}, PACE_LINES[6]]
    assert estimate.progress_profile(odd, T0.isoformat()) == [(0.01, 0), (0.1, 10), (0.5, 100), (0.9, 100), (1.0, 400)]


def test_remaining_time_is_paced_on_a_finished_run_of_the_same_kind():
    profile = estimate.progress_profile(PACE_LINES, T0.isoformat())
    # half done 200 s in, 10 s ago: twice as slow as the finished run, which still took 300 s from there
    assert estimate.paced_remaining(0.5, 200, 210, profile) == 590
    status = {"state": "running", "started": T0.isoformat(), "progressed": (T0 + timedelta(seconds=200)).isoformat(),
              "progress": 0.5}
    now = T0 + timedelta(seconds=210)
    assert estimate.timing(status, now, profile) == (210, 590)
    assert estimate.timing(status, now) == (210, 190)  # the pace so far alone: t (1 - p) / p, less the 10 s since
    # unless the progress moved within the first seconds: loading the data reached 4% in 1.5 s, and 14 s in, 35 s
    # were estimated for a run that took 130 s more (a walk); unknown until a pace of at least MIN_PACE_S
    data_only = {**status, "progress": 0.04, "progressed": (T0 + timedelta(seconds=1.5)).isoformat()}
    assert estimate.timing(data_only, T0 + timedelta(seconds=14)) == (14, None)
    assert estimate.timing({**data_only, "progressed": (T0 + timedelta(seconds=10)).isoformat()},
                           T0 + timedelta(seconds=14)) == (14, 236)  # 10 s (1 - 0.04) / 0.04, less the 4 s since
    assert estimate.paced_remaining(0.1, 5, 5, profile) == 390  # 5 s against 10 s is jitter, not a speed: taken as equal
    assert estimate.paced_remaining(0.1, 100, 100, profile) == 3900  # ten times slower than the finished run's 10 s
    assert estimate.paced_remaining(0.5, 200, 900, profile) is None  # past what the pace predicts: unknown
    # beyond the finished run's last progress below 1 its profile says nothing of what is left: the pace so far
    late = {**status, "progress": 0.95, "progressed": (T0 + timedelta(seconds=380)).isoformat()}
    assert not estimate.paces(profile, 0.95) and estimate.timing(late, T0 + timedelta(seconds=380), profile) == (380, pytest.approx(20))


def _lines(*points, started=T0):
    """Progress lines at (seconds, progress, extra fields) after `started`."""
    return [{"time": (started + timedelta(seconds=s)).isoformat(), "stage": "x", "progress": p, **extra}
            for s, p, extra in points]


# a run that trained its base model (the bar's first half: its last epoch reaches 0.5 at 95 s, saving the base model
# takes 5 s), then its method from 0.5 at 100 s, as the pipeline logs them
TRAINED_LINES = _lines((0, 0.01, {}), (1, 0.04, {"method_start": 0.5}), (95, 0.5, {"epoch": 4}),
                       (100, 0.5, {"message": "method seqpate"}), (300, 0.7, {}), (500, 0.9, {}), (600, 1.0, {}))

# PACE_LINES as a run that found its base model trained logged them before method_start was logged: the method's
# first line says where it starts
CACHED_LINES = [{**line, "message": "method seqpate"} if line.get("progress") == 0.1 else line for line in PACE_LINES]


def test_where_a_runs_method_starts_on_its_progress_bar():
    assert estimate.method_start(TRAINED_LINES) == 0.5 and estimate.method_start(TRAINED_LINES[:2]) == 0.5  # logged up front
    # runs from before it was logged: the progress of the line that starts the method
    assert estimate.method_start(CACHED_LINES) == 0.1
    assert estimate.method_start(PACE_LINES) is None and estimate.method_start([7, "x"]) is None  # synthetic data: no such line
    assert estimate.trains_its_base(TRAINED_LINES[:2]) and not estimate.trains_its_base(_lines((1, 0.04, {"method_start": 0.1})))
    assert estimate.trains_its_base([{"stage": "base-model", "epoch": 1}])  # no start logged: the base model's epochs say


def test_a_run_is_paced_on_the_methods_time_alone_where_the_other_run_trained_its_base_model_and_it_did_not():
    trained = estimate.progress_profile(TRAINED_LINES, T0.isoformat())
    # onto a bar whose method starts at 0.1: 0.5 -> 0.1, 0.7 (half the method) -> 0.5, evaluation where it was;
    # times from the method's start, so the 100 s of base-model training pace nothing
    # from the method's line at 100 s, not from the last epoch's 0.5 at 95 s
    assert estimate.method_began(TRAINED_LINES, T0.isoformat()) == 100
    assert estimate.method_began(TRAINED_LINES[:3], T0.isoformat()) is None
    assert estimate.on_method_time(trained, 0.5, 0.1, 100) == [(0.1, 0), (pytest.approx(0.5), 200), (0.9, 400), (1.0, 500)]
    cached = estimate.progress_profile(PACE_LINES, T0.isoformat())  # its method starts at 0.1, 10 s in
    assert estimate.on_method_time(cached, 0.1, 0.5, 10) == [(0.5, 0), (0.7, 90), (0.9, 290), (1.0, 390)]
    # a damaged start past the method's end, on either side: nothing to stretch
    assert estimate.on_method_time(cached, 0.95, 0.5, 10) == [] and estimate.on_method_time(cached, 0.1, 0.95, 10) == []


def _with_pseudo(pseudo_s: float, teachers_s: float, total_s: float) -> list[dict]:
    """A SeqPATE run's lines: its method at 0.1 (1 s in), the pseudo data for pseudo_s seconds (a line with no
    progress), the partition at 0.14, the teachers done at 0.66 teachers_s seconds later, done at total_s."""
    after = 1 + pseudo_s
    return [*_lines((0, 0.01, {}), (1, 0.1, {"message": "method seqpate", "method_start": 0.1})),
            {"time": (T0 + timedelta(seconds=1)).isoformat(), "stage": "pseudo-data", "message": "completing"},
            *_lines((after, 0.14, {}), (after + teachers_s, 0.66, {}), (total_s, 1.0, {}))]


def test_a_pace_counts_from_the_end_of_the_pseudo_data_which_one_run_found_cached():
    """A review's first tiny SeqPATE run computed its pseudo data (25 s) where the shipped run it was paced on found
    them cached (under 1 s): scaled by the times to reach the teachers' first answer, 31 s against 9 s, it was
    estimated to need 11 minutes more; it took 2."""
    cached_ref = _with_pseudo(0.5, 100, 200)  # the pseudo data from the cache; teachers 100 s, then 98.5 s more
    assert estimate.after_cached_stage(cached_ref, T0.isoformat()) == 1.5
    assert estimate.after_cached_stage(cached_ref[:3], T0.isoformat()) is None  # still in it
    assert estimate.after_cached_stage(PACE_LINES, T0.isoformat()) is None  # a method without pseudo data
    running = _with_pseudo(25, 100, 10_000)[:-1]  # computed its pseudo data, then as fast as that run
    pace = estimate.choose_pace(0.66, running, T0.isoformat(), [("ref", cached_ref, T0.isoformat())])
    assert pace.anchor == (26, 1.5)
    status = {"state": "running", "started": T0.isoformat(), "progress": 0.66,
              "progressed": (T0 + timedelta(seconds=126)).isoformat()}
    # the teachers took as long as that run's, so what it still took after them: 98.5 s (not 126 / 101.5 times it)
    assert estimate.timing(status, T0 + timedelta(seconds=126), pace.profile, pace.origin, pace.anchor) == (
        126, pytest.approx(98.5))
    # twice as slow after the pseudo data: twice that run's remaining time
    slow = _with_pseudo(25, 200, 10_000)[:-1]
    pace = estimate.choose_pace(0.66, slow, T0.isoformat(), [("ref", cached_ref, T0.isoformat())])
    status["progressed"] = (T0 + timedelta(seconds=226)).isoformat()
    assert estimate.timing(status, T0 + timedelta(seconds=226), pace.profile, pace.origin, pace.anchor) == (
        226, pytest.approx(197))


def test_choose_pace_prefers_a_run_whose_method_starts_where_its_own_does():
    ref_trained = ("trained", TRAINED_LINES, T0.isoformat())
    ref_cached = ("cached", CACHED_LINES, T0.isoformat())
    # a run that trains its base model, 30% in: the run that trained its own paces it, though listed second
    training = _lines((0, 0.01, {}), (1, 0.04, {"method_start": 0.5}), (60, 0.3, {}))
    pace = estimate.choose_pace(0.3, training, T0.isoformat(), [ref_cached, ref_trained])
    assert (pace.run_id, pace.origin, pace.ref_start) == ("trained", 0, 0.5)
    # with only a run that found its base trained, nothing paces the base model's training: the pace so far
    assert estimate.choose_pace(0.3, training, T0.isoformat(), [ref_cached]) is None
    # once its method runs (from 120 s; its last epoch reached 0.5 at 115 s), that run paces it on the method's time
    in_method = [*training, *_lines((115, 0.5, {"epoch": 4}), (120, 0.5, {"message": "method seqpate"}))]
    pace = estimate.choose_pace(0.5, in_method, T0.isoformat(), [ref_cached])
    assert (pace.run_id, pace.origin, pace.ref_start) == ("cached", 120, 0.1)
    # at its method's start, 10 s after the progress last moved (115 s): the finished run's whole method, 390 s,
    # less the 5 s since its method began
    status = {"state": "running", "started": T0.isoformat(), "progress": 0.5,
              "progressed": (T0 + timedelta(seconds=115)).isoformat()}
    assert estimate.timing(status, T0 + timedelta(seconds=125), pace.profile, pace.origin) == (125, 385)
    in_method += _lines((300, 0.7, {}))
    pace = estimate.choose_pace(0.7, in_method, T0.isoformat(), [ref_cached])
    assert (pace.run_id, pace.origin, pace.ref_start) == ("cached", 120, 0.1)
    # half its method took 180 s, the finished run's 90 s: twice as slow, and that run's method still took 300 s
    status = {"state": "running", "started": T0.isoformat(), "progress": 0.7,
              "progressed": (T0 + timedelta(seconds=300)).isoformat()}
    assert estimate.timing(status, T0 + timedelta(seconds=310), pace.profile, pace.origin) == (310, 590)
    # a run whose start is not known yet (still loading its data) takes the first run that paces it
    pace = estimate.choose_pace(0.03, training[:1], T0.isoformat(), [ref_cached, ref_trained])
    assert (pace.run_id, pace.origin, pace.ref_start) == ("cached", 0, 0.1)


def test_the_estimates_help_says_what_paced_it_and_what_each_progress_bar_gives_the_base_model():
    import pandas as pd

    running = {"state": "running", "progress": 0.6, "has_kin": True}
    same = estimate.estimate_help({**running, "paced_on": "ref", "method_start": 0.5, "paced_start": 0.5})
    assert same.startswith("paced on ref,")
    assert "like this one's, gives the base model's training the first half" in same
    assert "times under 10 s count as 10 s, so the first seconds show about that run's own time" in same
    took = estimate.estimate_help({**running, "paced_on": "ref", "paced_took_s": 225.0})
    assert took.startswith("paced on ref (it took 3m 45s in all), a finished run of this method and preset")
    # counted from the end of the pseudo data only where they were (Pace.anchor): a run without them is not told so
    assert "pseudo data" not in took
    assert "reach it from the end of its pseudo data, which either may have found cached (times under" in \
        estimate.estimate_help({**running, "paced_on": "ref", "paced_from_pseudo": True})
    other = estimate.estimate_help({**running, "paced_on": "ref", "method_start": 0.5, "paced_start": 0.1})
    assert "gave the base model none of it, this one's gives the base model's training the first half" in other
    assert "method's time alone" in other
    # a start not known (a synthetic-data run; one still loading its data) claims no likeness: in a DataFrame row
    # the absent field is NaN, which must not read as a likeness either
    frame = pd.DataFrame([{**running, "paced_on": "ref", "method_start": None, "paced_start": 0.1},
                          {**running, "paced_on": "ref", "method_start": 0.5, "paced_start": 0.5, "paced_took_s": 9.0},
                          {"state": "done"}])
    row = frame.iloc[0]
    assert "like this one" not in estimate.estimate_help(row) and "alone" not in estimate.estimate_help(row)
    assert "(it took" not in estimate.estimate_help(row)  # NaN seconds: no time named
    assert "(it took 9s in all)" in estimate.estimate_help(frame.iloc[1])
    waiting = estimate.estimate_help({**running, "progress": 0.3, "method_start": 0.5, "method_begun": False})
    assert waiting.startswith("from the pace so far until its method begins")
    # the last epoch reached 0.5 and the base model is being saved: the method has not begun, whatever the progress
    assert estimate.estimate_help({**running, "progress": 0.5, "method_start": 0.5, "method_begun": False}) == waiting
    # in a DataFrame whose running rows all hold the flags, they are numpy's bools
    flags = pd.DataFrame([{**running, "progress": 0.3, "method_start": 0.5, "method_begun": False}]).iloc[0]
    assert estimate.estimate_help(flags) == waiting
    assert estimate.estimate_help({**running, "progress": 0.3, "method_start": 0.5, "method_begun": False,
                            "has_kin": False}).startswith("from the pace so far (no finished run")  # none later
    assert estimate.estimate_help({**running, "method_start": None}).startswith("from the pace so far (no finished run")
    assert estimate.estimate_help({"state": "done"}) == "estimated while the run runs"


def test_runs_frame_paces_a_running_run_on_the_last_finished_one_at_its_settings(roots):
    now = datetime.now(UTC)

    def finished(run_id: str, finished_at: datetime, lines: list[dict] = CACHED_LINES, **kwargs) -> None:
        run = write_run(roots["cached"], run_id, "seqpate", **kwargs)
        status = json.loads(run.file("status.json").read_text())
        shift = finished_at - datetime.fromisoformat(lines[-1]["time"])
        status.update(started=(T0 + shift).isoformat(), finished=finished_at.isoformat())
        run.file("status.json").write_text(json.dumps(status))
        run.file("progress.jsonl").write_text("".join(
            json.dumps({**line, "time": (datetime.fromisoformat(line["time"]) + shift).isoformat()}) + "\n"
            for line in lines))

    finished("ref", now - timedelta(hours=3))
    finished("ref-m5", now - timedelta(hours=1), teachers=5)  # newer, but at other settings
    finished("ref-damaged", now - timedelta(hours=2))  # newer, at the same settings, but its file is damaged:
    (roots["cached"] / "ref-damaged" / "progress.jsonl").write_text('{"time": "x"}\n{not json\n')  # passed over
    finished("ref-trained-base", now - timedelta(minutes=30), lines=TRAINED_LINES)  # the newest, but it trained its
    trained = RunDir(roots["cached"] / "ref-trained-base")  # base model: half its bar paced that, not the method
    trained.write_metrics({**trained.metrics(), "base_model": {"source": "tiny", "cached": False}})
    live = write_run(roots["live"], "live", "seqpate", state="running", progress=0.5)

    def running(progress: float, at: float, lines: list[dict]) -> None:
        status = json.loads(live.file("status.json").read_text())
        status.update(started=(now - timedelta(seconds=at + 10)).isoformat(),
                      progressed=(now - timedelta(seconds=10)).isoformat(), progress=progress)
        live.file("status.json").write_text(json.dumps(status))
        live.file("progress.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    running(0.5, 200, _lines((1, 0.04, {"method_start": 0.1}), started=now))  # it found its base model trained
    write_run(roots["live"], "other", "noisysgd", state="running", progress=0.5)
    rows = loading.runs_frame().set_index("run_id")
    assert rows.loc["live", "paced_on"] == "ref" and abs(rows.loc["live", "remaining_s"] - 590) < 5
    assert rows.loc["live", "paced_took_s"] == 400 and rows.loc["live", "method_begun"] is False
    assert not rows.loc["live", "trains_base"] and rows.loc["live", "method_start"] == rows.loc["live", "paced_start"]
    # a run that is training its base model is paced on one that trained its own
    running(0.3, 60, _lines((1, 0.04, {"method_start": 0.5}), started=now))
    row = loading.runs_frame().set_index("run_id").loc["live"]
    assert row["paced_on"] == "ref-trained-base" and row["trains_base"] and row["paced_start"] == 0.5
    trained.file("progress.jsonl").unlink()  # none did: the pace so far, 60 s (1 - 0.3) / 0.3 less the 10 s since
    row = loading.runs_frame().set_index("run_id").loc["live"]
    assert not isinstance(row.get("paced_on"), str) and row["trains_base"] and abs(row["remaining_s"] - 130) < 5
    assert row["has_kin"]  # the help says a finished run paces it once its method starts
    assert not isinstance(rows.loc["other", "paced_on"], str)  # no finished NoisySGD run: the pace so far


def test_the_launch_page_says_how_long_a_finished_run_of_the_settings_took():
    """Launch gave no time before launching (a walk's tiny run took 8 minutes): a finished run of the method and
    preset at the settings, and at the target ε where one is, says how long; one without a total time is skipped."""
    def done(run_id, method="seqpate", preset="tiny", variant="", target=3.0, total=240.0, finished="2026-01-02"):
        return {"run_id": run_id, "state": "done", "started": "2026-01-01", "finished": finished, "preset": preset,
                "method": method, "variant": variant, "epsilon_target": target, "total_s": total}

    records = [done("seq-m5", variant="teachers 5", total=100.0, finished="2026-01-09"),
               done("seq-inf", target=float("inf"), total=200.0, finished="2026-01-08"),
               done("seq-eps3", total=240.0),
               done("seq-eps3-no-total", total=None, finished="2026-01-07"),
               done("quick-seq", preset="quick", total=700.0, finished="2026-01-09"),
               done("sgd", method="noisysgd", total=300.0)]
    wanted = {"preset": "tiny", "method": "seqpate", "variant": "", "epsilon_target": 3.0}
    assert estimate.past_durations(wanted, records)[0] == ("seq-eps3", 240.0, 3.0)
    inf = float("inf")
    assert estimate.past_durations({**wanted, "epsilon_target": 8.0}, records)[0] == ("seq-inf", 200.0, inf)  # newest
    assert estimate.past_durations({**wanted, "variant": "teachers 5"}, records)[0] == ("seq-m5", 100.0, 3.0)
    assert estimate.past_durations({**wanted, "method": "adp"}, records) == []
    # every such run, best first: the page gives their spread (quick's SeqPATE at ε 3 took 10m 27s to 12m 16s)
    older = done("seq-eps3-older", total=300.0, finished="2026-01-01")
    assert estimate.past_durations(wanted, [*records, older]) == [("seq-eps3", 240.0, 3.0),
                                                                  ("seq-eps3-older", 300.0, 3.0),
                                                                  ("seq-inf", 200.0, inf)]
    # a run that trained its base model: that time is said apart (tiny-pri-gpt: 169.2 s, 104.8 s of them the base)
    pri = {**done("pri", method="pri-gpt", total=169.2), "base_cached": False, "base_model_s": 104.8}
    assert estimate.past_durations({**wanted, "method": "pri-gpt"}, [pri])[0] == ("pri", pytest.approx(64.4), 3.0)
    # what the page says comes on top: the median of the text runs that trained one (not a synthetic-data run's)
    slow = {**pri, "run_id": "pri-loaded", "base_model_s": 300.0}
    synth = {**pri, "run_id": "synth", "method": "synth-filter", "base_model_s": 27.0}
    assert estimate.base_training("tiny", [*records, pri, slow, {**pri, "base_model_s": 100.0}, synth]) == (3, 104.8)
    assert estimate.base_training("quick", [*records, pri]) is None


def test_the_launch_page_shows_the_time(roots):
    from apptest_helpers import open_page

    write_run(roots["cached"], "tiny-seq", "seqpate", epsilon=3.0)
    at = open_page("launch")
    at.selectbox(key="launch_preset").set_value("tiny").run()
    [line] = [c.value for c in at.caption if c.value.startswith("How long")]
    assert line.startswith("How long, the base model aside: SeqPATE: about ") and ", as tiny-seq took." in line
    at.text_input(key="launch_eps").set_value("8").run()  # no run at 8: the one used names its ε
    [line] = [c.value for c in at.caption if c.value.startswith("How long")]
    assert ", as tiny-seq at ε 3 took." in line
    # a second run of the settings that took longer: the spread is said, one run's time alone read as exact
    slower = write_run(roots["cached"], "tiny-seq-seed1", "seqpate", epsilon=3.0, seed=1)
    slower.write_metrics({**slower.metrics(), "timings": {"total_s": 185.0}})
    at.text_input(key="launch_eps").set_value("3").run()
    [line] = [c.value for c in at.caption if c.value.startswith("How long")]
    assert "(the 2 such runs took 1m 02s to 3m 05s)" in line, line
    at.selectbox(key="launch_preset").set_value("quick").run()
    assert "SeqPATE: no finished quick run to go by" in " ".join(c.value for c in at.caption)
