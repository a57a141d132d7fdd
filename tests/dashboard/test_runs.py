"""Runs: every run with state and progress, a failed run's error, config compare, delete, rerun."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import pytest
from apptest_helpers import plotly_specs, texts
from fake_runs import write_run, write_synth_run

from core.runs import jobs
from dashboard import loading, tables, wording


@pytest.fixture
def some_runs(roots):
    write_run(roots["cached"], "cached-seq", "seqpate", epsilon=3.0, seed=0)
    write_run(roots["live"], "live-seq", "seqpate", epsilon=8.0, seed=1)
    write_run(roots["live"], "live-failed", "seqpate", state="failed", stage="teachers",
              error="RuntimeError: teacher 3 diverged", log="line one\nteacher 3: loss nan\n")
    write_run(roots["live"], "live-running", "pub-gpt", state="running", progress=0.25)
    return roots


def test_lists_every_run_with_state_and_progress(some_runs, app_page):
    at = app_page("runs")
    assert not at.exception
    table = at.dataframe[0].value
    rows = {r["run"]: r for r in table.to_dict("records")}
    assert set(rows) == {"cached-seq", "live-seq", "live-failed", "live-running"}
    # where each run is comes first: at a projector's 1024 px only about six columns show
    assert list(table.columns[:4]) == ["run", "state", "progress", "remaining"]
    assert rows["live-running"]["state"] == "running"
    assert rows["live-running"]["progress"] == 0.25
    assert rows["live-running"]["ε"] == 0.0  # Pub-GPT, before its privacy.json: its fixed epsilon, not the config's
    records = {r["run_id"]: r for r in loading.runs_frame().to_dict("records")}
    assert records["live-running"]["delta"] == 0.0 and records["live-seq"]["delta"] == 1e-6  # not its config's 1e-6
    assert rows["live-running"]["δ"] == "0" and rows["live-seq"]["δ"] == "1e-06"  # ε is read with its δ
    assert all(isinstance(row["elapsed"], float) for row in rows.values())  # minutes: sorts as numbers
    # only a run still to finish has time remaining; a finished run's cell is blank, not "0.0 min"
    assert math.isnan(rows["cached-seq"]["remaining"]) and math.isnan(rows["live-failed"]["remaining"])
    assert at.dataframe[0].proto.placeholder == ""  # a missing value shows blank, not "None"
    # named as the other pages name them
    assert rows["cached-seq"]["source"] == "shipped" and rows["live-seq"]["source"] == "made here"
    assert rows["live-failed"]["error"] == "RuntimeError: teacher 3 diverged"
    for run, root in (("cached-seq", "cached"), ("live-seq", "live")):  # numbers, so the column sorts as numbers
        accounted = json.loads((some_runs[root] / run / "privacy.json").read_text())["epsilon"]
        assert rows[run]["ε"] == accounted and isinstance(rows[run]["ε"], float)
    captions = " ".join(caption.value for caption in at.caption)
    assert {"done: 2", "failed: 1", "running: 1"} <= set(captions.split("  —")[0].split(" · "))
    assert "runs shown" not in captions
    at.multiselect(key="runs_states").set_value(["done", "running"]).run()  # no error among the runs shown:
    assert "error" not in at.dataframe[0].value.columns  # no empty column that widens the table past the page
    # the running run is selected first; its cancel button is enabled, delete is not
    assert at.selectbox(key="runs_selected").value == "live-running"
    [estimate] = [m for m in at.metric if m.label == "remaining (est.)"]
    assert estimate.proto.help.startswith("from the pace so far (no finished run")  # no finished Pub-GPT run
    assert not at.button(key="runs_cancel").disabled
    assert at.button(key="runs_delete").disabled
    assert "data and model" not in at.dataframe[0].value.columns  # every run on chitchat and the tiny model
    write_run(some_runs["live"], "live-europarl", "pub-gpt", config={"data__corpus": "/data/ep.txt"})
    rows = {r["run"]: r for r in app_page("runs").dataframe[0].value.to_dict("records")}
    assert rows["live-europarl"]["data and model"] == "/data/ep.txt" and rows["live-seq"]["data and model"] == "chitchat"


def test_the_selected_run_is_in_the_url_and_a_bad_link_is_named(some_runs):
    """A reload lost the run whose details showed (dashboard review). Streamlit writes the option's label to the
    URL ("run  ·  Method"): the page reads the run id from its start; a link may name the id alone."""
    from apptest_helpers import APP
    from streamlit.testing.v1 import AppTest

    def opened_by_link(value: str) -> AppTest:  # the link's parameters are there from the session's first run
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.query_params["runs_selected"] = value
        at.run()
        return at.switch_page("views/runs.py").run()

    ids = list(loading.runs_frame()["run_id"])
    for value in (ids[-1], f"{ids[-2]}{wording.OPTION_SEPARATOR}SeqPATE"):
        at = opened_by_link(value)
        assert at.selectbox(key="runs_selected").value == value.split(wording.OPTION_SEPARATOR)[0]
        assert not [w for w in at.warning if "link" in w.value]
    at = opened_by_link("no-such-run")
    assert [w.value for w in at.warning if "link" in w.value] == [
        f"The link's runs_selected=no-such-run is not a run here: showing {at.selectbox(key='runs_selected').value}."]


def test_failed_run_shows_its_error_and_log(some_runs, app_page):
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-failed").run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("RuntimeError: teacher 3 diverged" in e and "teachers" in e for e in errors), errors
    assert any("teacher 3: loss nan" in code.value for code in at.code)


def test_a_run_that_lost_its_config_is_named_failed_and_the_page_still_works(some_runs, app_page):
    """Its method read as NaN, which the run picker joined into a label: a TypeError replaced the details, Cancel,
    the log and Compare of every run."""
    write_run(some_runs["live"], "no-config", "seqpate")
    (some_runs["live"] / "no-config" / "config.json").unlink()
    at = app_page("runs")
    assert not at.exception
    at.selectbox(key="runs_selected").set_value("no-config").run()
    assert not at.exception
    assert [m.proto.body for m in at.metric if m.label == "state"] == ["failed"]
    assert any("config.json" in e.value for e in at.error)


def test_a_run_with_an_unreadable_status_names_why_it_failed(some_runs, app_page):
    """It said "Failed at stage nan: nan" (pandas 3 keeps a missing text field as NaN), where `core runs list`
    names the unreadable file."""
    write_run(some_runs["live"], "garbled", "seqpate")
    (some_runs["live"] / "garbled" / "status.json").write_text("{garbled")
    write_run(some_runs["live"], "no-error", "seqpate", state="failed", stage="teachers")  # none recorded
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("garbled").run()
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith("Failed at stage ?: unreadable run files: invalid JSON in ")
    assert "status.json" in error and "nan" not in error
    assert [m.proto.body for m in at.metric if m.label == "state"] == ["failed"]
    assert "stage: –" in [m.proto.delta for m in at.metric if m.label == "state"]
    at.selectbox(key="runs_selected").set_value("no-error").run()
    assert [e.value for e in at.error] == ["Failed at stage teachers: no error recorded"]


def test_a_finished_run_states_its_privacy_and_utility(some_runs, app_page):
    write_synth_run(some_runs["live"], "live-synth", "multitask", 3.0, 0.412)
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-seq").run()
    assert "PPL 120.00  ·  BLEU-4 2.50" in texts(at)
    assert {m.label: m.value for m in at.metric}["remaining (est.)"] == "–"  # blank once it ended, as in the table
    at.selectbox(key="runs_selected").set_value("live-synth").run()
    assert not at.exception
    # a synthetic-data run has no PPL or BLEU: its utility is the classifier trained on its synthetic set
    [utility] = [t for t in texts(at).splitlines() if "accuracy on real test text" in t]
    assert "accuracy on real test text 0.412 (real train data: 0.600)" in utility and "PPL" not in utility
    assert not [e for e in at.expander if e.label.startswith("Privacy statement")]  # this run has none


def test_a_finished_run_shows_its_statement(some_runs, app_page):
    (some_runs["live"] / "live-seq" / "statement.md").write_text(
        "# Privacy statement: live-seq\n\n## What is protected\n\n**Protected unit: one sentence.** zero-out "
        "neighbours\n")
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-seq").run()
    [statement] = [e for e in at.expander if e.label == "Privacy statement (statement.md)"]
    shown = " ".join(m.value for m in statement.markdown)
    assert "zero-out neighbours" in shown
    # the expander names it: no page-sized title inside, and section headings are small
    assert "Privacy statement: live-seq" not in shown and "#### What is protected" in shown
    assert "\n## " not in shown


def test_the_state_counts_are_of_the_rows_shown(some_runs, app_page):
    at = app_page("runs")
    at.text_input(key="runs_search").set_value("live-").run()
    captions = " ".join(caption.value for caption in at.caption)
    assert captions.startswith("3 of 4 runs shown · ")
    assert set(captions.split("  —")[0].split(" · ")[1:]) == {"done: 1", "failed: 1", "running: 1"}  # no cached-seq


def test_search_finds_the_method_names_the_table_shows_and_hides_details_when_nothing_matches(some_runs, app_page):
    write_run(some_runs["live"], "live-a", "adp", epsilon=3.0)
    at = app_page("runs")
    # the table says "Adaptive DP", not adp: typing what it shows (with a stray space) finds the run
    assert wording.method_label("adp") == "Adaptive DP"
    at.text_input(key="runs_search").set_value(" adaptive dp ").run()
    assert " ".join(cap.value for cap in at.caption).startswith("1 of 5 runs shown")
    assert at.selectbox(key="runs_selected").value == "live-a"
    at.text_input(key="runs_search").set_value("no such run").run()
    assert any(cap.value == "No run matches the filters above." for cap in at.caption)
    assert not at.exception and not [s for s in at.selectbox if s.key == "runs_selected"]  # no details of a hidden run


def test_config_compare_shows_only_differing_fields(some_runs, app_page):
    at = app_page("runs")
    at.selectbox(key="runs_cmp_a").set_value("cached-seq").run()  # one widget at a time, as in a browser
    at.selectbox(key="runs_cmp_b").set_value("live-seq").run()
    assert not at.exception
    diff = at.dataframe[-1].value
    assert set(diff["field"]) == {"privacy.epsilon", "seed"}
    row = diff.set_index("field").loc["privacy.epsilon"]
    assert (row["A"], row["B"]) == ("3.0", "8.0")
    at.selectbox(key="runs_cmp_b").set_value("cached-seq").run()  # the same run twice is not "Same config."
    assert not at.exception and not at.success
    assert any("the same run" in info.value for info in at.info)


def all_ids_partner(at, run_a: str) -> str:
    """The run the page's compare_partner gives for run A, from the page's own list (newest first)."""
    ids = at.selectbox(key="runs_cmp_a").options
    records = loading.run_records(loading.list_infos())
    return ids[loading.compare_partner(records, ids.index(run_a))]


def test_compare_opens_on_a_partner_of_the_same_preset_and_seed(roots, app_page):
    # written oldest first: the list is newest first (d, c, b, a), and only a shares d's preset and seed
    write_run(roots["cached"], "a-partner", "pub-gpt", preset="quick", seed=1)
    write_run(roots["cached"], "b-other-seed", "pub-gpt", preset="quick", seed=0)
    write_run(roots["cached"], "c-other-preset", "pub-gpt", preset="tiny", seed=1)
    write_run(roots["cached"], "d-first", "seqpate", preset="quick", seed=1)
    at = app_page("runs")
    assert not at.exception
    assert at.selectbox(key="runs_cmp_a").value == "d-first"
    assert at.selectbox(key="runs_cmp_b").value == "a-partner"
    at.selectbox(key="runs_cmp_b").set_value("d-first").run()  # a B chosen by hand ...
    at.selectbox(key="runs_cmp_a").set_value("b-other-seed").run()  # ... gives way to the new A's partner
    assert at.selectbox(key="runs_cmp_b").value == all_ids_partner(at, "b-other-seed")
    assert at.selectbox(key="runs_cmp_b").value != "d-first"
    at.selectbox(key="runs_cmp_a").set_value("d-first").run()
    at.selectbox(key="runs_cmp_b").set_value("c-other-preset").run()
    shutil.rmtree(roots["cached"] / "d-first")  # run A deleted: the new A brings its partner (a walk saw B stay)
    at.run()
    assert at.selectbox(key="runs_cmp_a").value == "c-other-preset"
    assert at.selectbox(key="runs_cmp_b").value == all_ids_partner(at, "c-other-preset")
    records = [{"preset": "quick", "seed": 1, "state": "done"}, {"preset": "tiny", "seed": 1, "state": "done"},
               {"preset": "tiny", "seed": 1, "state": "failed"}, {"preset": "tiny", "seed": 1, "state": "done"}]
    assert loading.compare_partner(records) == 1  # none shares quick: the next run
    assert loading.compare_partner(records, a=1) == 3  # the partner of the chosen run A, a finished one first
    # of A's kind (a synthetic-data run has nothing to compare a perplexity with), then A's method
    records = [{"method": "pub-gpt", "preset": "tiny", "seed": 0, "state": "done"},
               {"method": "synth-pplm", "preset": "tiny", "seed": 0, "state": "done"},
               {"method": "seqpate", "preset": "tiny", "seed": 0, "state": "done"},
               {"method": "pub-gpt", "preset": "tiny", "seed": 0, "state": "done"}]
    assert loading.compare_partner(records) == 3
    assert loading.compare_partner(records[:3]) == 2
    # a run made here beside several shipped copies of its config: the one the pages show (the plainest id), as a
    # walk saw B open on tiny-seqpate-teachers10 where the Overview shows another copy
    copy = {"method": "seqpate", "preset": "tiny", "seed": 0, "state": "done", "effective_hash": "h"}
    records = [{**copy, "run_id": "mine", "source": "live"}, {**copy, "run_id": "tiny-seqpate-teachers10",
               "source": "cached"}, {**copy, "run_id": "tiny-seqpate-ablationnone", "source": "cached"},
               {**copy, "run_id": "tiny-seqpate-eps3", "source": "cached"}]
    assert loading.compare_partner(records) == 3


def test_a_run_says_where_it_computed_and_compare_names_a_device_difference(roots, app_page):
    """SEQPATE_DEVICE=cuda runs compute on a GPU; the same config and base model then differ in the last bits, which
    training amplifies (tiny SeqPATE from one base: 980.75 on the CPU, 986.19 on an H100)."""
    from core.runs.store import RunDir

    def on(run: RunDir, device: str | None) -> None:
        metrics = {k: v for k, v in run.metrics().items() if k != "device"}
        run.write_metrics({**metrics, "base_model": {"source": "tiny", "weights_sha256": "1b287bb1c1cae4f6"}}
                          | ({"device": device} if device else {}))

    on(write_run(roots["live"], "on-cpu", "seqpate", ppl=980.75), "cpu")
    on(write_run(roots["live"], "on-gpu", "seqpate", ppl=986.19), "cuda")
    on(write_run(roots["live"], "before", "seqpate", ppl=980.75), None)  # written before runs recorded it
    running = write_run(roots["live"], "running", "seqpate", state="running", stage="teachers", progress=0.3)
    running.set_status(device="cuda")  # a run names its device in status.json as it starts
    write_run(roots["live"], "queued", "seqpate", state="queued")
    at = app_page("runs")
    for run_id, said in (("on-gpu", "on the GPU"), ("on-cpu", "on the CPU"), ("before", "on the CPU"),
                         ("running", "on the GPU"), ("queued", None)):
        at.selectbox(key="runs_selected").set_value(run_id).run()
        assert ({m.label: m.delta for m in at.metric}["elapsed"] or None) == said, run_id
    at.selectbox(key="runs_cmp_a").set_value("on-cpu").run()
    at.selectbox(key="runs_cmp_b").set_value("on-gpu").run()
    assert "**A**: PPL 980.75  ·  **B**: PPL 986.19" in [m.value for m in at.markdown]  # both numbers, always
    [warning] = [w.value for w in at.warning]
    assert warning == ("A (PPL 980.75) and B (PPL 986.19) computed on different devices (A on cpu, B on cuda: "
                       "SEQPATE_DEVICE), where float rounding and random draws differ, which training amplifies, so "
                       "their results can differ by more than their configs.")
    at.selectbox(key="runs_cmp_b").set_value("before").run()  # one base model, both on the CPU: nothing to warn about
    assert not at.warning


def test_compare_says_when_two_configs_differ_only_in_fields_the_method_never_reads(roots, app_page):
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", config={"seqpate__kd_lambda": 20.0})
    write_run(roots["live"], "pub-gpt-today", "pub-gpt")
    write_run(roots["live"], "seq-today", "seqpate", config={"seqpate__kd_lambda": 20.0})
    at = app_page("runs")
    at.selectbox(key="runs_cmp_a").set_value("pub-gpt-today").run()
    at.selectbox(key="runs_cmp_b").set_value("tiny-pub-gpt").run()
    assert list(at.dataframe[-1].value["field"]) == ["seqpate.kd_lambda"]
    assert [s.value for s in at.success] == [
        "Same run settings: the field that differs (below) is one Pub-GPT never reads, so the pages treat the "
        "two runs as copies (one row: the shipped one, or with \"Runs made here in place of their shipped copies\" "
        "on, the newest finished run made here)."]
    at.selectbox(key="runs_cmp_b").set_value("seq-today").run()  # another method: kd_lambda is read by SeqPATE
    assert not at.success
    # each differing field says which run never read it: kd_lambda shaped SeqPATE's run, not Pub-GPT's
    diff = at.dataframe[-1].value.set_index("field")
    assert diff.loc["seqpate.kd_lambda", "never read by"] == "A" and diff.loc["method", "never read by"] == ""


def test_the_source_filter_keeps_the_runs_of_the_chosen_sources(some_runs, app_page):
    at = app_page("runs")
    pills = at.get("button_group")[0]
    assert pills.value == ["live", "cached"]
    pills.set_value(["cached"]).run()
    assert set(at.dataframe[0].value["run"]) == {"cached-seq"}
    pills.set_value([]).run()  # none chosen: no run, said as such
    assert "No run matches the filters above." in [x.value for x in at.caption] and not at.exception


def test_the_same_settings_are_copies_only_among_finished_runs(roots, app_page):
    """A cancelled run and a finished one of the same settings were "treated as copies by the pages", which show
    finished runs only."""
    write_run(roots["live"], "pub-done", "pub-gpt")
    write_run(roots["live"], "pub-cancelled", "pub-gpt", state="cancelled", config={"seqpate__kd_lambda": 20.0})
    at = app_page("runs")
    at.selectbox(key="runs_cmp_a").set_value("pub-cancelled").run()
    at.selectbox(key="runs_cmp_b").set_value("pub-done").run()
    # the box says how many differ, as the caption below it ("these fields" over "4 differing field(s)" read as a
    # contradiction to a walk)
    assert [x.value for x in at.success] == [
        "Same run settings: the field that differs (below) is one Pub-GPT never reads."]
    assert "1 field differs (below); equal fields are hidden." in [x.value for x in at.caption]


def test_a_synthetic_runs_training_chart_says_its_loss_is_outside_its_epsilon(roots, app_page):
    """The DP fine-tuning loss of a synthetic-data run is averaged over private batches without noise: the chart
    showed it with no word, where DP-SGD's says why it logs none."""
    write_synth_run(roots["cached"], "synth", "multitask", 3.0, accuracy=0.3)
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("synth").run()
    at.toggle(key="runs_show_progress").set_value(True).run()
    assert not at.exception and ("A synthetic-data run logs its DP fine-tuning loss per epoch, averaged over private "
                                 "batches without noise: outside its ε, as its privacy statement (statement.md) "
                                 "says.") in [x.value for x in at.caption]


def test_compare_warns_when_two_runs_stand_on_other_base_models(roots, app_page):
    """A browser walk compared its run (PPL 989) with the shipped run of its settings (909) and read only "Same
    config."; a run made here trains from this machine's base model, the shipped ones from theirs."""
    from core.runs.store import RunDir

    def with_base(run: RunDir, digest: str | None) -> None:
        run.write_metrics({**run.metrics(), "base_model": {"source": "tiny", "cached": True}
                           | ({"weights_sha256": digest} if digest else {})})

    with_base(write_run(roots["cached"], "shipped", "seqpate", ppl=909.34), None)
    with_base(write_run(roots["live"], "mine", "seqpate", ppl=989.01), "1b287bb1c1cae4f6")
    with_base(write_run(roots["live"], "mine-again", "seqpate", ppl=989.01), "1b287bb1c1cae4f6")
    at = app_page("runs")
    at.selectbox(key="runs_cmp_a").set_value("mine").run()
    assert at.selectbox(key="runs_cmp_b").value == "shipped"  # B opens on the shipped run of A's config
    assert not at.success and [s.value for s in at.info] == ["Same config, but the base models may differ (above)."]
    assert not at.get("doc_string")  # the note was an expression statement: Streamlit's magic wrote st.help of it
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("A (PPL 989.01) and B (PPL 909.34): one was made on this machine, the other is a "
                              "shipped run") and "can differ by more than their configs" in warning
    at.selectbox(key="runs_cmp_b").set_value("mine-again").run()  # one base model: nothing to warn about
    assert not at.warning and [s.value for s in at.success] == ["Same config."]
    with_base(RunDir(roots["live"] / "mine-again"), "ffffffffffffffff")
    at.run()
    [warning] = [w.value for w in at.warning]
    assert "trained from different base models (their weights digests 1b287bb1c1cae4f6 and ffffffffffffffff" in warning
    # runs of other settings: the differing fields are not the whole story either (a reviewer compared a run made
    # here, 5 teachers, with the shipped run at 10 and read the gap as the teachers')
    with_base(write_run(roots["cached"], "shipped-m5", "seqpate", teachers=5, ppl=905.16), None)
    at.run()
    at.selectbox(key="runs_cmp_b").set_value("shipped-m5").run()
    assert not at.warning
    [fields] = [c.value for c in at.caption if "equal fields are hidden" in c.value]
    assert fields.startswith("1 field differs (below); equal fields are hidden. Not the fields alone: A (PPL 989.01) "
                             "and B (PPL 905.16): one was made on this machine, the other is a shipped run")
    # two shipped runs of which one records its base (ADP's canary runs, made here and shipped, beside the older
    # ones): a browser review read their gap as the canaries' alone
    note = tables.base_model_note({"ppl": 909.19, "source": "cached", "base_weights": "8867e2a78e365b32"},
                                  {"ppl": 893.80, "source": "cached"})
    assert note.startswith("A (PPL 909.19) and B (PPL 893.80): only A records its base model's weights digest "
                           "(8867e2a78e365b32); B was made before digests were recorded (2026-11-25)")
    # ... where the one without is a run that did not finish (its digest is in the metrics.json it never wrote),
    # not a run of before digests
    note = tables.base_model_note({"ppl": 909.19, "source": "live", "base_weights": "8867e2a78e365b32",
                                   "state": "done"}, {"source": "live", "state": "cancelled"})
    assert "only A records its base model's weights digest (8867e2a78e365b32); B did not finish (cancelled) and " \
        "records none, so the two may" in note and "2026-11-25" not in note
    # a run without a perplexity (cancelled) says so instead of leaving A bare beside B's number
    note = tables.base_model_note({"state": "cancelled", "source": "live"}, {"ppl": 762.04, "source": "cached"})
    assert note.startswith(
        "A (cancelled, no PPL) and B (PPL 762.04): one was made on this machine")


def test_compare_shows_the_paired_perplexity_interval_when_both_runs_kept_test_nll(some_runs, app_page):
    import math

    from core.runs.store import RunDir

    base = [(5.0 * tokens + 0.1 * (i % 7), tokens) for i, tokens in enumerate([8, 12, 5, 20, 9] * 40)]
    write_run(some_runs["live"], "live-a", "seqpate", seed=1).write_test_nll(base)
    write_run(some_runs["live"], "live-b", "pub-gpt", seed=1).write_test_nll([(n + 0.03 * t, t) for n, t in base])
    at = app_page("runs")
    at.selectbox(key="runs_cmp_a").set_value("live-a").run()
    at.selectbox(key="runs_cmp_b").set_value("live-b").run()
    assert not at.exception
    shown = [i.value for i in at.info if "Test perplexity" in i.value]
    assert len(shown) == 1 and f"{math.exp(-0.03):.4f}" in shown[0] and "A is lower" in shown[0]
    # a run with another seed was scored on other sentences: said, not computed
    at.selectbox(key="runs_cmp_b").set_value("cached-seq").run()
    assert not [i for i in at.info if "Test perplexity" in i.value]
    RunDir(some_runs["cached"] / "cached-seq").write_test_nll(base)
    at.run()
    assert any("seed" in caption.value for caption in at.caption)


def test_delete_live_run_but_never_cached(some_runs, app_page):
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("cached-seq").run()
    assert at.button(key="runs_delete").disabled
    at.selectbox(key="runs_selected").set_value("live-seq").run()
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_yes").click().run()
    assert not at.exception
    assert not (some_runs["live"] / "live-seq").exists()
    assert (some_runs["cached"] / "cached-seq").exists()
    assert "deleted live-seq" in texts(at)


def test_a_synthetic_data_run_is_rerun_as_a_job_of_its_config(roots, app_page, tmp_path, monkeypatch):
    """Rerun was disabled for a synthetic-data run (jobs ran text-generation configs: a walk's rerun had failed with
    "unknown method"); `core job` now runs its config.json as `core synth --config` reads it."""
    script = tmp_path / "fake_job.py"
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    shipped = Path(__file__).resolve().parents[2] / "cached_runs" / "synth-tiny-filter-eps3"
    shutil.copytree(shipped, roots["cached"] / "synth")
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("synth").run()
    assert not at.button(key="runs_rerun").disabled
    at.button(key="runs_rerun").click().run()
    at.button(key="runs_rerun_yes").click().run()
    assert not at.exception and not at.error
    [new] = [p for p in roots["live"].iterdir() if (p / "config.json").is_file()]
    launched, original = (json.loads((d / "config.json").read_text())["config"] for d in (new, shipped))
    assert launched == original and f"launched {new.name}" in texts(at)


def test_rerun_launches_the_same_config(some_runs, app_page, tmp_path, monkeypatch):
    script = tmp_path / "fake_job.py"
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("cached-seq").run()
    live_before = set(some_runs["live"].iterdir())
    at.button(key="runs_rerun").click().run()
    assert any("with the config of `cached-seq`" in w.value for w in at.warning)  # asked first
    # a shipped run's rerun stands on this machine's base model (quick's is trained first on a fresh clone)
    assert any(w.value.endswith("A rerun trains from this machine's public base model (trained first where none is "
                                "cached for its preset and seed), not the shipped run's, so its numbers can differ.")
               for w in at.warning)
    at.button(key="runs_rerun_no").click().run()
    assert set(some_runs["live"].iterdir()) == live_before and not at.warning  # "Keep" launches nothing
    at.button(key="runs_rerun").click().run()
    at.selectbox(key="runs_selected").set_value("live-seq").run()  # another run: the question is dropped ...
    at.selectbox(key="runs_selected").set_value("cached-seq").run()
    assert not at.warning  # ... and does not come back with the first run
    at.button(key="runs_rerun").click().run()
    at.button(key="runs_rerun_yes").click().run()
    assert not at.exception
    original = json.loads((some_runs["cached"] / "cached-seq" / "config.json").read_text())
    new = [p for p in some_runs["live"].iterdir()
           if p.name not in ("live-seq", "live-failed", "live-running") and not p.name.startswith(".")]
    assert len(new) == 1
    launched = json.loads((new[0] / "config.json").read_text())
    assert launched["config_hash"] == original["config_hash"]
    assert f"launched {new[0].name}" in texts(at)
    # the note outlives the next refreshes (shown once, it was gone at the first 2 s refresh the new job brings) ...
    assert f"launched {new[0].name}" in texts(at.run())
    # ... for FLASH_SECONDS
    at.session_state["runs_flash"] = (f"launched {new[0].name}", time.monotonic() - 60)
    assert f"launched {new[0].name}" not in texts(at.run()) and "runs_flash" not in at.session_state


def test_cancel_asks_first_and_says_what_is_lost(some_runs, app_page, monkeypatch):
    cancelled = []
    monkeypatch.setattr(jobs, "cancel", lambda run: cancelled.append(run.run_id))
    at = app_page("runs")
    assert at.selectbox(key="runs_selected").value == "live-running"
    at.button(key="runs_cancel").click().run()
    [question] = [w.value for w in at.warning]
    assert question.startswith("Cancel `live-running`?") and "at stage" in question and "is lost" in question
    at.button(key="runs_cancel_no").click().run()
    assert not cancelled and not at.warning  # "Keep" cancels nothing
    at.button(key="runs_cancel").click().run()
    at.button(key="runs_cancel_yes").click().run()
    assert not at.exception and cancelled == ["live-running"]
    assert "cancelled live-running" in texts(at)

    def unwritable(run):
        raise PermissionError(f"[Errno 1] Operation not permitted: '{run.path / 'cancel.requested'}'")

    monkeypatch.setattr(jobs, "cancel", unwritable)  # a folder that cannot be written: nothing happened, unseen
    at.button(key="runs_cancel").click().run()
    at.button(key="runs_cancel_yes").click().run()
    assert not at.exception
    assert [e.value for e in at.error if e.value.startswith("could not cancel: [Errno 1] Operation not permitted")]


def test_the_rerun_question_says_how_the_original_ended(some_runs, app_page):
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-failed").run()
    at.button(key="runs_rerun").click().run()
    [question] = [w.value for w in at.warning]
    assert "The original failed at stage teachers" in question and "took" not in question
    metrics = {m.label: (m.value, m.delta) for m in at.metric}  # the stage in small type under the state
    assert metrics["state"] == ("failed", "stage: teachers")


def test_progress_chart_on_request(some_runs, app_page):
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-seq").run()
    assert plotly_specs(at) == []  # plotly only when asked for
    at.toggle(key="runs_show_progress").set_value(True).run()
    assert not at.exception
    spec = plotly_specs(at)[0]
    # a line per stage: the base model's loss and the method's are different quantities (a review saw SeqPATE's
    # warm-up NLL and its student's NLL + KL joined into one line)
    assert {t["name"] for t in spec["data"]} == {"loss (base-model)", "loss (seqpate)", "ε spent"}
    assert spec["layout"]["xaxis"]["title"]["text"] == "minutes since start"
    (some_runs["live"] / "live-seq" / "progress.jsonl").write_text("")  # a finished run that logged none
    at.run()
    assert "This run has logged no loss or ε lines in progress.jsonl." in texts(at)
    assert "DP-SGD and ADP log no loss" not in texts(at)


def test_a_seqpate_run_without_student_losses_says_why(some_runs, app_page):
    """The README says SeqPATE logs its student's loss per epoch; a shipped run's chart showed one warm-up point
    and no word of the student (a reviewer): runs made before 2026-11-26 did not log it."""
    run = write_run(some_runs["live"], "old-seq", "seqpate", epsilon=3.0)
    run.log_progress("student", progress=0.8, message="distilling")  # as before 2026-11-26: no loss on it
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("old-seq").run()
    at.toggle(key="runs_show_progress").set_value(True).run()
    assert "This run logged no student loss: SeqPATE runs made before 2026-11-26" in texts(at)
    run.log_progress("student", progress=0.9, epoch=1, loss=4.1)
    at.run()
    assert not at.exception and "logged no student loss" not in texts(at)


def test_progress_of_a_dp_sgd_run_says_why_its_private_training_shows_no_loss(some_runs, app_page):
    """Only a run whose public stages logged a loss is told "Losses shown come from public stages": plain NoisySGD's
    chart is empty (a review read that sentence under no chart at all)."""
    write_run(some_runs["live"], "live-dpsgd", "noisysgd", epsilon=3.0)
    (some_runs["live"] / "live-dpsgd" / "progress.jsonl").write_text("")
    run = write_run(some_runs["live"], "live-dpsgd-pseudo", "noisysgd+pseudo", epsilon=3.0)
    (run.path / "progress.jsonl").write_text("")
    run.log_progress("pseudo-finetune", progress=0.2, epoch=1, loss=4.2)
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("live-dpsgd").run()
    at.toggle(key="runs_show_progress").set_value(True).run()
    assert not at.exception
    assert "DP-SGD and ADP log no loss of their private training" in texts(at)
    assert "This run has logged no loss or ε lines in progress.jsonl." in texts(at)
    assert "Losses shown come from public stages" not in texts(at)
    at.selectbox(key="runs_selected").set_value("live-dpsgd-pseudo").run()
    assert not at.exception and len(plotly_specs(at)) == 1
    assert "Losses shown come from public stages (base model, pseudo-data warm-up)." in texts(at)


def test_a_running_dp_sgd_run_without_loss_lines_is_not_told_they_are_coming(some_runs, app_page):
    """The chart of a running NoisySGD run said "No loss or ε lines in progress.jsonl yet", though its private
    training logs none."""
    for method in ("noisysgd", "pub-gpt"):
        run = write_run(some_runs["live"], f"running-{method}", method, state="running")
        (run.path / "progress.jsonl").write_text("")
    at = app_page("runs")
    at.selectbox(key="runs_selected").set_value("running-noisysgd").run()
    at.toggle(key="runs_show_progress").set_value(True).run()
    assert not at.exception and "This run has logged no loss or ε lines in progress.jsonl." in texts(at)
    assert "No loss or ε lines in progress.jsonl yet." not in texts(at)
    at.selectbox(key="runs_selected").set_value("running-pub-gpt").run()
    assert "No loss or ε lines in progress.jsonl yet." in texts(at)


def test_progress_chart_spans_the_run_and_names_its_long_stages():
    """SeqPATE logs loss and ε only after its teachers: the chart covers the whole run, on bands per stage, so those
    points read as 'at the end, after 11 minutes of teachers' rather than filling the plot alone."""
    from dashboard import charts

    def at(minute: float) -> str:
        return f"2026-01-01T00:{int(minute):02d}:{round(minute % 1 * 60):02d}+00:00"

    # a line with a message starts its stage; the others end a piece of work (a teacher, an epoch)
    rows = [{"time": at(0), "stage": "data", "message": "loading"}, {"time": at(0.2), "stage": "data"},
            {"time": at(0.5), "stage": "teachers", "teacher": 1}, {"time": at(11), "stage": "teachers", "teacher": 100},
            {"time": at(12), "stage": "warm-up", "loss": 4.7}, {"time": at(12.1), "stage": "student", "loss": 4.0,
                                                                "epsilon_spent": 3.0},
            {"time": at(12.2), "stage": "evaluate", "message": "perplexity"}, {"time": at(12.5), "stage": "done"}]
    fig = charts.run_progress_figure(rows)
    assert fig.layout.xaxis.range == pytest.approx((0, 12.5 * 1.01))
    # the teachers from the end of the data stage to their last; the warm-up from there to its epoch's loss line
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == pytest.approx(
        [(0, 0.2), (0.2, 11), (11, 12), (12, 12.2), (12.2, 12.5)])
    assert [a.text for a in fig.layout.annotations] == ["teachers", "warm-up"]  # the stages wide enough for a name
    assert fig.layout.annotations[0].x == pytest.approx(5.6)  # centred over its band, not at its edge
    assert [t.name for t in fig.data] == ["loss (warm-up)", "loss (student)", "ε spent"]
    assert fig.layout.yaxis2.tickmode == "auto" and fig.layout.yaxis2.range == pytest.approx((0, 3.36))
    # SeqPATE's pseudo data log their start and, since a review saw their minutes shaded as the partition (whose one
    # line follows them), their end: the band is theirs
    pseudo = [{"time": at(0), "stage": "data", "message": "loading"}, {"time": at(0.1), "stage": "data"},
              {"time": at(0.1), "stage": "pseudo-data", "message": "completing"},
              {"time": at(0.5), "stage": "pseudo-data", "sentences": 2000}, {"time": at(0.5), "stage": "partition"},
              {"time": at(0.6), "stage": "teachers", "teacher": 1}, {"time": at(1), "stage": "warm-up", "loss": 4.7}]
    fig = charts.run_progress_figure(pseudo)
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == pytest.approx([(0, 0.1), (0.1, 0.5), (0.5, 0.6), (0.6, 1)])
    assert [a.text for a in fig.layout.annotations] == ["data", "pseudo-data", "teachers", "warm-up"]
    # a start line that is a note (a synthetic-data run's privacy line) keeps none of the next stage's work
    synth = [{"time": at(0), "stage": "privacy", "message": "noise multiplier 1.05"},
             {"time": at(0.5), "stage": "lm-finetune", "step": 20}, {"time": at(1), "stage": "generate", "loss": 4}]
    fig = charts.run_progress_figure(synth)
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == pytest.approx([(0, 0.5), (0.5, 1)])
    assert [a.text for a in fig.layout.annotations] == ["lm-finetune", "generate"]


def test_the_estimate_says_what_paces_a_run_that_trains_its_base_model(roots, app_page):
    """A run that trains its base model (its method starts at 0.5) paced on one that found it trained (at 0.1):
    on the method's time alone, which the help says."""
    from datetime import datetime, timedelta

    def lines(started: datetime, *points: tuple[float, float, dict]) -> str:
        return "".join(json.dumps({"time": (started + timedelta(seconds=s)).isoformat(), "stage": "seqpate",
                                   "progress": p, **extra}) + "\n" for s, p, extra in points)

    ref = write_run(roots["cached"], "ref", "seqpate")
    started = datetime.fromisoformat(json.loads(ref.file("status.json").read_text())["started"])
    ref.file("progress.jsonl").write_text(lines(started, (0, 0.04, {"method_start": 0.1}),
                                                (10, 0.1, {"message": "method seqpate"}), (100, 0.5, {}),
                                                (300, 0.9, {}), (400, 1.0, {})))
    live = write_run(roots["live"], "live", "seqpate", state="running", progress=0.3)
    now = datetime.fromisoformat(json.loads(live.file("status.json").read_text())["started"])
    live.file("progress.jsonl").write_text(lines(now, (0, 0.04, {"method_start": 0.5}), (0, 0.3, {"epoch": 1})))
    at = app_page("runs")
    [estimate] = [m for m in at.metric if m.label == "remaining (est.)"]
    assert estimate.proto.help.startswith("from the pace so far until its method begins")
    live.file("progress.jsonl").write_text(lines(now, (0, 0.04, {"method_start": 0.5}),
                                                 (0, 0.5, {"message": "method seqpate"}), (0, 0.7, {})))
    status = json.loads(live.file("status.json").read_text())
    live.file("status.json").write_text(json.dumps({**status, "progress": 0.7}))
    at = app_page("runs")
    [estimate] = [m for m in at.metric if m.label == "remaining (est.)"]
    assert estimate.proto.help.startswith("paced on ref (it took ") and "method's time alone" in estimate.proto.help
