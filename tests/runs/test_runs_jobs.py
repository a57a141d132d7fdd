"""jobs.py: launching background jobs, the slot queue, cancel and delete (with tiny scripts for the engine)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import ConfigError, RunConfig, thread_setting
from core.runs import RunDir, RunError, acquire_slot, cancel, cancel_requested, delete, launch, pid_alive
from core.runs.jobs import TERMINATED_ERROR, JobCancelled, job_threads
from tests.waiting import wait_for


def _config(method: str = "seqpate") -> dict:
    cfg = RunConfig().to_dict()
    cfg["method"] = method
    return cfg


def test_launch_runs_the_job_to_done(roots: dict[str, Path], job_script, waiter) -> None:
    job_script(
        """
        with jobs.acquire_slot(root, run):
            run.set_status(state="running", stage="train")
            print("training")
            run.log_progress("train", step=1, progress=0.5)
            run.set_status(state="done", stage="done", progress=1.0)
        """
    )
    run = launch(_config(), roots["live"])
    assert run.path.parent == roots["live"] and "-seqpate-eps3-" in run.run_id
    assert run.config()["config"]["method"] == "seqpate"
    assert waiter(lambda: run.state() == "done"), run.log_tail()
    status = run.status()
    assert status["progress"] == 1.0 and isinstance(status["pid"], int)
    assert "training" in run.log_tail()  # stdout goes to log.txt
    assert waiter(lambda: not pid_alive(status["pid"]))


def test_a_finished_job_is_reaped_without_anyone_asking(roots: dict[str, Path], job_script, waiter) -> None:
    """A job that ends (done, failed or cancelled) must not stay a zombie of the dashboard that launched it."""
    job_script('run.set_status(state="done", stage="done", progress=1.0)')
    run = launch(_config(), roots["live"])
    assert waiter(lambda: run.state() == "done"), run.log_tail()
    pid = run.status()["pid"]
    # not pid_alive (it would reap the zombie itself): /proc lists a zombie until its parent waits for it
    assert waiter(lambda: not Path(f"/proc/{pid}").exists()), Path(f"/proc/{pid}/status").read_text()[:200]


def test_thread_setting_reads_seqpate_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    for value, expected in ((" 3 ", 3), ("", 4), ("  ", 4), ("0", 1), ("64", 16)):  # blank: all cores; 1 to 16
        monkeypatch.setenv("SEQPATE_THREADS", value)
        assert thread_setting() == expected, value
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown core count: one thread
    monkeypatch.setenv("SEQPATE_THREADS", "")
    assert thread_setting() == 1 and job_threads(2) == 1
    monkeypatch.setenv("SEQPATE_THREADS", "two")
    with pytest.raises(ConfigError, match="SEQPATE_THREADS must be a whole number of torch threads, got 'two'"):
        thread_setting()


def test_launch_refuses_a_bad_thread_count_before_making_the_run(roots, job_script, monkeypatch) -> None:
    job_script("pass")
    monkeypatch.setenv("SEQPATE_THREADS", "two")
    with pytest.raises(ConfigError, match="SEQPATE_THREADS"):
        launch(_config(), roots["live"], run_id="never")
    assert not (roots["live"] / "never").exists()


def test_job_threads_split_the_cores_between_parallel_jobs() -> None:
    assert [job_threads(n, cpus=8) for n in (1, 2, 3, 4, 8, 9)] == [8, 4, 2, 2, 1, 1]
    assert job_threads(1, cpus=64) == 16 and job_threads(2, cpus=64) == 16  # as set_threads clamps
    assert job_threads(1, cpus=2) == 2 and job_threads(2, cpus=2) == 1 and job_threads(0, cpus=2) == 2


@pytest.mark.parametrize(("max_jobs", "set_by_hand", "expected"), [("1", None, "4"), ("2", None, "2"),
                                                                   ("3", None, "1"), ("2", "3", "3"), ("2", "", "2"),
                                                                   ("2", "  ", "2"), ("2", "99", "16")])
def test_launch_gives_each_job_its_share_of_the_cores(
    roots: dict[str, Path], job_script, waiter, monkeypatch: pytest.MonkeyPatch,
    max_jobs: str, set_by_hand: str | None, expected: str,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setenv("SEQPATE_MAX_JOBS", max_jobs)
    if set_by_hand is None:
        monkeypatch.delenv("SEQPATE_THREADS", raising=False)
    else:
        monkeypatch.setenv("SEQPATE_THREADS", set_by_hand)
    job_script(
        """
        import os
        print("threads=" + os.environ.get("SEQPATE_THREADS", "unset"))
        run.set_status(state="done", stage="done", progress=1.0)
        """
    )
    run = launch(_config(), roots["live"])
    assert waiter(lambda: run.state() == "done"), run.log_tail()
    assert run.log_tail().splitlines()[-1] == f"threads={expected}"


def test_launch_with_a_run_id_refuses_duplicates_and_unsafe_ids(roots: dict[str, Path], job_script) -> None:
    job_script("pass")
    launch(_config(), roots["live"], run_id="mine")
    with pytest.raises(RunError, match="already exists"):
        launch(_config(), roots["live"], run_id="mine")
    with pytest.raises(ValueError):
        launch(_config(), roots["live"], run_id="../escape")


def test_cancel_kills_a_sleeping_job(roots: dict[str, Path], job_script, waiter, tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    job_script(
        f"""
        import subprocess
        run.set_status(state="running", stage="teachers")
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        Path({str(child_pid_file)!r}).write_text(str(child.pid))
        time.sleep(60)
        """
    )
    run = launch(_config(), roots["live"])
    assert waiter(lambda: run.state() == "running" and child_pid_file.exists()), run.log_tail()
    pid = run.status()["pid"]
    grandchild = int(child_pid_file.read_text())
    start = time.monotonic()
    status = cancel(run)
    assert time.monotonic() - start < 5
    assert status["state"] == "cancelled" and status["error"] is None and status["stage"] == "teachers"
    assert cancel_requested(run)
    assert not pid_alive(pid)
    assert waiter(lambda: not pid_alive(grandchild), timeout=5)  # the whole process group went
    assert cancel(run)["state"] == "cancelled"  # already terminal: no-op


def test_cancel_a_job_that_ignores_sigterm(roots: dict[str, Path], job_script, waiter) -> None:
    job_script(
        """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run.set_status(state="running", stage="stubborn")
        time.sleep(60)
        """
    )
    run = launch(_config(), roots["live"])
    assert waiter(lambda: run.state() == "running"), run.log_tail()
    pid = run.status()["pid"]
    status = cancel(run, grace_seconds=0.5)
    assert status["state"] == "cancelled" and not pid_alive(pid)


def test_a_sigterm_from_outside_is_not_recorded_as_a_cancel(roots: dict[str, Path], job_script, waiter) -> None:
    """A shutdown's or a kill's SIGTERM was recorded as "cancelled", like a Cancel no one had clicked."""
    job_script(
        """
        from core.cli import run_to_completion
        from core.runs.pipeline import install_sigterm_handler

        def execute(should_stop):
            run.set_status(state="running", stage="teachers")
            time.sleep(60)

        install_sigterm_handler()
        raise SystemExit(run_to_completion(run, execute, dict))
        """
    )
    killed = launch(_config(), roots["live"])
    # the job imports the engine (torch: 8 s on 2 idle cores), so 10 s was too short beside other work
    assert waiter(lambda: killed.state() == "running", timeout=60), killed.log_tail()
    os.kill(killed.status()["pid"], signal.SIGTERM)
    assert waiter(lambda: killed.state() == "failed"), killed.log_tail()
    assert killed.status()["error"] == TERMINATED_ERROR and killed.status()["stage"] == "teachers"
    assert TERMINATED_ERROR in killed.log_tail()

    cancelled = launch(_config(), roots["live"])  # the same SIGTERM after a Cancel: a cancel
    assert waiter(lambda: cancelled.state() == "running", timeout=60), cancelled.log_tail()
    pid = cancelled.status()["pid"]
    assert cancel(cancelled)["state"] == "cancelled"
    assert waiter(lambda: not pid_alive(pid))
    assert cancelled.status()["state"] == "cancelled" and cancelled.status()["error"] is None
    assert "cancelled:" in cancelled.log_tail()


def test_cancel_of_a_run_in_a_shells_process_group_stops_that_process_alone(roots: dict[str, Path]) -> None:
    """A sweep typed in a terminal leads a process group it shares with what the shell started beside it
    (`sweep ... | tee log`): a cancel of one of its runs signalled the whole group."""
    sweep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0)
    beside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=sweep.pid)
    try:
        assert os.getpgid(beside.pid) == sweep.pid != os.getsid(sweep.pid)
        run = RunDir.create(roots["live"] / "swept", _config(), seed=0)
        run.set_status(state="running", pid=sweep.pid)
        assert cancel(run, grace_seconds=2)["state"] == "cancelled"
        assert not pid_alive(sweep.pid)  # stopped (and reaped by pid_alive: its exit status is gone)
        assert beside.poll() is None  # not signalled
    finally:
        for proc in (sweep, beside):
            proc.kill()
            proc.wait()


def test_cancel_leaves_finished_runs_alone(roots: dict[str, Path]) -> None:
    run = RunDir.create(roots["live"] / "done", {}, seed=0)
    run.set_status(state="done")
    assert cancel(run)["state"] == "done"
    assert not cancel_requested(run)


def test_second_job_waits_for_the_slot(
    roots: dict[str, Path],
    job_script,
    waiter: Callable[..., bool],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SEQPATE_MAX_JOBS", "1")
    job_script(
        f"""
        with jobs.acquire_slot(root, run):
            run.set_status(state="running", stage="work")
            release = Path({str(tmp_path)!r}) / ("release-" + run.run_id)
            while not release.exists():
                time.sleep(0.05)
            run.set_status(state="done", stage="done", progress=1.0)
        """
    )
    try:
        first = launch(_config(), roots["live"], run_id="first")
        assert waiter(lambda: first.state() == "running"), first.log_tail()
        second = launch(_config(), roots["live"], run_id="second")
        time.sleep(1.5)  # several polling rounds
        assert second.state() == "queued"
        assert pid_alive(second.status()["pid"])
        (tmp_path / "release-first").touch()
        assert waiter(lambda: first.state() == "done"), first.log_tail()
        assert waiter(lambda: second.state() == "running"), second.log_tail()
        (tmp_path / "release-second").touch()
        assert waiter(lambda: second.state() == "done"), second.log_tail()
    finally:  # a failure above must not leave the two jobs waiting for their release for good
        for name in ("release-first", "release-second"):
            (tmp_path / name).touch()


def test_slots_allow_max_parallel_holders(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "runs" / "r", {}, seed=0)
    with (
        acquire_slot(tmp_path / "runs", run, max_parallel=2) as a,
        acquire_slot(tmp_path / "runs", run, max_parallel=2) as b,
    ):
        assert {a, b} == {0, 1}
    with acquire_slot(tmp_path / "runs", run, max_parallel=1) as c:  # released on exit
        assert c == 0


def test_slots_go_to_waiting_jobs_in_launch_order(tmp_path: Path) -> None:
    """A walk launched Pub-GPT and Pub-GPT+pseudo together and the second ran first: whichever waiter polled first
    took the free slot. Here the runs created last wait first and poll fastest, and still go in creation order
    (named so that neither their names nor the order they began to wait sort that way)."""
    import threading

    root = tmp_path / "runs"
    holder = RunDir.create(root / "holder", {}, seed=0)
    runs = []
    for name in ("c-run", "b-run", "a-run"):
        runs.append(RunDir.create(root / name, {}, seed=0))
        time.sleep(0.01)  # creation times are in milliseconds: a tie would go by name (as launches never are)
    first, second, third = runs
    queue = root / ".slots" / "queue"
    order: list[str] = []

    def wait_for_slot(run: RunDir, poll: float) -> None:
        with acquire_slot(root, run, max_parallel=1, poll_seconds=poll):
            order.append(run.run_id)

    with acquire_slot(root, holder, max_parallel=1):
        threads = []
        for run, poll in ((third, 0.001), (second, 0.005), (first, 0.05)):
            threads.append(threading.Thread(target=wait_for_slot, args=(run, poll), daemon=True))
            threads[-1].start()
            time.sleep(0.2)  # each waits before the next begins to
        assert sorted(p.name for p in queue.iterdir()) == ["a-run.json", "b-run.json", "c-run.json"]
    for thread in threads:
        thread.join(timeout=30)
    assert order == ["c-run", "b-run", "a-run"]
    assert not list(queue.iterdir())  # no ticket left behind


def test_tickets_of_killed_waiters_hold_no_one_up(tmp_path: Path) -> None:
    """Tickets left by jobs killed while they waited, created before this one: one whose process is gone, and one
    whose pid a later process has (this one: its start time is not the ticket's), which kept the queue waiting for
    good."""
    import subprocess

    from core.runs.jobs import _first_in_queue, take_ticket

    root = tmp_path / "runs"
    queue = root / ".slots" / "queue"
    queue.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (queue / "killed.json").write_text(json.dumps({"pid": dead.pid, "created": "2000-01-01"}))
    (queue / "reused.json").write_text(json.dumps({"pid": os.getpid(), "started": "1", "created": "2000-01-01"}))
    ticket = take_ticket(root, RunDir.create(root / "r", {}, seed=0), os.getpid())
    assert _first_in_queue(ticket) and [p.name for p in queue.iterdir()] == ["r.json"]


def test_a_job_launched_first_goes_first_though_another_reaches_the_queue_sooner(
    roots: dict[str, Path], job_script, waiter: Callable[..., bool], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """With no slot busy, the job that finished importing first took the slot: launch() takes the ticket."""
    monkeypatch.setenv("SEQPATE_MAX_JOBS", "1")
    order = tmp_path / "order.txt"
    job_script(
        f"""
        time.sleep(3.0 if run.run_id == "launched-first" else 0.0)  # its engine took longer to import
        with jobs.acquire_slot(root, run, poll_seconds=0.05):
            with open({str(order)!r}, "a") as out:
                out.write(run.run_id + "\\n")
            time.sleep(0.2)
        run.set_status(state="done", stage="done", progress=1.0)
        """
    )
    runs = [launch(_config(), roots["live"], run_id=name) for name in ("launched-first", "launched-second")]
    assert waiter(lambda: all(run.state() == "done" for run in runs), timeout=60), runs[1].log_tail()
    assert order.read_text().split() == ["launched-first", "launched-second"]


def test_a_waiter_whose_ticket_vanished_takes_another(tmp_path: Path) -> None:
    """A ticket removed by hand (or by a waiter in another pid namespace, to which this process looks dead) left
    its waiter out of the queue for good."""
    import threading

    root = tmp_path / "runs"
    holder, waiting = RunDir.create(root / "holder", {}, seed=0), RunDir.create(root / "waiting", {}, seed=0)
    got: list[int] = []

    def wait_for_slot() -> None:
        with acquire_slot(root, waiting, max_parallel=1, poll_seconds=0.01) as slot:
            got.append(slot)

    with acquire_slot(root, holder, max_parallel=1):
        thread = threading.Thread(target=wait_for_slot, daemon=True)
        thread.start()
        assert wait_for(lambda: (root / ".slots" / "queue" / "waiting.json").exists())
        (root / ".slots" / "queue" / "waiting.json").unlink()
        time.sleep(0.1)
    thread.join(timeout=10)
    assert got == [0]


def test_waiting_for_a_slot_stops_on_cancel(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    holder = RunDir.create(root / "holder", {}, seed=0)
    waiting = RunDir.create(root / "waiting", {}, seed=0)
    with acquire_slot(root, holder, max_parallel=1):
        cancel(waiting)  # queued, no pid: just marked
        assert waiting.state() == "cancelled"
        with pytest.raises(JobCancelled):
            with acquire_slot(root, waiting, max_parallel=1, poll_seconds=0.01):
                pass


def test_delete_only_finished_live_runs(roots: dict[str, Path]) -> None:
    run = RunDir.create(roots["live"] / "r", {}, seed=0)
    run.set_status(state="running", pid=os.getpid())
    with pytest.raises(RunError, match="while it is running"):
        delete(run)
    assert run.path.exists()
    run.set_status(state="failed", error="x")
    delete(run)
    assert not run.path.exists()


def test_cancel_keeps_a_done_the_job_wrote_while_it_was_signalled(roots: dict[str, Path], monkeypatch) -> None:
    """A job that finishes as the cancel's signal reaches it has written "done": the cancel must not record the
    finished run as cancelled (its results would read as lost)."""
    from core.runs import jobs

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    run = RunDir.create(roots["live"] / "r", {}, seed=0)
    run.set_status(state="running", pid=proc.pid)

    def finish_then_exit(pid, sig):
        run.set_status(state="done")
        proc.kill()
        proc.wait()

    monkeypatch.setattr(jobs, "_signal_job", finish_then_exit)
    assert cancel(run, grace_seconds=1)["state"] == "done"
    assert run.status()["state"] == "done"


def test_delete_refuses_a_queued_run_whose_job_waits_for_a_slot(roots: dict[str, Path]) -> None:
    """A queued run with a live job (waiting for a slot) is the job's folder: deleting it pulls the run from under
    the job once the slot comes."""
    run = RunDir.create(roots["live"] / "q", {}, seed=0)
    run.set_status(pid=os.getpid())  # launched: its live job waits for a slot
    with pytest.raises(RunError, match="while it is queued"):
        delete(run)
    assert run.path.exists()
