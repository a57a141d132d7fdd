"""The audit hook in a real (micro) SeqPATE run: phrases.csv, statement.md, r_name and exposure in metrics, and
`python -m core audit` recomputing the same files from the run directory."""

from __future__ import annotations

import json
import re

import pytest

import core.runs.pipeline as pipeline
from core.cli import main
from core.privacy import seqpate_phrase_epsilon
from core.runs.store import PHRASE_COLUMNS, RunDir
from tests.analysis.test_phrase_avg_runs import write_corpus
from tests.conftest import micro_config


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    # smaller than the micro preset (about a minute on two cores): the audit, not SeqPATE, is under test here;
    # on a written corpus whose users introduce themselves by name (chitchat's first 150 private sentences hold
    # none, so R_name was 0 of 0 names and its recount could not catch a miscount)
    folder = tmp_path_factory.mktemp("audit")
    cfg = micro_config(method="seqpate", seqpate__partition="by-user", seqpate__teachers=2,
                       seqpate__distill_sentences=30, seqpate__query_budget=30, decode__n_completions=15,
                       decode__max_new_tokens=8, data__public_train=120, data__public_valid=20,
                       data__private_train=150, data__private_valid=20, data__private_test=30,
                       model__pretrain_epochs=1,
                       # canary digits 2: |R| = 100 candidates per canary, ranked exactly (a second, not minutes);
                       # two canaries inserted 10 times, so metrics' exposure of "10" is a mean of two
                       data__canaries="1,10,10,30", data__canary_digits=2,
                       data__corpus=str(write_corpus(folder / "named.jsonl")))
    run = RunDir.create(folder / "seqpate", cfg.to_dict(), cfg.seed)
    metrics = pipeline.execute(cfg, run)
    return cfg, run, metrics


def test_phrases_csv_is_written_with_the_contract_columns(audited):
    _, run, metrics = audited
    header = run.file("phrases.csv").read_text().splitlines()[0].split(",")
    assert header[: len(PHRASE_COLUMNS)] == list(PHRASE_COLUMNS) == ["phrase", "occurrences", "users", "teachers",
                                                                       "epsilon"]
    assert metrics["audit"]["errors"] == {}
    assert run.is_complete()


def test_phrase_epsilons_follow_from_the_recorded_noise_and_partition(audited):
    cfg, run, metrics = audited
    privacy, rows = run.privacy(), run.phrases()
    canaries = [r for r in rows if r["kind"] == "canary"]
    assert sorted(r["inserted"] for r in canaries) == [1, 10, 10, 30]
    assert all(r["occurrences"] == r["inserted"] and r["users"] == 1 for r in canaries)
    for r in rows:
        assert 1 <= r["teachers"] <= min(r["occurrences"], cfg.seqpate.teachers)
        assert r["epsilon"] == seqpate_phrase_epsilon(privacy["noise_scale"], privacy["queries_spent"], r["teachers"],
                                                      cfg.privacy.delta)
    summary = metrics["phrase_summary"]
    assert summary["count"] == len(rows) and summary["sample_epsilon"] == privacy["epsilon"]
    assert metrics["audit"]["partition_check"] == "ok"  # same partition as the run recorded


def test_r_name_exposure_and_statement(audited):
    cfg, run, metrics = audited
    # R_name recounted from the run's completions.jsonl and the private names in its phrases.csv with a plain
    # whole-word search, not the audit's matcher (as tests/runs/test_cached_runs.py does for the shipped runs)
    names = list(dict.fromkeys(row["phrase"] for row in run.phrases() if row["kind"] == "name"))
    completions = run.completions()
    assert len(completions) == metrics["n_completions"]
    spelled = ["\\W+".join(map(re.escape, re.findall(r"\w+", name))) for name in names]
    named = re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)", re.IGNORECASE)
    with_name = sum(bool(named.search(row["completion"])) for row in completions)
    # names to find, and completions that name one (3 of 15 on this machine): a miscount would show
    assert len(names) >= 10 and with_name > 0
    assert metrics["r_name"] == with_name / len(completions)
    counts = metrics["r_name_counts"]
    assert (counts["completions"], counts["names"], counts["completions_with_name"]) == (len(completions),
                                                                                          len(names), with_name)

    # every canary's exposure is recomputed from the weights the run kept (the exact rank among all 100
    # candidates, as core.analysis.exposure.canary_exposure gives it), and a count's exposure is the mean over
    # the canaries inserted that often
    from core.analysis.exposure import canary_exposure, model_scorer
    from core.data.secrets import canary_from_dict
    from core.runs.live import saved_model

    recorded = [canary_from_dict(d) for d in json.loads(run.read_text("canaries.json"))["canaries"]]
    model, tokenizer = saved_model(run)
    score = model_scorer(model, tokenizer, max_tokens=cfg.data.max_tokens)
    assert metrics["exposure_detail"] == [canary_exposure(score, c, seed=cfg.seed + i).to_dict()
                                          for i, c in enumerate(recorded)]
    assert all(d["method"] == "exact" and d["candidates"] == 100 for d in metrics["exposure_detail"])
    by_count = {}
    for d in metrics["exposure_detail"]:
        by_count.setdefault(str(d["inserted"]), []).append(d["exposure"])
    assert {n: len(v) for n, v in by_count.items()} == {"1": 1, "10": 2, "30": 1}
    assert by_count["10"][0] != by_count["10"][1]  # so their mean is neither one of them
    assert metrics["exposure"] == {n: pytest.approx(sum(v) / len(v), rel=1e-12) for n, v in by_count.items()}
    saved = run.metrics()
    assert saved["exposure"] == metrics["exposure"] and saved["r_name"] == metrics["r_name"]
    statement = run.read_text("statement.md")
    assert "Protected unit: one sentence" in statement and "by-user partition" in statement
    assert "exposure" in statement
    canaries = json.loads(run.read_text("canaries.json"))
    assert canaries["canaries"][0]["digits"] == 2


def test_audit_command_recomputes_the_same_files(audited, capsys):
    _, run, metrics = audited
    before = run.file("phrases.csv").read_text()
    statement = run.read_text("statement.md")
    run.file("phrases.csv").unlink()
    run.file("statement.md").unlink()
    assert main(["audit", "--run-dir", str(run.path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert run.file("phrases.csv").read_text() == before
    assert run.read_text("statement.md") == statement and "## Secret phrases" in statement
    assert out["exposure"] == metrics["exposure"] and "computed at run time" in out["exposure_note"]
    assert out["r_name"] == metrics["r_name"] and out["phrases"] == len(run.phrases())
    assert run.metrics()["exposure"] == metrics["exposure"]  # kept, not recomputed


def test_audit_warns_when_the_corpus_was_modified_after_the_run(audited, capsys):
    import os
    import time

    cfg, run, _ = audited
    assert main(["audit", "--run-dir", str(run.path)]) == 0
    assert "warning" not in json.loads(capsys.readouterr().out)  # written before the run was made
    os.utime(cfg.data.corpus, (time.time() + 60, time.time() + 60))
    assert main(["audit", "--run-dir", str(run.path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["warning"].startswith(f"the corpus {cfg.data.corpus} was modified (")
    assert captured.err.startswith(f"warning: the corpus {cfg.data.corpus} was modified (")


def test_audit_takes_a_run_id_as_runs_show_does(audited, capsys, monkeypatch):
    """`audit --run-dir ID` said "not a run directory" where runs show, compare and complete take the id."""
    _, run, _ = audited
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(run.path.parent))
    run.file("statement.md").unlink()
    assert main(["audit", "--run-dir", run.run_id]) == 0
    assert json.loads(capsys.readouterr().out)["phrases"] == len(run.phrases()) and run.file("statement.md").is_file()


def test_one_sentence_phrases_compare_with_the_sample_epsilon_recomputed_today():
    """A run recorded under an older accountant grid can hold an epsilon a hair (8th digit) below today's
    recomputation; the phrase epsilons are computed today, so the audit compares them with today's number, and a
    one-sentence phrase counts as at or below the sample epsilon (shipped quick-noisysgd-eps3: 31% read as 0%)."""
    from core.analysis.audit import _sample_epsilon
    from core.analysis.phrases import phrase_summary
    from core.privacy import dpsgd_phrase_epsilon, epsilon_from_events, events_from_dicts

    event = {"mechanism": "subsampled_gaussian", "noise_multiplier": 0.591, "sampling_rate": 0.0016, "steps": 1250}
    today = epsilon_from_events(events_from_dicts([event]), 1e-6).epsilon
    recorded = {"epsilon": today * (1 - 1e-8), "delta": 1e-6, "events": [event]}
    assert _sample_epsilon(recorded) == today
    one_sentence = dpsgd_phrase_epsilon(0.591, 0.0016, 1250, 1, 1e-6)
    rows = [{"epsilon": one_sentence, "kind": "name"}, {"epsilon": 2 * today, "kind": "name"}]
    assert phrase_summary(rows, _sample_epsilon(recorded))["share_at_or_below_sample"] == 0.5
    assert phrase_summary(rows, recorded["epsilon"])["share_at_or_below_sample"] == 0.0  # what the audit did
    assert _sample_epsilon({"epsilon": 3.0, "delta": 1e-6, "events": []}) == 3.0  # no events: the recorded number
