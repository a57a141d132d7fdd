"""Export page and the HTML report: blank missing values, the report's default run, its chart, its numbers."""

from __future__ import annotations

import json
import math
import re
import shutil

from fake_runs import phrase_rows, write_run, write_synth_run


def report_of(run_id: str, figures: bool = True) -> tuple[list, str]:
    """(figures, HTML document) of a run's report, as the Export page builds them."""
    from dashboard import loading, report, tables

    frame = loading.finished_frame(loading.runs_frame())
    record = frame.set_index("run_id").loc[run_id].to_dict() | {"run_id": run_id}
    run = loading.get_run(run_id)
    made = report.report_figures(record, frame[frame["preset"] == record["preset"]], run.progress())
    exposure = tables.exposure_table(run.metrics(), run.phrases()) if record["has_phrases"] else None
    document = report.build_report_html(record, run.config()["config"], run.privacy(), run.metrics(),
                                        run.completions(), [], made if figures else None,
                                        statement_md=run.read_text("statement.md"), exposure=exposure)
    return made, document


def test_export_preview_shows_missing_values_blank(roots, app_page):
    write_run(roots["cached"], "seq", "seqpate", phrases=phrase_rows())
    at = app_page("export")
    assert at.selectbox(key="export_table").value == "all runs"
    preview = at.dataframe[0]
    assert preview.value["error"].isna().all()  # no error on a finished run: drawn blank, not "None"
    assert preview.proto.HasField("placeholder") and preview.proto.placeholder == ""


def test_all_runs_lists_seqpate_settings_for_seqpate_runs_only(roots, app_page):
    """Every config carries its preset's SeqPATE section: the CSV listed Pub-GPT's and NoisySGD's teachers, filter
    and query budget as if they had used them, and a reviewer filtering on teachers picked those rows up."""
    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0, teachers=5)
    write_run(roots["cached"], "pub", "pub-gpt")
    write_run(roots["cached"], "sgd", "noisysgd", epsilon=3.0)
    at = app_page("export")
    rows = at.dataframe[0].value.set_index("run_id")
    assert rows.loc["seq", "teachers"] == 5 and rows.loc["seq", "filter"] and rows.loc["seq", "partition"] == "random"
    for other in ("pub", "sgd"):
        assert rows.loc[[other], ["teachers", "filter", "partition", "query_budget"]].isna().all(axis=None), other
    # in the pages' words, not loading's: the CSV said "cached" and "('teachers',)"
    assert rows.loc["seq", "source"] == "shipped" and rows.loc["seq", "varied"] == "teachers"
    assert rows.loc["pub", "varied"] == ""


def test_report_opens_on_seqpate_at_the_presets_defaults(roots, app_page):
    cached = roots["cached"]  # newest first in the run list: each run below is newer than the one before
    write_run(cached, "a-seq-eps3", "seqpate", epsilon=3.0)
    write_run(cached, "b-seq-eps8", "seqpate", epsilon=8.0)
    write_run(cached, "c-seq-m5", "seqpate", epsilon=3.0, teachers=5)
    write_run(cached, "d-pub", "pub-gpt")
    write_synth_run(cached, "e-synth", "multitask", 16.0, accuracy=0.3)
    at = app_page("export")
    assert not at.exception
    assert at.selectbox(key="export_report_run").options[0].startswith("e-synth")
    assert at.selectbox(key="export_report_run").value == "a-seq-eps3"


def test_report_opens_on_the_data_the_other_pages_show(roots, app_page):
    """A run on the user's own corpus, at the preset's defaults there, took the report's default from the
    chitchat SeqPATE run the other pages open on; once that corpus is chosen on a page, the report follows it."""
    write_run(roots["cached"], "a-seq-eps3", "seqpate", epsilon=3.0)
    write_run(roots["live"], "z-air-seq", "seqpate", epsilon=3.0, config={"data__corpus": "/data/air.json"})
    at = app_page("export")
    assert at.selectbox(key="export_report_run").value == "a-seq-eps3"
    at.switch_page("views/overview.py").run()
    at.selectbox(key="overview_setup").set_value("/data/air.json").run()
    at.switch_page("views/export.py").run()
    assert at.selectbox(key="export_report_run").value == "z-air-seq" and not at.exception


def test_report_opens_on_the_copy_the_other_pages_show(roots, app_page):
    """tiny's SeqPATE at ε 3 is in four sweep plans: the report opened on the newest copy (PPL 909.46) while the
    Overview and the headline CSV show the one whose run id sorts first (909.34)."""
    write_run(roots["cached"], "a-seq-eps3", "seqpate", epsilon=3.0, ppl=909.34)
    write_run(roots["cached"], "z-seq-teachers", "seqpate", epsilon=3.0, ppl=909.46)  # newest, listed first
    at = app_page("export")
    assert at.selectbox(key="export_report_run").options[0].startswith("z-seq-teachers")
    assert at.selectbox(key="export_report_run").value == "a-seq-eps3"


def test_report_chart_has_the_runs_at_their_defaults(roots):
    cached = roots["cached"]
    write_run(cached, "seq", "seqpate", epsilon=3.0, bleu4=2.5)
    write_run(cached, "seq-m5", "seqpate", epsilon=3.0, teachers=5, bleu4=1.0)
    write_run(cached, "seq-kl", "seqpate", epsilon=3.0, ablation="-kl", bleu4=0.5)
    write_run(cached, "seq-canaries", "seqpate", epsilon=3.0, canaries="1,10,100", bleu4=4.0)
    write_run(cached, "sgd", "noisysgd", epsilon=3.0, bleu4=1.5)
    write_synth_run(cached, "synth", "filter", 3.0, accuracy=0.3)

    def points(figures: list) -> dict[str, list]:
        return {t.name: sorted(t.customdata[:, 0]) for t in figures[0].data
                if t.mode == "markers" and not t.name.startswith("this run")}

    figures, _ = report_of("seq")
    assert points(figures) == {"SeqPATE": ["seq"], "NoisySGD": ["sgd"]}  # as the Privacy vs utility page
    figures, _ = report_of("seq-m5")  # a variant's report shows it beside the defaults
    assert points(figures) == {"SeqPATE": ["seq", "seq-m5"], "NoisySGD": ["sgd"]}
    # the report's own run is ringed (a walk found it hidden behind another method's point)
    [ring] = [t for t in figures[0].data if t.name == "this run (seq-m5)"]
    assert (list(ring.x), list(ring.y)) == ([2.9985], [1.0]) and ring.marker.symbol == "circle-open"
    assert figures[0].layout.title.subtitle.text == "this run ringed"
    write_run(cached, "pub", "pub-gpt", bleu4=0.3)
    write_run(cached, "pub-canaries", "pub-gpt", canaries="1,10,100", bleu4=0.2)
    assert report_of("pub")[0][0].layout.title.subtitle.text == "this run: the Pub-GPT (ε=0) reference line"
    assert report_of("pub-canaries")[0][0].layout.title.subtitle.text == (  # the line is the defaults' run
        "this run is not drawn: a reference line shows its method at the preset's defaults")


def test_report_chart_shows_the_overviews_runs_and_the_reports_own(roots):
    """A review found the report's chart drawing Pub-GPT from a copy made here where the Overview shows the shipped
    run: the chart follows the Overview's choice, and a report of a run made here shows that run."""
    from dashboard import loading, report

    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", config={"seqpate__kd_lambda": 20.0})
    write_run(roots["live"], "pub-gpt-today", "pub-gpt")
    frame = loading.finished_frame(loading.runs_frame())
    records = frame.set_index("run_id")

    def drawn(run_id: str, in_place: bool) -> list[str]:
        record = records.loc[run_id].to_dict() | {"run_id": run_id}
        [chart] = report.report_figures(record, report.chart_runs(frame, run_id, in_place), [])
        return sorted({str(row[0]) for t in chart.data if t.customdata is not None for row in t.customdata})

    assert drawn("seq", in_place=False) == ["seq", "tiny-pub-gpt"]  # the Overview's runs
    assert drawn("seq", in_place=True) == ["pub-gpt-today", "seq"]  # the reader put the copy made here in place
    assert drawn("pub-gpt-today", in_place=False) == ["pub-gpt-today", "seq"]  # the report's own run for its config
    # a SeqPATE run made here is drawn with the Pub-GPT made here, on the same base model, not the shipped one (a
    # walk found it against the shipped line), whatever the Overview shows
    write_run(roots["live"], "seq-today", "seqpate", epsilon=3.0)
    frame = loading.finished_frame(loading.runs_frame())
    records = frame.set_index("run_id")
    assert drawn("seq-today", in_place=False) == ["pub-gpt-today", "seq-today"]
    assert drawn("seq", in_place=False) == ["seq", "tiny-pub-gpt"]  # a shipped run's report: still the Overview's
    # a run on another corpus completed other test sentences: its chart holds that corpus's runs alone
    write_run(roots["live"], "air-seq", "seqpate", epsilon=3.0, config={"data__corpus": "/data/air.json"})
    frame = loading.finished_frame(loading.runs_frame())
    records = frame.set_index("run_id")
    assert drawn("air-seq", in_place=False) == ["air-seq"]
    [chart] = report.report_figures(records.loc["air-seq"].to_dict() | {"run_id": "air-seq"},
                                    report.chart_runs(frame, "air-seq", False), [])
    assert chart.layout.title.text == "BLEU-4 vs ε, preset tiny on /data/air.json"  # not tiny's chitchat runs'
    [chart] = report.report_figures(records.loc["seq"].to_dict() | {"run_id": "seq"},
                                    report.chart_runs(frame, "seq", False), [])
    assert chart.layout.title.text == "BLEU-4 vs ε, preset tiny"
    assert drawn("seq-today", in_place=False) == ["pub-gpt-today", "seq-today"]


def test_report_chart_and_default_run_keep_to_one_seed(roots, app_page):
    cached = roots["cached"]
    for seed in (0, 1):
        write_run(cached, f"seq-{seed}", "seqpate", epsilon=3.0, seed=seed)
        write_run(cached, f"sgd-{seed}", "noisysgd", epsilon=3.0, seed=seed)
    figures, _ = report_of("seq-1")
    assert {t.name: sorted(t.customdata[:, 0]) for t in figures[0].data
            if t.mode == "markers" and t.customdata is not None} == {"SeqPATE": ["seq-1"], "NoisySGD": ["sgd-1"]}
    at = app_page("export")
    assert at.selectbox(key="export_report_run").value == "seq-0"  # the newest is seed 1's: the lowest seed wins


def test_report_gives_epsilon_to_six_digits_and_delta_like_the_dashboard(roots):
    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)  # accounted ε 2.9985 (fake_runs.privacy_for)
    privacy = roots["cached"] / "seq" / "privacy.json"
    privacy.write_text(privacy.read_text().replace('"epsilon": 2.9985', '"epsilon": 15.998339688884274'))
    _, document = report_of("seq", figures=False)
    assert "<th>epsilon</th><td>15.9983</td>" in document and "<th>delta</th><td>1e-06</td>" in document
    assert "15.998339688884274" not in document


def test_a_finished_run_without_its_privacy_record_shows_no_guarantee(roots, app_page):
    """A review deleted a done run's privacy.json and read the ε it had asked for on a green card: every ε shown comes
    from recorded events. Such a run is failed now (its files were damaged after it finished) and joins no result;
    the report marks a heuristic as no guarantee either."""
    from dashboard import loading, tables, wording

    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)
    write_run(roots["cached"], "adp", "adp", epsilon=3.0)
    (roots["cached"] / "seq" / "privacy.json").unlink()
    row = loading.runs_frame().set_index("run_id").loc["seq"]
    assert row["state"] == "failed" and row["error"] == "finished, but privacy.json missing or unreadable since"
    assert not wording.present(row["epsilon"]) and wording.privacy_statement(row["epsilon"], row["delta"], row["unit"]) == \
        "no privacy record"
    at = app_page()
    assert not [x for x in tables.privacy_cards(loading.finished_frame()) if x["method"] == "seqpate"]
    assert not at.success  # no green shield on any card: the SeqPATE run has no record (ADP's is a heuristic)
    _, document = report_of("adp", figures=False)
    assert "<span class='warn'>ε = " in document and "heuristic" in document


def test_an_old_adp_runs_base_sigma_is_not_shown_as_its_noise_multiplier(roots):
    """Made before 2026-11-27, an ADP run recorded its base σ (63.0 for quick-adp-eps3) as noise_multiplier; the
    report printed it as such beside a statement naming the accounted 0.591. A run of today records both."""
    import html

    from dashboard.report import LEGACY_ADP_SIGMA

    old = write_run(roots["cached"], "old-adp", "adp", epsilon=3.0)
    old.write_privacy({**old.privacy(), "noise_multiplier": 63.0})
    old.write_metrics({**json.loads(old.file("metrics.json").read_text()), "noise_multiplier": 63.0})
    new = write_run(roots["cached"], "new-adp", "adp", epsilon=3.0)
    new.write_privacy({**new.privacy(), "noise_multiplier": 0.591, "base_sigma": 63.0})
    _, document = report_of("old-adp", figures=False)
    assert document.count(f"<th>{html.escape(LEGACY_ADP_SIGMA)}</th><td>63.0</td>") == 2  # privacy and metrics
    assert "<th>noise_multiplier</th><td>" not in document  # (the events table has the accounted one)
    _, document = report_of("new-adp", figures=False)
    assert "<th>noise_multiplier</th><td>0.591</td>" in document and LEGACY_ADP_SIGMA not in document
    # said above everything: the file carries noiseless statistics of the private data (a browser review)
    assert "<p class='warn'>This report holds statistics of the private sentences computed without noise" in document


def test_synthetic_run_report_shows_its_own_metrics(roots):
    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)
    write_synth_run(roots["cached"], "synth", "multitask", 16.0, accuracy=0.3, separability=0.4)
    figures, document = report_of("synth")
    assert not any("BLEU-4" in (f.layout.title.text or "") for f in figures)  # no chart it has no place on
    metrics = dict(re.findall(r"<tr><th>([\w.]+)</th><td>([^<]*)</td></tr>", document.split("<h2>Metrics</h2>")[1]))
    assert metrics["accuracy_synthetic"] == "0.300" and metrics["separability"] == "0.400"
    assert metrics["ngram_ratios.3"] == "0.0333" and metrics["ngram_ratios_real_test.3"] == "0.0667"
    # a run that recorded its shares at the real test set's size leads with those, beside the real texts' own
    write_synth_run(roots["cached"], "synth-matched", "multitask", 8.0, accuracy=0.3,
                    size_matched={"texts": 4, "draws": 5, "ratios": {str(n): 0.3 / n for n in range(3, 8)}})
    _, matched = report_of("synth-matched", figures=False)
    headline = matched.split("<h2>Metrics</h2>")[1].split("</table>")[0]  # the all-samples shares: under All
    shown = dict(re.findall(r"<tr><th>([\w.]+)</th><td>([^<]*)</td></tr>", headline))
    assert shown["ngram_ratios_size_matched.ratios.3"] == "0.1000" and "ngram_ratios.3" not in shown
    assert shown["ngram_ratios_real_test.3"] == "0.0667"
    assert "A synthetic-data run" in document
    assert "<th>epsilon</th><td>15.984</td>" in document  # accounted 16 x 0.999, not rounded to 16
    # its samples, not "completions" of a private prefix and reference with a warning that they quote private text
    assert "<h2>Synthetic samples (first 6 of 6)</h2>" in document and "<h2>Completions" not in document
    assert "<tr><td>film</td><td>a film sample 0</td></tr>" in document and "quote private text" not in document
    assert "post-processing under the guarantee above" in document and "do not share them" not in document
    # a privacy officer read the guarantee's line as covering the report itself, scores on private test text and all
    banner = ("Share this report as you would the private data: whatever ε the model has, this report also holds "
              "scores on private test text and counts computed without noise, which no ε covers")
    assert banner in document and "it quotes private text" not in document
    _, text_run = report_of("seq", figures=False)
    assert banner in text_run and "and it quotes private text" in text_run
    # at ε = ∞ the model saw the private texts without noise: its samples may repeat them (a shipped one's do)
    write_synth_run(roots["cached"], "synth-inf", "multitask", float("inf"), accuracy=0.3)
    _, document = report_of("synth-inf", figures=False)
    assert "and it quotes private text" in document  # its samples may repeat training text
    assert ("Generated by a model fine-tuned without noise (ε = ∞): they may repeat private training text (a "
            "shipped ε = ∞ run&#x27;s do): do not share them.") in document


def test_a_report_carries_the_runs_privacy_statement_and_canary_exposure(roots):
    """A synthetic run's green (ε, δ)-DP card sat above accuracies no ε covers, which only its statement.md says:
    the report left the statement out; a canary run's exposure was a JSON blob under "All metrics"."""
    from dashboard.wording import EMPTY_COMPLETION

    write_synth_run(roots["cached"], "synth", "multitask", 3.0, accuracy=0.3)
    (roots["cached"] / "synth" / "statement.md").write_text("# Privacy statement\n\n## Released outside the "
                                                           "epsilon\n- metrics.json: <the accuracies>\n")
    _, document = report_of("synth", figures=False)
    # rendered, not raw markdown (a review read its asterisks and hashes); its own "<" stays text
    assert ("<div class='statement'><h1>Privacy statement</h1>\n<h2>Released outside the epsilon</h2>\n<ul>\n"
            "<li>metrics.json: &lt;the accuracies&gt;</li>\n</ul>\n</div>") in document
    # the base config's fields the synthetic run never reads are set apart, not listed beside its own ε
    read = document.split("<h2>Config</h2>")[1].split("<details>")[0]
    assert "privacy.epsilon" in read and "base.privacy.epsilon" not in read and "base.data.corpus" in read
    assert "base.privacy.epsilon" in document.split("<h2>Config</h2>")[1].split("<details>")[1]
    run = write_run(roots["cached"], "canaries", "pri-gpt", canaries="1,10", r_name=0.0125, completions=[""] * 3,
                    phrases=[{"phrase": "my ID is 1", "occurrences": 1, "users": 1, "teachers": None,
                              "epsilon": float("inf"), "kind": "canary", "inserted": 1}])
    run.write_metrics({**run.metrics(), "exposure": {"1": 2.2}, "exposure_detail": [
        {"canary_id": "canary-1x", "inserted": 1, "candidates": 10**6, "method": "sampled", "scored": 4096,
         "more_likely": 882, "rank": 215332.8, "exposure": 2.215, "exposure_low": 2.131, "exposure_high": 2.302}]})
    _, document = report_of("canaries", figures=False)
    assert "<p>Canary exposure (bits;" in document and "<td>2.21</td>" in document and "2.13 to 2.30" in document
    assert "<th>r_name</th><td>1.25%</td>" in document  # a share, as the pages and the statement give it
    # a garbled exposure entry or R_name leaves a blank, not a report that cannot be built
    run.write_metrics({**run.metrics(), "r_name": "abc", "exposure_detail": [
        {"inserted": 1, "candidates": float("nan"), "scored": "many", "exposure": 2.2, "method": "exact"},
        {"inserted": 10, "candidates": 1e6, "scored": "12.5", "exposure": "x", "method": "sampled"}]})
    _, document = report_of("canaries", figures=False)
    assert "<th>r_name</th>" not in document.split("All metrics")[0] and "sampled of 1,000,000" in document
    assert f"<i>{EMPTY_COMPLETION}</i>" in document


def test_headline_csv_keeps_to_one_seed_like_the_overview(roots, app_page):
    """Seed 0 by default (the Overview's and REPORT.md's numbers); every seed on request, with the warning when rows
    average different seeds (a single-seed variant beside three-seed means)."""
    for seed, ppl in ((0, 218.9), (1, 194.7), (2, 199.3)):
        write_run(roots["cached"], f"seq-{seed}", "seqpate", seed=seed, ppl=ppl)
    write_run(roots["cached"], "seq-m5", "seqpate", seed=0, teachers=5, ppl=230.0)
    at = app_page("export")
    write_run(roots["cached"], "quick-pub-seed1", "pub-gpt", preset="quick", seed=1)  # another preset's seeds
    at.selectbox(key="export_table").set_value("headline comparison").run()
    assert at.selectbox(key="export_preset").value == "tiny"  # one preset, as the Overview: it has the most runs
    assert at.selectbox(key="export_seed").value == 0 and not at.warning
    shown = at.dataframe[0].value.set_index("setting")
    assert shown.loc["", "PPL"] == 218.9 and "seeds" not in shown
    at.selectbox(key="export_seed").set_value("every seed (mean)").run()
    shown = at.dataframe[0].value.set_index("setting")
    assert abs(shown.loc["", "PPL"] - 204.3) < 1e-9 and shown.loc["", "seeds"] == "0, 1, 2"
    assert "These rows average different seeds" in at.warning[0].value
    at.selectbox(key="export_preset").set_value("quick").run()  # its only seed is 1: not hidden by tiny's seed 0
    assert at.dataframe[0].value["run ids"].tolist() == ["quick-pub-seed1"]


def test_headline_csv_shows_the_shipped_runs_the_overview_shows(roots, app_page):
    """A walk found the headline CSV quietly swapping in a run made here for the shipped run the Overview shows."""
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0, config={"seqpate__kd_lambda": 20.0})
    write_run(roots["live"], "pub-gpt-today", "pub-gpt", ppl=501.0)
    at = app_page("export")
    at.selectbox(key="export_table").set_value("headline comparison").run()
    assert at.dataframe[0].value["run ids"].tolist() == ["tiny-pub-gpt"]
    assert [x.value for x in at.info if x.value.startswith("Hidden here: pub-gpt-today")]
    at.toggle(key="export_made_here").set_value(True).run()  # the reader's choice, shared with the Overview
    assert at.dataframe[0].value["run ids"].tolist() == ["pub-gpt-today"]
    assert [i for i in at.info if "replace shipped runs" in i.value]
    at.switch_page("views/overview.py").run()
    assert at.dataframe[0].value["run ids"].tolist() == ["pub-gpt-today"]


def test_a_run_table_opens_on_a_run_that_has_it(roots, app_page):
    write_run(roots["cached"], "seq", "seqpate", phrases=phrase_rows())
    write_synth_run(roots["cached"], "synth", "filter", 3.0, accuracy=0.3)  # the newest: no phrases.csv
    at = app_page("export")
    at.selectbox(key="export_table").set_value("progress of a run").run()
    assert at.selectbox(key="export_table_run_progress").value == "synth"  # every run has a progress file
    at.selectbox(key="export_table").set_value("phrases of a run").run()  # from another table, too
    assert at.selectbox(key="export_table_run_phrases").value == "seq" and not at.info  # not "This table is empty."
    assert len(at.dataframe[0].value) == len(phrase_rows())


def test_report_sets_apart_the_config_fields_a_method_never_read(roots):
    """A walk read a Pub-GPT report's ε = 0 above a Config table listing the preset's privacy.epsilon 3, which
    Pub-GPT never reads: such fields go under their own heading (core.config.effective_config decides)."""
    write_run(roots["cached"], "pub", "pub-gpt")
    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)
    write_synth_run(roots["cached"], "synth", "multitask", 16.0, accuracy=0.3, separability=0.4)

    def config_tables(run_id):
        section = report_of(run_id, figures=False)[1].split("<h2>Config</h2>")[1]
        read, _, unread = section.partition("<details>")
        fields = re.compile(r"<tr><th>([\w.]+)</th>")
        return fields.findall(read), fields.findall(unread)

    read, unread = config_tables("pub")
    assert "privacy.epsilon" in unread and "privacy.epsilon" not in read
    assert "seqpate.teachers" in unread and "data.max_tokens" in read and "method" in read
    read, unread = config_tables("seq")
    assert "privacy.epsilon" in read and "seqpate.teachers" in read
    assert "dpsgd.lr" in unread and not any(k.startswith("dpsgd.") for k in read)
    assert "seqpate.executor" in unread  # how teachers ran, not what they computed
    read, unread = config_tables("synth")
    assert "privacy.epsilon" in read and "synth.generator" in read and "base.data.corpus" in read
    # its base config builds the public base model only (data, model, seed): its ε and SeqPATE settings are unread
    assert "base.privacy.epsilon" in unread and "base.seqpate.teachers" in unread and "base.method" in unread
    assert all(k.startswith("base.") for k in unread)


def test_report_opens_on_the_preset_the_other_pages_show(roots, app_page):
    """A walk found the report opening on a quick run while the Overview opened on tiny: it follows the preset last
    chosen on any page, else the one with most runs, as the other pages' pickers do."""
    cached = roots["cached"]
    write_run(cached, "tiny-a", "seqpate", epsilon=3.0)
    write_run(cached, "tiny-b", "pub-gpt")
    write_run(cached, "quick-seq", "seqpate", preset="quick", epsilon=3.0)  # the newest
    at = app_page("export")
    assert at.selectbox(key="export_report_run").value == "tiny-a"
    at = app_page(query={"overview_preset": "quick"})  # the Overview opened on quick (by a link or a click)
    at.switch_page("views/export.py").run()
    assert at.selectbox(key="export_report_run").value == "quick-seq"
    write_run(cached, "tiny-seq-seed1", "seqpate", epsilon=3.0, seed=1)
    write_run(cached, "quick-seq-seed1", "seqpate", preset="quick", epsilon=3.0, seed=1)
    shutil.rmtree(cached / "tiny-a")  # tiny's SeqPATE now has seed 1 only; quick's has seeds 0 and 1
    at = app_page("export")
    assert at.selectbox(key="export_report_run").value == "tiny-seq-seed1"  # the preset first, then its lowest seed


def test_the_guarantees_colour_comes_from_the_run_not_from_the_sentences_wording():
    """It matched "NOT PRIVATE" and "heuristic" in the one-line statement: a reworded sentence would have turned a
    card green."""
    from dashboard.report import statement_class

    plain = {"method": "seqpate", "epsilon": 3.0, "privacy_target": "sample"}
    assert statement_class(plain) == "ok"
    assert statement_class({**plain, "epsilon": 0.0}) == "ok"  # public only: nothing private to protect
    assert statement_class({**plain, "epsilon": math.inf}) == "bad"
    assert statement_class({**plain, "epsilon": None}) == statement_class({**plain, "epsilon": math.nan}) == "bad"
    assert statement_class({**plain, "shared_streams": True}) == "warn"
    assert statement_class({**plain, "method": "adp"}) == "warn"
    assert statement_class({**plain, "privacy_target": "phrase-avg"}) == "warn"
    assert statement_class({**plain, "method": "adp", "epsilon": math.inf}) == "bad"
