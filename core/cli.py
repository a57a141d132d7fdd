"""Command line: `python -m core <command>`. Errors the user can fix are one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import traceback
from pathlib import Path

from core.config import (
    ABLATIONS,
    SECTIONS,
    ConfigError,
    RunConfig,
    absolute_path,
    canonical_filter,
    check_delta_range,
    check_device,
    check_device_executor,
    check_private_size,
    check_seed,
    device_setting,
    effective_config,
    fixed_epsilon,
    parse_number,
    preset_config,
    thread_setting,
    validate,
)


class OneLineParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # `--teacher 5` ran as --teachers 5; a typo is an error here
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # argparse would print the whole usage block
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def folder_arg(text: str) -> str:
    """A folder flag (--run-dir, --out): an empty name is the current folder ("already exists: ."); say so."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a folder name")
    return text


def read_config_file(path: Path) -> dict:
    """The config sections of a --config file: a run's config.json or a bare RunConfig dict."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    base = loaded.get("config", loaded) if isinstance(loaded, dict) else None
    if not isinstance(base, dict):
        raise ConfigError(f"config {path} must hold a JSON object of config sections")
    return base


def file_overrides(base: dict, path: str) -> dict:
    """A config file's fields as preset_config overrides (section__field), its preset left out."""
    overrides: dict = {}
    for section, values in base.items():
        if isinstance(values, dict):
            if section not in SECTIONS:  # preset_config names it too, but only when it holds a field
                hint = " (a synthetic-data run's config: use core synth --config)" if section == "synth" else ""
                raise ConfigError(f"unknown config section {section!r} in {path}{hint}")
            overrides.update({f"{section}__{k}": v for k, v in values.items()})
        elif section not in ("preset",):
            overrides[section] = values
    return overrides


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """Flags override a config file, which overrides the preset."""
    base = read_config_file(Path(args.config)) if getattr(args, "config", None) else {}
    stored_preset = base.get("preset")
    if args.preset and base and stored_preset and args.preset != stored_preset:
        # a stored config spells out every size, so --preset would only have changed its label
        raise ConfigError(f"--preset {args.preset} with a config of preset {stored_preset}: the config sets every "
                          "size itself; drop --preset, or edit the config")
    preset = args.preset or stored_preset or "tiny"
    overrides = file_overrides(base, getattr(args, "config", None))
    flag_map = {
        "method": "method", "seed": "seed", "corpus": "data__corpus", "teachers": "seqpate__teachers",
        "filter": "seqpate__filter", "partition": "seqpate__partition", "ablation": "seqpate__ablation",
        "query_budget": "seqpate__query_budget", "model": "model__source", "executor": "seqpate__executor",
        "privacy_target": "privacy__target", "batching": "dpsgd__batching", "epochs": "dpsgd__epochs",
        "canaries": "data__canaries", "ray_address": "seqpate__ray_address",
    }
    flagged = {}
    for flag, key in flag_map.items():
        value = getattr(args, flag, None)
        if value is not None:
            flagged[flag] = key
            overrides[key] = canonical_filter(value) if flag == "filter" else value
    for key, builtin in (("data__corpus", "chitchat"), ("model__source", "tiny")):
        if key in overrides:
            overrides[key] = absolute_path(overrides[key], builtin)
    if getattr(args, "ray_address", None) and overrides.get("seqpate__executor", "local") != "ray":
        raise ConfigError("--ray-address needs --executor ray (the teachers would run here and ignore it)")
    if overrides.get("seqpate__ray_address") and overrides.get("seqpate__executor", "local") != "ray":
        # a ray run's config rerun with --executor local: its cluster address would be stored, unused
        print(f"note: executor {overrides.get('seqpate__executor', 'local')}: the config's ray_address "
              f"{overrides['seqpate__ray_address']!r} is dropped", file=sys.stderr)
        overrides["seqpate__ray_address"] = ""
    # parsed for every method, so that text is refused even where the value is not used
    privacy = {name: parse_number(getattr(args, name), name, allow_inf=name == "epsilon")
               for name in ("epsilon", "delta") if getattr(args, name, None) is not None}
    method = overrides.get("method", RunConfig.method)
    if privacy and fixed_epsilon(method) is not None:
        # its privacy is fixed by the data it reads; storing the flags would make a second config of the same run
        print(f"note: {method} takes no epsilon or delta (epsilon {fixed_epsilon(method):g}): "
              f"{' and '.join(f'--{name}' for name in privacy)} ignored", file=sys.stderr)
    else:
        overrides.update({f"privacy__{name}": value for name, value in privacy.items()})
    if "privacy__epsilon" in overrides:
        overrides["privacy__epsilon"] = parse_number(overrides["privacy__epsilon"], "epsilon")
    # which fields a method reads depends on the method alone: ask before validating, so that a value the
    # method never reads (`--epochs 0` for SeqPATE) is noted and dropped rather than refused
    unread = _unread_flags(preset_config(preset, method=method), flagged)
    if unread:  # as for --epsilon above: say so, and keep the preset's value rather than store an unused one
        print(f"note: {method} does not use {', '.join('--' + f.replace('_', '-') for f in unread)}: "
              "ignored", file=sys.stderr)
    return validate(preset_config(preset, **{k: v for k, v in overrides.items() if k not in unread.values()}))


# how teachers run, not what they compute: effective_config leaves them out for every method
EXECUTION_KEYS = ("seqpate__executor", "seqpate__ray_address")


def _unread_flags(cfg: RunConfig, flagged: dict[str, str]) -> dict[str, str]:
    """The flags (flag -> section__field) whose field cfg's method never reads (core.config.effective_config);
    any config of that method answers the same."""
    read = effective_config(cfg.to_dict())
    unread = {}
    for flag, key in flagged.items():
        section, _, name = key.partition("__")
        if not name:  # method, seed: read by every run
            continue
        if key in EXECUTION_KEYS:  # read by SeqPATE's teacher phase only, though they change no result
            used = cfg.method == "seqpate"
        else:
            used = name in read.get(section, {})
        if not used:
            unread[flag] = key
    return unread


# ----------------------------------------------------------------------------------------------------------------


def cmd_run(args) -> int:
    from core.data import load_prepared
    from core.runs.store import RunDir, check_new_run_dir

    # Every check the user can act on comes before the run folder is made, so a refusal writes nothing; the
    # engine (torch) is imported only after them, so a refusal is also quick.
    cfg = config_from_args(args)
    run_dir = Path(args.run_dir)
    check_new_run_dir(run_dir)
    data = load_prepared(cfg.data, cfg.seed)  # cached in this process: the pipeline reuses it
    check_private_size(cfg, len(data.private_train))
    thread_setting()  # a SEQPATE_THREADS that is not a number is refused here, not as a failed run
    check_device()
    check_device_executor(cfg.method, cfg.seqpate.executor, device_setting())

    # the engine loads (torch: 6-9 s) before the folder is made: a Ctrl-C or SIGTERM while it loaded left the
    # folder "queued" for good
    from core.runs.pipeline import install_sigterm_handler
    install_sigterm_handler()
    note_unlisted(run_dir.parent)  # once nothing is refused: a refusal stays one line
    run = RunDir.create(run_dir, cfg.to_dict(), cfg.seed)
    return execute_run(cfg, run)


def note_unlisted(parent: Path) -> None:
    """A note where runs made in `parent` will not be listed: `runs list` and the dashboard read the folders
    directly under runs/ ($SEQPATE_RUNS_DIR) and cached_runs/, and a run in runs/x/y showed nowhere."""
    from core.runs.registry import cached_root, live_root

    if parent.resolve() not in (live_root().resolve(), cached_root().resolve()):
        print(f"note: {parent} is not runs/ ($SEQPATE_RUNS_DIR) or cached_runs/: `runs list` and the dashboard will "
              "not list runs made there; `runs show`, `compare` and `audit` take their folders", file=sys.stderr)


def record_failure(run, exc: Exception) -> int:
    """A run that raised: state failed with the error, the traceback kept beside it, one line on stderr; exit 1.
    Where the folder cannot take the record (the cause itself, often: read-only, a full disk), the line says so:
    the error of the failed write replaced the run's, with exit 2, as if nothing had been written."""
    stage = (run.status() or {}).get("stage", "?")
    line = f"error: run failed at stage {stage}: {type(exc).__name__}: {exc}"
    try:
        run.set_status(state="failed", error=f"{type(exc).__name__}: {exc}")
        run.write_text("traceback.txt", traceback.format_exc())
    except OSError as unrecorded:
        line += (f" (not recorded in {run.path}: {type(unrecorded).__name__}: {unrecorded}; the run lists as "
                 "failed once its process has ended)")
    print(line, file=sys.stderr)
    return 1


def stopped(run, exc: BaseException) -> int:
    """A run its process stopped before the end (a cancel, Ctrl-C or a SIGTERM from outside): its state recorded
    (jobs.record_stop), one line on stderr; exit 130."""
    from core.runs.jobs import record_stop
    from core.runs.pipeline import Terminated

    try:
        status = record_stop(run, by_signal=isinstance(exc, Terminated))
    except OSError as unrecorded:  # a folder that cannot be written: the stop is still the news, not the write
        print(f"stopped: {run.path} (not recorded: {type(unrecorded).__name__}: {unrecorded}; the run lists as failed "
              "once its process has ended)", file=sys.stderr)
        return 130
    reason = "cancelled" if status.get("state") == "cancelled" else status.get("error")
    print(f"{reason}: {run.path}", file=sys.stderr)
    return 130


@contextlib.contextmanager
def failing_the_run(run):
    """A launched run whose settings cannot be taken: the run fails with the reason, and the error goes on to main
    (a ConfigError: one line, exit 2; anything else, a traceback), so a job never stays queued after it."""
    try:
        yield
    except Exception as exc:
        with contextlib.suppress(OSError):  # an unwritable folder: the refusal, not the failed write, goes on
            run.set_status(state="failed", error=str(exc) if isinstance(exc, ConfigError) else
                           f"{type(exc).__name__}: {exc}")
        raise


def run_to_completion(run, execute, summary) -> int:
    """Execute a run (execute(should_stop) returns its metrics), recording a stop or a failure; print one JSON line,
    the run folder and summary(metrics); the exit status. Text-generation and synthetic-data runs alike."""
    from core.runs.jobs import cancel_requested
    from core.runs.pipeline import Cancelled  # loaded by the engine already

    try:  # the pid too: a stop then is recorded (only the folder's own making, a millisecond, lies before this)
        run.set_status(pid=os.getpid())
        metrics = execute(should_stop=lambda: cancel_requested(run.path))
    except (Cancelled, KeyboardInterrupt) as exc:
        return stopped(run, exc)
    except Exception as exc:
        return record_failure(run, exc)
    print(json.dumps({"run_dir": str(run.path), **summary(metrics)}))
    return 0


def run_summary(run, metrics: dict) -> dict:
    """A text-generation run's line: utility and the epsilon spent (labelled where it is a heuristic's)."""
    summary = {k: metrics[k] for k in ("ppl", "bleu1", "bleu2", "bleu3", "bleu4") if k in metrics}
    privacy = run.privacy() or {}
    heuristic = {"heuristic": privacy["heuristic"]} if "heuristic" in privacy else {}  # that epsilon is no guarantee
    return {**summary, "epsilon": privacy.get("epsilon"), **heuristic}


def execute_run(cfg: RunConfig, run) -> int:
    """The engine on a text-generation run folder made for cfg, to its end (run_to_completion)."""
    from functools import partial

    from core.runs.pipeline import execute

    return run_to_completion(run, partial(execute, cfg, run), partial(run_summary, run))


def cmd_job(args) -> int:
    """Run a queued run directory created by core.runs.jobs.launch (waits for a free slot first)."""
    from core.runs.jobs import JobCancelled, acquire_slot, cancel_requested
    from core.runs.pipeline import Cancelled, install_sigterm_handler
    from core.runs.store import TERMINAL, RunDir, RunError, is_synth

    run = RunDir(Path(args.run_dir))
    if run.config() is None:  # jobs.launch writes config.json before it starts this command
        raise RunError(f"not a launched run folder (no config.json): {run.path}")
    state = run.state()
    if state in TERMINAL or cancel_requested(run.path):  # cancelled (or finished) before it started
        print(f"{run.run_id} is {state if state in TERMINAL else 'cancelled'}: nothing to run", file=sys.stderr)
        return 0
    check_job_is_ours(run)
    if is_synth(run.config() or {}):
        from core.synth.command import run_launched_job  # launched from the Synthetic data page

        return run_launched_job(run)
    with failing_the_run(run):
        cfg = validate(run.run_config())
    install_sigterm_handler()
    try:
        with acquire_slot(run.path.parent, run):
            if not still_queued(run):
                return 0
            return execute_run(cfg, run)
    except (Cancelled, JobCancelled) as exc:  # stopped while waiting for a slot
        return stopped(run, exc)


def check_job_is_ours(run) -> None:
    """`core job` runs a queued run, as the job its launch started, and claims it (its pid in status.json, under
    the status lock) before waiting for a slot: a second `core job` on a run that is running, or queued as another
    live process's job, waited for the slot and then ran the whole pipeline again in the same folder; and an
    unclaimed run waiting for a slot read as a dead job to the next listing, which failed it."""
    from core.runs.store import RunError, is_synth, process_alive

    refusal = []

    def claim(current: dict) -> dict | None:
        state, pid = current.get("state"), current.get("pid")
        if state != "queued":
            again = "core synth" if is_synth(run.config() or {}) else "core run"
            refusal.append(f"{run.run_id} is {state or 'in no known state'}, not queued: `core job` runs a launched "
                           f"run that has not started; to run its settings again: {again} --config "
                           f"{run.path / 'config.json'} --run-dir NEW_FOLDER")
            return None
        if pid not in (None, os.getpid()) and process_alive(pid, current.get("pid_started")):
            refusal.append(f"{run.run_id} is queued as the job of process {pid}, which is alive: that job runs it")
            return None
        return None if pid == os.getpid() else {"pid": os.getpid()}

    run.update_status(claim)
    if refusal:
        raise RunError(refusal[0])


def still_queued(run) -> bool:
    """Once a slot is ours: whether the run is still ours to start (cancelled, or taken by hand, while this job
    waited); says so where it is not."""
    status = run.status() or {}
    if status.get("state") != "queued":
        print(f"{run.run_id} is {status.get('state')} by now: nothing to run", file=sys.stderr)
    elif status.get("pid") != os.getpid():
        print(f"{run.run_id} was taken by process {status.get('pid')} while this job waited: nothing to run",
              file=sys.stderr)
    return status.get("state") == "queued" and status.get("pid") == os.getpid()


def cmd_sweep(args) -> int:
    from core.runs.sweep import plan_configs, run_plan

    thread_setting()  # refused before any run of the plan starts
    check_device()
    plan_configs(args.plan, args.preset, seed=args.seed)  # an unknown plan is refused before torch loads (5 s)
    note_unlisted(Path(args.out))
    from core.runs.pipeline import Cancelled

    try:  # run_plan handles SIGTERM: a Cancel of one of its runs stops that run, not the sweep
        done = run_plan(args.plan, args.preset, Path(args.out), seed=args.seed)
    except (Cancelled, KeyboardInterrupt):
        print(f"sweep stopped; the runs it finished are in {args.out}, and a sweep into it again goes on from there",
              file=sys.stderr)
        return 130
    print(f"{len(done)} runs finished in {args.out}")
    return 0


def cmd_report(args) -> int:
    from core.runs.report import left_out_runs, set_aside_runs, write_report
    from core.runs.store import RunDir

    notes = Path(args.notes) if args.notes else None
    if notes is not None and not notes.is_file():  # the report used to leave its Notes out without a word
        raise ConfigError(f"--notes {notes}: no such file")
    runs = Path(args.runs)
    if (runs / "config.json").is_file():  # REPORT.md would land inside that run
        raise ConfigError(f"--runs {runs} is a run folder; give the folder that holds runs (e.g. runs, cached_runs)")
    if not runs.is_dir():
        raise ConfigError(f"--runs {runs}: not a folder")
    left_out, set_aside = left_out_runs(runs), set_aside_runs(runs)  # the report names them too
    n_runs = sum(path.is_dir() and RunDir(path).exists() for path in runs.iterdir())
    if len(left_out) == n_runs:
        raise ConfigError(f"--runs {runs}: no finished runs there, nothing to report")
    if len(left_out) + len(set_aside) == n_runs:
        raise ConfigError(f"--runs {runs}: every finished run there changes a setting none of the report's tables "
                          f"varies ({'; '.join(set_aside)}), nothing to report; compare them with core compare")
    if left_out:
        print(f"note: left out {len(left_out)} run folder(s) that are not finished runs: {'; '.join(left_out)}",
              file=sys.stderr)
    if set_aside:
        print(f"note: left out {len(set_aside)} run(s) that change a setting none of the report's tables varies: "
              f"{'; '.join(set_aside)}", file=sys.stderr)
    print(write_report(runs, notes))
    return 0


def cmd_data_stats(args) -> int:
    from core.data import corpus_stats, data_stats, load_corpus, load_prepared

    cfg = config_from_args(args)
    stats = {"corpus": corpus_stats(load_corpus(cfg.data)), "preset": cfg.preset, "seed": cfg.seed}
    try:
        stats.update(data_stats(load_prepared(cfg.data, cfg.seed)))
    except ValueError:  # sizes the corpus cannot fill: what it holds still answers what this command is asked
        _print_stats(stats, args.json)
        raise
    _print_stats(stats, args.json)
    return 0


def _print_stats(stats: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(stats, indent=2))
    else:
        for key, value in stats.items():
            print(f"{key}: {value}")


def named_run(text: str):
    """The run a command-line name stands for (registry.resolve_run: an id, "ID (shipped)" or a run folder), with
    a note on stderr where an id names both a run made here and a shipped run: the one made here is taken."""
    from core.runs.registry import SHIPPED_SUFFIX, cached_root, resolve_run

    run = resolve_run(text)
    if text.strip() == run.run_id and run.source != "cached" and (cached_root() / run.run_id).is_dir():
        print(f"note: {run.run_id!r} names a run made here ({run.path}) and a shipped run: taking the one made here; "
              f"'{run.run_id}{SHIPPED_SUFFIX}' names the shipped one", file=sys.stderr)
    return run


def cmd_runs(args) -> int:
    from core.runs.registry import list_runs, named_apart, reconcile

    if args.runs_command == "list":
        rows = named_apart(list_runs())  # a shipped run whose id a run made here has: "ID (shipped)"
        if args.json:
            print(json.dumps([r.__dict__ | {"path": str(r.path)} for r in rows], indent=2, default=str))
        else:
            # a header, and the preset: rows of one method differ most often there (its accounted ε and every
            # setting: `runs show RUN --full`, the dashboard's Runs page)
            print(f"{'run':50s} {'source':6s} {'state':9s} {'stage':16s} {'preset':6s} {'method':20s} epsilon")
            for r in rows:
                why = f"  ({r.error})" if r.state == "failed" and r.error else ""  # the reason, as runs show gives it
                print(f"{r.run_id:50s} {r.source:6s} {r.state:9s} {r.stage or '':16s} {r.preset or '':6s} "
                      f"{r.method or '':20s} eps asked={r.epsilon}{why}")
        return 0
    run = named_run(args.run)
    status = reconcile(run)  # a run whose process is gone reads failed, even where its folder cannot be written
    out = {"run_dir": str(run.path), **(status or {"state": "failed"})}  # no status.json: listed as failed too
    if (status is None or status.get("state") == "done") and (problem := run.incomplete_reason()):
        out["problem"] = problem  # a file lost or damaged
    if args.full:
        out.update({"metrics": run.metrics(), "privacy": run.privacy()})
    print(json.dumps(out, indent=2, default=str))
    return 0


MAX_RESAMPLES = 1_000_000  # bootstrap resamples of compare: drawn in batches, about a minute at quick's test set
MAX_DRAWS = 1_000  # sampled completions per prefix: about 10 s each on quick (20 is plenty, README)


def cmd_compare(args) -> int:
    from core.runs.compare import NotComparableError, compare_runs, compare_runs_bleu, shared_references
    from core.runs.registry import listed_id
    from core.runs.store import RunError, is_synth

    run_a, run_b = named_run(args.run_a), named_run(args.run_b)
    if run_a.path.resolve() == run_b.path.resolve():  # read "no clear difference"
        raise ConfigError(f"run A and run B are the same run ({listed_id(run_a)}): give two runs")
    if not 1 <= args.resamples <= MAX_RESAMPLES:  # 10^9 asked numpy for 1.46 TiB at once
        raise ConfigError(f"--resamples must be from 1 to {MAX_RESAMPLES:,}, got {args.resamples}")
    if not 1 <= args.draws <= MAX_DRAWS:  # each draw is a pass over the test prefixes with both models
        raise ConfigError(f"--draws must be from 1 to {MAX_DRAWS:,}, got {args.draws}")
    if not 0 < args.confidence < 1:  # checked up front: without per-sentence NLL it was never read, and passed
        raise ConfigError(f"--confidence must be between 0 and 1, got {args.confidence}")
    if args.draws > 1:
        check_device()  # the saved models sample where SEQPATE_DEVICE says, as runs compute
    for name, run in (("A", run_a), ("B", run_b)):
        if reason := run.incomplete_reason():  # its missing completions read as 'different test prefixes'
            raise ConfigError(f"run {name} ({listed_id(run)}) is not a finished run ({reason}): nothing to compare")
        if is_synth(run.config() or {}):  # its samples have no references: BLEU 0 against 0, 'no difference'
            raise ConfigError(f"run {name} ({listed_id(run)}) is a synthetic-data run: it has no test perplexity or "
                              "completions to compare (its accuracy and separability are in its metrics.json)")
    out: dict = {"run_a": str(run_a.path), "run_b": str(run_b.path)}
    lines = []
    try:
        ppl = compare_runs(run_a, run_b, confidence=args.confidence, n_resamples=args.resamples)
        out["perplexity"] = {**ppl.__dict__, "verdict": ppl.verdict}
        lines.append(f"perplexity: A {ppl.ppl_a:.2f}, B {ppl.ppl_b:.2f}. {ppl.summary()}")
    except NotComparableError as exc:  # older runs keep no per-sentence NLL; BLEU may still be comparable
        out["perplexity"] = {"error": str(exc)}
        lines.append(f"perplexity: not compared ({exc})")
    if args.draws > 1:
        from core.runs.live import check_saved_model

        for run in (run_a, run_b):
            try:
                check_saved_model(run)
            except RunError as exc:  # shipped runs keep no weights
                raise ConfigError(f"--draws {args.draws} needs both runs' saved models: {exc}") from None
        prefixes = len(shared_references(run_a, run_b))
        print(f"drawing {args.draws} completions of each of the {prefixes} test prefixes with each run's saved model "
              f"(one pass over them per draw and run; about 10 s each for quick's 1,000 on 2 cores)", file=sys.stderr)
    bleu = compare_runs_bleu(run_a, run_b, draws=args.draws)
    out["bleu4"] = {**bleu.__dict__, "verdict": bleu.verdict}
    lines.append(bleu.summary())
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"A = {listed_id(run_a)}, B = {listed_id(run_b)}")
        print("\n".join(lines))
    return 0


def cmd_complete(args) -> int:
    from core.runs.registry import listed_id
    from core.runs.store import RunError

    check_seed(args.seed)  # as every other command's
    check_device()  # the saved models sample where SEQPATE_DEVICE says, as runs compute
    runs = [named_run(ref) for ref in args.runs]  # a run named wrong is refused before torch loads (5 s)
    from core.runs.live import complete_prefix
    from core.tokenizer import ModelLoadError

    out = []
    for run in runs:
        try:
            row = {"run": listed_id(run), "completion": complete_prefix(run, args.prefix, seed=args.seed)}
            if not row["completion"]:  # a blank reads as a fault: the model's first token ended the text
                row["note"] = "empty: the model ended the text at its first token"
            out.append(row)
        except (RunError, ModelLoadError) as exc:  # one run without weights does not stop the others
            out.append({"run": listed_id(run), "error": str(exc)})
    print(json.dumps(out, ensure_ascii=False, indent=2))
    failed = [row["run"] for row in out if "error" in row]
    if failed:  # the others' completions are printed all the same
        print(f"error: {len(failed)} of {len(out)} run(s) could not complete the prefix: {', '.join(failed)} "
              "(see their \"error\")", file=sys.stderr)
        return 2
    return 0


def cmd_audit(args) -> int:
    from core.analysis.audit import audit_run_dir

    path = Path(args.run_dir)
    if not path.is_dir():  # not a folder here: a run id, as runs show, compare and complete take one
        run = named_run(args.run_dir)
        if run.source == "cached":  # its files would be rewritten on a name: that takes its folder, typed out
            raise ConfigError(f"{args.run_dir!r} is a shipped run: the audit rewrites its files; to do that, give "
                              f"its folder ({run.path})")
        path = run.path
    result = audit_run_dir(path)
    print(json.dumps(result, indent=2, default=str))
    if "warning" in result:
        print(f"warning: {result['warning']}", file=sys.stderr)
    return 0


def cmd_privacy(args) -> int:
    from core.privacy import (
        SEQPATE_L2_SENSITIVITY,
        GaussianEvent,
        epsilon_from_events,
        gaussian_noise_multiplier,
    )

    eps = parse_number(args.epsilon, "epsilon") if args.epsilon is not None else None
    delta = parse_number(args.delta, "delta", allow_inf=False)
    check_delta_range(delta)  # the range runs take, both ways (autodp fails near 1e-300); calibrating checks epsilon's
    if args.queries < 1:
        raise ConfigError(f"--queries must be at least 1, got {args.queries}")
    if args.sigma is not None:  # reverse: the epsilon that a given noise std buys
        std = parse_number(args.sigma, "sigma", allow_inf=False)
        if std < 0:
            raise ConfigError(f"--sigma must be at least 0 (0: no noise, epsilon inf), got {args.sigma}")
        out = {"queries": args.queries, "noise_std": std, "delta": delta}
    else:
        z = gaussian_noise_multiplier(eps, delta, args.queries)
        std = z * SEQPATE_L2_SENSITIVITY
        out = {"queries": args.queries, "epsilon": eps, "delta": delta, "noise_multiplier": z,
               "sensitivity": SEQPATE_L2_SENSITIVITY, "noise_std": std}
    # the epsilon and accountant a run would record for these releases (one module computes every epsilon)
    report = epsilon_from_events([GaussianEvent(std, SEQPATE_L2_SENSITIVITY, args.queries)], delta)
    if args.sigma is not None:
        out["epsilon"] = report.epsilon
    out["accountant"] = report.accountant
    print(json.dumps(out, indent=2))
    return 0


# ----------------------------------------------------------------------------------------------------------------


def add_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=["tiny", "quick", "paper"], default=None)
    p.add_argument("--seed", type=int)
    p.add_argument("--corpus", help="chitchat (default) or a path: AirDialog .json, Europarl .txt, .jsonl/.csv")
    p.add_argument("--config", help="a config.json of an earlier run (flags override it)")


def ablation_name(text: str) -> str:
    """An ablation as the paper writes it (-merge_p) or without the dash (merge_p), which argparse cannot read as a
    value after a space: `--ablation merge_p` and `--ablation=-merge_p` name the same run."""
    return f"-{text}" if f"-{text}" in ABLATIONS else text


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m core", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    run = sub.add_parser("run", help="run one method and write a complete run directory")
    add_config_flags(run)
    run.add_argument("--method", help="pub-gpt, pri-gpt, pub-gpt+pseudo, seqpate, noisysgd, ...")
    run.add_argument("--run-dir", required=True, type=folder_arg)
    run.add_argument("--epsilon", help="target epsilon (a number or inf)")
    run.add_argument("--delta")
    run.add_argument("--teachers", type=int)
    run.add_argument("--filter", help="student candidate filter: top-p:0.95 or top-k:50")
    run.add_argument("--partition", choices=["random", "by-user"])
    run.add_argument("--ablation", type=ablation_name,
                     help=f"{', '.join(a.lstrip('-') for a in ABLATIONS)} (the paper's -merge_p etc.; write "
                          "--ablation=-merge_p to keep the dash)")
    run.add_argument("--query-budget", type=int)
    run.add_argument("--model", help="tiny (default) or a local GPT-2 checkout directory")
    run.add_argument("--executor", choices=["local", "process", "ray"])
    run.add_argument("--ray-address", help="with --executor ray: join this cluster (auto, or host:port)")
    run.add_argument("--privacy-target", choices=["sample", "phrase-avg"])
    run.add_argument("--batching", choices=["samples", "users"])
    run.add_argument("--canaries", help="insert seeded canaries, one per insertion count, e.g. 1,10,100")
    run.add_argument("--epochs", type=int, help="training epochs of the baselines")
    run.set_defaults(func=cmd_run)

    job = sub.add_parser("job", help="run a queued run directory (used by background launches)")
    job.add_argument("run_dir")
    job.set_defaults(func=cmd_job)

    sweep = sub.add_parser("sweep", help="run a named plan of runs (resumable)")
    sweep.add_argument("--plan", required=True, help="tradeoff, ablation, filtering, teachers, phrases, blacklist or adp")
    sweep.add_argument("--preset", default="quick", choices=["tiny", "quick", "paper"])
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--out", default="cached_runs", type=folder_arg)
    report = sub.add_parser("report", help="write REPORT.md: the sweep runs' tables and the paper's orderings")
    report.add_argument("--runs", default="cached_runs")
    report.add_argument("--notes", help="a markdown file appended as the report's Notes section")
    sweep.set_defaults(func=cmd_sweep)
    report.set_defaults(func=cmd_report)

    stats = sub.add_parser("data-stats", help="users, sentences and words on each side of the user split")
    add_config_flags(stats)
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=cmd_data_stats)

    runs = sub.add_parser("runs", help="list runs or show one run's status")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, parser_class=OneLineParser)
    lst = runs_sub.add_parser("list")
    lst.add_argument("--json", action="store_true")
    show = runs_sub.add_parser("show")
    show.add_argument("run", help="run id or run directory")
    show.add_argument("--full", action="store_true", help="include metrics and privacy")
    runs.set_defaults(func=cmd_runs)

    compare = sub.add_parser("compare", help="is run A better than run B? test perplexity (paired bootstrap over the "
                             "shared test sentences) and BLEU-4 (paired approximate randomization)")
    compare.add_argument("run_a", help="run id or run directory")
    compare.add_argument("run_b", help="run id or run directory")
    compare.add_argument("--confidence", type=float, default=0.95)
    compare.add_argument("--resamples", type=int, default=5000)
    compare.add_argument("--draws", type=int, default=1,
                         help="BLEU-4 over this many sampled completions of each test prefix per run (default 1: the "
                              "runs' completions.jsonl); more draws average out sampling noise and need both runs' "
                              "saved models")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_compare)

    comp = sub.add_parser("complete", help="complete a prefix you type with finished runs' saved models")
    comp.add_argument("runs", nargs="+", help="run ids or run directories")
    comp.add_argument("--prefix", required=True)
    comp.add_argument("--seed", type=int, default=0)
    comp.set_defaults(func=cmd_complete)

    audit = sub.add_parser("audit", help="recompute phrases.csv, R_name and statement.md of a finished run "
                           "(canary exposure is not recomputed: reported as computed at run time); of a "
                           "synthetic-data run, its n-gram shares and statement.md")
    audit.add_argument("--run-dir", required=True, type=folder_arg, help="a run folder, or a run id")
    audit.set_defaults(func=cmd_audit)

    privacy = sub.add_parser("privacy", help="privacy what-if tools")
    psub = privacy.add_subparsers(dest="privacy_command", required=True, parser_class=OneLineParser)
    cal = psub.add_parser("calibrate", help="SeqPATE noise for Q releases at (epsilon, delta), or the reverse")
    cal.add_argument("--queries", type=int, required=True)
    target = cal.add_mutually_exclusive_group(required=True)  # one is the answer to the other
    target.add_argument("--epsilon", help="target epsilon; prints the noise")
    target.add_argument("--sigma", help="noise std; prints the epsilon instead")
    cal.add_argument("--delta", default="1e-6")
    privacy.set_defaults(func=cmd_privacy)

    from core.synth.command import add_parser as add_synth_parser  # lazy: torch is only imported when it runs

    add_synth_parser(sub)
    return parser


NUMBER_FLAGS = ("--epsilon", "--delta", "--sigma")
LOOKS_NEGATIVE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)


def attach_negative_numbers(argv: list[str]) -> list[str]:
    """`--epsilon -inf` as `--epsilon=-inf`: argparse takes a value starting with '-' (other than a plain -3) for a
    flag and said "expected one argument", where the value's own range check names it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in NUMBER_FLAGS and LOOKS_NEGATIVE.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    from core.runs.store import RunError  # no torch: store imports only the standard library and core.config

    args = build_parser().parse_args(attach_negative_numbers(sys.argv[1:] if argv is None else argv))
    # a run prints its own progress lines (core.runs.pipeline.progress_logger); the libraries' tqdm bars would
    # fill a job's log.txt with carriage returns. Read when huggingface_hub is first imported, i.e. later.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe must fail here, inside the try, not at interpreter exit
        return code
    except KeyboardInterrupt:  # a run's own stop is recorded by run_to_completion; this is a command's, or before
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `runs list | head` closed the pipe: not an error to report (Python's documented way)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    # OSError: an unusable path (permission denied, a file where a folder should be); RunError: an unknown run id
    except (ConfigError, ValueError, OSError, KeyError, RunError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {' '.join(str(message).splitlines())}", file=sys.stderr)  # always one line
        return 2
