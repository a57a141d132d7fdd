"""Overview: explanation and diagram, headline table values equal metrics.json, privacy statement cards."""

from __future__ import annotations

import json
import math
import shutil

from apptest_helpers import plotly_specs, texts
from fake_runs import write_run

from core.runs.store import RunDir


def test_empty_overview_says_no_runs(roots, app_page):
    at = app_page()
    assert not at.exception
    assert "No finished runs yet" in texts(at)
    assert at.get("graphviz_chart"), "the SeqPATE diagram is shown even without runs"
    # what ε means is on the first page (it was on Launch only), the tables' "Infinity" included
    primer = " ".join(texts(at).split())
    assert "**Reading ε.**" in primer and "the smaller, the more private" in primer
    # δ read as Launch and the Calculator read it: a slack on every probability, not a chance the bound fails
    assert "δ is a small added probability on every such bound (a slack on every probability, not a chance" in primer
    assert "ε = ∞ (*Infinity* in the tables): trained on private data with no protection" in primer


def test_the_privacy_import_is_warmed_also_after_a_page_that_stops_early(roots, app_page):
    """The warm-up ran after the page only when the page ran to its end: one that called st.stop never started it."""
    from dashboard import privacy_math

    privacy_math._WARMED.clear()
    at = app_page()  # no runs: the Overview says so and stops
    assert "No finished runs yet" in texts(at) and privacy_math._WARMED.is_set()


def test_headline_table_matches_run_files(roots, app_page):
    seq = write_run(roots["cached"], "seq-eps3", "seqpate", epsilon=3.0, ppl=123.456, bleu4=2.75)
    pub = write_run(roots["live"], "pub", "pub-gpt", ppl=300.5, bleu4=0.5)
    write_run(roots["cached"], "pri", "pri-gpt", ppl=80.25, bleu4=4.0)
    write_run(roots["live"], "broken", "seqpate", state="failed", error="boom")  # not finished: not in the table
    at = app_page()
    assert not at.exception
    table = at.dataframe[0].value
    by_method = {row["Method"]: row for row in table.to_dict("records")}
    assert set(by_method) == {"Pub-GPT", "Pri-GPT", "SeqPATE"}
    for run, label in ((seq, "SeqPATE"), (pub, "Pub-GPT")):
        metrics = json.loads((run.path / "metrics.json").read_text())
        privacy = json.loads((run.path / "privacy.json").read_text())
        assert by_method[label]["PPL"] == metrics["ppl"]
        assert by_method[label]["BLEU-4"] == metrics["bleu4"]
        assert by_method[label]["ε"] == privacy["epsilon"]
    assert math.isinf(by_method["Pri-GPT"]["ε"])
    assert by_method["SeqPATE"]["run ids"] == "seq-eps3"
    assert "setting" not in table.columns  # every row is at the defaults: an empty column would say nothing
    assert any("one run each (this preset's runs share one seed)" in x.value for x in at.caption)

    page_text = texts(at)
    assert "NOT PRIVATE" in page_text  # pri-gpt's card
    assert "uses no private data" in page_text  # pub-gpt's card
    assert "analytic-gaussian (exact composition)" in page_text  # seqpate's accountant
    assert "one training sentence (sample level)" in page_text


def test_report_md_is_shown(roots, app_page):
    write_run(roots["cached"], "seq", "seqpate")
    (roots["cached"] / "REPORT.md").write_text("# Shipped runs\n\nSeqPATE beats NoisySGD at eps 3.\n")
    at = app_page()
    assert not at.exception
    assert "SeqPATE beats NoisySGD at eps 3." in texts(at)


def test_overview_compares_one_seed_unless_every_seed_is_asked_for(roots, app_page):
    for seed, ppl in ((0, 218.9), (1, 194.7)):
        write_run(roots["cached"], f"seq-{seed}", "seqpate", seed=seed, ppl=ppl)
        write_run(roots["cached"], f"pub-{seed}", "pub-gpt", seed=seed, ppl=ppl + 5)
    write_run(roots["cached"], "adp-0", "adp", seed=0, ppl=217.4)
    at = app_page()
    assert at.selectbox(key="overview_seed").value == 0  # the lowest seed, as REPORT.md's tables
    rows = at.dataframe[0].value.set_index("Method")
    assert rows.loc["SeqPATE", "PPL"] == 218.9 and rows.loc["Pub-GPT", "PPL"] == 223.9 and "seeds" not in rows
    assert not [w for w in at.warning if "average different seeds" in w.value]  # (ADP's card warns anyway)
    at.selectbox(key="overview_seed").set_value(1).run()
    assert list(at.dataframe[0].value["run ids"]) == ["pub-1", "seq-1"]
    at.selectbox(key="overview_seed").set_value("every seed (mean)").run()
    rows = at.dataframe[0].value.set_index("Method")
    assert rows.loc["SeqPATE", "seeds"] == "0, 1" and rows.loc["Adaptive DP", "seeds"] == "0"
    assert [w for w in at.warning if "but Adaptive DP at ε 3: seed 0" in w.value]


def test_runs_on_another_corpus_are_compared_among_themselves(roots, app_page):
    """A walk's AirDialog SeqPATE run (PPL 2.1) stood among tiny's chitchat runs (about 980) on the Privacy-utility
    axes, named only as made on another base model: other test sentences are not comparable at all."""
    air = {"data__corpus": "/data/air.json", "data__private_test": 50}  # a small corpus needs smaller sizes
    write_run(roots["cached"], "seq", "seqpate", ppl=909.3)
    write_run(roots["cached"], "pub", "pub-gpt", ppl=1000.0)
    at = app_page()
    assert not [s for s in at.selectbox if s.key == "overview_setup"]  # one corpus: nothing to choose
    write_run(roots["live"], "air-seq", "seqpate", ppl=2.13, config=air)
    write_run(roots["live"], "air-pub", "pub-gpt", ppl=2.5, config=air)
    at = app_page()
    air_setup = "/data/air.json · data.private_test 50"
    assert at.selectbox(key="overview_setup").options == ["chitchat", air_setup]
    assert sorted(at.dataframe[0].value["run ids"]) == ["pub", "seq"]
    at.selectbox(key="overview_setup").set_value(air_setup).run()
    # the runs at the preset's defaults on that data, not variants of the chitchat ones
    assert sorted(at.dataframe[0].value["run ids"]) == ["air-pub", "air-seq"] and not at.exception
    # and the privacy cards count that data's runs (they counted every corpus's: "Runs: 2" for one Pub-GPT each)
    assert [m.value.split("Runs: ")[1] for m in at.markdown if "Runs: " in m.value] == ["1", "1"]
    # the curves keep the choice, and draw that data's runs only, variants included
    at.switch_page("views/privacy_utility.py").run()
    assert at.selectbox(key="pu_setup").value == air_setup and not at.exception
    at.toggle(key="pu_variants").set_value(True).run()
    bleu = plotly_specs(at)[0]
    assert {row[0] for trace in bleu["data"] for row in (trace.get("customdata") or [])} == {"air-seq", "air-pub"}


def made_here_in_place(at):
    """Switch on "Runs made here in place of their shipped copies" on the open page (Overview or Privacy-utility)."""
    [toggle] = [t for t in at.toggle if t.label == "Runs made here in place of their shipped copies"]
    return toggle.set_value(True).run()


def test_the_shipped_runs_come_first_and_a_run_made_here_in_their_place_is_named(roots, app_page):
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0, config={"seqpate__kd_lambda": 20.0})
    write_run(roots["live"], "pub-gpt-today", "pub-gpt", ppl=501.0)
    at = app_page()
    assert not at.exception
    # the shipped run REPORT.md quotes, trained on the shipped base model; the run made here is named as hidden
    assert at.dataframe[0].value["run ids"].tolist() == ["tiny-pub-gpt"]
    assert [c.value for c in at.info if c.value.startswith("Hidden here: pub-gpt-today, made on this machine")]
    assert not [i for i in at.info if "replace shipped runs" in i.value]
    made_here_in_place(at)  # the reader's choice: the run made here, with a note naming what it replaces
    assert at.dataframe[0].value["run ids"].tolist() == ["pub-gpt-today"]
    note = ("Runs made here replace shipped runs of the same settings and seed in this view: pub-gpt-today (PPL "
            "501.00) replaces tiny-pub-gpt (PPL 500.00). A run made here trained on this machine's base model")
    assert [i.value[:len(note)] for i in at.info if "replace shipped runs" in i.value] == [note]
    at.switch_page("views/privacy_utility.py").run()  # the choice carries: its curves show the same run
    assert not at.exception and at.toggle(key="pu_made_here").value is True
    assert [i.value[:len(note)] for i in at.info if "replace shipped runs" in i.value] == [note]
    at.toggle(key="pu_made_here").set_value(False).run()
    assert not [i for i in at.info if "replace shipped runs" in i.value]
    at.switch_page("views/overview.py").run()  # and back
    assert at.dataframe[0].value["run ids"].tolist() == ["tiny-pub-gpt"]


def test_the_choice_of_runs_made_here_is_in_the_link(roots, app_page):
    """A reload or a shared link keeps "made here in place": the toggle is bound to the URL, and a link's value
    carries to the other pages as a choice made on the page does."""
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0)
    write_run(roots["live"], "pub-gpt-today", "pub-gpt", ppl=501.0)
    at = app_page()
    assert "overview_made_here" not in at.query_params
    made_here_in_place(at)
    assert at.query_params["overview_made_here"] == "true"
    at.toggle(key="overview_made_here").set_value(False).run()
    assert "overview_made_here" not in at.query_params  # off is the default: a link without it shows shipped runs
    at = app_page(query={"overview_made_here": "true"})  # the link copied while it was on
    assert not at.exception and at.toggle(key="overview_made_here").value is True
    assert at.dataframe[0].value["run ids"].tolist() == ["pub-gpt-today"]
    at.switch_page("views/privacy_utility.py").run()
    assert at.toggle(key="pu_made_here").value is True


def test_every_copy_made_here_is_hidden_and_the_newest_stands_in(roots, app_page):
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0)
    write_run(roots["live"], "pub-gpt-a", "pub-gpt", ppl=501.0)
    write_run(roots["live"], "pub-gpt-b", "pub-gpt", ppl=502.0)  # newer
    at = app_page()
    assert at.dataframe[0].value["run ids"].tolist() == ["tiny-pub-gpt"]  # not the older copy made here
    assert [c.value for c in at.info if c.value.startswith("Hidden here: pub-gpt-a, pub-gpt-b, made")]
    assert made_here_in_place(at).dataframe[0].value["run ids"].tolist() == ["pub-gpt-b"]


def test_a_stand_in_on_the_shipped_runs_base_model_is_not_flagged(roots, app_page):
    """Runs record their base model's weights digest (metrics.json): equal digests, same base and settings."""
    def with_base(run, digest: str) -> None:
        metrics = json.loads(run.file("metrics.json").read_text())
        run.write_metrics({**metrics, "base_model": {"source": "tiny", "weights_sha256": digest}})

    def notes() -> list[str]:
        return [i.value for i in made_here_in_place(app_page()).info if "replace shipped runs" in i.value]

    with_base(write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0), "aaaa")
    today = write_run(roots["live"], "pub-gpt-today", "pub-gpt", ppl=500.0)
    with_base(today, "aaaa")
    assert not notes()
    with_base(today, "bbbb")
    note = ("Runs made here replace shipped runs of the same settings and seed in this view: pub-gpt-today (PPL "
            "500.00) replaces tiny-pub-gpt (PPL 500.00) (another base model: their weights digests differ).")
    assert [n[:len(note)] for n in notes()] == [note]
    # made here under the shipped run's own id (`sweep --out runs` names runs alike): still two base models
    today.path.rename(roots["live"] / "tiny-pub-gpt")
    assert [n for n in notes() if "(another base model: their weights digests differ)" in n]


def test_shipped_copies_of_a_row_are_named(roots, app_page):
    """tiny-seqpate-eps3, -ablationnone and -filter-top-p0.95 are one config run for three sweep plans: the row
    keeps the plainest id, and the note says where the other two went."""
    for run_id in ("tiny-seqpate-eps3", "tiny-seqpate-ablationnone", "tiny-seqpate-filter-top-p0.95"):
        write_run(roots["cached"], run_id, "seqpate")
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt")
    at = app_page()
    assert not at.exception
    assert sorted(at.dataframe[0].value["run ids"]) == ["tiny-pub-gpt", "tiny-seqpate-eps3"]
    assert [i.value for i in at.info if "ship under several names" in i.value] == [
        "Some settings ship under several names, one per sweep plan that needed them, and count once: "
        "tiny-seqpate-eps3 also as tiny-seqpate-ablationnone, tiny-seqpate-filter-top-p0.95. Each row shows the "
        "plainest (shortest) name; the copies were trained separately, so their numbers can differ slightly (thread counts, base "
        "models trained before seeding: \"Reproducing a run\" in the README)."]  # a walk read them as identical


def test_a_preset_with_no_run_at_its_defaults_says_where_its_runs_are(roots, app_page):
    write_run(roots["live"], "sgd-lr", "noisysgd", config={"dpsgd__lr": 1e-4})
    write_run(roots["live"], "pub-lda", "pub-gpt", config={"privacy__target": "phrase-avg"})  # ignored by Pub-GPT
    at = app_page()
    assert not at.exception
    assert at.dataframe[0].value["Method"].tolist() == ["Pub-GPT"]  # not a variant: it never reads the target
    from dashboard import loading

    assert loading.finished_frame().set_index("run_id").loc["pub-lda", "privacy_target"] == "sample"
    roots["live"].joinpath("pub-lda", "status.json").unlink()  # no longer finished
    at = app_page()
    assert any("No finished run at this preset's defaults" in i.value for i in at.info)


def test_the_preset_and_seed_chosen_on_one_page_carry_to_the_others(roots, app_page):
    for preset in ("tiny", "quick"):
        for seed in (0, 1):
            write_run(roots["cached"], f"{preset}-seq-{seed}", "seqpate", preset=preset, seed=seed)
            write_run(roots["cached"], f"{preset}-pub-{seed}", "pub-gpt", preset=preset, seed=seed)
    at = app_page()
    assert at.selectbox(key="overview_preset").value == "tiny" and at.selectbox(key="overview_seed").value == 0
    at.selectbox(key="overview_preset").set_value("quick").run()
    at.selectbox(key="overview_seed").set_value(1).run()
    at.switch_page("views/privacy_utility.py").run()
    assert at.selectbox(key="pu_preset").value == "quick" and at.selectbox(key="pu_seed").value == 1
    at.switch_page("views/overview.py").run()  # and back: the Overview's choice was kept too
    assert at.selectbox(key="overview_preset").value == "quick" and at.selectbox(key="overview_seed").value == 1
    assert sorted(at.dataframe[0].value["run ids"]) == ["quick-pub-1", "quick-seq-1"]
    at.selectbox(key="overview_preset").set_value("tiny").run()
    at.switch_page("views/launch.py").run()  # Launch opens on it too (its own default is quick)
    assert at.selectbox(key="launch_preset").value == "tiny"


def test_launch_follows_the_preset_chosen_on_another_page_since_it_was_open(roots, app_page):
    for preset in ("tiny", "quick"):
        write_run(roots["cached"], f"{preset}-seq", "seqpate", preset=preset)
    write_run(roots["cached"], "quick-pub", "pub-gpt", preset="quick")  # the Overview opens on quick
    at = app_page("launch")  # Launch first: its own default
    assert at.selectbox(key="launch_preset").value == "quick"
    at.switch_page("views/overview.py").run()
    at.selectbox(key="overview_preset").set_value("tiny").run()
    at.switch_page("views/launch.py").run()  # chosen elsewhere since Launch was last open: followed
    assert at.selectbox(key="launch_preset").value == "tiny"
    at.selectbox(key="launch_preset").set_value("paper").run()  # a choice made on Launch stays there
    at.switch_page("views/calculator.py").run()
    at.switch_page("views/launch.py").run()
    assert at.selectbox(key="launch_preset").value == "paper"
    at = app_page("launch", {"preset": "paper"})  # a link's preset is what it says
    assert at.selectbox(key="launch_preset").value == "paper"


def test_a_link_names_the_preset_and_seed_and_they_carry_to_the_other_pages(roots, app_page):
    for preset in ("tiny", "quick"):
        for seed in (0, 1):
            write_run(roots["cached"], f"{preset}-seq-{seed}", "seqpate", preset=preset, seed=seed)
    at = app_page(query={"overview_preset": "quick", "overview_seed": "1"})  # a shared link
    assert at.selectbox(key="overview_preset").value == "quick" and at.selectbox(key="overview_seed").value == 1
    assert at.dataframe[0].value["run ids"].tolist() == ["quick-seq-1"]
    at.switch_page("views/completions.py").run()  # set by the link, not by a click: carried all the same
    assert at.selectbox(key="comp_preset").value == "quick" and at.selectbox(key="comp_seed").value == 1


def test_a_link_value_that_is_not_a_choice_is_named_once_not_dropped_silently(roots, app_page):
    for seed in (0, 1):
        write_run(roots["cached"], f"quick-seq-{seed}", "seqpate", preset="quick", seed=seed)
    at = app_page(query={"overview_preset": "quick", "overview_seed": "7"})
    assert at.selectbox(key="overview_seed").value == 0
    assert [w.value for w in at.warning if "link" in w.value] == [
        "The link's overview_seed=7 is not one of this page's choices (0, 1, every seed (mean)): showing 0."]
    assert not [w for w in at.run().warning if "link" in w.value]  # said once, on opening the link
    at = app_page(query={"overview_preset": "quick", "overview_seed": "every seed (mean)"})
    assert not [w for w in at.warning if "link" in w.value]  # a value that is a choice draws no warning
    write_run(roots["cached"], "tiny-seq", "seqpate")  # tiny has one seed, so no seed picker, yet a link may name one
    at = app_page(query={"overview_preset": "tiny", "overview_seed": "2"})
    assert [w.value for w in at.warning if "link" in w.value] == [
        "The link's overview_seed=2 is not a seed of these runs: showing seed 0, their only one."]
    assert "overview_seed" not in at.query_params  # and out of the URL, so a copied link does not carry it on
    assert not [w for w in at.run().warning if "link" in w.value]  # once
    # a seed the reader chose, left in the URL when a preset with one seed is chosen, is not taken for a link's
    at = app_page()
    at.selectbox(key="overview_preset").set_value("quick").run()
    at.selectbox(key="overview_seed").set_value(1).run()
    at.selectbox(key="overview_preset").set_value("tiny").run()
    assert not [w for w in at.warning if "link" in w.value]


def test_a_run_file_field_of_the_wrong_type_counts_as_absent_and_fails_no_page(roots, app_page):
    """A review set one run's seed to "zero": int() raised on the Overview and the Runs page."""
    write_run(roots["cached"], "good", "seqpate", ppl=100.0)
    bad = write_run(roots["cached"], "garbled", "seqpate", ppl=200.0, seed=1)
    config = json.loads(bad.file("config.json").read_text())
    config["config"]["seed"] = "zero"
    config["config"]["seqpate"]["teachers"] = "many"
    bad.file("config.json").write_text(json.dumps(config))
    privacy = json.loads(bad.file("privacy.json").read_text())
    bad.file("privacy.json").write_text(json.dumps({**privacy, "unit": ["sample"], "accountant": {"x": 1}}))
    for page in ("overview", "runs", "privacy_utility", "completions", "phrases", "export"):
        at = app_page(None if page == "overview" else page)
        assert not at.exception, (page, at.exception)
    from dashboard import loading, wording

    row = loading.runs_frame().set_index("run_id").loc["garbled"]
    assert not wording.present(row["seed"]) and not wording.present(row["teachers"]) and not wording.present(row["unit"])


def test_the_leak_rates_help_says_how_little_a_zero_can_show(roots, app_page):
    """A browser walk read R_name 0% for every method, Pri-GPT (no protection) included: on tiny it looks for 4
    names, none of them in a test reference. The column's help says so, from the runs' recorded counts."""
    for run_id, method, names, references in (("seq", "seqpate", 4, 0), ("pri", "pri-gpt", 13, 2)):
        run = write_run(roots["cached"], run_id, method, r_name=0.0)
        run.write_metrics({**run.metrics(), "r_name_counts": {"completions": 100, "names": names,
                                                              "references_with_name": references}})
    at = app_page()
    help_text = json.loads(at.dataframe[0].proto.columns)["R_name"]["help"]
    assert "it looks for 4-13 private users' names" in help_text and "0-2 of the test sentences'" in help_text
    assert "a rate of 0 says little" in help_text
    # a lecturer projecting the page never sees a tooltip: with every row at 0% the page says it under the table
    captions = [x.value for x in at.caption]
    # no run here planted canaries: the page says how to, rather than pointing to exposures that are not there
    assert any(c.startswith("R_name is 0% in every row, the non-private Pri-GPT's included: it looks for 4-13")
               and c.endswith("A run with canaries (--canaries 1,10,100) measures memorisation directly on the "
                              "Phrases page.") for c in captions)
    write_run(roots["cached"], "seq-canaries", "seqpate", r_name=0.0, canaries="1,10,100")
    assert any(c.value.endswith("The Phrases page's canary exposure (secrets planted 1, 10 and 100 times) measures "
                                "memorisation directly.") for c in app_page().caption)
    shutil.rmtree(roots["cached"] / "seq-canaries")
    pri = RunDir(roots["cached"] / "pri")
    pri.write_metrics({**pri.metrics(), "r_name": 0.125})  # a column that tells the methods apart needs no note
    assert not any(x.value.startswith("R_name is 0%") for x in app_page().caption)
    shutil.rmtree(pri.path)  # no Pri-GPT row: none is named
    assert any(x.value.startswith("R_name is 0% in every row: it looks for 4 private") for x in app_page().caption)


def test_a_measured_epsilon_is_explained_on_the_page_not_only_in_a_tooltip(roots, app_page):
    """A lecturer saw "measurement" on nearly every row of the shipped tables; what it means was in the column's help
    alone, which a projector never shows."""
    run = write_run(roots["cached"], "sgd", "noisysgd", epsilon=3.0)
    assert not any(x.value.startswith('"measurement" under ε is') for x in app_page().caption)  # its own stream
    run.write_privacy({k: v for k, v in run.privacy().items() if k != "random_streams"})  # made before 2026-11-27
    at = app_page()
    note = next(x.value for x in at.caption if x.value.startswith('"measurement" under ε is'))
    assert "not a proven DP bound" in note and "A run launched now draws its noise from a stream of its own" in note
