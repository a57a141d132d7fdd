"""Dead jobs: a real job SIGKILLed during training, a real job cancelled the way the dashboard cancels one.

Both jobs are the real engine (`python -m core job`), launched together (fixture `faults` in conftest.py) next
to runs that must not be touched. What the user then sees comes from the real command line (`runs show`, `runs
list`) and the dashboard (AppTest).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from core.runs import jobs
from core.runs.store import CANCEL_MARKER, RunDir, pid_alive
from tests.dashboard.apptest_helpers import open_page
from tests.reliability.conftest import cli, tree_snapshot


def _env(roots: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "SEQPATE_RUNS_DIR": str(roots["live"]), "SEQPATE_CACHED_RUNS_DIR": str(roots["cached"])}


def test_sigkilled_job_is_shown_failed_with_its_stage(faults) -> None:
    raw = faults["raw_after_kill"]
    assert raw["state"] == "running" and raw["stage"] == "base-model"  # SIGKILL leaves no chance to write
    out = cli("runs", "show", "victim", env=_env(faults["roots"]))
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["state"] == "failed" and shown["stage"] == "base-model"
    assert shown["error"] == "process exited without finishing (stage: base-model)"
    assert faults["victim"].status()["state"] == "failed"  # reconciled on disk, not only in the output


def test_other_runs_are_untouched_and_the_registry_stays_readable(faults) -> None:
    out = cli("runs", "list", "--json", env=_env(faults["roots"]))
    assert out.returncode == 0, out.stderr
    states = {row["run_id"]: (row["state"], row["stage"]) for row in json.loads(out.stdout)}
    assert states == {
        "victim": ("failed", "base-model"),
        "cancelled": ("cancelled", "base-model"),
        "bystander-done": ("done", "done"),
        "bystander-failed": ("failed", "seqpate"),
    }
    for run in faults["bystanders"]:
        assert tree_snapshot(run.path) == faults["before"][run.run_id], run.run_id


def test_cancel_stops_the_job_within_seconds_and_leaves_a_cancelled_run(faults) -> None:
    run: RunDir = faults["cancelled"]
    assert faults["cancel_seconds"] < jobs.CANCEL_GRACE_SECONDS  # stopped on SIGTERM, no SIGKILL needed
    assert not pid_alive(faults["cancel_pid"])
    status = run.status()
    assert status["state"] == "cancelled" and status["stage"] == "base-model" and status["error"] is None
    assert (run.path / CANCEL_MARKER).is_file()
    assert f"cancelled: {run.path}" in run.log_tail()  # the job's own clean exit, not a kill
    assert not run.is_complete() and run.metrics() is None and run.privacy() is None


def test_partial_files_of_a_crashed_run_are_never_taken_for_results(faults, monkeypatch) -> None:
    roots = faults["roots"]
    victim: RunDir = faults["victim"]
    assert victim.missing_files() == ["privacy.json", "metrics.json", "completions.jsonl"]
    assert not victim.is_complete()
    # Worst case: killed after writing metrics.json but before "done" (copied, so the other tests see the victim
    # as the kill left it).
    late = RunDir(roots["live"] / "crashed-late")
    shutil.copytree(victim.path, late.path)
    late.write_metrics({"ppl": 4242.5, "bleu1": 1.0, "bleu2": 1.0, "bleu3": 1.0, "bleu4": 1.0})
    assert not late.is_complete()

    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(roots["live"]))
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(roots["cached"]))
    at = open_page()  # Overview: the headline table of finished runs
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["run ids"]) == ["bystander-done"]
    assert 4242.5 not in set(table["PPL"]) and "Pri-GPT" not in set(table["Method"])


def test_the_runs_page_shows_the_killed_run_failed_at_its_stage(faults, monkeypatch) -> None:
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(faults["roots"]["live"]))
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(faults["roots"]["cached"]))
    at = open_page("runs")
    assert not at.exception
    at.selectbox(key="runs_selected").set_value("victim").run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert "Failed at stage base-model: process exited without finishing (stage: base-model)" in errors, errors
