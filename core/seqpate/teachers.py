"""Teacher phase (Algorithm 1, lines 4-9; App. I): train each teacher on its partition, run it once over the
distillation positions, fold its output into a running sum, discard it. Memory and disk do not grow with M.

The M teachers are cut into at most TEACHER_GROUPS contiguous groups (a function of M only, never of the machine).
An executor computes each group's partial sum with `teacher_group_sum` and the partial sums are added in group
order, so every executor adds the same floats in the same order: `local` (sequential, this process), `process` (a
spawn process pool on this machine) and `ray` (Ray tasks, on a local instance or a cluster) give bitwise equal sums
when teachers train with the same number of torch threads (tests run with SEQPATE_THREADS=1); otherwise they differ
in the last bits (a different thread count changes a matmul's rounding: about 1e-9 per teacher probability,
measured). Only partial sums leave a worker, never a teacher or anything computed per teacher; the workers also
report which teacher ended which epoch and which is folded in (TeacherReports), for the progress bar.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.models import keep_freed_memory
from core.train import hidden_states, on_model_device, pad_batch, train_lm

# Bounds the partial sums that travel back (each is a positions x vocabulary table) while leaving enough tasks to
# keep 16 workers busy. Changing it changes the float summation order (results move in the last bits).
TEACHER_GROUPS = 16

TeacherData = Sequence[tuple[int, list]]  # [(teacher index, its token sequences), ...]
Sums = tuple[torch.Tensor, torch.Tensor | None]


@dataclass(frozen=True)
class TeacherJob:
    """Everything needed to train and query teachers; picklable so it can travel to a worker process."""

    base_state: dict  # state_dict of the public base model
    base_config: dict  # its GPT2Config as a dict
    distill_seqs: list  # token ids of the distillation (pseudo) sentences
    n_rows: int  # number of predicted positions over distill_seqs
    pad_id: int
    epochs: int
    lr: float
    batch_size: int
    seed: int
    want_votes: bool
    device: str = "cpu"  # where each teacher trains and its group's partial sum accumulates


def row_starts(seqs: Sequence[Sequence[int]]) -> np.ndarray:
    """The teacher-sum table's layout: sentence i's predicted positions (len - 1 of them) are rows
    starts[i]..starts[i + 1] - 1, in sentence order; starts[-1] is the number of rows."""
    return np.cumsum([0] + [len(s) - 1 for s in seqs], dtype=np.int64)


def count_rows(seqs: Sequence[Sequence[int]]) -> int:
    return int(row_starts(seqs)[-1])


def build_model(job: TeacherJob):
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config.from_dict(job.base_config)).to(job.device)
    model.load_state_dict(job.base_state)
    return model


def empty_sums(job: TeacherJob) -> Sums:
    vocab = job.base_config["vocab_size"]
    votes = torch.zeros(job.n_rows, vocab) if job.want_votes else None
    return torch.zeros(job.n_rows, vocab), votes


def sentence_rows(seqs: Sequence[Sequence[int]]) -> list[torch.Tensor]:
    """Rows of the sum table that each sentence's predicted positions occupy (row_starts)."""
    starts = row_starts(seqs)
    return [torch.arange(starts[i], starts[i + 1]) for i in range(len(seqs))]


@torch.inference_mode()
def add_teacher_output(model, job: TeacherJob, total: torch.Tensor, votes: torch.Tensor | None, batch: int = 128,
                       block: int = 512) -> None:
    """total[rows] += p_teacher(. | context) at every distillation position (rows in sentence order).

    Sentences are batched by length (little padding), and the LM head, softmax and accumulation run on blocks of
    `block` positions so that the positions x vocabulary intermediates stay in cache.
    """
    model.eval()
    rows = sentence_rows(job.distill_seqs)
    assert sum(len(r) for r in rows) == job.n_rows
    order = np.argsort([len(s) for s in job.distill_seqs], kind="stable")
    head = model.get_output_embeddings()
    for start in range(0, len(order), batch):
        chunk = order[start : start + batch]
        ids, mask = on_model_device(model, *pad_batch([job.distill_seqs[i] for i in chunk], job.pad_id))
        hidden = hidden_states(model, ids)[:, :-1][mask[:, 1:]]  # predicted positions, sentence by sentence
        chunk_rows = torch.cat([rows[i] for i in chunk]).to(total.device)
        for b in range(0, len(hidden), block):
            probs = torch.softmax(head(hidden[b : b + block]).float(), dim=-1)
            at = chunk_rows[b : b + block]
            total.index_add_(0, at, probs)
            if votes is not None:
                votes.index_put_((at, probs.argmax(-1)), torch.ones(len(at), device=total.device), accumulate=True)


def teacher_group_sum(
    job: TeacherJob,
    teacher_data: TeacherData,
    on_teacher: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    out: Sums | None = None,
    on_epoch: Callable[[int, int], None] | None = None,
) -> Sums:
    """Partial sums over one group of teachers, into `out` (zeroed here) or fresh tensors. On a GPU the group's sums
    accumulate there and come back to the CPU once, at the end. on_epoch(teacher index, epochs done) within each
    teacher's training, on_teacher(index) once it is folded in."""
    total, votes = out if out is not None else empty_sums(job)
    total.zero_()
    if votes is not None:
        votes.zero_()
    # on the CPU these are total and votes themselves; on a GPU, zeroed tables there
    on_device = [t if t is None or job.device == "cpu" else torch.zeros_like(t, device=job.device)
                 for t in (total, votes)]
    model = build_model(job)  # one model per group: reloading weights is far cheaper than building a model
    for index, seqs in teacher_data:
        if should_stop is not None and should_stop():
            break
        model.load_state_dict(job.base_state)
        train_lm(model, seqs, pad_id=job.pad_id, epochs=job.epochs, lr=job.lr, batch_size=job.batch_size,
                 seed=teacher_seed(job.seed, index), should_stop=should_stop,
                 on_epoch=None if on_epoch is None else lambda epoch, _loss, i=index: on_epoch(i, epoch + 1))
        if should_stop is not None and should_stop():  # stopped within its training: never folded in
            break
        add_teacher_output(model, job, *on_device)
        if on_teacher is not None:
            on_teacher(index)
    for target, source in zip((total, votes), on_device, strict=True):
        if target is not None and source is not target:
            target.copy_(source)
    return total, votes


def teacher_seed(seed: int, index: int) -> int:
    """The seed of teacher `index`'s training (its batch order, its dropout): one per teacher and run seed."""
    return seed * 100_003 + index


def teacher_groups(teacher_data: TeacherData, max_groups: int = TEACHER_GROUPS) -> list[list]:
    """Contiguous, near-equal groups; depends on the number of teachers only."""
    m = len(teacher_data)
    n = min(m, max_groups)
    if n == 0:
        return []
    bounds = [math.floor(i * m / n) for i in range(n + 1)]
    return [list(teacher_data[bounds[i] : bounds[i + 1]]) for i in range(n)]


def add_sums(into: Sums, partial) -> None:
    """into += partial, in place; the partial may be torch tensors or (read-only) numpy arrays."""
    for target, part in zip(into, partial, strict=True):
        if target is not None:
            np.add(target.numpy(), np.asarray(part), out=target.numpy())


class TeacherReports:
    """The parent's side of what the workers of a pool or of Ray report as they go: a teacher's epoch ends
    ("epoch", index, epochs done) and a teacher folded into its group's sum ("teacher", index). Reports are best
    effort (a worker whose report fails stops reporting, and goes on computing), so a group's finish reports its
    teachers whose own message has not come, each teacher once; an epoch of a teacher already reported is dropped.
    Neither message holds anything computed from private data (no loss, no output): only which teacher is where."""

    def __init__(self, on_teacher=None, on_epoch=None):
        self.on_teacher, self.on_epoch, self.reported = on_teacher, on_epoch, set()

    def take(self, message: tuple) -> None:
        kind, index, *epoch = message
        if index in self.reported:
            return
        if kind == "teacher":
            self.reported.add(index)
            if self.on_teacher is not None:
                self.on_teacher(index)
        elif self.on_epoch is not None:
            self.on_epoch(index, *epoch)

    def group_done(self, group: list) -> None:
        for index, _ in group:
            self.take(("teacher", index))

    def drain(self, queue) -> None:
        """Take every message waiting in `queue` (a multiprocessing SimpleQueue or a Ray queue; this process is its
        only reader). A worker's put returns once its message is in the queue, so a group's messages are all there
        before its result is: drained first, none is dropped."""
        while not queue.empty():
            self.take(queue.get())


def reporting_group_sum(job: TeacherJob, group: list, put: Callable[[tuple], None], should_stop=None) -> Sums:
    """teacher_group_sum in a worker, its epochs and teachers sent to the parent through `put` (TeacherReports):
    none once the job stops (nobody may read them then), and none after a put fails (a Ray queue gone, a pipe
    closed): progress never fails the teachers' work."""
    failed = []

    def report(message: tuple) -> None:
        if failed or (should_stop is not None and should_stop()):
            return
        try:
            put(message)
        except Exception:  # noqa: BLE001 (any failure of the channel; the parent reports the group on its finish)
            failed.append(True)

    return teacher_group_sum(job, group, on_teacher=lambda index: report(("teacher", index)), should_stop=should_stop,
                             on_epoch=lambda index, epoch: report(("epoch", index, epoch)))


class LocalExecutor:
    """Sequential, in this process (the default). One reused buffer for the group partial."""

    name = "local"

    def run(self, job: TeacherJob, teacher_data, on_teacher=None, should_stop=None, on_epoch=None) -> Sums:
        total, partial = empty_sums(job), empty_sums(job)
        for group in teacher_groups(teacher_data):
            if should_stop is not None and should_stop():
                break
            teacher_group_sum(job, group, on_teacher, should_stop, out=partial, on_epoch=on_epoch)
            add_sums(total, partial)
        return total


# ----------------------------------------------------------------------------------------------------------------
# process: a spawn pool on this machine
# ----------------------------------------------------------------------------------------------------------------

_worker: dict = {}  # per worker process: the job (sent once), the stop event, the reports queue


def _init_worker(job: TeacherJob, stop_event, reports, threads: int, parent: int) -> None:
    exit_with_parent(parent)
    torch.set_num_threads(threads)
    keep_freed_memory()
    _worker.update(job=job, stop=stop_event, reports=reports)


def exit_with_parent(parent: int, poll_seconds: float = 1.0) -> None:
    """End this process soon after `parent` (the pid of the process that started it, passed in: one that died
    while this one imported would already be gone from getppid) dies. A pool worker whose job was killed outright
    (kill -9, the OOM killer: no chance to shut the pool down) trained on alone, holding 0.6 GB each on tiny; once
    orphaned it is re-parented, so its parent pid changes."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, name="exit with parent", daemon=True).start()


def _process_group(group: list) -> Sums:
    return reporting_group_sum(_worker["job"], group, _worker["reports"].put, should_stop=_worker["stop"].is_set)


def pool_size(requested: int | None, n_groups: int) -> int:
    """Workers for the teacher groups: as asked, else one per torch thread of this process, which is the job's core
    budget (SEQPATE_THREADS, default all cores; a background job gets its share when several may run at once)."""
    return max(1, min(requested or torch.get_num_threads(), n_groups))


def worker_threads(workers: int) -> int:
    """Split this process's torch threads between the workers (at least one each)."""
    return max(1, torch.get_num_threads() // workers)


def fold_in_group_order(handles: list, groups: list, total: Sums, reports: TeacherReports, queue, should_stop,
                        cancel: Callable[[list], object], wait_some: Callable, result: Callable) -> None:
    """Wait for the groups' results (`handles`: one future or Ray reference per group, in group order), report
    the teachers as they go, and add the partial sums into `total` in group order whatever order the groups finish
    in (every executor adds the same floats in the same order). wait_some(pending) -> (finished, still pending)
    within half a second; on should_stop the pending ones are cancelled and what is summed so far stays."""
    group_of = {handle: i for i, handle in enumerate(handles)}
    pending, done, next_group = list(handles), set(), 0
    while pending:
        finished, pending = wait_some(pending)
        if should_stop is not None and should_stop():
            cancel(pending)
            return
        reports.drain(queue)  # before the finished groups' teachers: their epochs come first
        for handle in finished:
            done.add(group_of[handle])
            reports.group_done(groups[group_of[handle]])
        while next_group in done:
            handle = handles[next_group]
            add_sums(total, result(handle))
            del group_of[handle]  # drop every reference to the handle: frees the partial
            handles[next_group] = None
            next_group += 1


def shut_down_emptying(pool, queue) -> None:
    """Shut the pool down while emptying the workers' report queue: a worker may be writing a report into a full
    pipe that nobody reads any more (after an error or a cancel in the parent), and waiting for the pool alone hung
    for good (2 workers of 4,000 epochs). An error of the shutdown itself is raised here, not lost in its thread."""
    errors: list[BaseException] = []

    def close() -> None:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except BaseException as exc:  # noqa: BLE001 (raised below, in the caller's thread)
            errors.append(exc)

    closing = threading.Thread(target=close, name="pool shutdown", daemon=True)
    closing.start()
    try:
        while closing.is_alive():
            while not queue.empty():
                queue.get()
            closing.join(0.05)
    finally:
        queue.close()
    if errors:
        raise errors[0]


class ProcessExecutor:
    """Groups run in a pool of spawned processes (pool_size); each returns its partial sum only."""

    name = "process"

    def __init__(self, workers: int | None = None):
        self.workers = workers

    def run(self, job: TeacherJob, teacher_data, on_teacher=None, should_stop=None, on_epoch=None) -> Sums:
        """on_teacher and on_epoch as the workers report them (several teachers train at once)."""
        import multiprocessing as mp
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        groups = teacher_groups(teacher_data)
        workers = pool_size(self.workers, len(groups))
        ctx = mp.get_context("spawn")  # fork would copy torch's thread pools and locks
        stop, queue = ctx.Event(), ctx.SimpleQueue()  # simple: a put is written before it returns
        reports = TeacherReports(on_teacher, on_epoch)
        total = empty_sums(job)
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(job, stop, queue, worker_threads(workers), os.getpid()))
        try:
            futures = [pool.submit(_process_group, group) for group in groups]

            def cancel(pending) -> None:
                stop.set()  # running groups stop after their current teacher; queued ones never start
                for f in pending:
                    f.cancel()

            fold_in_group_order(futures, groups, total, reports, queue, should_stop, cancel,
                                wait_some=lambda pending: wait(pending, timeout=0.5, return_when=FIRST_COMPLETED),
                                result=lambda future: future.result())
        finally:
            stop.set()  # an error or a cancel raised here: running groups stop within their current teacher too
            shut_down_emptying(pool, queue)
        return total


# ----------------------------------------------------------------------------------------------------------------
# ray: tasks on a local Ray instance or a cluster
# ----------------------------------------------------------------------------------------------------------------


def _ray_group(job: TeacherJob, group: list, threads: int, reports):
    torch.set_num_threads(threads)
    keep_freed_memory()
    total, votes = reporting_group_sum(job, group, reports.put_nowait)
    return total.numpy(), None if votes is None else votes.numpy()  # numpy: read back zero-copy


def start_ray(address: str, num_cpus: int) -> bool:
    """Join the cluster at `address` ("auto": the one on this machine), or start a private local instance.
    Returns True when this call started Ray (and so should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # no auth token written under the home folder
    if address:
        try:
            ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        except ConnectionError as exc:  # Ray's own text tells you to set "--address", a flag of its CLI
            said = str(exc).split(". ")[0] or type(exc).__name__
            raise ConnectionError(f"no Ray cluster at --ray-address {address} (Ray: {said})") from None
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    return True


class RayExecutor:
    """One Ray task per group. The job (base weights, distillation sentences) goes to the object store once; each
    task gets its group's private sequences and returns only the group's partial sum."""

    name = "ray"

    def __init__(self, address: str = "", num_cpus: int | None = None):
        self.address = address
        self.num_cpus = num_cpus

    def run(self, job: TeacherJob, teacher_data, on_teacher=None, should_stop=None, on_epoch=None) -> Sums:
        """on_teacher and on_epoch as the tasks report them, through a Ray queue (an actor that holds no CPU)."""
        import ray
        from ray.util.queue import Queue

        groups = teacher_groups(teacher_data)
        started = start_ray(self.address, self.num_cpus or pool_size(None, len(groups)))
        queue = None
        try:
            queue = Queue(actor_options={"num_cpus": 0})
            task = ray.remote(num_cpus=1, max_retries=0)(_ray_group)
            job_ref = ray.put(job)
            total, refs = empty_sums(job), []
            try:
                for group in groups:  # one by one: a failure part way still cancels those submitted
                    refs.append(task.remote(job_ref, group, 1, queue))
                fold_in_group_order(refs, groups, total, TeacherReports(on_teacher, on_epoch), queue, should_stop,
                                    cancel=lambda pending: [ray.cancel(ref) for ref in pending],
                                    wait_some=lambda pending: ray.wait(pending, num_returns=1, timeout=0.5),
                                    result=ray.get)
            except BaseException:  # an error or a cancel raised here: on a cluster the other tasks would train on
                for ref in refs:  # those already summed are None
                    try:
                        if ref is not None:
                            ray.cancel(ref)
                    except Exception:  # noqa: BLE001 (the connection may be what failed: the error below counts)
                        pass
                raise
            return total
        finally:
            if queue is not None:
                queue.shutdown()
            if started:
                ray.shutdown()


def get_executor(name: str, ray_address: str = ""):
    if name == "local":
        return LocalExecutor()
    if name == "process":
        return ProcessExecutor()
    if name == "ray":
        return RayExecutor(ray_address)
    raise ValueError(f"unknown executor {name!r}; choose local, process or ray")

