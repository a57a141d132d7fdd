"""registry.py: listing, reconcile of dead processes, cached runs left alone, safe lookup, run ids."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import RunConfig, preset_config
from core.runs import (
    RunDir,
    RunNotFoundError,
    RunReadOnlyError,
    cached_root,
    cancel,
    delete,
    is_safe_run_id,
    list_runs,
    live_root,
    new_run_id,
    reconcile,
    resolve_run,
)
from core.runs.store import process_start


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _roots(roots: dict[str, Path]) -> list[tuple[Path, str]]:
    return [(roots["live"], "live"), (roots["cached"], "cached")]


def test_default_roots_follow_the_environment(roots: dict[str, Path]) -> None:
    assert live_root() == roots["live"]
    assert cached_root() == Path(__file__).resolve().parents[2] / "cached_runs"


def test_reconcile_marks_a_dead_running_job_failed(roots: dict[str, Path]) -> None:
    run = RunDir.create(roots["live"] / "r1", RunConfig().to_dict(), seed=0)
    run.set_status(state="running", stage="teachers", pid=_dead_pid())
    status = reconcile(run)
    assert status["state"] == "failed"
    assert status["error"] == "process exited without finishing (stage: teachers)"
    assert run.status() == status


def test_a_dead_run_in_a_folder_that_cannot_be_written_lists_as_failed(roots: dict[str, Path], monkeypatch) -> None:
    """A sweep killed while writing into cached_runs/ (never written by a listing), and a run whose folder became
    unwritable (a full disk): both stayed "running" in runs list, runs show and the dashboard for good."""
    shipped = RunDir.create(roots["cached"] / "killed-sweep", RunConfig().to_dict(), seed=0)
    shipped.set_status(state="running", stage="student", pid=_dead_pid())
    full = RunDir.create(roots["live"] / "full-disk", RunConfig().to_dict(), seed=0)
    full.set_status(state="running", stage="evaluate", pid=_dead_pid())

    def no_space(self, change):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunDir, "update_status", no_space)
    listed = {info.run_id: info for info in list_runs(_roots(roots))}
    for run_id, stage in (("killed-sweep", "student"), ("full-disk", "evaluate")):
        assert (listed[run_id].state, listed[run_id].error) == (
            "failed", f"process exited without finishing (stage: {stage})")
    assert RunDir(roots["cached"] / "killed-sweep").status()["state"] == "running"  # a shipped folder: unwritten
    assert reconcile(RunDir(roots["cached"] / "killed-sweep", source="cached"))["state"] == "failed"


def test_a_dead_runs_end_is_its_last_sign_of_life_not_when_someone_looked(roots: dict[str, Path]) -> None:
    """A killed run's "finished" was stamped when the next listing noticed it: its elapsed time grew without bound."""
    from datetime import UTC, datetime

    run = RunDir.create(roots["live"] / "r1", RunConfig().to_dict(), seed=0)
    run.set_status(state="running", stage="teachers", pid=_dead_pid())
    run.log_progress("teachers", progress=0.3)
    run.log_path.write_text("teacher 3 of 10\n")
    hour_ago, two_hours_ago = datetime.now(UTC).timestamp() - 3600, datetime.now(UTC).timestamp() - 7200
    os.utime(run.path / "progress.jsonl", (two_hours_ago, two_hours_ago))
    os.utime(run.log_path, (hour_ago, hour_ago))  # the log was written last
    status = json.loads((run.path / "status.json").read_text())
    status["updated"] = datetime.fromtimestamp(two_hours_ago, UTC).isoformat(timespec="milliseconds")
    (run.path / "status.json").write_text(json.dumps(status))

    status = reconcile(run)
    assert status["state"] == "failed"
    assert status["finished"] == datetime.fromtimestamp(hour_ago, UTC).isoformat(timespec="milliseconds")


def test_reconcile_handles_queued_runs(roots: dict[str, Path]) -> None:
    waiting = RunDir.create(roots["live"] / "w", {}, seed=0)
    assert reconcile(waiting)["state"] == "queued"  # no pid: nobody started it yet
    waiting.set_status(pid=_dead_pid())
    assert reconcile(waiting)["state"] == "failed"
    alive = RunDir.create(roots["live"] / "a", {}, seed=0)
    alive.set_status(state="running", pid=os.getpid())
    assert reconcile(alive)["state"] == "running"


def test_a_pid_taken_by_another_process_is_not_the_job(roots: dict[str, Path]) -> None:
    """After a reboot (or a wrap-around) a dead job's pid may belong to a stranger: the run is failed, not kept
    running forever, and cancel leaves the stranger alone."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run = RunDir.create(roots["live"] / "r", RunConfig().to_dict(), seed=0)
        run.set_status(state="running", stage="teachers", pid=stranger.pid)
        assert run.status()["pid_started"] == process_start(stranger.pid)  # stamped with the pid
        assert reconcile(run)["state"] == "running"  # the recorded process itself: alive

        # The same pid, another start time: what a job killed before a reboot leaves behind.
        status = json.loads((run.path / "status.json").read_text())
        status["pid_started"] = str(int(status["pid_started"]) - 1)
        (run.path / "status.json").write_text(json.dumps(status))
        assert cancel(run, grace_seconds=0.2)["state"] == "cancelled"
        assert stranger.poll() is None  # not signalled

        run.set_status(state="running", stage="teachers", pid=stranger.pid)
        status = json.loads((run.path / "status.json").read_text())
        status["pid_started"] = "1"
        (run.path / "status.json").write_text(json.dumps(status))
        assert reconcile(run)["state"] == "failed"
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_cached_runs_are_never_modified(roots: dict[str, Path]) -> None:
    RunDir.create(roots["cached"] / "shipped", RunConfig().to_dict(), seed=0)
    # A cached run frozen mid-way with a dead pid: the listing must not "repair" its files (it reads failed, as the
    # process that wrote it is gone: "running" for good misled a walk whose sweep into cached_runs/ was killed)
    RunDir(roots["cached"] / "shipped").set_status(state="running", stage="student", pid=_dead_pid())
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (roots["cached"] / "shipped").iterdir()}

    infos = list_runs(_roots(roots))
    assert [(i.run_id, i.source, i.state) for i in infos] == [("shipped", "cached", "failed")]
    run = resolve_run("shipped", _roots(roots))
    assert run.source == "cached" and run.read_only
    assert reconcile(run)["state"] == "failed" and run.state() == "running"
    with pytest.raises(RunReadOnlyError):
        run.set_status(state="failed")
    with pytest.raises(RunReadOnlyError):
        run.write_metrics({})
    with pytest.raises(RunReadOnlyError):
        delete(run)

    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (roots["cached"] / "shipped").iterdir()}
    assert after == before


def test_list_runs_newest_first_with_config_fields(roots: dict[str, Path]) -> None:
    cfg = preset_config("tiny", method="seqpate", privacy__epsilon=float("inf")).to_dict()
    RunDir.create(roots["live"] / "old", RunConfig().to_dict(), seed=0)
    RunDir.create(roots["live"] / "new", cfg, seed=0)
    (roots["live"] / ".slots").mkdir()
    (roots["live"] / "not-a-run").mkdir()
    infos = list_runs(_roots(roots))
    assert [i.run_id for i in infos] == ["new", "old"]
    new = infos[0]
    assert new.method == "seqpate" and new.preset == "tiny" and new.epsilon == float("inf")
    assert new.state == "queued" and new.source == "live" and new.progress == 0.0
    assert new.run_dir.path == roots["live"] / "new"


def test_list_runs_survives_corrupt_files(roots: dict[str, Path]) -> None:
    good = RunDir.create(roots["live"] / "good", {}, seed=0)
    bad = RunDir.create(roots["live"] / "bad", {}, seed=0)
    (bad.path / "status.json").write_text("{truncated")
    no_status = RunDir.create(roots["live"] / "nostatus", {}, seed=0)
    (no_status.path / "status.json").unlink()
    infos = {i.run_id: i for i in list_runs(_roots(roots))}
    assert infos["good"].state == "queued"
    assert infos["bad"].state == "failed"
    assert infos["bad"].error.startswith("unreadable run files: ") and "status.json" in infos["bad"].error
    assert infos["nostatus"].state == "failed" and "status.json" in infos["nostatus"].error
    assert good.state() == "queued"
    delete(bad)  # an unreadable run can still be removed
    assert not bad.path.exists()


def test_resolve_run_by_id_and_path(roots: dict[str, Path]) -> None:
    live = RunDir.create(roots["live"] / "r1", {}, seed=0)
    RunDir.create(roots["cached"] / "c1", {}, seed=0)
    assert resolve_run("r1", _roots(roots)) == live
    assert resolve_run("c1", _roots(roots)).source == "cached"
    assert resolve_run(str(live.path), _roots(roots)) == RunDir(live.path.resolve())
    assert resolve_run(str(roots["cached"] / "c1"), _roots(roots)).source == "cached"
    assert resolve_run("r1").path == live.path  # default roots use $SEQPATE_RUNS_DIR
    with pytest.raises(RunNotFoundError, match="not a run id"):
        resolve_run(str(live.path), _roots(roots), allow_paths=False)


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", ".", "", "unknown-run", "/etc", "a\\b"])
def test_resolve_run_refuses_traversal_and_unknown_ids(roots: dict[str, Path], bad: str) -> None:
    (roots["live"] / "a").mkdir()
    (roots["live"] / "a" / "b").mkdir()  # exists, but is not a run folder
    with pytest.raises(RunNotFoundError):
        resolve_run(bad, _roots(roots))


def test_new_run_id_is_safe_and_unique() -> None:
    run_id = new_run_id("seqpate", 3.0)
    assert re.fullmatch(r"\d{8}-\d{6}-seqpate-eps3-[0-9a-f]{4}", run_id)
    assert re.fullmatch(
        r"\d{8}-\d{6}-noisysgd-gc-pseudo-epsinf-[0-9a-f]{4}", new_run_id("noisysgd-gc+pseudo", "inf")
    )
    assert "eps0.5-" in new_run_id("adp", 0.5)
    ids = {new_run_id("x", 1) for _ in range(50)}
    assert len(ids) > 40
    assert all(is_safe_run_id(i) for i in ids)
    assert not is_safe_run_id("../x") and not is_safe_run_id(".slots") and not is_safe_run_id("")


def test_a_path_under_the_shipped_folder_is_read_only_whatever_roots_are_searched(tmp_path, monkeypatch):
    """A shipped run named by its path stays a shipped run (read-only) even when the roots searched are the live
    ones only: taken for a live run, `core audit --run-dir cached_runs/x` could rewrite it."""
    cached = tmp_path / "cached"
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(cached))
    run = RunDir.create(cached / "c1", {}, seed=0)
    got = resolve_run(str(run.path), [tmp_path / "live"])
    assert got.source == "cached" and got.read_only
