"""Concurrency: three real jobs launched at once, two registry readers, many processes writing one run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from core.runs.registry import list_runs
from core.runs.store import RunDir, read_jsonl
from tests.reliability.conftest import REPO_ROOT


def test_three_jobs_launched_at_once_all_finish_and_queue_for_two_slots(three_jobs) -> None:
    _, runs, _ = three_jobs
    for method, run in runs.items():
        assert run.state() == "done", (method, run.status(), run.log_tail(20))
        assert run.is_complete(), (method, run.missing_files())
        assert math.isfinite(run.metrics()["ppl"])
    assert runs["seqpate"].privacy()["epsilon"] <= 3.0 + 1e-6
    # status.json stamps "started" once a job holds a slot and "finished" before it lets go. Two slots: no instant
    # has three jobs running, i.e. the last to start did so only after one of the others had finished.
    spans = sorted((run.status()["started"], run.status()["finished"]) for run in runs.values())
    (_, f1), (_, f2), (s3, _) = spans
    assert s3 >= min(f1, f2), spans


def _runs_list_json(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "core", "runs", "list", "--json"], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_registry_readers_see_the_same_state(three_jobs) -> None:
    roots, runs, _ = three_jobs
    # A run whose process is gone: both readers find it at once and both try to mark it failed (under the lock).
    ghost = RunDir.create(roots["live"] / "ghost", {"method": "pub-gpt"}, 0)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ghost.set_status(state="running", stage="teachers", pid=dead.pid)
    env = {**os.environ, "SEQPATE_RUNS_DIR": str(roots["live"]), "SEQPATE_CACHED_RUNS_DIR": str(roots["cached"])}
    readers = [_runs_list_json(env), _runs_list_json(env)]  # at the same time
    outputs = [reader.communicate(timeout=60) for reader in readers]
    assert [reader.returncode for reader in readers] == [0, 0], [err for _, err in outputs]
    first, second = (json.loads(out) for out, _ in outputs)
    assert first == second
    expected = {run.run_id: "done" for run in runs.values()} | {"ghost": "failed"}
    assert {row["run_id"]: row["state"] for row in first} == expected
    assert ghost.status()["error"] == "process exited without finishing (stage: teachers)"
    in_process = list_runs([(roots["live"], "live"), (roots["cached"], "cached")])
    assert [(i.run_id, i.state, i.stage) for i in in_process] == [(r["run_id"], r["state"], r["stage"]) for r in first]


WRITER = textwrap.dedent(
    """
    import os, sys, time
    from core.runs.store import RunDir
    run, worker, go = RunDir(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    while not os.path.exists(go):
        time.sleep(0.002)
    for i in range(30):
        # log_progress: one O_APPEND line, then a locked read-modify-write of status.json
        run.log_progress(f"stage-{worker}", step=i, progress=i / 30, pad="x" * 2000)
        # a counter that only survives if no update is ever lost between processes
        run.update_status(lambda s: {"writes": s.get("writes", 0) + 1})
    """
)

READER = textwrap.dedent(
    """
    import json, os, sys
    from core.runs.store import RunDir, RunFormatError
    run, stop = RunDir(sys.argv[1]), sys.argv[2]
    reads = bad = 0
    while not os.path.exists(stop):
        for read in (run.status, run.progress):
            try:
                read()
                reads += 1
            except RunFormatError:
                bad += 1
    print(json.dumps({"reads": reads, "bad": bad}))
    """
)


def test_many_processes_writing_one_run_never_corrupt_a_file(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "busy", {"method": "pub-gpt"}, 0)
    run.set_status(state="running", stage="data")
    go, stop = tmp_path / "go", tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    reader = subprocess.Popen([sys.executable, "-c", READER, str(run.path), str(stop)], env=env,
                              stdout=subprocess.PIPE, text=True)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(run.path), str(w), str(go)], env=env)
               for w in range(4)]
    go.touch()
    assert [w.wait(timeout=120) for w in writers] == [0] * 4
    stop.touch()
    seen = json.loads(reader.communicate(timeout=60)[0])
    assert seen["bad"] == 0 and seen["reads"] > 0  # never a half-written status.json or progress line

    rows = read_jsonl(run.path / "progress.jsonl")
    assert len(rows) == 4 * 30
    assert {(r["stage"], r["step"]) for r in rows} == {(f"stage-{w}", i) for w in range(4) for i in range(30)}
    assert all(r["pad"] == "x" * 2000 for r in rows)
    status = run.status()
    assert status["writes"] == 4 * 30 and status["state"] == "running"
    assert [p.name for p in run.path.iterdir() if p.name.endswith(".tmp")] == []  # no temp file left over
