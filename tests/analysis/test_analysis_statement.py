"""The plain-language privacy statement for each kind of run."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from core.analysis.audit import audit_run_dir, corpus_changed_note
from core.analysis.statement import privacy_labels, privacy_statement, synth_statement
from core.config import HEURISTIC_REASONS
from tests.conftest import micro_config

SHIPPED = Path(__file__).resolve().parents[2] / "cached_runs"

SUMMARY = {"avg": 3.2, "min": 3.0, "max": 4.1, "share_below_avg": 0.9, "count": 10, "share_at_or_below_sample": 0.9,
           "sample_epsilon": 3.0, "by_kind": {"name": {"count": 10, "avg": 3.2, "max": 4.1}}}


def test_seqpate_by_user_states_the_sample_unit_and_phrase_protection():
    cfg = micro_config(method="seqpate", seqpate__partition="by-user")
    privacy = {"epsilon": 3.0, "delta": 1e-6, "accountant": "analytic-gaussian (exact composition)", "unit": "sample",
               "mechanism": "gaussian", "noise_scale": 69.0, "query_budget": 1000, "queries_spent": 1000,
               "teachers": 10, "teachers_per_user": {"1": 50, "2": 2, "3": 0, ">3": 0}}
    metrics = {"phrase_summary": SUMMARY, "r_name": 0.01, "r_name_counts": {"completions": 100, "names": 5},
               "exposure": {"10": 1.5},
               "exposure_detail": [{"inserted": 10, "method": "exact", "candidates": 10_000}]}
    text = privacy_statement(cfg, privacy, metrics, {"partition_check": "ok"}, "r1")
    assert "Protected unit: one sentence" in text and "(epsilon, delta) = (3, 1e-06)" in text
    assert "analytic-gaussian" in text and "by-user partition" in text and "50/2/0/0" in text
    assert "R_name" in text and "1.0%" in text and "Canary inserted 10x: exposure 1.5" in text
    # sqrt(2) holds with the partition of the others fixed: content removed or replaced, not the data's shape
    assert "removing its content or replacing it by any other sentence changes the probability" in text
    assert "every other sentence keeps its teacher" in text and "treated as public" in text
    # the noise goes on the teachers' SUM (core.seqpate.aggregate): said of the average, it would read 10x larger
    assert "noise with scale 69 on the sum of the 10 teachers' next-token distributions" in text
    assert "(how long each teacher's share of the sentences is)" in text  # SeqPATE samples no batches


def test_non_private_public_and_blacklist_runs():
    inf = {"epsilon": math.inf, "delta": 0.0, "accountant": "none", "unit": "none", "events": []}
    text = privacy_statement(micro_config(method="pri-gpt"), inf, {"phrase_summary": {**SUMMARY, "avg": math.inf}})
    assert "Not private" in text and "unprotected (epsilon infinite)" in text
    black = privacy_statement(micro_config(method="pri-gpt-blacklist"), inf, {})
    assert "no formal guarantee" in black and "does NOT give" in black and "cannot be measured" in black
    public = {"epsilon": 0.0, "delta": 0.0, "unit": "none", "events": []}
    text = privacy_statement(micro_config(method="pub-gpt"), public, {"phrase_summary": {**SUMMARY, "avg": 0.0}})
    assert "never trained on private data" in text and "epsilon 0" in text


def test_a_run_on_a_gpt2_checkout_says_the_checkout_is_taken_as_public():
    """A Pub-GPT run on the user's own checkout said "This model never trained on private data": the bench cannot
    know what the checkout was trained on."""
    from dataclasses import replace

    public = {"epsilon": 0.0, "delta": 0.0, "unit": "none", "events": []}
    line = ("- Base model: the GPT-2 checkout at /models/gpt2, taken as public. Whatever it was trained on, private "
            "text included, is outside this run's epsilon: the bench cannot tell what that was.")
    for method in ("pub-gpt", "seqpate"):
        cfg = micro_config(method=method)
        privacy = public if method == "pub-gpt" else {"epsilon": 3.0, "delta": 1e-6, "unit": "sample",
                                                      "mechanism": "gaussian", "noise_scale": 69.0}
        assert "Base model:" not in privacy_statement(cfg, privacy, {})  # the tiny model, trained here on public text
        checkout = replace(cfg, model=replace(cfg.model, source="/models/gpt2"))
        assert line in privacy_statement(checkout, privacy, {}).splitlines()
        if method == "pub-gpt":  # its headline no longer speaks for the checkout's own training
            assert "This run never trained the model on private data (public text and pseudo data completed from " \
                   "public prefixes only; what the checkout it starts from was trained on is below), so with the " \
                   "checkout taken as public, nothing" in privacy_statement(checkout, privacy, {})
            assert "**Protected unit: none needed.** This model never trained on private data (public text and " \
                   "pseudo data completed from public prefixes only), so nothing" in privacy_statement(cfg, privacy, {})
    assert line in synth_statement({"generator": "filter"}, SYNTH_PRIVACY, SYNTH_METRICS,
                                   base_model="/models/gpt2").splitlines()
    assert "Base model:" not in synth_statement({"generator": "filter"}, SYNTH_PRIVACY, SYNTH_METRICS)


def test_a_phrase_search_that_failed_is_not_reported_as_no_phrase_found():
    """audit_run records a failed part under errors and goes on with no phrases; statement.md then said "No secret
    phrase was found", which reads as a clean result."""
    privacy = {"epsilon": 2.9, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
               "noise_multiplier": 0.8, "sampling_rate": 0.02, "steps": 100}
    failed = privacy_statement(micro_config(method="noisysgd"), privacy, {},
                               {"errors": {"secrets": "OSError: corpus unreadable", "exposure": "ValueError: x"}})
    assert "The secret phrases were not computed (secrets: OSError: corpus unreadable)." in failed
    assert "No secret phrase was found" not in failed and "exposure: ValueError" not in failed
    clean = privacy_statement(micro_config(method="noisysgd"), privacy, {}, {"errors": {}})
    assert "No secret phrase was found in the private training sentences of this run." in clean


def test_dpsgd_and_adp_runs():
    privacy = {"epsilon": 2.9, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
               "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 0.8, "sampling_rate": 0.02,
                           "steps": 100}], "noise_multiplier": 0.8, "sampling_rate": 0.02, "steps": 100}
    text = privacy_statement(micro_config(method="noisysgd"), privacy, {"phrase_summary": SUMMARY})
    assert "DP-SGD with Poisson sampling" in text and "group privacy" in text
    assert "adding or removing it changes the probability" in text
    # the guarantee is about the prepared set, drawn from the corpus without privacy, with seeded noise
    assert "Which data set: the private training set as prepared" in text
    assert "seeded with the run's seed" in text and "secret seed" in text
    # runs of one seed share their noise draws: no epsilon covers a sweep's runs released together
    assert "Runs with the same seed on the same data draw the same noise" in text
    assert "no epsilon covers two such runs released together" in text
    # wall-clock times depend on each Poisson batch's size: a side channel no epsilon covers, so said so
    assert "Timing: each line's time in progress.jsonl and (a job's) log.txt, the start, progress and end times in " \
        "status.json and the durations in metrics.json" in text and "No epsilon covers that side channel" in text
    assert "how many sentences each sampled batch holds" in text
    # an auditor: the statements never said the evaluation on private test sentences is outside the guarantee
    assert "- Outside the epsilon: the model is evaluated on private test sentences, which it never trained on" in text
    assert "(test_nll.csv)" in text and "(completions.jsonl)" in text
    # a shipped run made before test_nll.csv existed is not told it has one (48 of 79 were)
    older = privacy_statement(micro_config(method="noisysgd"), privacy, {"phrase_summary": SUMMARY},
                              has_test_nll=False)
    assert "test_nll.csv" not in older and "BLEU (metrics.json), the completions of private test prefixes" in older
    assert "per-sentence gradient clipping and Gaussian" in text  # no norm recorded: none claimed
    clipped = privacy_statement(micro_config(method="noisysgd"), {**privacy, "max_grad_norm": 1.0}, {})
    assert "per-sentence gradient clipping to norm 1 and Gaussian noise (multiplier 0.8) over 100 steps." in clipped


def test_adp_states_the_multiplier_its_steps_are_accounted_at():
    """ADP's steps add gamma_t * sigma; a run made before 2026-11-27 recorded the base sigma as its noise
    multiplier (shipped quick-adp-eps3: 63.0, while its steps were accounted at 0.591): the statement reads the
    accounted one from the events, and names the base for what it is."""
    old = {"epsilon": 3.0, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
           "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 0.591, "sampling_rate": 0.004,
                       "steps": 750}], "noise_multiplier": 63.0, "sampling_rate": 0.004, "steps": 750,
           "statement": "Treat the ADP run as a heuristic.", "epsilon_claimed": 0.01}
    text = privacy_statement(micro_config(method="adp"), old, {})
    assert ("times a base sigma of 63. Every step is accounted at the smallest multiplier any step used, 0.591, "
            "over 750 steps.") in text
    assert "Gaussian noise (multiplier 63)" not in text
    new = {**old, "noise_multiplier": 0.591, "base_sigma": 63.0, "noise_multiplier_range": [0.591, 2.96]}
    assert "any step used, 0.591, the largest 2.96, over 750 steps" in privacy_statement(micro_config(method="adp"),
                                                                                         new, {})


def test_user_batches_state_zero_out_neighbours():
    """Fixed batches are packed by which user wrote each sentence: sensitivity C holds when a sentence's content is
    removed but its place kept (zero-out); replacing it by another would move the batch's sum by up to 2C."""
    privacy = {"epsilon": 3.0, "delta": 1e-6, "accountant": "analytic-gaussian (exact composition)", "unit": "sample",
               "batching": "users", "events": [{"mechanism": "gaussian", "noise_std": 2.0, "sensitivity": 1.0,
                                                "count": 3}]}
    text = privacy_statement(micro_config(method="noisysgd", dpsgd__batching="users"), privacy, {})
    assert "removing its content changes the probability" in text and "adding or removing" not in text
    assert "zero-out" in text and "sensitivity 2C" in text and "treated as public" in text
    # an auditor: the user-batch statements gave neither the noise multiplier nor how many releases a sentence is in
    recorded = privacy_statement(micro_config(method="noisysgd", dpsgd__batching="users"),
                                 {**privacy, "noise_multiplier": 2.0, "max_grad_norm": 1.0, "steps": 15}, {})
    assert ("per-sentence gradient clipping to norm 1 and Gaussian noise (multiplier 2) on each batch's summed "
            "gradient (15 steps). A sentence sits in one batch per epoch, so it is in one Gaussian release per "
            "epoch (3 here), composed exactly") in recorded
    assert "Outside the epsilon: the model is evaluated on private test sentences" in recorded
    garbled = privacy_statement(micro_config(method="noisysgd", dpsgd__batching="users"),
                                {**privacy, "events": [{**privacy["events"][0], "count": "x"}]}, {})  # read as absent, not a traceback
    assert "summed gradient. A sentence sits in one batch per epoch, so it is in one Gaussian release per epoch, " \
        "composed" in garbled
    adp = privacy_statement(micro_config(method="adp"), {**privacy, "statement": "Treat the ADP run as a heuristic.",
                                                          "epsilon_claimed": 1.2}, {})
    assert "ADP caveat" in adp and "heuristic" in adp and "not a guarantee" in adp
    assert "**Protected unit: one sentence (sample), as a heuristic, not a DP guarantee.**" in adp  # its first claim
    assert "statistics of the private sentences' perplexities, released outside any epsilon" in adp
    # a review: one sentence of extreme perplexity moved the base sigma of a 2,000-sentence set from 12.5 to 251
    assert "With them the run's files carry no DP guarantee at any epsilon" in adp
    # ADP draws NoisySGD's streams: a pair of their runs of one seed cancels the noise of their first steps
    for text in (adp, privacy_statement(micro_config(method="noisysgd"), privacy, {})):
        assert "the methods of one mechanism at one seed (DP-SGD's variants and ADP;" in text


def test_a_phrase_avg_run_is_stated_as_a_heuristic_and_a_sample_target_run_is_not():
    """phrase-avg picks its noise from how many teachers hold each name (private data) and releases it, so the
    epsilon computed for that noise is not a guarantee (a review found the statement calling it "still valid")."""
    privacy = {"epsilon": 1.9, "target_epsilon": 3.0, "delta": 1e-6, "unit": "sample", "mechanism": "gaussian",
               "accountant": "analytic-gaussian (exact composition)", "noise_scale": 83.0, "query_budget": 1000,
               "queries_spent": 1000, "teachers": 10}
    avg = privacy_statement(micro_config(method="seqpate", privacy__target="phrase-avg"), privacy, {})
    assert "a heuristic, not a DP guarantee" in avg and "still valid" not in avg
    assert "holds only where those counts are public" in avg
    assert "**Protected unit: one sentence (sample), as a heuristic, not a DP guarantee.**" in avg  # its first claim
    sample = privacy_statement(micro_config(method="seqpate"), privacy, {})
    assert "heuristic" not in sample and "Calibrated for the average phrase epsilon" not in sample


def test_seqpate_laplace_ablation_states_its_l1_sensitivity():
    privacy = {"epsilon": 3.0, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
               "mechanism": "laplace", "noise_scale": 97.14, "sensitivity_l1": 2.0, "query_budget": 1000,
               "queries_spent": 1000}
    text = privacy_statement(micro_config(method="seqpate", seqpate__ablation="-gaussian"), privacy, {})
    assert "moves by at most 2 in L1 (Laplace noise)" in text and "sensitivity 2 in L1 per answer" in text
    assert "sqrt(2)" not in text


def test_a_run_of_no_known_mechanism_claims_no_neighbouring_relation():
    privacy = {"epsilon": 3.0, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
               "events": [{"mechanism": "laplace", "scale": 1.0, "sensitivity_l1": 1.0, "count": 3}]}
    text = privacy_statement(micro_config(method="noisysgd"), privacy, {})
    assert "Neighbouring data sets: not determined for this run's mechanism" in text
    assert "Poisson" not in text and "adding or removing" not in text


SYNTH_PRIVACY = {"epsilon": 2.9992, "delta": 1 / 1536, "accountant": "pld (dp_accounting)", "unit": "sample",
                 "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 1.05, "sampling_rate": 1 / 24,
                             "steps": 288}],
                 "steps_by_stage": {"lm": 144, "discriminator_head": 144}, "noise_multiplier": 1.05,
                 "releases_per_step": 1, "release_noise_multiplier": 1.05, "sampling_rate": 1 / 24,
                 "max_grad_norm": 0.1}
SYNTH_METRICS = {"data": {"train": 1536, "test": 384}}


def test_synth_statement_names_its_steps_weak_delta_and_what_it_releases_outside_epsilon():
    text = synth_statement({"generator": "pplm", "per_label": None, "test_fraction": 0.2}, SYNTH_PRIVACY,
                           SYNTH_METRICS, "s1")
    assert "(epsilon, delta) = (2.999, 0.000651)" in text and "delta = 1/|train| = 1/1536" in text
    assert "over 144 fine-tuning steps and 144 steps training the discriminator head" in text
    assert "Algorithm 1" not in text  # one release per step
    assert "(the rarest label's count), then a seeded 80/20 train/test split" in text
    released = text.split("## Released outside the epsilon")[1]
    assert "embeddings.csv" in released and "progress.jsonl" in released and "accuracy" in released
    assert "accuracy_synthetic" in released  # the synthetic-trained classifier's score on private test text
    assert "chosen on scores measured without noise on a validation slice" in released  # chitchat's presets
    assert "training texts (cached_runs/SYNTH_NOTES.md), texts the generator had been fine-tuned on: a choice made " \
        "on the private data that no epsilon covers;" in released
    assert "- the four topics were picked partly for how many on-topic utterances private users wrote, counts of the " \
        "private data that no epsilon covers either.\n\nShare these files as you would the private data; share " \
        "samples.jsonl under the guarantee above, which holds only while the run's seed stays secret" in released
    # a privacy officer: with the seed and the code anyone re-derives the noise; the data is not needed for that
    assert "whoever knows that seed can, with the code, re-derive the pseudo-random streams the noise was drawn " \
        "from, and against them the epsilon does not hold" in text
    garbled = synth_statement({"generator": "filter"}, SYNTH_PRIVACY,
                              {"data": {"labels": ["a", ["b"]], "train_per_label": {"a": "32"}, "test_per_label": 3}})
    assert "here" not in garbled.split("Which data set")[1].split(")")[0]  # garbled counts: no count claimed
    assert "The label names (they head every sample in samples.jsonl)" in text  # drawn from the private file
    assert "One sentence is the unit, not one person" in text and "group privacy" in text
    capped = synth_statement({"generator": "filter", "per_label": 200, "test_fraction": 0.25}, SYNTH_PRIVACY,
                             SYNTH_METRICS)
    assert "(the rarest label's count, at most 200), then a seeded 75/25" in capped
    # what balancing kept, where the run recorded it: every label to the rarest one's 40 (a csv of 101/60/40 rows)
    kept = synth_statement({"generator": "filter", "per_label": 200, "corpus": "mine.csv"}, SYNTH_PRIVACY,
                           {"data": {"labels": ["a", "b"], "train_per_label": {"a": 32, "b": 32},
                                     "test_per_label": {"a": 8, "b": 8}}})
    assert "(the rarest label's count, at most 200; here 40)" in kept
    assert "grows quickly with k." in kept and "chitchat" not in kept  # its own data set, not chitchat
    own = synth_statement({"generator": "filter", "corpus": "/data/sst2.csv"}, SYNTH_PRIVACY, SYNTH_METRICS)
    assert "validation slice" not in own and "topics" not in own  # chosen on chitchat, not on the user's own data
    assert "how long they are).\n\nShare these files" in own  # its own paragraph, not part of the last item
    assert "- the times: each line's time in progress.jsonl and (a job's) log.txt" in released  # a side channel


def test_synth_statement_of_a_multitask_and_a_non_private_run():
    multitask = {**SYNTH_PRIVACY, "steps_by_stage": {"lm": 144, "discriminator_head": 0}, "releases_per_step": 2,
                 "release_noise_multiplier": 1.4849}
    text = synth_statement({"generator": "multitask"}, multitask, SYNTH_METRICS)
    assert "over 144 fine-tuning steps." in text and "releases 2 gradients" in text and "1.485 times" in text
    assert "no epsilon covers two such runs released together" in text
    inf = {"epsilon": math.inf, "delta": 0.0, "accountant": "none", "unit": "none", "events": []}
    text = synth_statement({"generator": "filter"}, inf, SYNTH_METRICS)
    assert "**Not private.**" in text and "Protected unit" not in text and "Released outside the epsilon" not in text
    assert "embeddings.csv" in text


@pytest.mark.parametrize("run_id", ["synth-quick-multitask-eps3", "synth-tiny-pplm-epsinf"])
def test_audit_of_a_synth_run_rebuilds_its_statement_and_n_gram_shares_only(tmp_path, run_id):
    """It used to read the run as a SeqPATE config: phrases.csv of another data set, "over None steps". It writes
    metrics.json with the n-gram shares recomputed from the samples: for a shipped run (audited so), the same
    bytes."""
    run_dir = tmp_path / run_id
    shutil.copytree(SHIPPED / run_id, run_dir)
    (run_dir / "statement.md").unlink()
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    out = audit_run_dir(run_dir)
    assert out["written"] == ["metrics.json", "statement.md"] and not (run_dir / "phrases.csv").exists()
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.name != "statement.md"} == before
    text = (run_dir / "statement.md").read_text()
    privacy = json.loads((run_dir / "privacy.json").read_text())
    if math.isfinite(privacy["epsilon"]):
        assert f"over {privacy['steps_by_stage']['lm']} fine-tuning steps" in text and "None" not in text
    else:
        assert "**Not private.**" in text
    assert text == (SHIPPED / run_id / "statement.md").read_text()  # what ships is what the audit writes


def test_privacy_json_labels_a_heuristic_epsilon_and_the_target():
    """A review read a phrase-avg SeqPATE run's privacy.json: epsilon 0.876, an exact accountant, no target and
    nothing saying its noise was chosen from private counts; read alone it passed for a guarantee."""
    def labels(method, target, epsilon=3.0):
        return privacy_labels(micro_config(method=method, privacy__target=target, privacy__epsilon=epsilon))

    assert labels("seqpate", "sample") == {"target": "sample"}
    assert labels("seqpate", "phrase-avg") == labels("noisysgd-gc+pseudo", "phrase-avg") == {
        "target": "phrase-avg", "heuristic": HEURISTIC_REASONS["phrase-avg"]}
    assert labels("adp", "sample") == {"target": "sample", "heuristic": HEURISTIC_REASONS["adp"]}
    # at epsilon inf no noise is chosen at all: not private (statement.md says so), not a heuristic
    assert labels("noisysgd", "phrase-avg", math.inf) == {"target": "phrase-avg"}
    assert labels("adp", "sample", math.inf) == {"target": "sample"}
    for method in ("pub-gpt", "pri-gpt", "pri-gpt-blacklist"):  # they never read the privacy settings
        assert privacy_labels(micro_config(method=method)) == {}


def test_audit_gives_an_older_runs_privacy_json_its_labels_and_leaves_its_numbers(tmp_path):
    run_dir = tmp_path / "tiny-phrases-seqpate-avg3"
    shutil.copytree(SHIPPED / run_dir.name, run_dir)
    shipped = json.loads((run_dir / "privacy.json").read_text())
    older = {k: v for k, v in shipped.items() if k not in ("target", "heuristic")}  # as the run wrote it
    (run_dir / "privacy.json").write_text(json.dumps(older))
    out = audit_run_dir(run_dir)
    assert out["written"][-1] == "privacy.json (labels)"
    assert json.loads((run_dir / "privacy.json").read_text()) == shipped == {
        **older, "target": "phrase-avg", "heuristic": HEURISTIC_REASONS["phrase-avg"]}
    assert "privacy.json (labels)" not in audit_run_dir(run_dir)["written"]  # labelled already: not rewritten


def test_an_audit_that_cannot_read_the_corpus_says_so_instead_of_finding_fewer_names(tmp_path, monkeypatch):
    """The name search reads the whole corpus (private users' other records too); an unreadable corpus was taken
    for none, and the audit rewrote phrases.csv and statement.md with the names of the run's own sentences only,
    without a word (a phrase-avg run calibrates its noise on those names)."""
    import core.data

    run_dir = tmp_path / "tiny-seqpate-eps3"
    shutil.copytree(SHIPPED / run_dir.name, run_dir)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}

    def unreadable(cfg):
        raise OSError("corpus unreadable")

    monkeypatch.setattr(core.data, "load_records", unreadable)
    with pytest.raises(OSError, match="corpus unreadable"):
        audit_run_dir(run_dir)
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_an_audit_says_when_the_corpus_file_changed_after_the_run_was_made(tmp_path):
    """The audit rereads the corpus file: edited since the run (Jane renamed Xavier), it rewrote phrases.csv with
    names the run never saw and exited 0 without a word."""
    import os

    corpus = tmp_path / "mine.csv"
    corpus.write_text("text,user_id\nhello,1\n", encoding="utf-8")
    made = "2026-11-20T10:00:00.000+00:00"
    os.utime(corpus, (1795168800 - 60, 1795168800 - 60))  # 2026-11-20T09:59:00Z: a minute before the run
    assert corpus_changed_note(str(corpus), made) is None
    os.utime(corpus, (1795255200, 1795255200))  # 2026-11-21T10:00:00Z: a day after
    assert corpus_changed_note(str(corpus), made) == (
        f"the corpus {corpus} was modified (2026-11-21T10:00:00+00:00) after this run was made ({made}): the audit "
        "read the file as it is now; if its text changed since, what was rewritten is not the run's")
    # a run that recorded the path as typed (before 2026-11-28) reads it from wherever the audit runs
    assert corpus_changed_note("data/mine.csv", made) == (
        f"the run records its corpus as the relative path data/mine.csv: the audit read {Path.cwd() / 'data/mine.csv'} "
        "from this folder; audit it from the folder the run was made in")
    # the package's corpus, a file gone (the audit refuses it itself) and a run with no readable date: nothing to say
    assert {corpus_changed_note("chitchat", made), corpus_changed_note(str(tmp_path / "gone.csv"), made),
            corpus_changed_note(str(corpus), None), corpus_changed_note(str(corpus), "yesterday")} == {None}


def test_the_audit_refuses_a_finished_run_whose_record_was_emptied(tmp_path):
    """It read metrics.json = null as a run to audit and failed on it (AttributeError) rather than saying why."""
    run_dir = tmp_path / "tiny-pub-gpt"
    shutil.copytree(SHIPPED / run_dir.name, run_dir)
    (run_dir / "metrics.json").write_text("null")
    with pytest.raises(ValueError, match=r"not a finished run \(state done, but metrics.json empty\)"):
        audit_run_dir(run_dir)


def test_a_run_made_before_its_noise_had_streams_of_its_own_says_what_the_noise_shared():
    """Runs made before core.privacy.streams drew their noise (and sampling) from numbers other parts of the run
    drew too; their privacy.json has no random_streams. The statement says what, and only where it happened."""
    dpsgd = {"epsilon": 2.9, "delta": 1e-6, "accountant": "pld (dp_accounting)", "unit": "sample",
             "events": [{"mechanism": "subsampled_gaussian", "noise_multiplier": 0.8, "sampling_rate": 0.02,
                         "steps": 100}], "noise_multiplier": 0.8, "sampling_rate": 0.02, "steps": 100}
    old = privacy_statement(micro_config(method="noisysgd"), dpsgd, {"phrase_summary": SUMMARY})
    assert "- Made before the noise had random streams of its own (2026-11-27): its Poisson batches and noise were " \
        "drawn from torch's generator seeded with the run's seed, as the public models it starts from had been: the " \
        "base model's training (its dropout, and its initial weights where seeded)" in old and "not a proven bound, even with a secret seed" in old
    streams = ["dp-sgd sampling", "dp-sgd noise"]
    new = privacy_statement(micro_config(method="noisysgd"), {**dpsgd, "random_streams": streams},
                            {"phrase_summary": SUMMARY})
    assert "Made before the noise" not in new and "Runs with the same seed on the same data" in new

    seqpate = {"epsilon": 3.0, "delta": 1e-6, "accountant": "analytic-gaussian (exact composition)", "unit": "sample",
               "mechanism": "gaussian", "noise_scale": 69.0, "query_budget": 1000, "queries_spent": 1000}
    for seed, teachers, shared in [(0, 10, True), (0, 7, False), (1, 10, False)]:  # seed + 7 was teacher 7's seed
        cfg = micro_config(method="seqpate", seed=seed, seqpate__teachers=teachers)
        text = privacy_statement(cfg, {**seqpate, "teachers": teachers}, {"phrase_summary": SUMMARY})
        assert ("ordered teacher 7's training batches" in text) is shared, (seed, teachers)

    synth_old = synth_statement({"generator": "filter", "seed": 0}, SYNTH_PRIVACY, SYNTH_METRICS)
    assert "its Poisson batches and noise were drawn" in synth_old
    assert "the discriminator head's initial weights were (both part of the released model)" in synth_old
    synth_new = synth_statement({"generator": "filter", "seed": 0}, {**SYNTH_PRIVACY, "random_streams": streams},
                                SYNTH_METRICS)
    assert "Made before the noise" not in synth_new


def _by_user_statement_with_a_canary() -> str:
    cfg = micro_config(method="seqpate", seqpate__partition="by-user")
    privacy = {"epsilon": 3.0, "delta": 1e-6, "accountant": "analytic-gaussian (exact composition)", "unit": "sample",
               "mechanism": "gaussian", "noise_scale": 69.0, "query_budget": 1000, "queries_spent": 1000,
               "teachers": 10}
    metrics = {"exposure": {"10": 1.5}, "exposure_detail": [{"inserted": 10, "method": "exact", "candidates": 10_000}]}
    return privacy_statement(cfg, privacy, metrics, {}, "r1")


def test_the_statement_reads_epsilon_as_the_factor_e_to_the_epsilon():
    assert "by at most a factor e^epsilon = 20.1, plus" in _by_user_statement_with_a_canary()  # e^3 = 20.09


def test_a_canarys_exposure_is_out_of_log2_of_its_candidates():
    # 10,000 candidates: at most log2(10,000) = 13.3 bits
    assert ("Canary inserted 10x: exposure 1.5 bits of a possible 13.3 (exact rank)"
            in _by_user_statement_with_a_canary())
