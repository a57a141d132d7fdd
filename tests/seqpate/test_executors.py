"""Teacher-phase executors: local, process pool and Ray give the same teacher sum, and a whole run with Ray
matches the local run.

With one torch thread per teacher everywhere (SEQPATE_THREADS=1, as the tests run) the sums are bitwise equal:
the groups are a function of M alone and their partial sums are added in group order by every executor.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from core.config import ModelConfig
from core.models import build_tiny_gpt2
from core.runs.pipeline import execute
from core.runs.store import RunDir, pid_alive
from core.seqpate.teachers import (
    ProcessExecutor,
    TeacherJob,
    count_rows,
    get_executor,
    pool_size,
    start_ray,
    teacher_groups,
)
from tests.conftest import micro_config

REPO_ROOT = Path(__file__).resolve().parents[2]
VOCAB = 40


@pytest.fixture(scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module (starting Ray takes seconds and about 1 GiB); skips without Ray (an
    optional extra), which leaves the tests of groups, pool size and cancelling running."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield
    ray.shutdown()


def micro_job(teachers=5):
    g = torch.Generator().manual_seed(0)

    def sentences(n):
        return [torch.randint(1, VOCAB, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g).tolist()
                for _ in range(n)]

    torch.manual_seed(0)
    base = build_tiny_gpt2(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=16), VOCAB)
    distill = sentences(6)
    job = TeacherJob(base_state=base.state_dict(), base_config=base.config.to_dict(), distill_seqs=distill,
                     n_rows=count_rows(distill), pad_id=0, epochs=2, lr=1e-2, batch_size=3, seed=0, want_votes=True)
    return job, [(m, sentences(4)) for m in range(teachers)]


def test_groups_depend_on_the_teacher_count_only():
    data = [(m, []) for m in range(35)]
    groups = teacher_groups(data, max_groups=16)
    assert len(groups) == 16 and [i for g in groups for i, _ in g] == list(range(35))
    assert {len(g) for g in groups} == {2, 3}
    assert len(teacher_groups(data[:3], max_groups=16)) == 3


@pytest.mark.parametrize("teachers", [5, 20])  # 20 > TEACHER_GROUPS: groups of several teachers
def test_local_process_and_ray_give_the_same_teacher_sum(one_thread, local_ray, teachers):
    job, data = micro_job(teachers)
    seen = {}
    results = {}
    # two workers although this process has one thread (pool_size would give one): groups finish out of order
    executors = {"local": get_executor("local"), "process": ProcessExecutor(workers=2), "ray": get_executor("ray")}
    epochs = {}
    for name, executor in executors.items():
        seen[name], epochs[name] = [], []
        results[name] = executor.run(job, data, on_teacher=seen[name].append,
                                     on_epoch=lambda index, epoch, name=name: epochs[name].append((index, epoch)))
    total, votes = results["local"]
    assert torch.allclose(total.sum(1), torch.full((job.n_rows,), float(teachers)), atol=1e-4)
    assert votes.sum().item() == teachers * job.n_rows
    for name in ("process", "ray"):
        assert torch.equal(results[name][0], total), name  # bitwise, not merely close
        assert torch.equal(results[name][1], votes), name
        assert sorted(seen[name]) == list(range(teachers))  # progress for every teacher
    for name in executors:  # every epoch of every teacher, each before its teacher is reported (workers: through
        # a queue, drained before a finished group's teachers are reported)
        assert sorted(epochs[name]) == [(m, e) for m in range(teachers) for e in (1, 2)], name
        for m in range(teachers):
            assert [e for i, e in epochs[name] if i == m] == [1, 2]


def test_teacher_reports_name_each_teacher_once_and_drop_epochs_after_it():
    """The parent's side of a pool's or Ray's reports: a group's result and its teachers' own messages travel apart,
    so whichever comes first reports the teacher, and an epoch message that comes after it is dropped."""
    from core.seqpate.teachers import TeacherReports

    events = []
    reports = TeacherReports(on_teacher=lambda i: events.append(("teacher", i)),
                             on_epoch=lambda i, e: events.append(("epoch", i, e)))
    reports.take(("epoch", 3, 1))
    reports.group_done([(3, []), (4, [])])  # group finished before teacher 3's own message came
    reports.take(("teacher", 3))
    reports.take(("epoch", 4, 2))
    reports.take(("epoch", 5, 1))
    reports.take(("teacher", 5))
    reports.group_done([(5, [])])
    assert events == [("epoch", 3, 1), ("teacher", 3), ("teacher", 4), ("epoch", 5, 1), ("teacher", 5)]


def test_the_pool_is_one_worker_per_thread_of_the_job_unless_asked(one_thread):
    assert pool_size(None, 16) == 1  # SEQPATE_THREADS=1: one worker, so parallel jobs are not oversubscribed
    assert pool_size(3, 16) == 3 and pool_size(3, 2) == 2
    torch.set_num_threads(2)
    try:
        assert pool_size(None, 16) == 2 and pool_size(None, 1) == 1
    finally:
        torch.set_num_threads(1)


def test_should_stop_cancels_outstanding_groups(one_thread):
    job, data = micro_job(8)
    seen = []
    total, _ = get_executor("process").run(job, data, on_teacher=seen.append, should_stop=lambda: len(seen) >= 1)
    assert len(seen) < 8  # the remaining groups never ran
    assert total.sum().item() < 8 * job.n_rows


def test_an_error_in_the_parent_stops_the_running_groups_too(one_thread, monkeypatch):
    """Only should_stop set the workers' stop event: an error raised in the parent (a cancel from a signal, a
    failing progress line) left the running groups training every teacher they had while the pool shut down."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    spawn, events, at_shutdown = mp.get_context("spawn"), [], []

    class RecordingContext:  # the spawn context, its stop event kept for the check
        def __getattr__(self, name):
            return getattr(spawn, name)

        def Event(self):  # noqa: N802 (multiprocessing's name)
            events.append(spawn.Event())
            return events[-1]

    real_shutdown = ProcessPoolExecutor.shutdown

    def recording_shutdown(pool, *args, **kwargs):
        at_shutdown.append(events[-1].is_set())
        return real_shutdown(pool, *args, **kwargs)

    monkeypatch.setattr(mp, "get_context", lambda method=None: RecordingContext())
    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", recording_shutdown)
    job, data = micro_job(4)

    def failing_progress(index):
        raise RuntimeError("progress line could not be written")

    with pytest.raises(RuntimeError, match="progress line"):
        get_executor("process").run(job, data, on_teacher=failing_progress)
    assert at_shutdown == [True]


HANG_SCRIPT = """
import dataclasses, time
import torch
from core.seqpate.teachers import ProcessExecutor
from tests.seqpate.test_executors import micro_job

torch.set_num_threads(1)
job, data = micro_job(2)
job = dataclasses.replace(job, epochs=4000)

def fails_once_the_pipe_is_full(index, epoch):
    time.sleep(8)  # the workers go on reporting meanwhile, into a pipe nobody reads: it fills, and they block
    raise RuntimeError("progress line could not be written")

try:
    ProcessExecutor(workers=2).run(job, data, on_epoch=fails_once_the_pipe_is_full)
except RuntimeError as exc:
    print("raised:", exc)
"""


def test_an_error_in_the_parent_while_workers_report_many_epochs_does_not_hang_the_pool():
    """After an error in the parent nobody read the workers' reports: a worker blocked writing into the full pipe
    (2 workers of 4,000 epochs) and the pool's shutdown waited on it for good. The reports are emptied until the
    pool has shut down. In a process of its own, so that a hang fails the test rather than the session (the
    workers end with their parent)."""
    done = subprocess.run([sys.executable, "-c", HANG_SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "raised: progress line could not be written"


def test_reports_are_best_effort_and_stop_with_the_job():
    """A report that cannot be sent (a Ray queue gone, a closed pipe) never fails the teachers' work: the worker
    stops reporting and its group's result still comes; once the job stops, nothing more is sent."""
    from core.seqpate.teachers import reporting_group_sum

    job, data = micro_job(2)
    sent, calls = [], []

    def broken(message):
        calls.append(message)
        raise OSError("pipe closed")

    total, _ = reporting_group_sum(job, data, broken)
    assert len(calls) == 1  # tried once, then no more
    assert torch.allclose(total.sum(1), torch.full((job.n_rows,), 2.0), atol=1e-4)  # both teachers folded in
    # the job stops between the first epoch's last batch (the 3rd check: the teacher loop's, then 2 batches) and
    # its report: the report is not sent
    checks = itertools.count()
    reporting_group_sum(job, data, sent.append, should_stop=lambda: next(checks) >= 3)
    assert sent == []


def test_a_whole_seqpate_run_on_ray_equals_the_local_run(tmp_path, local_ray):
    outputs = {}
    for executor in ("local", "ray"):
        cfg = micro_config(method="seqpate", seqpate__executor=executor)
        run = RunDir.create(tmp_path / executor, cfg.to_dict(), cfg.seed)
        execute(cfg, run)
        assert run.is_complete()
        outputs[executor] = run
    local, on_ray = outputs["local"], outputs["ray"]
    assert on_ray.privacy() == local.privacy()
    keys = ("bleu1", "bleu2", "bleu3", "bleu4", "queries_spent", "answered_positions", "hard_positions")
    assert {k: on_ray.metrics()[k] for k in keys} == {k: local.metrics()[k] for k in keys}
    # the same teacher sum and releases; perplexity may differ in the last float bits (worker thread count
    # changes the summation order of the student's evaluation), measured ~1e-9 relative
    assert on_ray.metrics()["ppl"] == pytest.approx(local.metrics()["ppl"], rel=1e-6)
    assert on_ray.completions() == local.completions()


def test_cli_flags_select_the_executor_and_cluster():
    from core.cli import build_parser, config_from_args

    args = build_parser().parse_args(["run", "--method", "seqpate", "--preset", "tiny", "--executor", "ray",
                                      "--ray-address", "auto", "--run-dir", "unused"])
    cfg = config_from_args(args)
    assert (cfg.seqpate.executor, cfg.seqpate.ray_address) == ("ray", "auto")
    assert micro_config().seqpate.ray_address == ""  # default: start a private local instance


def test_teacher_output_equals_the_plain_masked_forward():
    """Length-sorted batches and blocked LM head: the same rows as one masked forward pass in sentence order."""
    from core.seqpate.teachers import add_teacher_output, build_model, empty_sums

    job, _ = micro_job()
    model = build_model(job).eval()
    total, votes = empty_sums(job)
    add_teacher_output(model, job, total, votes, batch=4, block=5)
    with torch.no_grad():
        from core.train import pad_batch

        ids, mask = pad_batch(job.distill_seqs, job.pad_id)
        logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1][mask[:, 1:]]
        expected = torch.softmax(logits, dim=-1)
    assert torch.allclose(total, expected, atol=1e-6)
    assert torch.equal(votes.argmax(1), expected.argmax(1)) and votes.sum().item() == job.n_rows


def test_an_unreachable_cluster_is_named_by_the_flag_the_user_typed(monkeypatch):
    """Ray's message says to set "--address", a flag of Ray's own command line, not of ours."""
    import ray

    def refuse(**kwargs):
        raise ConnectionError("Could not find any running Ray instance. Please specify the one to connect to by "
                              "setting `--address` flag or `RAY_ADDRESS` environment variable.")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ConnectionError) as error:
        start_ray("auto", 1)
    assert str(error.value) == "no Ray cluster at --ray-address auto (Ray: Could not find any running Ray instance)"


def test_a_pool_worker_ends_when_its_job_is_killed_outright(tmp_path):
    """A walk SIGKILLed a `--executor process` run: its two spawned workers (0.56 and 0.67 GB) were still training
    95 s later, children of init. A worker (set up as the pool sets its workers up) watches its parent and exits
    within about a second once it is gone."""
    pid_file = tmp_path / "worker.pid"
    script = tmp_path / "job.py"  # spawn imports the parent's main module: a file, not -c
    script.write_text(f"""
import multiprocessing as mp, os, time
from core.seqpate.teachers import _init_worker

def work(path, parent):
    _init_worker(None, None, None, 1, parent)
    open(path, "w").write(str(os.getpid()))
    time.sleep(120)  # a teacher that trains on

if __name__ == "__main__":
    mp.get_context("spawn").Process(target=work, args=({str(pid_file)!r}, os.getpid())).start()
    time.sleep(120)
""")
    job = subprocess.Popen([sys.executable, str(script)], env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        deadline = time.time() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.time() < deadline and job.poll() is None, "the worker never started"
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        assert pid_alive(worker)
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
        deadline = time.time() + 10
        while pid_alive(worker) and time.time() < deadline:
            time.sleep(0.1)
        assert not pid_alive(worker)
    finally:
        job.kill()
        if pid_file.exists() and pid_file.read_text() and pid_alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
