"""Background jobs: launch a run in its own process, a file-lock queue, cancel, delete.

A job is `python -m core job RUN_DIR` started in a new session (so cancel can signal its whole process group),
with stdout/stderr going to RUN_DIR/log.txt. The job waits in acquire_slot() until fewer than max_parallel jobs
run; the slots are flock()ed files, so a slot is freed by the kernel even when its holder is killed, and a waiting
job holds a ticket so that slots go to the jobs in the order their runs were created (launched). Unless
SEQPATE_THREADS is set, a job gets an equal share of the cores as torch threads, so parallel jobs do not oversubscribe.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.config import MAX_THREADS, thread_setting
from core.runs.registry import REPO_ROOT, cached_root, is_safe_run_id, live_root, new_run_id, reconcile
from core.runs.store import (
    CANCEL_MARKER,
    TERMINAL,
    RunDir,
    RunError,
    RunFormatError,
    RunReadOnlyError,
    now_iso,
    process_alive,
    process_start,
)

# Arguments after sys.executable; the run folder is appended. Tests swap this for a small script.
JOB_COMMAND: list[str] = ["-m", "core", "job"]

SLOTS_DIR = ".slots"
QUEUE_DIR = "queue"  # under SLOTS_DIR: RUN_ID.json per job waiting for a slot, {"pid", "started", "created"}
POLL_SECONDS = 0.5
CANCEL_GRACE_SECONDS = 5.0


class JobCancelled(RunError):
    """Raised inside a job that notices a cancel request (e.g. while waiting for a slot)."""


def _as_run_dir(run_dir: RunDir | str | os.PathLike[str]) -> RunDir:
    return run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)


def max_parallel_jobs() -> int:
    """$SEQPATE_MAX_JOBS (default 1): how many jobs may run at once; 1 where it is not a whole number >= 1 (the
    Launch page says so: max_jobs_problem), since a running dashboard has no command line to refuse it on."""
    try:
        return max(1, int(os.environ.get("SEQPATE_MAX_JOBS", "1")))
    except ValueError:
        return 1


def max_jobs_problem() -> str | None:
    """Why SEQPATE_MAX_JOBS is not used as set, in one line; None when it is unset or a whole number >= 1."""
    value = os.environ.get("SEQPATE_MAX_JOBS", "").strip()
    try:
        if not value or int(value) >= 1:
            return None
    except ValueError:
        pass
    return f"SEQPATE_MAX_JOBS={value!r} is not a whole number of at least 1: jobs run one at a time"


def job_threads(max_parallel: int, cpus: int | None = None) -> int:
    """Torch threads for one job when max_parallel may run at once: the cores split between them, 1 to MAX_THREADS.

    Every process defaults to all cores; on 2 cores two jobs of 2 threads each took 1.6-1.7x as long per training step
    as two jobs of 1 thread (once 8.8x), three jobs 1.4x (once 4.9x): the threads wait on each other
    (benchmarks/concurrent_jobs.py).
    """
    return max(1, min((cpus or os.cpu_count() or 1) // max(1, max_parallel), MAX_THREADS))


def launched_job_threads() -> str:
    """The SEQPATE_THREADS a launched job gets: the one set by hand (checked, clamped), else its share (job_threads).
    Raises ConfigError for a value that is not a number, before any run folder is made."""
    set_by_hand = os.environ.get("SEQPATE_THREADS", "").strip()
    return str(thread_setting() if set_by_hand else job_threads(max_parallel_jobs()))


# ----------------------------------------------------------------------------------------------------------------
# Launch
# ----------------------------------------------------------------------------------------------------------------


def launch(
    config_dict: dict[str, Any], runs_root: str | os.PathLike[str] | None = None, run_id: str | None = None
) -> RunDir:
    """Create a run folder for this config and start its job in the background; returns at once.

    The run is "queued" with the job's pid recorded; the job itself moves it to running when it gets a slot.
    """
    root = Path(runs_root) if runs_root is not None else live_root()
    if run_id is None:
        privacy = config_dict.get("privacy") or {}
        run_id = new_run_id(str(config_dict.get("method", "run")), privacy.get("epsilon"))
    if not is_safe_run_id(run_id):
        raise ValueError(f"run id must be a plain folder name, got {run_id!r}")
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"  # the log shows progress as it happens
    env["SEQPATE_THREADS"] = launched_job_threads()
    root.mkdir(parents=True, exist_ok=True)
    run = RunDir.create(root / run_id, config_dict, int(config_dict.get("seed", 0)))

    # The job must import core whatever the command is (tests run a script from a temp folder).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, *JOB_COMMAND, str(run.path)]
    try:
        with open(run.log_path, "ab") as log:
            log.write(f"[{now_iso()}] launching: {' '.join(command)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # own process group: cancel reaches its children, Ctrl-C here does not
            )
    except OSError as e:
        run.set_status(state="failed", error=f"could not start the job: {e}")
        raise
    # Only the pid: by now the job may already have moved itself on (it records the same pid when running).
    run.set_status(pid=proc.pid)
    # Its place in the queue is taken now, not when the job reaches acquire_slot: importing the engine takes
    # seconds, and a job launched after it but quicker to import went first.
    take_ticket(root, run, proc.pid)
    # Wait for it in the background, so that a finished or cancelled job does not stay a zombie of this process
    # (the dashboard) until the next launch; the job writes its own status, so nothing else waits for it.
    threading.Thread(target=proc.wait, name=f"reap {run_id}", daemon=True).start()
    return run


# ----------------------------------------------------------------------------------------------------------------
# Queue
# ----------------------------------------------------------------------------------------------------------------


@contextmanager
def acquire_slot(
    runs_root: str | os.PathLike[str],
    run_dir: RunDir | str | os.PathLike[str],
    max_parallel: int | None = None,
    poll_seconds: float = POLL_SECONDS,
) -> Iterator[int]:
    """Block until one of max_parallel slots is free, hold it for the with-block; yields the slot number.

    The run's status is left as it is (queued) while waiting. Raises JobCancelled if the run's cancel marker
    appears while waiting. First come, first served: only the live waiter whose run was created first tries the
    slots (jobs launched together started in another order, whichever polled first).
    """
    run = _as_run_dir(run_dir)
    n_slots = max_parallel if max_parallel is not None else max_parallel_jobs()
    if n_slots < 1:
        raise ValueError(f"max_parallel must be at least 1, got {n_slots}")
    slots = Path(runs_root) / SLOTS_DIR
    ticket = take_ticket(runs_root, run, os.getpid())  # launch() took it already; the same again
    try:
        while True:
            if cancel_requested(run):
                raise JobCancelled(f"run {run.run_id} was cancelled while waiting for a free slot")
            if not ticket.exists():  # removed by hand, or by a waiter that could not see this process
                take_ticket(runs_root, run, os.getpid())
            free = _free_slot(slots, n_slots) if _first_in_queue(ticket) else None
            if free is not None:
                ticket.unlink(missing_ok=True)  # the next waiter is first now
                index, fd = free
                try:
                    # Who holds the slot, for a human looking at .slots/ (the lock, not this text, is what counts).
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{run.run_id} pid {os.getpid()}\n".encode())
                    yield index
                finally:
                    os.close(fd)  # releases the flock
                return
            time.sleep(poll_seconds)
    finally:
        ticket.unlink(missing_ok=True)  # cancelled, or failed while waiting


def _free_slot(slots: Path, n_slots: int) -> tuple[int, int] | None:
    """(index, locked file descriptor) of a slot no one holds, or None."""
    for index in range(n_slots):
        fd = os.open(slots / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return index, fd
    return None


def take_ticket(runs_root: str | os.PathLike[str], run: RunDir, pid: int) -> Path:
    """A job's place in the queue of runs_root: its run's creation time (launch order) and its process (pid and
    start time, so that a ticket left by a killed job is not kept alive by a later process with its pid)."""
    queue = Path(runs_root) / SLOTS_DIR / QUEUE_DIR
    queue.mkdir(parents=True, exist_ok=True)
    ticket = queue / f"{run.run_id}.json"
    created = (run.status() or {}).get("created") or now_iso()
    partial = queue / f".{run.run_id}.{os.getpid()}.partial"  # written whole, then renamed: never read half
    partial.write_text(json.dumps({"pid": pid, "started": process_start(pid), "created": str(created)}))
    os.replace(partial, ticket)
    return ticket


def _first_in_queue(ticket: Path) -> bool:
    """Whether this ticket is the live waiter's whose run was created first (ties: run id). A ticket whose
    process is gone (a job killed while waiting) is removed, so it holds no one up."""
    waiting = []
    for other in ticket.parent.glob("*.json"):
        try:
            info = json.loads(other.read_text())
            pid, started, created = info["pid"], info.get("started"), str(info["created"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # removed in between, or not a ticket
        if other == ticket or process_alive(pid, started):
            waiting.append((created, other.name))
        else:
            other.unlink(missing_ok=True)
    return bool(waiting) and min(waiting)[1] == ticket.name


# ----------------------------------------------------------------------------------------------------------------
# Cancel and delete
# ----------------------------------------------------------------------------------------------------------------


def cancel_requested(run_dir: RunDir | str | os.PathLike[str]) -> bool:
    """True once cancel() was called for this run; a job checks it between steps to stop cleanly."""
    return (_as_run_dir(run_dir).path / CANCEL_MARKER).exists()


TERMINATED_ERROR = "stopped by SIGTERM from outside the bench (a shutdown or a kill), not by a cancel"


def record_stop(run_dir: RunDir | str | os.PathLike[str], by_signal: bool) -> dict[str, Any]:
    """The state of a run whose process stopped it before the end; returns the status.

    Cancelled when a cancel was asked (its marker) or the user stopped it in the terminal (Ctrl-C); failed, with the
    reason, when a SIGTERM came from elsewhere: recorded as cancelled, it read as a Cancel no one had clicked.
    """
    run = _as_run_dir(run_dir)
    if by_signal and not cancel_requested(run):
        return run.set_status(state="failed", error=TERMINATED_ERROR)
    return run.set_status(state="cancelled")


def _leads_own_session(pid: int) -> bool:
    """Whether the process leads its own session and process group, as launch starts a job."""
    try:
        return os.getpgid(pid) == pid == os.getsid(pid)
    except OSError:
        return False


def _active(run: RunDir) -> bool:
    try:
        return run.state() in ("queued", "running")
    except RunFormatError:
        return False


def _signal_job(pid: int, sig: signal.Signals) -> None:
    """Signal the job's process group (its children too) where the job leads its own session, as launch starts
    it; otherwise the process alone. A run executed by a sweep or a `core run` typed in a terminal shares its
    group with what the shell started beside it (`sweep ... | tee log`), which a cancel must not stop."""
    try:
        if _leads_own_session(pid) and pid != os.getpgid(0):
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def cancel(
    run_dir: RunDir | str | os.PathLike[str], grace_seconds: float = CANCEL_GRACE_SECONDS
) -> dict[str, Any]:
    """Stop a queued or running job: SIGTERM its group, SIGKILL after grace_seconds; state becomes cancelled.

    Already-finished runs are left as they are. Returns the resulting status.
    """
    run = _as_run_dir(run_dir)
    if run.read_only:
        raise RunReadOnlyError(f"{run.run_id} is a cached run and cannot be cancelled")
    status = run.status() or {}
    if status.get("state") in TERMINAL:
        return status
    # The marker first: a job that has not recorded its pid yet still sees it and stops on its own.
    (run.path / CANCEL_MARKER).write_text(now_iso() + "\n")
    pid, started = status.get("pid"), status.get("pid_started")
    if isinstance(pid, int) and pid != os.getpid() and process_alive(pid, started):
        own_job = _leads_own_session(pid)  # a launched job ends with its run; a sweep goes on to its next run

        def still_at_it() -> bool:
            return process_alive(pid, started) and (own_job or _active(run))

        _signal_job(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while still_at_it() and time.monotonic() < deadline:
            time.sleep(0.05)
        if still_at_it():
            _signal_job(pid, signal.SIGKILL)
            deadline = time.monotonic() + 2.0
            while process_alive(pid, started) and time.monotonic() < deadline:
                time.sleep(0.05)

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        # A job that managed to finish properly keeps "done"; anything else (including a "failed" it wrote while
        # dying from our signal) is a cancellation. The stage is kept to show where it stopped.
        if current.get("state") == "done":
            return None
        return {"state": "cancelled", "error": None}

    return run.update_status(change)


def delete(run_dir: RunDir | str | os.PathLike[str]) -> None:
    """Remove a finished live run folder. Cached runs and runs still queued or running are refused."""
    run = _as_run_dir(run_dir)
    path = run.path.resolve()
    if run.read_only or path.is_relative_to(cached_root().resolve()):
        raise RunReadOnlyError(f"{run.run_id} is a cached run and cannot be deleted")
    if not run.exists():
        raise RunError(f"not a run folder: {run.path}")
    try:
        status = reconcile(run) or {}  # a run whose process died becomes failed, hence deletable
    except RunFormatError:
        status = {"state": "failed"}  # unreadable status: listed as failed, so deletable too
    state = status.get("state")
    if state not in TERMINAL:
        raise RunError(f"cannot delete run {run.run_id} while it is {state}; cancel it first")
    shutil.rmtree(path)


__all__ = [
    "JOB_COMMAND",
    "JobCancelled",
    "TERMINATED_ERROR",
    "acquire_slot",
    "cancel",
    "cancel_requested",
    "delete",
    "job_threads",
    "launch",
    "launched_job_threads",
    "max_parallel_jobs",
]
