from pathlib import Path

import pytest

from core.config import preset_config
from core.runs.jobs import CANCEL_MARKER, TERMINATED_ERROR
from core.runs.pipeline import Terminated
from core.runs.store import RunDir
from core.runs.sweep import plan_configs, run_plan


def fake_execute(cfg, run, should_stop=lambda: False):
    """Stands in for training: writes a finished run so resumability can be checked quickly."""
    run.write_privacy({"epsilon": cfg.privacy.epsilon, "delta": cfg.privacy.delta, "accountant": "fake",
                       "unit": "sample", "events": []})
    run.write_metrics({"ppl": 10.0, "bleu4": 1.0})
    run.write_completions([])
    run.log_progress("done", progress=1.0)
    run.set_status(state="done", stage="done", progress=1.0)
    return {"ppl": 10.0, "bleu4": 1.0}


def test_tradeoff_plan_covers_every_method_and_epsilon():
    names = [name for name, _ in plan_configs("tradeoff", "tiny")]
    assert len(names) == 3 + 4 * 6 and "tiny-seqpate-eps0.5" in names and "tiny-pri-gpt" in names
    cfg = dict(plan_configs("tradeoff", "tiny"))["tiny-noisysgd-gc+pseudo-eps8"]
    assert cfg.method == "noisysgd-gc+pseudo" and cfg.privacy.epsilon == 8.0


def test_phrase_plan_on_quick_keeps_by_user_teachers_below_its_649_users():
    quick = dict(plan_configs("phrases", "quick"))
    by_user = [cfg for cfg in quick.values() if cfg.seqpate.partition == "by-user"]
    assert len(by_user) == 3 and {cfg.seqpate.teachers for cfg in by_user} == {100}
    assert preset_config("quick").seqpate.teachers == 1000  # the preset's default, kept for random partitions
    assert {cfg.seqpate.teachers for cfg in dict(plan_configs("phrases", "tiny")).values()} == {10}


def test_sweep_skips_finished_runs_and_redoes_broken_ones(tmp_path):
    lines = []
    run_plan("teachers", "tiny", tmp_path, execute=fake_execute, echo=lines.append)
    assert len(lines) == 4 and all("ppl 10.00" in line for line in lines)
    # break one run (as a killed job would leave it), then resume
    RunDir(tmp_path / "tiny-seqpate-teachers10").set_status(state="failed", error="process exited without "
                                                                                   "finishing (stage: student)")
    lines.clear()
    run_plan("teachers", "tiny", tmp_path, execute=fake_execute, echo=lines.append)
    assert sum("skipped" in line for line in lines) == 3
    assert any("teachers10: ppl" in line for line in lines)
    # said, not done silently: the folder of the run that died (and its record of why) is deleted
    assert [line for line in lines if "redoing" in line] == [
        f"[2/4] tiny-seqpate-teachers10: redoing it from the start: {tmp_path / 'tiny-seqpate-teachers10'} held a "
        "run that did not finish (failed: process exited without finishing (stage: student)), deleted"]
    # a finished run whose files were damaged since is someone's result: named, not deleted
    progress = tmp_path / "tiny-seqpate-teachers1" / "progress.jsonl"
    damaged = '{"time": "2026-11' + "\n" + progress.read_text()  # a line cut short before the last
    progress.write_text(damaged)
    lines.clear()
    assert run_plan("teachers", "tiny", tmp_path, execute=fake_execute, echo=lines.append) == [
        "tiny-seqpate-teachers10", "tiny-seqpate-teachers100", "tiny-seqpate-teachers1000"]
    assert progress.read_text() == damaged and lines[0].startswith(
        "[1/4] tiny-seqpate-teachers1: NOT RUN: ") and "holds a finished run whose files do not read" in lines[0]
    # ... status.json itself cut short: its metrics and privacy record are still someone's results
    status = tmp_path / "tiny-seqpate-teachers100" / "status.json"
    status.write_text('{"state": "done"')
    lines.clear()
    run_plan("teachers", "tiny", tmp_path, execute=fake_execute, echo=lines.append)
    assert status.read_text() == '{"state": "done"' and (status.parent / "metrics.json").is_file()
    assert lines[2].startswith("[3/4] tiny-seqpate-teachers100: NOT RUN: ")


def test_a_stop_or_failure_the_folder_cannot_record_is_still_said(tmp_path, monkeypatch):
    """With a full disk a Ctrl-C in a sweep printed only the failed status write (exit 2), naming neither the run
    nor the stop, and a failed run aborted the whole plan."""
    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    def interrupted(cfg, run, should_stop):
        monkeypatch.setattr(RunDir, "set_status", no_space)
        raise KeyboardInterrupt

    lines = []
    with pytest.raises(KeyboardInterrupt):
        run_plan("adp", "tiny", tmp_path, execute=interrupted, echo=lines.append)
    assert lines == ["[1/2] tiny-adp-eps3: STOPPED (not recorded: [Errno 28] No space left on device); the plan "
                     "stops here"]
    monkeypatch.undo()

    def failing(cfg, run, should_stop):
        monkeypatch.setattr(RunDir, "set_status", no_space)
        raise RuntimeError("teacher 3 diverged")

    lines.clear()
    out = tmp_path / "again"
    assert run_plan("adp", "tiny", out, execute=failing, echo=lines.append) == []
    assert lines == ["[1/2] tiny-adp-eps3: FAILED RuntimeError: teacher 3 diverged",
                     "[2/2] tiny-adp-eps8: FAILED RuntimeError: teacher 3 diverged"]


def test_a_run_in_progress_in_the_sweeps_folder_is_left_running(tmp_path):
    """A sweep deleted every unfinished folder under its names, a run another sweep (or a job) was still writing
    included; one whose process is gone is still redone."""
    import subprocess
    import sys

    path = tmp_path / "tiny-adp-eps3"
    run = RunDir.create(path, preset_config("tiny", method="adp").to_dict(), 0)
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run.set_status(state="running", pid=helper.pid)
        lines = []
        done = run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lines.append)
        assert done == ["tiny-adp-eps8"] and path.is_dir() and run.status()["state"] == "running"
        assert lines[0] == (f"[1/2] tiny-adp-eps3: NOT RUN: {path} holds a run in progress (pid {helper.pid}; "
                            "another sweep or a job): wait for it, or sweep into another --out")
    finally:
        helper.kill()
        helper.wait()
    done = run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lambda line: None)
    assert done == ["tiny-adp-eps3", "tiny-adp-eps8"] and run.is_complete()
    # a status.json that cannot be read stands for no live run: redone, not a crash of the whole plan (where the
    # folder holds no results: with them it is a finished run damaged since, left alone, as the test above has it)
    (path / "status.json").write_text("{not json")
    (path / "metrics.json").unlink()
    (path / "privacy.json").unlink()
    assert run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lambda line: None) == [
        "tiny-adp-eps3", "tiny-adp-eps8"] and run.is_complete()


def test_a_seed_other_than_0_is_named_and_never_takes_seed_0s_runs(tmp_path):
    names = [name for name, _ in plan_configs("adp", "tiny", seed=1)]
    assert names == ["tiny-adp-eps3-seed1", "tiny-adp-eps8-seed1"]
    run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lambda line: None)
    lines = []
    done = run_plan("adp", "tiny", tmp_path, seed=1, execute=fake_execute, echo=lines.append)
    assert done == names and not any("skipped" in line for line in lines)
    assert RunDir(tmp_path / "tiny-adp-eps3").run_config().seed == 0
    assert RunDir(tmp_path / "tiny-adp-eps3-seed1").run_config().seed == 1


def test_a_finished_run_of_other_settings_is_neither_skipped_as_done_nor_overwritten(tmp_path):
    run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lambda line: None)
    other = preset_config("tiny", method="adp", privacy__epsilon=5.0)  # someone's run under the plan's name
    run = RunDir(tmp_path / "tiny-adp-eps3")
    (run.path / "config.json").write_text((run.path / "config.json").read_text().replace('"epsilon": 3.0', '"epsilon": 5.0'))
    assert run.run_config() == other
    lines = []
    done = run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lines.append)
    assert done == ["tiny-adp-eps8"]
    assert "NOT RUN" in lines[0] and "other settings" in lines[0] and "already done" in lines[1]
    assert run.run_config() == other and run.is_complete()


def test_a_run_differing_only_in_fields_its_method_never_reads_counts_as_done(tmp_path):
    run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lambda line: None)
    run = RunDir(tmp_path / "tiny-adp-eps3")  # ADP never reads the SeqPATE section
    (run.path / "config.json").write_text((run.path / "config.json").read_text().replace('"teachers": 10', '"teachers": 7'))
    assert run.run_config().seqpate.teachers == 7
    lines = []
    assert run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=lines.append) == ["tiny-adp-eps3", "tiny-adp-eps8"]
    assert all("already done" in line for line in lines)


def test_a_cancel_of_one_of_its_runs_stops_that_run_and_the_plan_goes_on(tmp_path):
    """The Runs page's Cancel of a sweep's run (marker, then SIGTERM to the sweep) killed the whole sweep."""
    def cancelled_first(cfg, run, should_stop=lambda: False):
        if run.run_id == "tiny-adp-eps3":
            (run.path / CANCEL_MARKER).write_text("now")  # what jobs.cancel writes before its SIGTERM
            raise Terminated()  # what the sweep's SIGTERM handler raises
        return fake_execute(cfg, run)

    lines = []
    assert run_plan("adp", "tiny", tmp_path, execute=cancelled_first, echo=lines.append) == ["tiny-adp-eps8"]
    assert RunDir(tmp_path / "tiny-adp-eps3").state() == "cancelled"
    assert lines[0] == "[1/2] tiny-adp-eps3: CANCELLED; the plan goes on"


def test_a_sigterm_from_outside_stops_the_sweep_and_fails_its_run(tmp_path):
    def terminated(cfg, run, should_stop=lambda: False):
        raise Terminated()  # no cancel marker: a shutdown or a kill of the sweep

    lines = []
    with pytest.raises(Terminated):
        run_plan("adp", "tiny", tmp_path, execute=terminated, echo=lines.append)
    status = RunDir(tmp_path / "tiny-adp-eps3").status()
    assert status["state"] == "failed" and status["error"] == TERMINATED_ERROR
    assert not (tmp_path / "tiny-adp-eps8").exists()
    assert lines == [f"[1/2] tiny-adp-eps3: STOPPED: {TERMINATED_ERROR}; the plan stops here"]


def test_a_sweep_hands_its_runs_the_cancel_check(tmp_path):
    seen = []

    def watching(cfg, run, should_stop=lambda: False):
        seen.append(should_stop())
        (run.path / CANCEL_MARKER).write_text("now")
        seen.append(should_stop())
        return fake_execute(cfg, run)

    run_plan("adp", "tiny", tmp_path, execute=watching, echo=lambda line: None)
    assert seen == [False, True, False, True]  # each run's own marker


SLOW_SWEEP = """
import sys, time
from pathlib import Path
from core.runs.sweep import run_plan
from tests.runs.test_runs_sweep import fake_execute

def first_runs_long(cfg, run, should_stop=lambda: False):
    if run.run_id == "tiny-adp-eps3":
        run.set_status(state="running", stage="train")
        time.sleep(60)  # a long step that checks nothing: only the SIGTERM stops it
    time.sleep(4)  # the next run outlasts cancel's grace: a cancel that waits for the sweep to exit kills it
    return fake_execute(cfg, run)

run_plan("adp", "tiny", Path(sys.argv[1]), execute=first_runs_long)
"""


def test_the_runs_page_cancel_of_a_sweeps_run_leaves_the_sweep_running(tmp_path):
    """jobs.cancel, as the Runs page calls it, on a run a sweep executes: the sweep caught the SIGTERM and went
    on, cancel waited for the sweep's process to exit and SIGKILLed it after its grace."""
    import os
    import subprocess
    import sys
    import time

    from core.runs.jobs import cancel
    from tests.waiting import wait_for

    script = tmp_path / "sweep.py"
    script.write_text(SLOW_SWEEP)
    out = tmp_path / "out"
    repo = Path(__file__).resolve().parents[2]
    sweep = subprocess.Popen([sys.executable, str(script), str(out)], cwd=repo, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(repo)})
    try:
        first = RunDir(out / "tiny-adp-eps3")
        assert wait_for(lambda: first.path.is_dir() and first.state() == "running", 60)
        start = time.monotonic()
        assert cancel(first, grace_seconds=3)["state"] == "cancelled"
        assert time.monotonic() - start < 3  # no waiting out the grace for a process that goes on by design
        stdout, _ = sweep.communicate(timeout=60)
        assert sweep.returncode == 0, stdout  # not SIGKILLed
        assert "[1/2] tiny-adp-eps3: CANCELLED; the plan goes on" in stdout
        assert RunDir(out / "tiny-adp-eps8").state() == "done" and first.state() == "cancelled"
    finally:
        sweep.kill()
        sweep.wait()


def test_a_sigterm_between_runs_stops_the_plan_before_the_next(tmp_path):
    """A SIGTERM that reached the sweep between two runs raised in its bookkeeping; now the plan stops before the
    next run, which is not started."""
    import os
    import signal

    lines = []

    def echo(line):  # the first run's result line is written between runs: the signal lands there
        lines.append(line)
        if len(lines) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        run_plan("adp", "tiny", tmp_path, execute=fake_execute, echo=echo)
    assert signal.getsignal(signal.SIGTERM) == previous  # the sweep's handler is gone with it
    assert RunDir(tmp_path / "tiny-adp-eps3").state() == "done" and not (tmp_path / "tiny-adp-eps8").exists()
    assert lines[1] == "[2/2] tiny-adp-eps8: NOT RUN: the sweep was sent SIGTERM; the plan stops here"
