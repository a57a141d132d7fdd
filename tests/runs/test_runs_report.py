"""REPORT.md: orderings are judged from the runs' numbers, and every table row comes from a run."""

from __future__ import annotations

import pytest

from core.runs.report import build_report, claims, load_rows
from tests.dashboard.fake_runs import write_run, write_synth_run


def test_table1_claim_reproduced_only_when_seqpate_beats_every_baseline(tmp_path):
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=100.0, bleu4=2.0)
    write_run(tmp_path, "sgd", "noisysgd", epsilon=3.0, ppl=150.0, bleu4=1.0)
    write_run(tmp_path, "pub", "pub-gpt", ppl=300.0, bleu4=0.5)
    table1 = claims(load_rows(tmp_path))[0]
    assert table1.verdict == "reproduced" and len(table1.checks) == 2

    # a baseline with lower perplexity breaks the claim, and the failing comparison is named
    write_run(tmp_path, "gc", "noisysgd-gc+pseudo", epsilon=3.0, ppl=90.0, bleu4=1.5)
    table1 = claims(load_rows(tmp_path))[0]
    assert table1.verdict == "not reproduced"
    assert [ok for what, ok in table1.checks if what.startswith("seq (PPL 100.0")].count(False) == 1


def test_more_teachers_claim_checks_each_step(tmp_path):
    for m, ppl in ((1, 400.0), (10, 200.0), (100, 250.0)):
        write_run(tmp_path, f"t{m}", "seqpate", epsilon=3.0, teachers=m, ppl=ppl)
    teachers = next(c for c in claims(load_rows(tmp_path)) if c.text.startswith("App. H"))
    assert [ok for _, ok in teachers.checks] == [True, False]
    assert teachers.verdict == "not reproduced"


def test_claims_without_runs_say_so_and_report_quotes_run_numbers(tmp_path):
    assert all(c.verdict == "no runs" for c in claims(load_rows(tmp_path)))
    write_run(tmp_path, "seq", "seqpate", epsilon=3.0, ppl=123.456, bleu4=2.5)
    write_run(tmp_path, "broken", "seqpate", epsilon=1.0, state="failed")
    text = build_report(tmp_path, notes="hand-written note")
    assert "| seqpate | 3 (spent 3.00) | 123.46 | 2.50 |" in text
    assert "from 1 finished runs" in text  # the failed run is not a result
    assert text.rstrip().endswith("hand-written note")


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
    assert "| multitask | 3.00 | 3.00 | 0.55 | 0.60 | 0.40 |" in text

    metrics = tmp_path / "s-filter-3" / "metrics.json"  # the filter baseline now wins: the claim fails
    metrics.write_text(metrics.read_text().replace('"accuracy_synthetic": 0.4', '"accuracy_synthetic": 0.7'))
    assert "- **not reproduced**: Seed 004 Fig. 1" in build_report(tmp_path)


def test_a_synthetic_accuracy_lead_within_two_standard_errors_is_not_a_reproduction(tmp_path):
    # the shipped tiny runs: 0.212 against 0.163 on 160 test texts; 2 SE of the difference = 2 sqrt((0.212 * 0.788
    # + 0.163 * 0.837) / 160) = 0.0871
    write_synth_run(tmp_path, "s-multitask-3", "multitask", 3.0, 0.212, n_test=160)
    write_synth_run(tmp_path, "s-filter-3", "filter", 3.0, 0.163, n_test=160)
    text = build_report(tmp_path)
    assert "- **not reproduced**: Seed 004 Fig. 1" in text
    assert "FAILS: s-multitask-3 accuracy 0.212 vs s-filter-3 0.163 (two standard errors of the difference on 160 " \
           "test texts: 0.087)" in text


@pytest.mark.parametrize("multitask, frozen, n_test, margin, verdict", [
    # the shipped quick runs: 2 SE = 2 sqrt((0.359 * 0.641 + 0.341 * 0.659) / 384) = 0.069
    (0.359, 0.341, 384, "0.069", "not reproduced"),
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
