"""The "Synthetic data" dashboard page (AppTest) on fake synth runs in the real run format, and on none."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from apptest_helpers import metrics, open_page, open_tab, plotly_specs, texts
from fake_runs import SYNTH_LABELS as LABELS
from fake_runs import write_run, write_synth_run

ROOT = Path(__file__).resolve().parents[2]


def test_page_without_synth_runs_says_how_to_make_one(roots):
    at = open_page("synthetic")
    assert not at.exception
    assert "No synthetic-data runs yet: launch one above" in texts(at)
    assert [e.label for e in at.expander] == ["Launch synthetic-data runs"]
    assert any("python -m core synth --generator" in caption.value for caption in at.caption)


def _launch(at, generators, epsilon="3", preset="tiny"):
    at.multiselect(key="synth_launch_gen").set_value(generators)
    at.text_input(key="synth_launch_eps").set_value(epsilon)
    at.selectbox(key="synth_launch_preset").set_value(preset)
    [button] = [b for b in at.button if b.label == "Launch"]
    return button.click().run()


def test_the_page_launches_one_job_per_generator_as_the_command_line_configures_it(roots, tmp_path, monkeypatch):
    """Synthetic-data runs were made on the command line alone; the page now launches them as background jobs,
    each folder's config.json the one `python -m core synth` writes (which `python -m core job` runs)."""
    from core.runs import jobs
    from core.synth.config import synth_config
    from core.synth.job import prepare_job

    script = tmp_path / "fake_job.py"  # the job exits at once: what is tested is what it is given
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    at = _launch(open_page("synthetic"), ["filter", "multitask"], epsilon="8")
    assert not at.exception and not at.error
    launched = sorted(p for p in roots["live"].iterdir() if (p / "config.json").is_file())
    assert len(launched) == 2 and "Queued 2 job(s)" in " ".join(s.value for s in at.success)
    configs = {json.loads((p / "config.json").read_text())["config"]["method"]: json.loads(
        (p / "config.json").read_text())["config"] for p in launched}
    expected = prepare_job(synth_config("tiny", generator="multitask", epsilon=8.0, seed=0)).config_dict()
    assert configs["synth-multitask"] == json.loads(json.dumps(expected))
    assert configs["synth-filter"]["synth"]["generator"] == "filter"
    assert configs["synth-filter"]["privacy"]["delta"] == pytest.approx(1 / configs["synth-filter"]["data_stats"]["train"])
    # a bad ε launches nothing and says why
    at = _launch(at, ["pplm"], epsilon="0")
    assert [e.value for e in at.error] and at.error[0].value.startswith("Nothing launched: epsilon must be a positive")
    assert len([p for p in roots["live"].iterdir() if (p / "config.json").is_file()]) == 2


def test_launching_a_shipped_runs_settings_names_the_run_it_copies(roots, tmp_path, monkeypatch):
    """Launch says so before launching settings a run already has; the form said nothing of it."""
    import shutil

    from core.runs import jobs

    shutil.copytree(ROOT / "cached_runs" / "synth-tiny-multitask-eps8", roots["cached"] / "synth-tiny-multitask-eps8")
    script = tmp_path / "fake_job.py"
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    at = _launch(open_page("synthetic"), ["filter", "multitask"], epsilon="8")
    assert not at.exception and not at.error
    [copy] = [p.name for p in roots["live"].iterdir() if "multitask" in p.name]
    notes = [i.value for i in at.info if "had been run already" in i.value]
    assert notes == [f"synth-multitask: these settings had been run already: `synth-tiny-multitask-eps8` (shipped); "
                     f"`{copy}` is another copy."]  # none for the filter: no run has its settings


def test_page_shows_table_ngrams_umap_and_samples(roots):
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.55, separability=0.3125)
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.40)
    write_synth_run(roots["cached"], "s-multitask-inf", "multitask", math.inf, 0.58)
    at = open_page("synthetic")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert table.loc["3", "multitask"] == pytest.approx(0.55) and table.loc["3", "filter"] == pytest.approx(0.40)
    assert at.dataframe[1].value.loc["3", "multitask"] == 0.312  # 0.3125 as REPORT.md prints it, not 0.313
    assert table.loc["∞ (not private)", "multitask"] == pytest.approx(0.58)
    assert table.loc["real train data"].dropna().iloc[0] == pytest.approx(0.6)
    captions = " ".join(caption.value for caption in at.caption)
    assert "δ = 1/|train| as in the paper: 0.00167; a weak δ" in captions
    assert not plotly_specs(at)  # lazy tabs: the charts of the other tabs are not built
    grams = plotly_specs(open_tab(at, "synth_tab", "Memorisation (n-grams)"))
    assert len(grams) == 1 and not at.dataframe
    assert [t["name"] for t in grams[0]["data"]][-1] == "real test texts"
    # lines that meet near 0 are read from one hover per n, titled by the n-gram length
    assert grams[0]["layout"]["hovermode"] == "x unified"
    assert grams[0]["data"][0]["x"] == ["3-grams", "4-grams", "5-grams", "6-grams", "7-grams"]
    scatter = plotly_specs(open_tab(at, "synth_tab", "One run: embeddings and samples"))
    assert len(scatter) == 1 and not at.exception
    assert sorted(t["name"] for t in scatter[0]["data"]) == list(LABELS)
    assert len({t["marker"]["color"] for t in scatter[0]["data"]}) == len(LABELS)  # a hue of its own per label
    # samples of the first label of the chosen run
    samples = at.dataframe[-1].value
    assert list(samples["text"]) == ["a film sample 0", "a film sample 1"]
    at.selectbox(key="synth_label").set_value("smell").run()
    assert list(at.dataframe[-1].value["text"]) == ["a smell sample 0", "a smell sample 1"]
    at.selectbox(key="synth_run").set_value("s-filter-3").run()
    captions = [caption.value for caption in at.caption]
    assert "The filter kept 2 of 6 samples" in " ".join(captions)
    # what the run releases from the private data beside its ε (a walk found the metrics and UMAP without a word)
    assert [x for x in captions if x.startswith("ε covers the fine-tuned model and the samples only")]
    at.selectbox(key="synth_run").set_value("s-multitask-inf").run()
    assert not [x.value for x in at.caption if x.value.startswith("ε covers")]  # at ε = ∞ nothing is covered


def test_other_pages_tolerate_synth_runs(roots):
    """A synthetic-data run has no perplexity or BLEU: the text-generation pages leave it out, Runs lists it."""
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.55)
    write_run(roots["live"], "seq", "seqpate")
    for page in ("overview", "privacy_utility", "completions", "runs"):
        at = open_page(page)
        assert not at.exception, (page, at.exception)
        shown = " ".join(str(frame.value.to_dict()) for frame in at.dataframe) + " ".join(
            str(box.options) for box in at.selectbox) + " ".join(str(box.options) for box in at.multiselect)
        if page == "runs":
            assert "s-multitask-3" in shown and "seq" in shown
        else:
            assert "s-multitask-3" not in shown and "multitask" not in shown.lower(), page


def test_page_never_imports_torch(tmp_path):
    """The page runs in a fresh interpreter without torch, transformers or opacus being imported."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests" / "dashboard")!r}]
        os.environ["SEQPATE_RUNS_DIR"] = {str(tmp_path / "runs")!r}
        os.environ["SEQPATE_CACHED_RUNS_DIR"] = {str(tmp_path / "cached")!r}
        from pathlib import Path
        from fake_runs import write_synth_run
        write_synth_run(Path({str(tmp_path)!r}) / "runs", "s", "pplm", 8.0, 0.5)
        from apptest_helpers import open_page
        at = open_page("synthetic")
        assert not at.exception, at.exception
        print("HEAVY", sorted(m for m in ("torch", "transformers", "opacus") if m in sys.modules))
    """)
    (tmp_path / "runs").mkdir()
    (tmp_path / "cached").mkdir()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_accuracy_tab_shows_chance_from_the_runs_labels(roots):
    """Chance = 1 / number of labels in metrics.json data.labels (REPORT.md judges accuracy against it)."""
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.30)
    at = open_page("synthetic")
    assert not at.exception, at.exception
    assert "Chance level (1 / number of labels): 0.333 (3 labels)" in texts(at)
    _edit_json(roots["live"] / "s-multitask-3" / "metrics.json",
               lambda m: m["data"].update(labels=["film", "music", "peanut butter", "smell"]))
    at = open_page("synthetic")
    assert "Chance level (1 / number of labels): 0.250 (4 labels)" in texts(at)


def test_separability_columns_name_the_model_they_measure(roots):
    """filter and PPLM measure the same frozen (LM-only) model, as REPORT.md says; multitask its own model."""
    for generator in ("filter", "pplm", "multitask"):
        write_synth_run(roots["live"], f"s-{generator}-3", generator, 3.0, 0.3)
    at = open_page("synthetic")
    assert not at.exception, at.exception
    columns = json.loads(at.dataframe[1].proto.columns)
    assert columns["filter"]["label"] == "filter: frozen model"
    assert columns["pplm"]["label"] == "PPLM: same frozen model"
    assert columns["multitask"]["label"] == "multitask: joint model"
    assert "frozen (LM-only)" in columns["pplm"]["help"] and "together" in columns["multitask"]["help"]
    assert "fine-tuned model's mean embeddings" not in texts(at)
    assert "filter and PPLM share one frozen (LM-only) model" in texts(at)


def test_every_run_table_shows_delta_and_epsilon_as_the_rest_of_the_page(roots):
    """δ through fmt_delta (as in the caption and the run's metric), none beside ε = ∞ (no guarantee), ε = ∞ rather
    than Infinity."""
    write_synth_run(roots["live"], "s-pplm-inf", "pplm", math.inf, 0.3)
    write_synth_run(roots["live"], "s-pplm-3", "pplm", 3.0, 0.3)
    _edit_json(roots["live"] / "s-pplm-3" / "privacy.json", lambda p: p.update(delta=1 / 1536))
    at = open_page("synthetic")
    assert not at.exception, at.exception
    every = at.dataframe[2].value.set_index("run")
    assert every.loc["s-pplm-inf", "δ"] == "–" and every.loc["s-pplm-3", "δ"] == "0.000651"
    assert "δ = 1/|train| as in the paper: 0.000651; a weak δ" in texts(at)
    assert every.loc["s-pplm-inf", "ε target"] == "∞ (not private)"
    assert every.loc["s-pplm-inf", "ε"] == "∞ (not private)"
    assert every.loc["s-pplm-3", "ε target"] == "3"
    open_tab(at, "synth_tab", "One run: embeddings and samples")
    at.selectbox(key="synth_run").set_value("s-pplm-3").run()
    assert metrics(at)["δ"] == "0.000651"


def test_a_copy_made_here_is_not_averaged_with_the_shipped_run_it_copies(roots):
    """A review saw a shipped filter run (0.40) and its copy made here (0.20) averaged into one cell of 0.30."""
    write_synth_run(roots["cached"], "s-filter-3", "filter", 3.0, 0.40)
    write_synth_run(roots["live"], "s-filter-3-today", "filter", 3.0, 0.20)
    at = open_page("synthetic")
    assert at.dataframe[0].value.loc["3", "filter"] == pytest.approx(0.40)  # the shipped run, as on the Overview
    assert "averages seeds" not in texts(at)
    at.toggle(key="synth_made_here").set_value(True).run()  # the reader's choice: the copy made here instead
    assert at.dataframe[0].value.loc["3", "filter"] == pytest.approx(0.20)


def test_accuracy_cells_say_which_seeds_they_average(roots):
    for seed, accuracy in ((0, 0.30), (1, 0.40), (2, 0.50)):
        name = f"s-multitask-3-seed{seed}"
        write_synth_run(roots["live"], name, "multitask", 3.0, accuracy)
        _edit_json(roots["live"] / name / "config.json", lambda c, seed=seed: c["config"].update(seed=seed))
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.35)
    at = open_page("synthetic")
    assert not at.exception, at.exception
    # one seed at a time, the lowest first, as on the other pages: no cell mixes three seeds with one
    assert at.selectbox(key="synth_seed").value == 0
    assert at.dataframe[0].value.loc["3", "multitask"] == pytest.approx(0.30)
    assert "averages seeds" not in texts(at)
    at.selectbox(key="synth_seed").set_value("every seed (mean)").run()
    assert ("Cells average the runs of one setting (multitask at ε = 3 averages seeds 0, 1, 2; the other cells hold "
            "one run each: filter at ε = 3 in seed 0).") in texts(at)  # a single-seed cell beside means says so
    assert at.dataframe[0].value.loc["3", "multitask"] == pytest.approx(0.40)


def test_runs_of_several_seeds_are_told_apart_and_the_lowest_seed_opens(roots):
    for seed, accuracy in ((2, 0.50), (0, 0.30), (1, 0.40)):  # written out of order
        name = f"s-filter-3-seed{seed}"
        write_synth_run(roots["live"], name, "filter", 3.0, accuracy, separability=0.3 + seed / 10)
        _edit_json(roots["live"] / name / "config.json", lambda c, seed=seed: c["config"].update(seed=seed))
    at = open_page("synthetic")
    at.selectbox(key="synth_seed").set_value("every seed (mean)").run()
    # the separability table says which seeds its cells average, as the accuracy table does
    assert "Cells average the same runs as the accuracy table (filter at ε = 3 averages seeds 0, 1, 2)." in texts(at)
    (ngrams,) = plotly_specs(open_tab(at, "synth_tab", "Memorisation (n-grams)"))
    names = [t["name"] for t in ngrams["data"]]
    assert names[:3] == ["ε = 3, seed 0", "ε = 3, seed 1", "ε = 3, seed 2"]
    assert len({t["marker"]["symbol"] for t in ngrams["data"][:3]}) == 3  # none hides under another
    # dashes are the real test texts' only, as the caption says (seed 2's run line was dashed like seed 0's texts)
    assert all("dash" not in t.get("line", {}) for t in ngrams["data"][:3])
    assert all(t["line"]["dash"] in ("dash", "longdash", "longdashdot", "dashdot") for t in ngrams["data"][3:])
    # each seed's split has its own real test texts
    assert names[3:] == ["real test texts, seed 0", "real test texts, seed 1", "real test texts, seed 2"]
    open_tab(at, "synth_tab", "One run: embeddings and samples")
    run = at.selectbox(key="synth_run")
    assert run.value == "s-filter-3-seed0"
    assert run.options[0] == "s-filter-3-seed0  ·  filter  ·  ε = 3  ·  seed 0"


def test_every_table_rounds_as_report_and_readme_print(roots):
    """0.3125 showed 0.312 in the summary tables and 0.313 under "Every run" (the table's format rounds a tie up),
    and 0.2375 (stored a hair below) 0.238 in the table but 0.237 in the run's metric and in the README."""
    write_synth_run(roots["live"], "s-pplm-3", "pplm", 3.0, 0.2375, separability=0.3125)
    at = open_page("synthetic")
    accuracy, separability = at.dataframe[0].value, at.dataframe[1].value
    assert accuracy.loc["3", "pplm"] == 0.237 and separability.loc["3", "pplm"] == 0.312
    every = at.dataframe[2].value.set_index("run")
    assert (every.loc["s-pplm-3", "accuracy (synthetic)"], every.loc["s-pplm-3", "separability"]) == (0.237, 0.312)
    open_tab(at, "synth_tab", "One run: embeddings and samples")
    shown = metrics(at)
    assert (shown["accuracy (synthetic)"], shown["separability"], shown["accuracy (real-trained)"]) == (
        "0.237", "0.312", "0.600")


def test_only_the_filter_run_shows_which_samples_it_kept(roots):
    """Every PPLM and multitask sample read "kept: accepted", p(label | text) 0.16 to 0.30 under a 0.5 threshold:
    those generators filter nothing."""
    write_synth_run(roots["live"], "s-pplm-3", "pplm", 3.0, 0.3)
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.3)
    at = open_tab(open_page("synthetic"), "synth_tab", "One run: embeddings and samples")
    at.selectbox(key="synth_run").set_value("s-pplm-3").run()
    assert "kept" not in at.dataframe[0].value.columns
    assert ("pplm keeps every sample it generates: p(label | text), its discriminator's score, is shown for "
            "information and filters nothing.") in texts(at)
    at.selectbox(key="synth_run").set_value("s-filter-3").run()
    assert at.dataframe[0].value["kept"].tolist() == ["accepted"] * 2 and "filters nothing" not in texts(at)


def test_a_garbled_number_in_a_synthetic_runs_metrics_shows_blank(roots):
    write_synth_run(roots["live"], "s-pplm-3", "pplm", 3.0, 0.3)
    _edit_json(roots["live"] / "s-pplm-3" / "metrics.json", lambda m: m.update(accuracy_synthetic="abc",
                                                                               separability=None))
    at = open_page("synthetic")
    assert not at.exception  # "abc" went through math.isfinite and broke the page
    import pandas as pd

    every = at.dataframe[-1].value.set_index("run")
    assert pd.isna(every.loc["s-pplm-3", "accuracy (synthetic)"]) and every.loc["s-pplm-3", "accuracy (real)"] == 0.6


def test_a_filter_run_whose_sample_count_is_garbled_shows_no_kept_caption_rather_than_failing(roots):
    """The kept-samples caption called int() on n_synthetic: absent, it was NaN in the table and broke the page."""
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.3)
    _edit_json(roots["live"] / "s-filter-3" / "metrics.json", lambda m: m.pop("n_synthetic"))
    at = open_tab(open_page("synthetic"), "synth_tab", "One run: embeddings and samples")
    assert not at.exception
    assert not [c for c in at.caption if c.value.startswith("The filter kept")]
    _edit_json(roots["live"] / "s-filter-3" / "metrics.json", lambda m: m.update(n_synthetic=6))
    at = open_tab(open_page("synthetic"), "synth_tab", "One run: embeddings and samples")
    assert [c for c in at.caption if c.value.startswith("The filter kept 2 of 6 samples")]


def test_a_damaged_samples_or_embeddings_line_is_counted_not_skipped_silently_or_fatal(roots):
    """A bad samples.jsonl line was skipped without a word; a non-numeric coordinate in embeddings.csv failed the
    page (astype(float))."""
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.3)
    folder = roots["live"] / "s-filter-3"
    (folder / "samples.jsonl").write_text((folder / "samples.jsonl").read_text() + "{not json\n\n[1]\n")
    # a non-numeric coordinate, and a row cut short (no label: sorting the labels failed the page)
    (folder / "embeddings.csv").write_text((folder / "embeddings.csv").read_text() + "abc,1,positive\n3,4\n")
    at = open_tab(open_page("synthetic"), "synth_tab", "One run: embeddings and samples")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert "s-filter-3: 2 lines of samples.jsonl did not read and are left out." in warnings
    assert "s-filter-3: 2 lines of embeddings.csv did not read and are left out." in warnings
    assert len(at.dataframe[0].value) == 2  # the two good samples still show


def test_the_memorisation_chart_says_when_its_lines_are_not_size_matched(roots):
    """A run's n-gram share is over all its samples and the dashed line's over the test texts; the share falls as
    a set grows, so more samples than test texts draw the synthetic line low: the page says so, with the sizes."""
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.55, n_test=4)  # 6 samples
    at = open_tab(open_page("synthetic"), "synth_tab", "Memorisation (n-grams)")
    assert [c.value[:52] for c in at.caption if c.value.startswith("Not size-matched")] == [
        "Not size-matched (6 samples against 4 test texts): t"]
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.4)  # 400 test texts, more than its 6 samples
    at = open_tab(open_page("synthetic"), "synth_tab", "Memorisation (n-grams)")
    assert at.selectbox(key="synth_gram_gen").value == "filter"
    assert not [c for c in at.caption if c.value.startswith("Not size-matched")]
    at.selectbox(key="synth_gram_gen").set_value("multitask").run()
    assert [c.value[:52] for c in at.caption if c.value.startswith("Not size-matched")] == [
        "Not size-matched (6 samples against 4 test texts): t"]


def test_the_memorisation_chart_draws_a_runs_size_matched_shares_where_it_recorded_them(roots):
    """A run that recorded its n-gram shares at the real test set's size (metrics.json, since 2026-11-27, or added
    by `core audit`) is drawn with them, and the caption says so; a run without them keeps the old caveat."""
    matched = {"texts": 4, "draws": 5, "ratios": {str(n): 0.3 / n for n in range(3, 8)}}
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.55, n_test=4, size_matched=matched)
    at = open_tab(open_page("synthetic"), "synth_tab", "Memorisation (n-grams)")
    (spec,) = plotly_specs(at)
    run_line = next(t for t in spec["data"] if t["name"] == "ε = 3")
    assert run_line["y"] == pytest.approx([0.3 / n for n in range(3, 8)])  # not the all-samples 0.1 / n
    assert run_line["customdata"][0] == ["s-multitask-3", "4 samples, the mean of 5 random subsets"]
    captions = [c.value for c in at.caption]
    assert ("Size-matched: a run's line is its share in as many samples as the real test set has texts, or in all "
            "its samples where it has fewer (4 samples, the mean of 5 random subsets), since the share found in the "
            "train set falls as a set grows.") in captions
    assert not [c for c in captions if c.startswith("Not size-matched")]
    # a run with fewer samples than test texts: all of them, once (it read "mean of 1 random subsets")
    write_synth_run(roots["live"], "s-multitask-16", "multitask", 16.0, 0.55, n_test=400,
                    size_matched={"texts": 6, "draws": 1, "ratios": {str(n): 0.1 / n for n in range(3, 8)}})
    at = open_tab(open_page("synthetic"), "synth_tab", "Memorisation (n-grams)")
    few = next(t for t in plotly_specs(at)[0]["data"] if t["name"] == "ε = 16")
    assert few["customdata"][0] == ["s-multitask-16", "all 6 samples, no more than the test texts"]
    assert any("(4 samples, the mean of 5 random subsets; all 6 samples, no more than the test texts)" in c.value
               for c in at.caption)
    write_synth_run(roots["live"], "s-multitask-8", "multitask", 8.0, 0.55, n_test=4)  # an older run: all 6
    at = open_tab(open_page("synthetic"), "synth_tab", "Memorisation (n-grams)")
    old_line = next(t for t in plotly_specs(at)[0]["data"] if t["name"] == "ε = 8")
    assert old_line["y"] == pytest.approx([0.1 / n for n in range(3, 8)])
    assert old_line["customdata"][0] == ["s-multitask-8", "all 6 samples"]
    captions = [c.value for c in at.caption]
    assert [c[:52] for c in captions if c.startswith("Not size-matched")] == [
        "Not size-matched (6 samples against 4 test texts): t"]
    assert any(c.startswith("Size-matched: ") for c in captions)


def test_the_command_line_hint_is_the_command_for_the_forms_runs(roots, tmp_path, monkeypatch):
    """It was a fixed example (multitask, ε 3, tiny) whatever the form held (browser review); it now gives the
    lines that make the runs the form launched, and each is one `python -m core` accepts."""
    import shlex

    from core.cli import build_parser
    from core.runs import jobs

    script = tmp_path / "fake_job.py"
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    at = _launch(open_page("synthetic"), ["filter", "multitask"], epsilon="5")
    [hint] = [c.value for c in at.caption if c.value.startswith("Or from the command line")]
    commands = re.findall(r"`([^`]+)`", hint)
    assert commands == ["python -m core synth --generator filter --epsilon 5 --preset tiny --run-dir "
                        "runs/synth-tiny-filter-eps5",
                        "python -m core synth --generator multitask --epsilon 5 --preset tiny --run-dir "
                        "runs/synth-tiny-multitask-eps5"]
    for command in commands:
        args = build_parser().parse_args(shlex.split(command)[3:])
        assert (args.epsilon, args.preset) == ("5", "tiny")


def test_a_link_opens_the_run_it_names_and_a_stale_one_says_so(roots):
    """The run picker kept its choice only within the page (persist_state), so a reload or a copied link opened on
    the first run; it is in the URL now, led by the run id, as on the Runs and Phrases pages."""
    write_synth_run(roots["live"], "s-multitask-3", "multitask", 3.0, 0.55)
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.40)
    tab = {"synth_tab": "One run: embeddings and samples"}
    at = open_page(query={**tab, "synth_run": "s-multitask-3  ·  multitask  ·  ε = 3"})
    at = at.switch_page("views/synthetic.py").run()
    assert not at.exception and at.selectbox(key="synth_run").value == "s-multitask-3"
    at = open_page(query={**tab, "synth_run": "s-filter-3"}).switch_page("views/synthetic.py").run()
    assert at.selectbox(key="synth_run").value == "s-filter-3"  # the id alone, as a hand-written link names it
    at = open_page(query={**tab, "synth_run": "s-gone"}).switch_page("views/synthetic.py").run()
    assert at.selectbox(key="synth_run").value == "s-filter-3"  # the first: filter sorts before multitask
    assert ("The link's synth_run=s-gone is not a synthetic-data run of tiny with the seed chosen here: showing "
            "s-filter-3.") in [w.value for w in at.warning]


def test_a_run_on_other_data_is_set_aside_from_the_preset_tables(roots):
    """A privacy officer's run on their own csv was averaged into chitchat's cells: filter at ε 3 read 0.319, the
    mean of chitchat's 0.263 and theirs, and chance 0.333 and 0.250 at once. REPORT.md already set it aside."""
    write_synth_run(roots["live"], "s-filter-3", "filter", 3.0, 0.263)
    write_synth_run(roots["live"], "mine", "filter", 3.0, 0.375)
    _edit_json(roots["live"] / "mine" / "config.json",
               lambda c: c["config"]["synth"].update(corpus="mine.csv"))
    _edit_json(roots["live"] / "mine" / "metrics.json", lambda m: m["data"].update(labels=["a", "b"]))
    at = open_page("synthetic")
    assert not at.exception, at.exception
    accuracy = at.dataframe[0].value
    assert accuracy.loc["3", "filter"] == 0.263  # chitchat's alone
    assert "Chance level (1 / number of labels): 0.333 (3 labels)" in texts(at)
    assert any("Set aside from the tables and the chart" in x.value and "mine (corpus mine.csv)" in x.value
               for x in at.info)
    assert set(at.dataframe[2].value["run"]) == {"s-filter-3", "mine"}  # Every run lists both
    shutil.rmtree(roots["live"] / "s-filter-3")  # only runs set aside: the tables say there is none to compare
    at = open_page("synthetic")
    assert not at.exception and any("No run here at tiny's settings to compare" in x.value for x in at.info)
    assert list(at.dataframe[0].value["run"]) == ["mine"]  # and Every run, which the note points to, is there
    _edit_json(roots["live"] / "mine" / "config.json", lambda c: c["config"].update(synth="garbled"))
    at = open_page("synthetic")  # a garbled synth section is set aside and named, not a crash
    assert not at.exception and any("mine (synth garbled)" in x.value for x in at.info)
