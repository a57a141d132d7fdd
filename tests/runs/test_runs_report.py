"""REPORT.md: orderings are judged from the runs' numbers, and every table row comes from a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.runs.report import (
    FAILS,
    HOLDS,
    WITHIN_NOISE,
    build_report,
    claims,
    default_teachers,
    load_rows,
    load_synth_rows,
    synth_claims,
)
from core.runs.store import TEST_NLL
from tests.dashboard.fake_runs import REFERENCES, write_run, write_synth_run


def test_table1_claim_reproduced_only_when_seqpate_beats_every_baseline_beyond_noise(tmp_path):
    # SeqPATE completes every test prefix with its reference (BLEU-4 100), the baselines with other words (0)
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=100.0, bleu4=100.0, completions=REFERENCES)
    write_run(tmp_path, "sgd", "noisysgd", epsilon=3.0, ppl=150.0, bleu4=0.0)
    write_run(tmp_path, "pub", "pub-gpt", ppl=300.0, bleu4=0.0)
    table1 = claims(load_rows(tmp_path))[0]
    assert table1.verdict == "reproduced" and [outcome for _, outcome in table1.checks] == [HOLDS, HOLDS]
    assert "PPL ratio 0.667 (±2%): holds; BLEU-4 p = 0.0" in table1.checks[0][0]

    # a baseline with lower perplexity breaks the claim, and the failing comparison is named
    write_run(tmp_path, "gc", "noisysgd-gc+pseudo", epsilon=3.0, ppl=90.0, bleu4=0.0)
    table1 = claims(load_rows(tmp_path))[0]
    assert table1.verdict == "not reproduced"
    assert [outcome for what, outcome in table1.checks if what.startswith("seq (PPL 100.0")].count(FAILS) == 1


def test_a_small_bleu_lead_is_within_noise(tmp_path):
    junk = [f"nothing like item {i}" for i in range(len(REFERENCES))]
    # each run reproduces three references: BLEU-4 51.9 against 49.8, a lead every shuffle matches or exceeds (p = 1;
    # sacrebleu's strict count, which leaves out the shuffles that tie it, gave 0.87)
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=100.0, completions=REFERENCES[:3] + junk[3:])
    write_run(tmp_path, "sgd", "noisysgd", epsilon=3.0, ppl=150.0, completions=junk[:3] + REFERENCES[3:])
    (what, outcome), = claims(load_rows(tmp_path))[0].checks
    assert outcome == WITHIN_NOISE and "PPL ratio 0.667 (±2%): holds; BLEU-4 p = 1.00: within noise" in what
    assert claims(load_rows(tmp_path))[0].verdict == "not shown (within test-set noise)"
    write_run(tmp_path, "sgd2", "noisysgd+pseudo", epsilon=3.0, ppl=150.0, completions=REFERENCES[:3] + junk[3:])
    assert "BLEU-4 equal: within noise" in claims(load_rows(tmp_path))[0].checks[1][0]


@pytest.mark.parametrize("ppl, outcome", [(909.6, WITHIN_NOISE), (880.0, FAILS), (940.0, HOLDS)])
def test_a_perplexity_difference_without_per_sentence_nll_counts_beyond_two_percent(tmp_path, ppl, outcome):
    # the shipped tiny runs: the full method 909.3, its -gaussian ablation 909.6 (0.03%)
    write_run(tmp_path, "full", "seqpate", epsilon=3.0, ppl=909.3)
    write_run(tmp_path, "ablated", "seqpate", epsilon=3.0, ablation="-gaussian", ppl=ppl)
    table3 = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("Table 3"))
    assert [o for _, o in table3.checks] == [outcome]
    assert f"PPL ratio {909.3 / ppl:.3f} (±2%): {outcome}" in table3.checks[0][0]


def test_perplexity_is_judged_by_the_paired_interval_when_both_runs_kept_test_nll(tmp_path):
    tokens = [8, 12, 5, 20, 9] * 40
    base = [(5.0 * t + 0.3 * (i % 7), t) for i, t in enumerate(tokens)]
    write_run(tmp_path, "full", "seqpate", epsilon=3.0, ppl=100.0).write_test_nll(base)
    # 0.5% lower per token, on every sentence: inside the 2% margin, far outside the paired interval
    ablated = write_run(tmp_path, "ablated", "seqpate", epsilon=3.0, ablation="-kl", ppl=100.5)
    ablated.write_test_nll([(nll + 0.005 * t, t) for nll, t in base])
    table3 = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("Table 3"))
    (what, outcome), = table3.checks
    assert outcome == HOLDS and table3.verdict == "reproduced"
    assert "PPL ratio 0.995 [0.995, 0.995]: holds" in what
    # without the file on one side, the same 0.5% is within the margin
    (tmp_path / "ablated" / TEST_NLL).unlink()
    table3 = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("Table 3"))
    assert table3.checks[0][1] == WITHIN_NOISE


def test_more_teachers_claim_checks_each_step(tmp_path):
    for m, ppl in ((1, 400.0), (10, 200.0), (100, 250.0)):
        write_run(tmp_path, f"t{m}", "seqpate", epsilon=3.0, teachers=m, ppl=ppl)
    teachers = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("App. H"))
    assert [outcome for _, outcome in teachers.checks] == [HOLDS, FAILS]
    assert teachers.verdict == "not reproduced"
    metrics = tmp_path / "t10" / "metrics.json"  # the teacher phase's time, as SeqPATE runs record it
    metrics.write_text(json.dumps({**json.loads(metrics.read_text()), "seqpate_timings": {"teachers_s": 12.5}}))
    assert "| 10 | 200.00 | 2.50 | " in build_report(tmp_path) and " | 12.50 |" in build_report(tmp_path)


def test_a_preset_whose_default_filter_is_top_k_keeps_its_default_run_in_table_1(tmp_path):
    # quick's default student filter is top-k:10 (chosen on public validation), tiny's is top-p 0.95
    write_run(tmp_path, "seq", "seqpate", preset="quick", epsilon=3.0, ppl=100.0)
    write_run(tmp_path, "seq-top-p", "seqpate", preset="quick", epsilon=3.0, filter="top-p:0.95", ppl=120.0)
    # a reference made under other SeqPATE settings still counts: it never reads that section
    write_run(tmp_path, "pub", "pub-gpt", preset="quick", teachers=100, filter="top-p:0.95", ppl=300.0)
    found = claims(load_rows(tmp_path))
    (what, outcome), = found[0].checks[:1]
    assert what.startswith("seq (PPL 100.0") and "vs pub (PPL 300.0" in what and "0.333 (±2%): holds" in what
    assert outcome == WITHIN_NOISE  # the fake runs tie on BLEU-4
    table4 = next(c for c in found if c.text.startswith("Table 4"))  # top-p 0.95 against the top-k runs
    assert [(what.split(" (")[0], outcome) for what, outcome in table4.checks] == [("seq-top-p", FAILS)]
    assert "vs seq (PPL 100.0" in table4.checks[0][0]
    assert "with one candidate the KL" not in build_report(tmp_path)
    write_run(tmp_path, "seq-k1", "seqpate", preset="quick", epsilon=3.0, filter="top-k:1", ppl=130.0)
    assert "top-k:1: with one candidate the KL to the teachers' answer is 0" in build_report(tmp_path)  # under Table 4


def test_claims_without_runs_say_so_and_report_quotes_run_numbers(tmp_path):
    assert all(c.verdict == "no runs" for c in claims(load_rows(tmp_path)))
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=123.456, bleu4=2.5)
    write_run(tmp_path, "broken", "seqpate", epsilon=1.0, state="failed")
    text = build_report(tmp_path, notes="hand-written note")
    assert "| seqpate | 3 (spent 3.00) | 123.46 | 2.50 |" in text
    assert "from 1 finished runs" in text  # the failed run is not a result
    assert text.rstrip().endswith("hand-written note")


def test_the_phrase_section_says_that_phrase_avg_epsilons_are_a_heuristic(tmp_path):
    write_run(tmp_path, "canary", "seqpate", canaries="1,10,100")
    text = build_report(tmp_path)
    assert "## Secret phrases" in text
    assert "A `phrase-avg` run, as in the paper's Table 2, chooses its noise from how many teachers or sentences" \
        in text and "a heuristic comparison, not a DP guarantee" in text


def test_synth_runs_get_their_own_section_and_claims(tmp_path):
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=100.0, bleu4=2.0)
    write_synth_run(tmp_path, "s-multitask-3", "multitask", 3.0, 0.55)
    write_synth_run(tmp_path, "s-filter-3", "filter", 3.0, 0.40)
    assert [r.name for r in load_rows(tmp_path)] == ["seq"]  # synth runs are not text-generation rows
    text = build_report(tmp_path)
    assert "from 3 finished runs" in text and "## DP synthetic labelled text" in text
    assert "- **reproduced**: Seed 004 Fig. 1" in text
    assert ("holds: s-multitask-3 accuracy 0.550 vs s-filter-3 0.400 (two standard errors of the difference on 400 "
            "test texts: 0.070)") in text
    assert "| multitask | 3.00 | 0 | 3.00 | 0.55 | 0.60 | 0.40 |" in text  # generator, target, seed, spent, ...

    metrics = tmp_path / "s-filter-3" / "metrics.json"  # the filter baseline now wins: the claim fails
    metrics.write_text(metrics.read_text().replace('"accuracy_synthetic": 0.4', '"accuracy_synthetic": 0.7'))
    assert "- **not reproduced**: Seed 004 Fig. 1" in build_report(tmp_path)


def test_a_synthetic_accuracy_lead_within_two_standard_errors_is_not_a_reproduction(tmp_path):
    # 2 SE of the difference = 2 sqrt((0.45 * 0.55 + 0.4 * 0.6) / 160) = 0.1104; 0.45 is above chance (1/3)
    write_synth_run(tmp_path, "s-multitask-3", "multitask", 3.0, 0.45, n_test=160)
    write_synth_run(tmp_path, "s-filter-3", "filter", 3.0, 0.40, n_test=160)
    text = build_report(tmp_path)
    assert "- **not shown (within test-set noise)**: Seed 004 Fig. 1" in text
    assert "within noise: s-multitask-3 accuracy 0.450 vs s-filter-3 0.400 (two standard errors of the difference " \
           "on 160 test texts: 0.110)" in text
    assert "holds: s-multitask-3 accuracy 0.450 vs chance 0.333 (3 labels; two standard errors on 160 test texts: " \
           "0.075)" in text


def _set_labels(run, labels: list[str]) -> None:
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "data": {**metrics["data"], "labels": labels}}))


def test_a_synthetic_lead_counts_only_when_the_multitask_side_is_above_chance(tmp_path):
    # the shipped tiny runs: 0.2875 against 0.163 on 160 test texts of 4 labels. The lead is beyond 2 SE of the
    # difference (2 sqrt((0.2875 * 0.7125 + 0.163 * 0.837) / 160) = 0.0917), but 0.2875 is within 2 SE of chance:
    # 2 sqrt(0.25 * 0.75 / 160) = 0.0685
    write_synth_run(tmp_path, "s-multitask-3", "multitask", 3.0, 0.2875, n_test=160, separability=0.5)
    write_synth_run(tmp_path, "s-filter-3", "filter", 3.0, 0.163, n_test=160, separability=0.3)
    _set_labels(tmp_path / "s-multitask-3", ["film", "music", "peanut butter", "smell"])
    fig1, fig2 = synth_claims(load_synth_rows(tmp_path))
    assert [outcome for _, outcome in fig1.checks] == [HOLDS, WITHIN_NOISE]
    assert fig1.checks[1][0] == ("s-multitask-3 accuracy 0.287 vs chance 0.250 (4 labels; two standard errors on "
                                 "160 test texts: 0.068)")
    assert fig1.verdict == "not shown (within test-set noise)"
    assert [outcome for _, outcome in fig2.checks] == [HOLDS, HOLDS] and fig2.verdict == "reproduced"

    _set_labels(tmp_path / "s-multitask-3", [])  # a metrics.json without labels: the check cannot be made
    fig1, _ = synth_claims(load_synth_rows(tmp_path))
    assert fig1.checks[1] == ("s-multitask-3: chance level unknown (metrics.json names no labels or test count)",
                              WITHIN_NOISE) and fig1.verdict == "not shown (within test-set noise)"

    # below chance beyond noise (3 labels, 400 texts: 2 SE at chance 0.047): the multitask data is worse than none
    write_synth_run(tmp_path / "below", "s-multitask-3", "multitask", 3.0, 0.2, n_test=400)
    write_synth_run(tmp_path / "below", "s-filter-3", "filter", 3.0, 0.1, n_test=400)
    fig1, _ = synth_claims(load_synth_rows(tmp_path / "below"))
    assert [outcome for _, outcome in fig1.checks] == [HOLDS, FAILS] and fig1.verdict == "not reproduced"


def test_synthetic_claims_are_judged_in_every_seed(tmp_path):
    # the shipped quick runs at epsilon 3: seed 0 within noise, seeds 1 and 2 with the filter ahead beyond noise
    for seed, (multitask, filt, n_test) in enumerate([(0.367, 0.391, 384), (0.299, 0.374, 388), (0.333, 0.427, 372)]):
        suffix = f"-seed{seed}" if seed else ""
        for name, generator, accuracy in ((f"m{suffix}", "multitask", multitask), (f"f{suffix}", "filter", filt)):
            write_synth_run(tmp_path, name, generator, 3.0, accuracy, n_test=n_test)
            config = json.loads((tmp_path / name / "config.json").read_text())
            config["config"]["seed"] = seed
            (tmp_path / name / "config.json").write_text(json.dumps(config))
    rows = load_synth_rows(tmp_path)
    assert sorted((r.name, r.seed) for r in rows if r.generator == "multitask") == [
        ("m", 0), ("m-seed1", 1), ("m-seed2", 2)]
    fig1, _ = synth_claims(rows)
    leads = [(what.split(" accuracy")[0], outcome) for what, outcome in fig1.checks if "vs chance" not in what]
    assert leads == [("m", WITHIN_NOISE), ("m-seed1", FAILS), ("m-seed2", FAILS)]
    assert fig1.verdict == "not reproduced"
    assert "| multitask | 3.00 | 2 | 3.00 | 0.33 |" in build_report(tmp_path)  # every seed has its row


@pytest.mark.parametrize("multitask, frozen, n_test, margin, verdict", [
    # quick runs shipped with core quick's base model: 2 SE = 2 sqrt((0.359 * 0.641 + 0.341 * 0.659) / 384) = 0.069
    (0.359, 0.341, 384, "0.069", "not shown (within test-set noise)"),
    (0.45, 0.341, 384, "0.070", "reproduced"),
])
def test_a_separability_lead_counts_only_beyond_two_standard_errors(tmp_path, multitask, frozen, n_test, margin,
                                                                    verdict):
    write_synth_run(tmp_path, "s-multitask-3", "multitask", 3.0, 0.3, n_test=n_test, separability=multitask)
    write_synth_run(tmp_path, "s-filter-3", "filter", 3.0, 0.3, n_test=n_test, separability=frozen)
    text = build_report(tmp_path)
    assert f"- **{verdict}**: Seed 004 Fig. 2" in text
    assert (f"s-multitask-3 separability {multitask:.3f} vs frozen-model s-filter-3 {frozen:.3f} (two standard "
            f"errors of the difference on {n_test} test texts: {margin})") in text


def test_table1_is_judged_in_every_seed_and_the_tables_quote_one(tmp_path):
    # seed 0: SeqPATE 3% below Pub-GPT (beyond the 2% margin); seed 1: 1% above it
    for seed, seq_ppl, pub_ppl in ((0, 97.0, 100.0), (1, 202.0, 200.0)):
        suffix = f"-seed{seed}" if seed else ""
        write_run(tmp_path, f"seq{suffix}", "seqpate", epsilon=3.0, ppl=seq_ppl, bleu4=0.0, seed=seed)
        write_run(tmp_path, f"pub{suffix}", "pub-gpt", ppl=pub_ppl, bleu4=0.0, seed=seed)
    rows = load_rows(tmp_path)
    assert sorted((r.name, r.seed) for r in rows) == [("pub", 0), ("pub-seed1", 1), ("seq", 0), ("seq-seed1", 1)]
    table1 = claims(rows)[0]
    assert [(what.split(" (PPL")[0], outcome) for what, outcome in table1.checks] == [
        ("seed 0: seq", WITHIN_NOISE), ("seed 1: seq-seed1", WITHIN_NOISE)]  # BLEU-4 equal in both
    assert "PPL ratio 0.970 (±2%): holds" in table1.checks[0][0]
    assert "PPL ratio 1.010 (±2%): within noise" in table1.checks[1][0]
    # a seed-1 SeqPATE 5% above its Pub-GPT fails the claim, however seed 0 went
    shutil.rmtree(tmp_path / "seq-seed1")
    write_run(tmp_path, "seq-seed1", "seqpate", epsilon=3.0, ppl=210.0, bleu4=0.0, seed=1)
    assert claims(load_rows(tmp_path))[0].verdict == "not reproduced"

    write_run(tmp_path, "ctl-seed1", "seqpate", epsilon=0.01, ppl=205.0, bleu4=0.0, seed=1)  # a no-signal control
    report = build_report(tmp_path)
    tradeoff = report.split("## Privacy-utility trade-off")[1].split("##")[0]
    assert "| seqpate | 3 (spent 3.00) | 97.00 |" in tradeoff and "210.00" not in tradeoff  # seed 0 only
    seeds = report.split("## Table 1 in every seed")[1]
    assert ("| 1 | seqpate | 0.01 | 205.00 | 0.00 | 1.025 | ctl-seed1 |\n"
            "| 1 | seqpate | 3.00 | 210.00 | 0.00 | 1.050 | seq-seed1 |") in seeds
    assert "| 0 | pub-gpt | 0 | 100.00 | 0.00 | - | pub |" in seeds


def test_one_seed_gets_no_seed_labels_and_no_seed_table(tmp_path):
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=97.0, bleu4=0.0, seed=3)
    write_run(tmp_path, "pub", "pub-gpt", ppl=100.0, bleu4=0.0, seed=3)
    (what, _), = claims(load_rows(tmp_path))[0].checks
    assert what.startswith("seq (PPL 97.0")
    assert "## Table 1 in every seed" not in build_report(tmp_path)


def test_a_claim_is_judged_in_the_seeds_that_have_its_runs_and_the_seed_table_uses_paired_intervals(tmp_path):
    tokens = [8, 12, 5, 20, 9] * 40
    base = [(5.0 * t + 0.3 * (i % 7), t) for i, t in enumerate(tokens)]
    for seed in (0, 1):
        suffix = f"-seed{seed}" if seed else ""
        write_run(tmp_path, f"pub{suffix}", "pub-gpt", ppl=100.0, seed=seed).write_test_nll(base)
        # 1% lower per token on every sentence: beyond the paired interval, inside the 2% margin
        seq = write_run(tmp_path, f"seq{suffix}", "seqpate", epsilon=3.0, ppl=99.0, seed=seed)
        seq.write_test_nll([(nll - 0.01 * t, t) for nll, t in base])
    write_run(tmp_path, "pri", "pri-gpt", ppl=50.0, bleu4=0.0)  # seed 0 only
    write_run(tmp_path, "adp-seed1", "adp", epsilon=3.0, ppl=98.0, bleu4=0.0, seed=1)
    upper_bound = next(c for c in claims(load_rows(tmp_path)) if "upper bound" in c.text)
    assert [what.split(" (PPL")[0] for what, _ in upper_bound.checks] == ["seed 0: pri"]
    seeds = build_report(tmp_path).split("## Table 1 in every seed")[1]
    assert "| 1 | seqpate | 3.00 | 99.00 | 2.50 | 0.990 [0.990, 0.990] | seq-seed1 |" in seeds
    assert "| 1 | adp | 3.00 | 98.00 | 0.00 | 0.980 | adp-seed1 |" in seeds  # no test_nll.csv: the plain ratio


def test_adps_canary_run_is_a_row_of_the_phrase_table_not_of_adps(tmp_path):
    """The phrases plan's ADP run with canaries (seed 002's Fig. 1) made a second, unnamed "adp 3.00" row in the
    ADP table beside the plain run; its exposure is what it is for, in the phrase table."""
    write_run(tmp_path, "adp-eps3", "adp", epsilon=3.0, ppl=893.8)
    write_run(tmp_path, "phrases-adp-eps3", "adp", epsilon=3.0, ppl=909.2, canaries="1,10,100")
    report = build_report(tmp_path)
    adp_table = report.split("## Adaptive DP-SGD (seed 002)")[1]
    assert "| adp | 3.00 | 3.00 |" in adp_table and "893.80" in adp_table and "909.20" not in adp_table
    phrase_table = report.split("## Secret phrases, leak rate and canary exposure")[1].split("\n## ")[0]
    assert "| adp | sample 3.00 | 909.20 |" in phrase_table
    assert "different base models" not in phrase_table  # neither records a digest: one base model as far as known


def test_a_phrase_table_whose_rows_stand_on_different_base_models_says_which(tmp_path):
    """Two canary runs made on this machine's base model joined the shipped ones in the phrase table with nothing
    marking them (a review): a row compares only with those on its own base model."""
    write_run(tmp_path, "phrases-pri-gpt", "pri-gpt", canaries="1,10,100")
    for name, method in (("phrases-adp-eps3", "adp"), ("phrases-noisysgd-eps3", "noisysgd")):
        run = write_run(tmp_path, name, method, epsilon=3.0, canaries="1,10,100")
        run.write_metrics({**run.metrics(), "base_model": {"source": "tiny", "weights_sha256": "8867e2a78e365b32"}})
    phrase_table = build_report(tmp_path).split("## Secret phrases, leak rate and canary exposure")[1]
    assert ("These runs may stand on different base models (some record their base model's digest, others none), "
            "so compare a run only with those on the same one: "
            "phrases-adp-eps3, phrases-noisysgd-eps3 on base weights 8867e2a78e365b32; phrases-pri-gpt recorded none "
            "(made before digests were recorded") in phrase_table


def test_runs_that_change_a_setting_no_table_varies_are_left_out_and_named(tmp_path):
    """A researcher's Pub-GPT on their own corpus (PPL 10.6) stood in for the preset's Pub-GPT in Table 1, and a
    SeqPATE run with another query budget and the same 10 teachers made App. H's "more teachers is better"
    reproduced, from two runs of one teacher count."""
    write_run(tmp_path, "pub", "pub-gpt", ppl=1069.6)
    write_run(tmp_path, "my-pub", "pub-gpt", ppl=10.6, config={"data__corpus": "mycorpus.jsonl"})
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=989.0)
    write_run(tmp_path, "seq-qb100", "seqpate", epsilon=3.0, ppl=17.3, config={"seqpate__query_budget": 100})
    assert sorted(r.name for r in load_rows(tmp_path)) == ["pub", "seq"]
    teachers = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("App. H"))
    assert teachers.checks == [] and teachers.verdict != "reproduced"
    report = build_report(tmp_path)
    assert ("Left out, runs that change a setting none of these tables varies (they are experiments of their own: "
            "compare them with `python -m core compare`): my-pub (data.corpus mycorpus.jsonl); seq-qb100 "
            "(seqpate.query_budget 100).") in report
    assert "my-pub" not in report.split("Left out, runs that change")[1].split("\n", 1)[1]  # in no table


def test_tables_compare_at_the_presets_settings_in_a_users_folder_too(tmp_path):
    """A CLI audit's folder: a synthetic-data run on the user's csv of two labels was a row of the seed-004 table,
    read as a chitchat result, and of a SeqPATE run at the preset's 10 teachers and one at 1 (tied), Table 3's
    "none" row was the 1-teacher run."""
    write_synth_run(tmp_path, "s-filter", "filter", 3.0, 0.40)
    write_synth_run(tmp_path, "s-mine", "filter", 3.0, 0.90)
    config = json.loads((tmp_path / "s-mine" / "config.json").read_text())
    config["config"]["synth"]["corpus"] = "mine.csv"
    (tmp_path / "s-mine" / "config.json").write_text(json.dumps(config))
    assert [r.name for r in load_synth_rows(tmp_path)] == ["s-filter"]
    # a setting the run's generator never reads is not one of its settings (a filter run's PPLM step size)
    config["config"]["synth"] = {**config["config"]["synth"], "corpus": "chitchat", "pplm_stepsize": 0.3}
    (tmp_path / "s-mine" / "config.json").write_text(json.dumps(config))
    assert [r.name for r in load_synth_rows(tmp_path)] == ["s-filter", "s-mine"]
    config["config"]["synth"]["filter_threshold"] = 0.7
    (tmp_path / "s-mine" / "config.json").write_text(json.dumps(config))
    assert [r.name for r in load_synth_rows(tmp_path)] == ["s-filter"]
    garbled = {**config, "config": {**config["config"], "synth": "garbled"}}  # a traceback: string indices
    (tmp_path / "s-mine" / "config.json").write_text(json.dumps(garbled))
    assert [r.name for r in load_synth_rows(tmp_path)] == ["s-filter"]
    assert "s-mine (synth garbled)" in build_report(tmp_path).split("Left out, runs that change")[1]
    config["config"]["synth"] = {**config["config"]["synth"], "corpus": "mine.csv", "filter_threshold": 0.5}
    (tmp_path / "s-mine" / "config.json").write_text(json.dumps(config))
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=989.0)
    write_run(tmp_path, "seq-m1", "seqpate", epsilon=3.0, ppl=900.0, teachers=1)
    report = build_report(tmp_path)
    assert "s-mine (synth.corpus mine.csv)" in report.split("Left out, runs that change")[1]
    table3 = report.split("## Ablations at epsilon 3 (Table 3)")[1].split("##")[0]
    assert "| none | 989.00 |" in table3 and "900.00" not in table3


def test_the_seed_table_needs_table_1_runs_in_a_second_seed(tmp_path):
    """A seed-1 SeqPATE variant (top-k 5, by-user) alone brought "these runs repeat Table 1 with seed 1" over a
    table of seed-0 rows."""
    write_run(tmp_path, "pub", "pub-gpt", ppl=100.0)
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=97.0)
    write_run(tmp_path, "seq-s1-k5", "seqpate", epsilon=3.0, ppl=96.0, seed=1, filter="top-k:5", partition="by-user")
    assert "## Table 1 in every seed" not in build_report(tmp_path)
    # nor when the seed the other tables quote (the lowest) has no Table 1 run of its own
    other = tmp_path / "other"
    write_run(other, "seq-k5", "seqpate", epsilon=3.0, ppl=96.0, filter="top-k:5")
    for seed in (1, 2):
        write_run(other, f"pub-seed{seed}", "pub-gpt", ppl=100.0, seed=seed)
    assert "## Table 1 in every seed" not in build_report(other)


def test_the_report_command_names_runs_set_aside_and_refuses_a_folder_of_them_only(tmp_path, capsys):
    from core.cli import main

    write_run(tmp_path, "my-pub", "pub-gpt", ppl=10.6, config={"data__corpus": "mycorpus.jsonl"})
    assert main(["report", "--runs", str(tmp_path)]) == 2  # was a report "from 0 finished runs", exit 0
    assert capsys.readouterr().err == (
        f"error: --runs {tmp_path}: every finished run there changes a setting none of the report's tables varies "
        "(my-pub (data.corpus mycorpus.jsonl)), nothing to report; compare them with core compare\n")
    assert not (tmp_path / "REPORT.md").exists()
    write_run(tmp_path, "pub", "pub-gpt", ppl=1069.6)
    assert main(["report", "--runs", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ("note: left out 1 run(s) that change a setting none of the report's tables "
                                       "varies: my-pub (data.corpus mycorpus.jsonl)\n")


def test_a_preset_whose_seqpate_answers_are_noise_dominated_says_so(tmp_path):
    """tiny's SeqPATE (M 10, noise std 69) stood under 'reproduced: Table 4' with no word that its teachers'
    answers carry almost no signal (std / M = 6.9)."""
    run = write_run(tmp_path, "seq", "seqpate", epsilon=3.0, teachers=10, ppl=909.3)
    write_run(tmp_path, "pub", "pub-gpt", ppl=1000.0)
    for std, said in ((69.04358, True), (9.5, False), (float("nan"), False), (float("inf"), False)):
        run.write_privacy({**run.privacy(), "noise_scale": std})
        report = build_report(tmp_path)
        assert ("SeqPATE's answers here are noise-dominated: at epsilon 3 the noise std is 69.0 on a sum of M = 10 "
                "teacher distributions (std / M = 6.9" in report) is said, std
        # App. H's runs at M = 100 and 1,000 (std / M 0.69 and 0.069) are not: only its rows below the std are named
        assert ("(Tables 3 and 4, and App. H's rows with M below 69)" in report) is said


def test_a_bleu_comparison_that_cannot_be_made_is_never_a_reproduction(tmp_path):
    """Runs that completed different test prefixes cannot be compared on BLEU-4: the comparison counts as within
    noise (no verdict), never as holding, whatever the numbers say."""
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=100.0, bleu4=100.0, completions=REFERENCES)
    sgd = write_run(tmp_path, "sgd", "noisysgd", epsilon=3.0, ppl=150.0, bleu4=0.0)
    sgd.write_completions([{**row, "prefix": f"another prefix {i}"} for i, row in enumerate(sgd.completions())])
    (what, outcome), = claims(load_rows(tmp_path))[0].checks
    assert outcome == WITHIN_NOISE and "BLEU-4 not testable (the runs completed different test prefixes" in what
    assert claims(load_rows(tmp_path))[0].verdict == "not shown (within test-set noise)"


def test_the_shipped_report_is_what_core_report_writes_from_the_shipped_runs(monkeypatch):
    """REPORT.md's verdicts and tables come from the runs beside it: a change to the report's code or to a shipped
    run not followed by `python -m core report --runs cached_runs --notes cached_runs/NOTES.md` leaves it stale."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)  # the BLEU test's shuffles, as the shipped report drew them
    notes = Path("cached_runs/NOTES.md")
    shipped = Path("cached_runs/REPORT.md").read_text(encoding="utf-8")
    assert build_report(Path("cached_runs"), notes.read_text(encoding="utf-8"), notes) == shipped


def test_the_trade_off_table_shows_the_accounted_epsilon_beside_the_target(tmp_path):
    """A run that stopped short spends less than its target: REPORT.md's "spent" is privacy.json's epsilon (the
    shipped runs spend their targets to rounding, so they cannot tell the two apart)."""
    run = write_run(tmp_path, "seq", "seqpate", epsilon=3.0)
    privacy = json.loads((run.path / "privacy.json").read_text())
    (run.path / "privacy.json").write_text(json.dumps({**privacy, "epsilon": 2.5}))
    assert "| seqpate | 3 (spent 2.50) |" in build_report(tmp_path)


def test_tables_3_and_4_use_the_teacher_count_most_runs_have(tmp_path):
    write_run(tmp_path, "m2-e3", "seqpate", epsilon=3.0, teachers=2)
    write_run(tmp_path, "m2-e8", "seqpate", epsilon=8.0, teachers=2)
    write_run(tmp_path, "m7-e3", "seqpate", epsilon=3.0, teachers=7)
    assert default_teachers(load_rows(tmp_path)) == 2
