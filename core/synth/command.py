"""`python -m core synth ...`: one synthetic-data run from the command line (registered by core/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.config import ConfigError, absolute_path, check_device, field_names, parse_number, thread_setting
from core.synth.config import GENERATORS, SYNTH_PRESETS, SynthConfig, stored_settings, synth_config


def add_parser(sub) -> None:
    from core.cli import folder_arg  # core.cli builds this parser, so it is loaded by now

    p = sub.add_parser("synth", help="DP synthetic labelled text (seed 004): fine-tune, generate, evaluate")
    p.add_argument("--generator", choices=GENERATORS, help="filter, pplm or multitask (the paper's method)")
    p.add_argument("--epsilon", help="target epsilon (a number or inf); delta is 1/|train|")
    p.add_argument("--preset", choices=list(SYNTH_PRESETS), default=None)
    p.add_argument("--run-dir", required=True, type=folder_arg)
    p.add_argument("--seed", type=int)
    p.add_argument("--corpus", help="chitchat (default) or a .csv/.jsonl file with text,label columns")
    p.add_argument("--config", help="JSON: a synth run's config.json, or {\"synth\": {...}, \"base\": {...}} "
                   "with SynthConfig fields and core preset overrides (section__field)")
    p.set_defaults(func=cmd_synth)


def config_from_args(args) -> tuple[SynthConfig, dict]:
    """(SynthConfig, base overrides): flags override the config file, which overrides the preset."""
    synth: dict = {}
    base: dict = {}
    if args.config:
        path = Path(args.config)
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from None
        stored = isinstance(loaded, dict) and "config" in loaded  # a run's config.json wraps the config
        loaded = loaded.get("config") if stored else loaded
        if not isinstance(loaded, dict):
            raise ConfigError(f"config {path} must hold a JSON object with a \"synth\" section")
        if stored and not str(loaded.get("method", "")).startswith("synth-"):
            raise ConfigError(f"config {path} is a {loaded.get('method')!r} run's, not a synthetic-data run's")
        # a run's config.json also records what it ran (method, privacy, data_stats): rebuilt, not read
        unknown = set(loaded) - {"synth", "base"} - ({"method", "preset", "seed", "privacy", "data_stats"}
                                                     if stored else set())
        if unknown:  # a flat {"generator": ...} used to be ignored, and the default generator ran
            raise ConfigError(f"config {path}: unknown key(s) {field_names(unknown)}; put "
                              "SynthConfig fields under \"synth\" and core preset overrides under \"base\"")
        for section in ("synth", "base"):
            if not isinstance(loaded.get(section) or {}, dict):
                raise ConfigError(f"config {path}: \"{section}\" must be a JSON object of settings")
        synth = dict(loaded.get("synth") or {})
        if stored:
            synth = stored_settings(synth)  # it rebuilds what that run ran, settings it predates included
        base = _base_overrides(loaded.get("base") or {})
    known = set(SynthConfig.__dataclass_fields__)
    unknown = set(synth) - known
    if unknown:
        raise ConfigError(f"unknown synth setting(s): {field_names(unknown)}")
    stored_preset = synth.pop("preset", None)
    if args.preset and stored_preset and args.preset != stored_preset:
        # its settings are the other preset's, so --preset would only have changed the label (as for `run`)
        raise ConfigError(f"--preset {args.preset} with a config of preset {stored_preset}: drop --preset, or edit "
                          "the config")
    preset = args.preset or stored_preset or "tiny"
    for flag in ("generator", "seed", "corpus"):
        if getattr(args, flag) is not None:
            synth[flag] = getattr(args, flag)
    if "corpus" in synth:
        synth["corpus"] = absolute_path(synth["corpus"], "chitchat")
    for key, builtin in (("data__corpus", "chitchat"), ("model__source", "tiny")):
        if key in base:
            base[key] = absolute_path(base[key], builtin)
    if args.epsilon is not None:
        synth["epsilon"] = parse_number(args.epsilon, "epsilon")
    elif "epsilon" in synth:
        synth["epsilon"] = parse_number(synth["epsilon"], "epsilon")
    return synth_config(preset, **synth), base


def _base_overrides(base: dict) -> dict:
    """Nested {"data": {...}} or flat {"data__x": v} overrides of the core preset (method, preset, seed dropped)."""
    out = {}
    for key, value in base.items():
        if isinstance(value, dict):
            out.update({f"{key}__{k}": v for k, v in value.items()})
        elif key not in ("method", "preset", "seed"):
            out[key] = value
    return out


def balancing_note(data, cfg: SynthConfig) -> str:
    """A note where a user's file lost texts to balancing (108 rows, 100 of one label and 8 of the other, trained
    on 12 without a word) and what delta that leaves (1/|train|), or ""."""
    kept = len(data.train) + len(data.test)
    if cfg.corpus == "chitchat" or data.read <= kept:
        return ""
    per_label = kept // len(data.labels)  # balance() cuts every label to min(rarest label's count, per_label)
    cut = f"per_label {cfg.per_label}" if per_label == cfg.per_label and data.rarest > per_label else \
        "the rarest label's count"
    return (f"note: {data.source}: every label is cut to {per_label:,} texts ({cut}), so {kept:,} of "
            f"its {data.read:,} texts are used ({len(data.train):,} to train, {len(data.test):,} to test; delta = "
            f"1/{len(data.train):,})")


def cmd_synth(args) -> int:
    from core.runs.store import RunDir, check_new_run_dir
    from core.synth.job import prepare_job

    cfg, base = config_from_args(args)
    check_new_run_dir(Path(args.run_dir))  # before the data is read: a refusal is quick
    job = prepare_job(cfg, base)  # data errors end here, before anything is written
    if note := balancing_note(job.data, cfg):
        print(note, file=sys.stderr)
    thread_setting()  # so does a SEQPATE_THREADS that is not a number
    check_device()  # and a SEQPATE_DEVICE that is not cpu or cuda, or cuda without a GPU
    # the engine loads before the folder is made (a stop while it loaded left the folder "queued" for good)
    import core.synth.run  # noqa: F401 (execute_job's engine, loaded here)
    from core.cli import note_unlisted
    from core.runs.pipeline import install_sigterm_handler

    install_sigterm_handler()
    note_unlisted(Path(args.run_dir).parent)  # once nothing is refused: a refusal stays one line
    run = RunDir.create(Path(args.run_dir), job.config_dict(), cfg.seed)
    return execute_job(job, run)


def settings_of_run(run) -> tuple[SynthConfig, dict]:
    """(SynthConfig, base overrides) of a run folder whose config.json is a synthetic-data run's, read as `--config`
    reads it (also the folder the dashboard launches with core.runs.jobs.launch, which `python -m core job` runs)."""
    flags = argparse.Namespace(config=str(run.file("config.json")), preset=None, generator=None, seed=None,
                               corpus=None, epsilon=None)
    return config_from_args(flags)


def job_from_run_config(run):
    """The job of a synthetic-data run folder's config.json (settings_of_run), its data read."""
    from core.synth.job import prepare_job

    return prepare_job(*settings_of_run(run))


def run_launched_job(run) -> int:
    """`python -m core job` on a launched synthetic-data run: its settings checked, a slot in the job queue, then
    its data read and the run (a queued job holds no data while another trains). A problem fails the run with it."""
    from core.cli import failing_the_run, record_failure, still_queued, stopped
    from core.runs.jobs import JobCancelled, acquire_slot
    from core.runs.pipeline import Cancelled, install_sigterm_handler
    from core.synth.job import prepare_job

    with failing_the_run(run):  # as a text-generation job's settings
        settings = settings_of_run(run)
        thread_setting()
        check_device()
    install_sigterm_handler()
    try:
        with acquire_slot(run.path.parent, run):
            if not still_queued(run):
                return 0
            try:
                job = prepare_job(*settings)
            except Exception as exc:  # a data problem (a labelled file gone since the launch)
                return record_failure(run, exc)
            return execute_job(job, run)
    except (Cancelled, JobCancelled) as exc:  # stopped while waiting for a slot
        return stopped(run, exc)


def execute_job(job, run) -> int:
    """core.cli.run_to_completion on a synthetic-data run: its line gives accuracy, separability and epsilon."""
    from functools import partial

    from core.cli import run_to_completion
    from core.synth.run import execute

    keys = ("accuracy_synthetic", "accuracy_real", "separability", "epsilon")

    def summary(metrics: dict) -> dict:
        if note := unfiltered_labels_note(metrics):
            print(note, file=sys.stderr)
        return {"method": job.cfg.method, **{k: metrics.get(k) for k in keys},
                "delta": (run.privacy() or {}).get("delta"), "ngram_ratios": metrics.get("ngram_ratios")}

    return run_to_completion(run, partial(execute, job, run), summary)


def unfiltered_labels_note(metrics: dict) -> str:
    """A note naming the labels none of whose samples passed the filter (a privacy officer's run filled 2 of its 3
    labels with rejects, "kept": "filled", without a word), or ""."""
    counts = (metrics.get("generation") or {}).get("accepted_per_label")
    none = [label for label, n in counts.items() if n == 0] if isinstance(counts, dict) else []
    if not none:
        return ""
    return (f"note: the filter passed no sample of {len(none)} of {len(counts)} labels ({', '.join(none)}): their "
            "samples are the rejects its discriminator scored highest (\"kept\": \"filled\" in samples.jsonl)")
