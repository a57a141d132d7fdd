"""The privacy audit of a run: phrases.csv, phrase summary, R_name, canary exposure, statement.md.

Two entry points:
- audit_run(ws, result, metrics, completions, run): the pipeline hook (core.runs.pipeline.execute), called after
  evaluation and before the run's files are written; returns the metrics with the audit's numbers added.
- audit_run_dir(path): `python -m core audit --run-dir DIR`, for a finished run. It rebuilds the data from the
  run's config and recomputes everything that does not need the model. Canary exposure does (shipped runs keep
  no weights), so it is reported as computed at run time (metrics.json), never recomputed here. A synthetic-data
  run (core.synth) has no phrases or completions of private prefixes: its n-gram shares (memorisation) are
  recomputed from its samples and rebuilt data, and its statement.md rebuilt.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.analysis.leak import name_leak_rate
from core.analysis.phrases import PhraseTable, phrase_summary, phrase_table
from core.analysis.statement import privacy_labels, privacy_statement, synth_statement
from core.data.secrets import (
    SecretPhrase,
    canaries_in,
    canary_from_dict,
    canary_spec_from_config,
    insert_canary_list,
    secret_phrases,
)
from core.privacy import epsilon_from_events, events_from_dicts
from core.runs.store import TEST_NLL
from core.runs.values import as_dict

STATEMENT = "statement.md"
CANARIES = "canaries.json"
BATCHES = "batches.json"
EXPOSURE_FROM_RUN = ("a re-audit does not recompute exposure (it needs the trained model, which shipped runs do "
                     "not keep): the value shown is the one computed at run time (metrics.json)")


def load_private_records(cfg) -> list:
    """All records of the corpus (names are searched in private users' records only). An unreadable corpus raises:
    searching the run's own sentences alone would quietly find fewer names, and a phrase-avg run calibrates its
    noise on them."""
    from core.data import load_records

    return load_records(cfg.data)


def corpus_changed_note(corpus: str, created: Any) -> str | None:
    """Where the run's corpus is a file modified after the run was made, a note that the audit reads today's file:
    its names, phrases and counts are that file's (an edit that kept the counts passes every other check). A
    digest of the private file in the run's files would tell it apart, but would also tell the data apart. A
    relative path (what runs recorded before paths were stored absolute) reads from the current folder: said too."""
    if corpus == "chitchat":
        return None
    if not Path(corpus).expanduser().is_absolute():  # runs made before 2026-11-28 stored the path as typed
        return (f"the run records its corpus as the relative path {corpus}: the audit read "
                f"{Path.cwd() / corpus} from this folder; audit it from the folder the run was made in")
    if not isinstance(created, str):
        return None
    try:
        modified = Path(corpus).expanduser().stat().st_mtime
        made = datetime.fromisoformat(created).timestamp()
    except (OSError, ValueError):
        return None
    if modified <= made:
        return None
    when = datetime.fromtimestamp(modified, UTC).isoformat(timespec="seconds")
    return (f"the corpus {corpus} was modified ({when}) after this run was made ({created}): the audit read the file "
            "as it is now; if its text changed since, what was rewritten is not the run's")


def batch_assignment(metrics: dict[str, Any] | None, run=None) -> list[int] | None:
    """Fixed batch of every private train sentence (batching users): metrics["batch_of_sentence"], or the run's
    batches.json (a list, {"batch_of_sentence": [...]}, or {"<sentence index>": batch})."""
    value = (metrics or {}).get("batch_of_sentence")
    if value is None and run is not None:
        text = run.read_text(BATCHES)
        if text:
            value = json.loads(text)
    if isinstance(value, dict):
        if "batch_of_sentence" in value:
            value = value["batch_of_sentence"]
        else:
            pairs = {int(k): int(v) for k, v in value.items()}
            value = [pairs.get(i, -1) for i in range(max(pairs) + 1)] if pairs else []
    return [int(b) for b in value] if isinstance(value, list) else None


def _sample_epsilon(privacy: dict[str, Any]) -> float | None:
    """The run's sample-level epsilon, recomputed from its events by today's accountant when it has events: the
    phrase epsilons are computed now, and a one-sentence phrase must compare equal to it (a run recorded under an
    older dp_accounting grid can differ in the 8th digit, which flipped 'at or below the sample epsilon')."""
    eps = privacy.get("epsilon")
    if not isinstance(eps, (int, float)):
        return None
    events, delta = privacy.get("events"), privacy.get("delta")
    if events and isinstance(delta, (int, float)) and 0 < delta < 1:
        try:
            return epsilon_from_events(events_from_dicts(events), float(delta)).epsilon
        except (TypeError, ValueError):
            pass  # an unreadable event list: the phrase table reports it; keep the recorded number here
    return float(eps)


def _phrase_part(cfg, privacy, phrases, private_train, batches) -> tuple[PhraseTable, dict[str, Any]]:
    table = phrase_table(cfg, privacy, phrases, private_train, batches)
    return table, phrase_summary(table.rows, _sample_epsilon(privacy))


def _names(phrases: Sequence[SecretPhrase]) -> list[str]:
    return [p.phrase for p in phrases if p.kind == "name"]


def _with_leaks(rows: list[dict[str, Any]], per_name: dict[str, int]) -> list[dict[str, Any]]:
    """Column in_completions: completions of this run containing the name (names only; '' for canaries)."""
    return [{**r, "in_completions": per_name.get(r["phrase"]) if r["kind"] == "name" else None} for r in rows]


def _canary_record(cfg, data) -> dict[str, Any]:
    spec = canary_spec_from_config(cfg)
    return {"spec": spec.to_dict() if spec else None, "canaries": [c.to_dict() for c in canaries_in(data)],
            "note": "synthetic secrets inserted into private train (Carlini's secret sharer)"}


def audit_run(ws, result, metrics: dict[str, Any], completions: list[dict[str, Any]], run) -> dict[str, Any]:
    """Pipeline hook: writes phrases.csv, statement.md (and canaries.json), returns metrics + audit numbers.

    A failing part is recorded under metrics["audit"]["errors"] instead of failing the finished run.
    """
    t0 = time.time()
    cfg, data = ws.cfg, ws.data
    out = dict(metrics)
    errors: dict[str, str] = {}
    info: dict[str, Any] = {}
    ws.log("audit", 0.93, message="secret phrases, name leak rate, canary exposure")

    def attempt(name: str, fn):
        try:
            return fn()
        except Exception as exc:  # the run itself is done: keep it, say what failed (a Cancelled is no Exception)
            errors[name] = f"{type(exc).__name__}: {exc}"
            return None

    phrases = attempt("secrets", lambda: secret_phrases(data, load_private_records(cfg))) or []
    leak = attempt("r_name", lambda: name_leak_rate(completions, _names(phrases)))
    per_name = leak.pop("per_name", {}) if leak else {}
    if leak:
        out.update(leak)
    batches = batch_assignment(result.metrics, run)
    part = attempt("phrases", lambda: _phrase_part(cfg, result.privacy, phrases, data.private_train, batches))
    if part is not None:
        table, summary = part
        run.write_phrases(_with_leaks(table.rows, per_name))
        out["phrase_summary"] = summary
        info.update(table.info)
    canaries = canaries_in(data)
    if canaries:
        run.write_text(CANARIES, json.dumps(_canary_record(cfg, data), indent=2) + "\n")
        ws.log("audit", 0.95, message=f"canary exposure of {len(canaries)} canaries")
        exp = attempt("exposure", lambda: _exposures(result.model, ws.tokenizer, canaries, cfg))
        if exp:
            out.update(exp)
    else:
        out["exposure_note"] = "no canaries in this run's data (data option canaries, e.g. 1,10,100)"
    info["phrases"] = len(phrases)
    info["errors"] = errors
    out["audit"] = info
    statement = attempt("statement", lambda: privacy_statement(cfg, result.privacy, out, info, run.run_id))
    if statement:
        run.write_text(STATEMENT, statement)
    if isinstance(out.get("timings"), dict):
        out["timings"] = {**out["timings"], "audit_s": time.time() - t0}
    return out


def _exposures(model, tokenizer, canaries, cfg) -> dict[str, Any]:
    from core.analysis.exposure import EXACT_LIMIT, SAMPLES, canary_exposures

    return canary_exposures(model, tokenizer, canaries, max_tokens=cfg.data.max_tokens, exact_limit=EXACT_LIMIT,
                            samples=SAMPLES, seed=cfg.seed)


def restore_canaries(data, run):
    """The data as the run saw it: canaries recorded in the run's canaries.json are inserted again when the
    rebuilt data lacks them (e.g. inserted by a config option this checkout does not have), the same way."""
    text = run.read_text(CANARIES)
    if not text:
        return data
    recorded = [canary_from_dict(d) for d in json.loads(text).get("canaries") or []]
    present = canaries_in(data)
    if not present:
        return insert_canary_list(data, recorded)
    if [c.to_dict() for c in present] != [c.to_dict() for c in recorded]:
        raise ValueError(f"{run.path}: the rebuilt data holds other canaries than the run recorded in {CANARIES}")
    return data


def audit_run_dir(path: str | Path) -> dict[str, Any]:
    """`python -m core audit`: recompute phrases.csv, the phrase summary, R_name and statement.md of a run."""
    from core.data import load_prepared
    from core.runs.store import RunDir

    run = RunDir(Path(path))
    if not run.exists():
        raise FileNotFoundError(f"not a run directory: {path}")
    # not refused for what incomplete_reason() also counts, a garbled phrases.csv: the audit rewrites it
    if run.state() != "done" or run.damaged_files():
        raise ValueError(f"{path}: not a finished run ({run.incomplete_reason()})")
    if cut := run.completions_cut_short():  # the lines left were scored as if they were all
        raise ValueError(f"{path}: {cut}")
    stored = (run.config() or {}).get("config") or {}
    if str(stored.get("method", "")).startswith("synth-"):
        return _audit_synth_dir(run, stored)
    cfg = run.run_config()
    privacy, metrics = run.privacy(), run.metrics()
    data = restore_canaries(load_prepared(cfg.data, cfg.seed), run)
    phrases = secret_phrases(data, load_private_records(cfg))
    table, summary = _phrase_part(cfg, privacy, phrases, data.private_train, batch_assignment(metrics, run))
    leak = name_leak_rate(run.completions(), _names(phrases))
    run.write_phrases(_with_leaks(table.rows, leak.pop("per_name")))
    canaries = canaries_in(data)
    if canaries:
        run.write_text(CANARIES, json.dumps(_canary_record(cfg, data), indent=2) + "\n")
    info = {**(metrics.get("audit") or {}), **table.info, "phrases": len(phrases), "recomputed_by": "core audit"}
    updated = {**metrics, "phrase_summary": summary, **leak, "audit": info}
    if metrics.get("exposure"):
        updated["exposure_note"] = EXPOSURE_FROM_RUN
    run.write_metrics(updated)
    run.write_text(STATEMENT, privacy_statement(cfg, privacy, updated, info, run.run_id,
                                                has_test_nll=(run.path / TEST_NLL).is_file()))
    labels = privacy_labels(cfg)  # a run made before privacy.json carried them gets them; its numbers stay as they are
    relabelled = any(privacy.get(key) != value for key, value in labels.items())
    if relabelled:
        run.write_privacy({**privacy, **labels})
    changed = corpus_changed_note(cfg.data.corpus, (run.config() or {}).get("created"))
    return {
        "run_dir": str(run.path),
        "method": cfg.method,
        "phrases": len(table.rows),
        "phrase_summary": {k: v for k, v in summary.items() if k != "by_kind"},
        "r_name": leak["r_name"],
        "r_name_bad_case": leak["r_name_bad_case"],
        "exposure": metrics.get("exposure"),
        "exposure_note": EXPOSURE_FROM_RUN if metrics.get("exposure") else "no exposure recorded at run time",
        "partition_check": table.info.get("partition_check"),
        "written": ["phrases.csv", "metrics.json", STATEMENT] + ([CANARIES] if canaries else [])
                   + (["privacy.json (labels)"] if relabelled else []),
        **({"warning": changed} if changed else {}),
    }


def _audit_synth_dir(run, stored: dict[str, Any]) -> dict[str, Any]:
    """A synthetic-data run: rebuild its labelled data from its config and recompute the memorisation shares (they
    need the train texts and samples.jsonl, not the model), then statement.md from privacy.json and metrics.json.
    Refused where the rebuilt data or the shares over all samples differ from those the run recorded."""
    privacy, metrics = run.privacy(), run.metrics()
    if privacy is None or metrics is None:
        raise ValueError(f"{run.path}: the run has no privacy.json/metrics.json yet (state {run.state()})")
    updated = {**metrics, **_synth_memorisation(run, stored.get("data_stats"), metrics)}
    base_model = as_dict(as_dict(stored.get("base")).get("model")).get("source", "tiny")
    statement = synth_statement(stored.get("synth") or {}, privacy, updated, run.run_id,  # before either write
                                base_model=str(base_model))
    run.write_metrics(updated)
    run.write_text(STATEMENT, statement)
    synth = stored.get("synth") if isinstance(stored.get("synth"), dict) else {}
    changed = corpus_changed_note(str(synth.get("corpus", "chitchat")), (run.config() or {}).get("created"))
    return {"run_dir": str(run.path), "method": stored.get("method"), "epsilon": privacy.get("epsilon"),
            "ngram_ratios_size_matched": updated["ngram_ratios_size_matched"],
            "ngram_ratios_real_test": updated["ngram_ratios_real_test"], "written": ["metrics.json", STATEMENT],
            **({"warning": changed} if changed else {})}


def _synth_memorisation(run, data_stats: dict[str, Any] | None, metrics: dict[str, Any]) -> dict[str, Any]:
    """metrics.json's n-gram shares of a synthetic-data run, from its samples and its rebuilt train and test texts."""
    from core.runs.store import read_jsonl
    from core.synth.command import job_from_run_config
    from core.synth.evaluate import ngram_ratios, size_matched_ratios

    data = job_from_run_config(run).data  # as `python -m core job` reads a launched run's config.json
    if data_stats not in (None, data.stats()):
        raise ValueError(f"{run.path}: the labelled data rebuilt from its config differs from the run's "
                         f"(config.json data_stats {data_stats}, rebuilt {data.stats()})")
    train, test = [e.text for e in data.train], [e.text for e in data.test]
    samples = [row["text"] for row in read_jsonl(run.path / "samples.jsonl")]
    recomputed = {"ngram_ratios": ngram_ratios(samples, train), "ngram_ratios_real_test": ngram_ratios(test, train)}
    for key, ratios in recomputed.items():
        if metrics.get(key) is not None and not _same_ratios(metrics[key], ratios):
            raise ValueError(f"{run.path}: {key} recomputed from samples.jsonl and the rebuilt data ({ratios}) differ "
                             f"from metrics.json's ({metrics[key]})")
    return {**recomputed, "ngram_ratios_size_matched": size_matched_ratios(samples, train, len(test))}


def _same_ratios(recorded: dict[str, Any], recomputed: dict[str, Any]) -> bool:
    return recorded.keys() == recomputed.keys() and all(
        (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-12)
        for a, b in ((recorded[k], recomputed[k]) for k in recorded))
