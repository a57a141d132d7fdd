"""Named plans of runs that reproduce the paper's experiments (resumable: finished runs are skipped)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from core.config import ConfigError, RunConfig, effective_config, preset_config
from core.runs.registry import eps_label

EPSILONS = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0)
REFERENCES = ("pri-gpt", "pub-gpt", "pub-gpt+pseudo")
DP_METHODS = ("seqpate", "noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo")


def plan_tradeoff() -> Iterator[tuple[str, dict]]:
    """Table 1 / Fig. 2: every DP method at every epsilon, plus the non-private references."""
    for method in REFERENCES:
        yield method, {"method": method}
    for method in DP_METHODS:
        for eps in EPSILONS:
            yield f"{method}-eps{eps_label(eps)}", {"method": method, "privacy__epsilon": eps}


def plan_ablation() -> Iterator[tuple[str, dict]]:
    """Table 3 at epsilon 3."""
    for ablation in ("none", "-merge_p", "-kl", "-pseudo", "-effi_kd", "-gaussian", "-all"):
        yield f"seqpate-ablation{ablation}", {"method": "seqpate", "privacy__epsilon": 3.0, "seqpate__ablation": ablation}


def plan_filtering() -> Iterator[tuple[str, dict]]:
    """Table 4 at epsilon 3: top-p 0.95 against top-k for several k."""
    for spec in ("top-p:0.95", "top-k:1", "top-k:10", "top-k:50", "top-k:100", "top-k:200"):
        yield f"seqpate-filter-{spec.replace(':', '')}", {"method": "seqpate", "privacy__epsilon": 3.0,
                                                         "seqpate__filter": spec}


def plan_teachers() -> Iterator[tuple[str, dict]]:
    """App. H at epsilon 3: more teachers, less noise per teacher, less data per teacher."""
    for m in (1, 10, 100, 1000):
        yield f"seqpate-teachers{m}", {"method": "seqpate", "privacy__epsilon": 3.0, "seqpate__teachers": m}


CANARIES = "1,10,100"  # Carlini's insertion counts; the same secrets for every method of the phrase plans

# The by-user partition assumes many more users than teachers (each user in one teacher). quick's 20,000 private
# sentences come from 649 users: at its default M = 1,000 a user would sit in 2.3 teachers on average, at
# M = 100 in 1.08. Presets not named here keep their default M for the phrase plan.
BY_USER_TEACHERS = {"quick": 100}


def plan_phrases(preset: str) -> Iterator[tuple[str, dict]]:
    """Table 2 / Table 6 / App. O: by-user partition, noise calibrated for the AVERAGE phrase epsilon (3 and 5);
    SeqPATE against NoisySGD-GC with sample batches and with user batches; Pri-GPT as the unprotected reference
    for leak rate and canary exposure; ADP against NoisySGD on the same canaries (seed 002)."""
    common = {"data__canaries": CANARIES}
    by_user = {"method": "seqpate", "seqpate__partition": "by-user"}
    if preset in BY_USER_TEACHERS:
        by_user["seqpate__teachers"] = BY_USER_TEACHERS[preset]
    yield "phrases-pri-gpt", {"method": "pri-gpt", **common}
    for eps in (3.0, 5.0):
        tag = f"avg{eps_label(eps)}"
        target = {"privacy__epsilon": eps, "privacy__target": "phrase-avg", **common}
        yield f"phrases-seqpate-{tag}", {**by_user, **target}
        yield f"phrases-noisysgd-gc-{tag}", {"method": "noisysgd-gc+pseudo", **target}
        yield f"phrases-noisysgd-gc-users-{tag}", {"method": "noisysgd-gc+pseudo", "dpsgd__batching": "users", **target}
    # Sample-level epsilon 3 for both (issue: share of phrases at or below the sample epsilon; DP-SGD's phrase
    # epsilon grows with occurrences; leak rate and exposure at the same sample-level guarantee).
    yield "phrases-seqpate-by-user-eps3", {**by_user, "privacy__epsilon": 3.0, **common}
    yield "phrases-noisysgd-gc-eps3", {"method": "noisysgd-gc+pseudo", "privacy__epsilon": 3.0, **common}
    # Seed 002's canary experiment (ADP paper Fig. 1: exposure by insertion count, ADP against plain DP-SGD)
    yield "phrases-adp-eps3", {"method": "adp", "privacy__epsilon": 3.0, **common}
    yield "phrases-noisysgd-eps3", {"method": "noisysgd", "privacy__epsilon": 3.0, **common}


def plan_blacklist() -> Iterator[tuple[str, dict]]:
    """Table 13: Pri-GPT with and without the blacklist filter, and SeqPATE at epsilon 3, on the same canaries."""
    common = {"data__canaries": CANARIES}
    yield "blacklist-pri-gpt", {"method": "pri-gpt", **common}
    yield "blacklist-pri-gpt-blacklist", {"method": "pri-gpt-blacklist", **common}
    yield "blacklist-seqpate-eps3", {"method": "seqpate", "privacy__epsilon": 3.0, **common}


def plan_adp() -> Iterator[tuple[str, dict]]:
    """Seed 002: adaptive DP-SGD at epsilon 3 and 8 (valid epsilon); plain DP-SGD at the same epsilons is in the
    tradeoff plan (noisysgd-eps3, noisysgd-eps8)."""
    for eps in (3.0, 8.0):
        yield f"adp-eps{eps_label(eps)}", {"method": "adp", "privacy__epsilon": eps}


PLANS: dict[str, Callable[[str], Iterator[tuple[str, dict]]]] = {  # preset name -> (run name, overrides)
    "tradeoff": lambda preset: plan_tradeoff(),
    "ablation": lambda preset: plan_ablation(),
    "filtering": lambda preset: plan_filtering(),
    "teachers": lambda preset: plan_teachers(),
    "phrases": plan_phrases,
    "blacklist": lambda preset: plan_blacklist(),
    "adp": lambda preset: plan_adp(),
}


def plan_configs(plan: str, preset: str, seed: int = 0) -> list[tuple[str, RunConfig]]:
    """(run name, config) of every run of the plan; a seed other than 0 is named (tiny-pub-gpt-seed1), as the
    shipped runs of seeds 1 and 2 are, so that two seeds never share a folder."""
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}; choose one of {', '.join(PLANS)}")
    suffix = f"-seed{seed}" if seed else ""
    return [(f"{preset}-{name}{suffix}", preset_config(preset, seed=seed, **overrides))
            for name, overrides in PLANS[plan](preset)]


def holds_config(run, cfg: RunConfig) -> bool:
    """Whether a finished run folder holds this config (fields its method never reads aside)."""
    from core.runs.store import RunFormatError

    try:
        stored = run.run_config()
    except (ConfigError, RunFormatError):
        return False
    return stored is not None and effective_config(stored.to_dict()) == effective_config(cfg.to_dict())


@contextmanager
def sigterm_between_and_during_runs(sweep: dict) -> Iterator[None]:
    """SIGTERM to a sweep, from the main thread only (elsewhere the caller's handler stays): during a run it stops
    that run (Terminated: a Cancel of the run when its marker is there, jobs.record_stop tells which); between
    runs, a Cancel of the run just ended is moot, and a SIGTERM from outside stops the plan before the next run
    (sweep["stop"]) instead of landing in the sweep's own bookkeeping."""
    from core.runs.jobs import cancel_requested
    from core.runs.pipeline import Terminated

    def handler(signum, frame):
        if sweep["in_run"]:
            raise Terminated()
        if sweep["run"] is None or not cancel_requested(sweep["run"].path):
            sweep["stop"] = True

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_plan(plan: str, preset: str, out: Path, seed: int = 0, execute=None, echo=print) -> list[str]:
    """Run every config of the plan into out/<name>; a finished run of the same settings is skipped, one of other
    settings is left as it is (reported NOT RUN), a broken one is redone. A Cancel of one of its runs stops that
    run and the plan goes on; a SIGTERM from outside or Ctrl-C stops the plan (Terminated, KeyboardInterrupt)."""
    from core.runs.jobs import cancel_requested, record_stop
    from core.runs.pipeline import Cancelled, Terminated
    from core.runs.pipeline import execute as default_execute
    from core.runs.store import RunDir

    execute = execute or default_execute
    configs = plan_configs(plan, preset, seed)
    done: list[str] = []
    sweep = {"run": None, "in_run": False, "stop": False}
    with sigterm_between_and_during_runs(sweep):
        for i, (name, cfg) in enumerate(configs, 1):
            if sweep["stop"]:
                echo(f"[{i}/{len(configs)}] {name}: NOT RUN: the sweep was sent SIGTERM; the plan stops here")
                raise Terminated()
            path = out / name
            if path.exists() and RunDir(path).is_complete():
                if holds_config(RunDir(path), cfg):
                    echo(f"[{i}/{len(configs)}] {name}: already done, skipped")
                    done.append(name)
                else:  # never counted as this plan's run, never overwritten: it may be someone's result
                    echo(f"[{i}/{len(configs)}] {name}: NOT RUN: {path} holds a finished run of other settings "
                         "(move it away, or sweep into another --out)")
                continue
            if path.exists():
                import shutil

                from core.runs.registry import reconcile
                from core.runs.store import RunFormatError

                try:
                    status = reconcile(RunDir(path)) or {}  # a run whose process is gone is marked failed first
                except (RunFormatError, OSError):  # a status.json that cannot be read: no live run stands behind it
                    status = {}
                if status.get("state") == "running" or (status.get("state") == "queued" and status.get("pid")):
                    echo(f"[{i}/{len(configs)}] {name}: NOT RUN: {path} holds a run in progress (pid "
                         f"{status.get('pid')}; another sweep or a job): wait for it, or sweep into another --out")
                    continue
                # a finished run whose files were damaged since, status.json included, is not a dead one
                if status.get("state") == "done" or (not status and any(
                        (path / result).exists() for result in ("metrics.json", "privacy.json"))):
                    echo(f"[{i}/{len(configs)}] {name}: NOT RUN: {path} holds a finished run whose files do not read "
                         f"({RunDir(path).incomplete_reason()}): move it away, or sweep into another --out")
                    continue
                shutil.rmtree(path)  # partial files of a run that died are never kept as results
                ended = status.get("state") or "unreadable"
                echo(f"[{i}/{len(configs)}] {name}: redoing it from the start: {path} held a run that did not finish "
                     f"({ended}{': ' + str(status['error']) if status.get('error') else ''}), deleted")
            t = time.time()
            run = sweep["run"] = RunDir.create(path, cfg.to_dict(), cfg.seed)
            try:
                sweep["in_run"] = True
                if sweep["stop"]:  # sent while its folder was made
                    raise Terminated()
                metrics = execute(cfg, run, should_stop=lambda folder=run.path: cancel_requested(folder))
            except (Cancelled, KeyboardInterrupt) as exc:
                sweep["in_run"] = False
                try:
                    status = record_stop(run, by_signal=isinstance(exc, Terminated))
                except OSError as unrecorded:  # a folder that cannot be written: the stop is still the news
                    echo(f"[{i}/{len(configs)}] {name}: STOPPED (not recorded: {unrecorded}); the plan stops here")
                    raise exc from None
                if status.get("state") == "failed":  # the sweep itself was stopped from outside
                    echo(f"[{i}/{len(configs)}] {name}: STOPPED: {status.get('error')}; the plan stops here")
                    raise
                if isinstance(exc, KeyboardInterrupt):
                    echo(f"[{i}/{len(configs)}] {name}: CANCELLED (Ctrl-C); the plan stops here")
                    raise
                # a Cancel of this run (Runs page, jobs.cancel) stops it alone, as its dialog says
                echo(f"[{i}/{len(configs)}] {name}: CANCELLED; the plan goes on")
                continue
            except Exception as exc:  # one failed run must not stop the plan
                sweep["in_run"] = False
                with suppress(OSError):  # a full disk: the run's own error is the news
                    run.set_status(state="failed", error=f"{type(exc).__name__}: {exc}")
                echo(f"[{i}/{len(configs)}] {name}: FAILED {type(exc).__name__}: {exc}")
                continue
            finally:
                sweep["in_run"] = False
            eps = (run.privacy() or {}).get("epsilon")
            echo(f"[{i}/{len(configs)}] {name}: ppl {metrics['ppl']:.2f} bleu4 {metrics['bleu4']:.2f} "
                 f"eps {eps} ({time.time() - t:.0f} s)")
            sys.stdout.flush()
            done.append(name)
    return done
