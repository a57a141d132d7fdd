"""store.py: atomic writes, concurrent appends, RunDir round trips, status transitions, pid checks."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core.config import RunConfig, stable_hash
from core.runs import (
    REQUIRED_FILES,
    RunDir,
    RunError,
    RunExistsError,
    RunFormatError,
    append_jsonl,
    atomic_write_json,
    pid_alive,
    read_jsonl,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def test_a_finished_run_with_an_empty_record_is_not_complete(tmp_path: Path) -> None:
    """`core runs list` and the dashboard fail a done run whose privacy.json or metrics.json holds {} or null
    (RunDir.damaged_files); is_complete, which sweep, compare, report and `runs show` ask, said complete."""
    cfg = RunConfig()
    run = RunDir.create(tmp_path / "r", cfg.to_dict(), cfg.seed)
    run.write_privacy({"epsilon": 3.0})
    run.write_metrics({"ppl": 10.0})
    run.write_completions([])
    run.log_progress("done", progress=1.0)
    run.set_status(state="done", stage="done", progress=1.0)
    assert run.is_complete()
    (run.path / "privacy.json").write_text("{}")
    (run.path / "metrics.json").write_text("null")
    assert not run.is_complete()
    assert run.incomplete_reason() == "state done, but privacy.json, metrics.json empty"
    (run.path / "metrics.json").write_text("{not json")  # garbled, not empty: said as such
    assert run.incomplete_reason().startswith(f"state done, but invalid JSON in {run.path / 'metrics.json'}")


def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    """A write that fails half-way (disk full, a kill) must leave the previous file whole and no stray temp file
    (one per failed write would pile up in the run folder)."""
    target = tmp_path / "metrics.json"
    atomic_write_json(target, {"ppl": 100.0})

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_json(target, {"ppl": 200.0})
    assert json.loads(target.read_text()) == {"ppl": 100.0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_atomic_write_never_shows_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "big.json"
    stop = tmp_path / "stop"
    atomic_write_json(target, {"i": -1, "data": []})
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import json, os
                good = bad = 0
                while not os.path.exists({str(stop)!r}):
                    with open({str(target)!r}) as f:
                        text = f.read()
                    try:
                        json.loads(text)
                        good += 1
                    except ValueError:
                        bad += 1
                print(good, bad)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.2)  # let the reader start looping
        for i in range(150):
            # ~300 kB each, so a non-atomic write would be caught half-way by the reader
            atomic_write_json(target, {"i": i, "data": [float(i)] * 20_000, "eps": math.inf})
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=20)
    good, bad = map(int, out.split())
    assert bad == 0
    assert good > 0
    assert json.loads(target.read_text())["i"] == 149
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "stop"]  # no temp files left behind


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    target = tmp_path / "progress.jsonl"
    go = tmp_path / "go"
    code = textwrap.dedent(
        f"""
        import os, sys, time
        from core.runs.store import append_jsonl
        worker = int(sys.argv[1])
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        for i in range(200):
            append_jsonl({str(target)!r}, {{"worker": worker, "i": i, "pad": "x" * 3000}})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w)], env=_env()) for w in range(4)]
    time.sleep(0.3)
    go.touch()
    for proc in procs:
        assert proc.wait(timeout=30) == 0
    rows = read_jsonl(target)
    assert len(rows) == 800
    assert {(r["worker"], r["i"]) for r in rows} == {(w, i) for w in range(4) for i in range(200)}
    assert all(r["pad"] == "x" * 3000 for r in rows)


def test_read_jsonl_skips_only_a_trailing_partial_line(tmp_path: Path) -> None:
    target = tmp_path / "p.jsonl"
    append_jsonl(target, {"a": 1})
    with open(target, "a") as f:
        f.write('{"a": 2, "b"')  # a writer caught mid-line
    assert read_jsonl(target) == [{"a": 1}]
    target.write_text('{"a": 1}\n{broken\n{"a": 3}\n')
    with pytest.raises(RunFormatError, match="p.jsonl"):
        read_jsonl(target)


def _new_run(tmp_path: Path, name: str = "r1") -> RunDir:
    cfg = RunConfig().to_dict()
    return RunDir.create(tmp_path / name, cfg, seed=7)


def test_create_writes_config_and_queued_status(tmp_path: Path) -> None:
    cfg = RunConfig().to_dict()
    run = RunDir.create(tmp_path / "r1", cfg, seed=7)
    stored = run.config()
    assert stored["config"] == cfg
    assert stored["config_hash"] == stable_hash(cfg) == stable_hash(RunConfig().to_dict())
    assert stored["seed"] == 7
    assert "python" in stored["versions"]
    assert run.run_config() == RunConfig()
    status = run.status()
    assert status["state"] == "queued" and status["stage"] == "queued"
    assert status["progress"] == 0.0 and status["pid"] is None and status["error"] is None
    assert status["created"] == stored["created"]


def test_creating_a_run_imports_neither_torch_nor_streamlit(tmp_path: Path) -> None:
    code = (
        "import sys; from core.runs import RunDir; "
        f"RunDir.create({str(tmp_path / 'r')!r}, {{}}, seed=0); "
        "print('torch' in sys.modules, 'streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_create_refuses_an_existing_run(tmp_path: Path) -> None:
    _new_run(tmp_path)
    with pytest.raises(RunExistsError, match="run directory already exists: .*r1"):
        _new_run(tmp_path)
    (tmp_path / "empty").mkdir()
    RunDir.create(tmp_path / "empty", {}, seed=0)  # an empty folder is fine
    RunDir.create(tmp_path / "r1", {"method": "x"}, seed=1, exist_ok=True)
    assert RunDir(tmp_path / "r1").config()["config"] == {"method": "x"}


def test_create_names_the_run_in_the_way_and_refuses_a_run_inside_a_run(tmp_path: Path) -> None:
    """A walk reran a killed run into its folder and read only "already exists"; `--run-dir runs/pub/sub` made a
    run inside a finished run (listed as neither, deleted with it); an unmakeable folder gave bare errno text."""
    killed = _new_run(tmp_path)
    killed.set_status(state="failed", error="process exited without finishing (stage: pseudo-data)")
    message = f"run directory already exists: {killed.path} (a failed run; choose another path, or delete it first)"
    with pytest.raises(RunExistsError, match=f"^{re.escape(message)}$"):
        RunDir.create(killed.path, {}, seed=0)
    inside = killed.path / "sub" / "run"
    message = f"run directory {inside} would be inside the run folder {killed.path}: choose a path outside it"
    with pytest.raises(RunExistsError, match=f"^{re.escape(message)}$"):
        RunDir.create(inside, {}, seed=0)
    assert not (killed.path / "sub").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    with pytest.raises(RunExistsError, match=r"already exists: .*notes$"):  # not a run: nothing more to say
        RunDir.create(tmp_path / "notes", {}, seed=0)
    with pytest.raises(RunError, match=r"^cannot make run directory /proc/no-run: No such file or directory$"):
        RunDir.create(Path("/proc/no-run"), {}, seed=0)


def test_create_refuses_a_file_and_a_path_under_a_file_in_words_and_writes_nothing(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    with pytest.raises(RunExistsError, match=f"^{re.escape(f'run directory already exists: {a_file} is a file')}$"):
        RunDir.create(a_file, {}, seed=0)
    message = f"run directory {a_file / 'a' / 'b'} cannot be made: {a_file} is a file"
    with pytest.raises(RunExistsError, match=f"^{re.escape(message)}$"):
        RunDir.create(a_file / "a" / "b", {}, seed=0)
    assert a_file.read_text() == "keep me" and sorted(tmp_path.iterdir()) == [a_file]
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "nowhere")
    for path in (dangling, dangling / "run"):  # not exists(), yet in the way
        with pytest.raises(RunExistsError, match=f"{re.escape(str(dangling))} is a link to nothing$"):
            RunDir.create(path, {}, seed=0)
    RunDir.create(tmp_path / "new" / "deep" / "run", {}, seed=0)  # missing parents are made


def test_round_trip_of_every_file(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    run.set_status(state="running", stage="teachers")
    run.log_progress("teachers", step=1, loss=2.5, progress=0.25)
    run.log_progress("student", step=2, epsilon_spent=math.inf, progress=0.5)
    privacy = {
        "epsilon": math.inf,
        "delta": 1e-6,
        "accountant": "none",
        "unit": "none",
        "events": [{"mechanism": "gaussian", "noise_std": 2.0, "sensitivity": 1.4142, "count": 10}],
    }
    metrics = {"ppl": 41.5, "bleu1": 0.3, "bleu2": 0.2, "bleu3": 0.1, "bleu4": 0.05, "exposure": {"1": 2.0}}
    completions = [
        {"prefix": "hello there", "reference": "friend", "completion": 'how are "you"\nok'},
        {"prefix": "ünïcode", "reference": "r", "completion": "c"},
    ]
    phrases = [
        {"phrase": 'alice, from "paris"', "occurrences": 3, "users": 2, "teachers": 1, "epsilon": 0.75},
        {"phrase": "bob", "occurrences": 1, "users": 1, "teachers": 1, "epsilon": math.inf, "note": "x"},
    ]
    run.write_privacy(privacy)
    run.write_metrics(metrics)
    run.write_completions(completions)
    run.write_phrases(phrases)
    run.write_text("statement.md", "# Privacy\n")
    run.set_status(state="done", progress=1.0)

    assert "Infinity" in (run.path / "privacy.json").read_text()
    assert run.privacy() == privacy and math.isinf(run.privacy()["epsilon"])
    assert run.metrics() == metrics
    assert run.completions() == completions
    read = run.phrases()
    assert read[0] == {**phrases[0], "note": None}
    assert read[1] == phrases[1] and math.isinf(read[1]["epsilon"])
    assert run.read_text("statement.md") == "# Privacy\n"
    progress = run.progress()
    assert [p["stage"] for p in progress] == ["teachers", "student"]
    assert math.isinf(progress[1]["epsilon_spent"]) and "time" in progress[0]
    status = run.status()
    assert status["state"] == "done" and status["stage"] == "student" and status["progress"] == 1.0
    assert "started" in status and "finished" in status
    assert run.is_complete()
    assert set(REQUIRED_FILES) <= {p.name for p in run.path.iterdir()}


def test_readers_of_absent_and_corrupt_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "nothing")
    assert run.config() is None and run.status() is None and run.privacy() is None and run.metrics() is None
    assert run.progress() == [] and run.completions() == [] and run.phrases() == []
    assert run.log_tail() == ""
    run = _new_run(tmp_path)
    (run.path / "metrics.json").write_text("{not json")
    with pytest.raises(RunFormatError, match="metrics.json"):
        run.metrics()
    (run.path / "privacy.json").write_text("[1, 2]")
    with pytest.raises(RunFormatError, match="privacy.json"):
        run.privacy()


def test_is_complete_needs_done_and_all_files(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    run.log_progress("x")
    run.write_privacy({"epsilon": 1.0})
    run.write_metrics({"ppl": 1.0})
    assert not run.is_complete()  # completions missing, not done
    run.write_completions([])
    assert not run.is_complete()  # not done
    run.set_status(state="done")
    assert run.is_complete()
    (run.path / "metrics.json").write_text("{")
    assert not run.is_complete()


def test_status_transitions(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    with pytest.raises(ValueError, match="unknown run state"):
        run.set_status(state="finished")
    status = run.set_status(state="running")
    assert status["pid"] == os.getpid() and "started" in status and "finished" not in status
    status = run.set_status(progress=7)  # clamped
    assert status["progress"] == 1.0
    status = run.set_status(state="failed", error="boom")
    assert status["error"] == "boom" and "finished" in status
    status = run.set_status(state="queued", pid=None)  # a re-run clears the stale error and finish time
    assert status["error"] is None and "finished" not in status
    assert status["updated"] >= status["created"]


def test_progressed_stamps_when_the_progress_moves_only(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    run.set_status(state="running")
    moved = run.set_status(progress=0.2)["progressed"]
    time.sleep(0.002)
    run.log_progress("teachers", teacher=3)  # a stage line without progress: the bar stood still
    status = run.set_status(progress=0.2)
    assert status["progressed"] == moved and status["updated"] > moved
    time.sleep(0.002)
    assert run.set_status(progress=0.3)["progressed"] > moved


def test_write_text_refuses_paths(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    for bad in ("../x", "a/b", "..", ""):
        with pytest.raises(ValueError):
            run.write_text(bad, "x")


def test_log_tail(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    run.log_path.write_text("".join(f"line {i}\n" for i in range(100)))
    assert run.log_tail(3) == "line 97\nline 98\nline 99"


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(None) and not pid_alive(0) and not pid_alive(-5)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    # An exited child that nobody waited for is a zombie: still not alive.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(0.5)
    assert not pid_alive(proc.pid)


def test_base_models_note_says_stand_only_where_two_recorded_digests_differ():
    """A recorded digest beside runs recording none may or may not share their base (quick seed 2's ADP run was made
    on the cached base of the runs before it); two recorded digests that differ are two base models. A chart of
    every shipped run of a seed counts the runs recording none instead of naming them."""
    from core.runs.store import base_models_note

    assert base_models_note([("a", "d1"), ("b", "d1")]) == "" and base_models_note([("a", None), ("b", None)]) == ""
    assert base_models_note([("a", "d1"), ("b", "d2"), ("c", None)]) == (
        "These runs stand on different base models, so compare a run only with those on the same one: a on base "
        "weights d1; b on base weights d2; c recorded none (made before digests were recorded on 2026-11-25, on the "
        "base model of that time for their preset and seed).")
    many = base_models_note([("a", "d1"), *((f"old{i}", None) for i in range(13))])
    assert many.startswith("These runs may stand on different base models (some record their base model's digest, "
                           "others none), so compare a run only with those on the same one: a on base weights d1; "
                           "the other 13 runs recorded none") and "old0" not in many
    assert "old0, old1" in base_models_note([("a", "d1"), *((f"old{i}", None) for i in range(12))])
