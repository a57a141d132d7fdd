"""`python -m core synth` end to end on a micro configuration: a complete run directory, and one-line errors."""

from __future__ import annotations

import csv
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

from core.cli import main
from core.config import thread_setting
from core.models import cpu_info
from core.privacy import epsilon_from_events, events_from_dicts
from core.runs.registry import list_runs
from core.runs.store import REQUIRED_FILES, RunDir
from core.synth.command import job_from_run_config

# seconds, not minutes: a micro base model and a few dozen examples (sizes are meaningless, the format is not)
MICRO = {
    "synth": {"per_label": 40, "epochs": 1, "batch_size": 16, "head_epochs": 1, "max_new_tokens": 6,
              "samples_per_label": 6, "pplm_iterations": 1, "rf_trees": 10, "cv_folds": 2, "projection": "pca",
              "gen_batch": 8},
    "base": {"data": {"private_train": 400, "private_valid": 50, "private_test": 60, "public_train": 400,
                      "public_valid": 50},
             "model": {"vocab_size": 2048, "pretrain_epochs": 1, "n_positions": 48}},
}


def cli(*args, timeout=600, env=None):
    return subprocess.run([sys.executable, "-m", "core", "synth", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    config = root / "micro.json"
    config.write_text(json.dumps(MICRO))
    run_dir = root / "runs" / "synth-multitask"
    env = {**os.environ, "SEQPATE_CACHE": str(root / "cache"), "SEQPATE_DEVICE": ""}  # its own cache; the CPU
    out = cli("--generator", "multitask", "--epsilon", "3", "--config", str(config), "--run-dir", str(run_dir),
              env=env)
    assert out.returncode == 0, out.stderr
    return run_dir, json.loads(out.stdout.strip().splitlines()[-1])


def test_micro_run_writes_a_complete_run(micro_run):
    run_dir, summary = micro_run
    run = RunDir(run_dir)
    assert run.is_complete() and run.missing_files() == []
    names = {p.name for p in run_dir.iterdir()}
    assert set(REQUIRED_FILES) | {"samples.jsonl", "embeddings.csv", "statement.md"} <= names
    config = run.config()["config"]
    assert config["method"] == "synth-multitask" and config["synth"]["generator"] == "multitask"
    assert [i.method for i in list_runs([run_dir.parent])] == ["synth-multitask"]

    privacy = run.privacy()
    n_train = sum(config["data_stats"]["train_per_label"].values())
    assert privacy["delta"] == pytest.approx(1 / n_train)
    recomputed = epsilon_from_events(events_from_dicts(privacy["events"]), privacy["delta"]).epsilon
    assert recomputed == pytest.approx(privacy["epsilon"]) and privacy["epsilon"] <= 3.0
    statement = (run_dir / "statement.md").read_text()
    assert f"delta = 1/|train| = 1/{n_train}" in statement and "Released outside the epsilon" in statement
    # batches and noise from streams of their own (core.privacy.streams), so no line on what they shared
    assert privacy["random_streams"] == ["synth multitask-finetune sampling", "synth multitask-finetune noise"]
    assert "Made before the noise" not in statement

    metrics = run.metrics()
    assert 0.0 <= metrics["separability"] <= 1.0  # needs the fine-tuned model's embeddings, which the run drops
    assert set(metrics["ngram_ratios"]) == {"3", "4", "5", "6", "7"}
    assert summary["accuracy_synthetic"] == metrics["accuracy_synthetic"]
    assert summary["delta"] == privacy["delta"]  # the weak delta = 1/|train| is said beside epsilon (a CLI audit)
    assert metrics["torch_threads"] == thread_setting()  # the subprocess saw this environment
    assert metrics["cpu"] == cpu_info()  # the machine's CPU, which picks torch's kernels
    assert metrics["device"] == "cpu"  # SEQPATE_DEVICE blank: the default

    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    labels = set(config["data_stats"]["labels"])
    assert {s["label"] for s in samples} == labels and all(s["text"] for s in samples)
    points = list(csv.DictReader((run_dir / "embeddings.csv").open()))
    assert len(points) == config["data_stats"]["test"] and {p["label"] for p in points} == labels
    assert all(math.isfinite(float(p["x"])) and math.isfinite(float(p["y"])) for p in points)
    stages = [p["stage"] for p in run.progress()]
    assert stages[-1] == "done" and "multitask-finetune" in stages and "generate" in stages
    # training the base model moves the progress bar per epoch (1 epoch here: from 0.02 to 0.1)
    assert [p.get("progress") for p in run.progress() if p.get("epochs") and p["stage"] == "base-model"] == [0.1]


def test_micro_runs_utility_and_memorisation_recompute_from_its_samples_and_data(micro_run, monkeypatch):
    """accuracy_synthetic is the classifier trained on samples.jsonl and tested on the REAL test set, accuracy_real
    the same classifier trained on the real train set, and ngram_ratios the synthetic n-grams found in the train
    set: recomputed here from the written samples and the run's labelled data (read again from its config.json),
    so a metric computed from the wrong texts (train for synthetic, test for train) does not pass."""
    from core.synth.evaluate import classifier_accuracy, ngram_ratios, size_matched_ratios

    run_dir, _ = micro_run
    monkeypatch.setenv("SEQPATE_CACHE", str(run_dir.parent.parent / "cache"))  # the data the run prepared
    run = RunDir(run_dir)
    data = job_from_run_config(run).data
    assert data.stats() == run.config()["config"]["data_stats"]  # the same data the run saw
    train, train_labels = [e.text for e in data.train], [e.label for e in data.train]
    test, test_labels = [e.text for e in data.test], [e.label for e in data.test]
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    synthetic, synthetic_labels = [s["text"] for s in samples], [s["label"] for s in samples]

    metrics = run.metrics()
    real, reference = classifier_accuracy(train, train_labels, test, test_labels)
    assert metrics["accuracy_synthetic"] == classifier_accuracy(synthetic, synthetic_labels, test, test_labels)[0]
    assert metrics["accuracy_real"] == real
    agreement = sum(reference.predict(synthetic) == synthetic_labels) / len(samples)
    assert metrics["synthetic_label_agreement"] == pytest.approx(agreement, abs=1e-12)
    assert metrics["ngram_ratios"] == ngram_ratios(synthetic, train)
    assert metrics["ngram_ratios_real_test"] == ngram_ratios(test, train)
    # and they are two texts' numbers: the unseen real test text is the yardstick the synthetic overlap is read
    # against, so the same dict under both keys would be no comparison at all
    assert metrics["ngram_ratios_real_test"] != metrics["ngram_ratios"]
    # at the test set's size: the micro run has fewer samples than test texts, so all of them, once
    assert len(samples) < len(test)
    assert metrics["ngram_ratios_size_matched"] == size_matched_ratios(synthetic, train, len(test))
    assert metrics["ngram_ratios_size_matched"] == {"texts": len(samples), "draws": 1,
                                                    "ratios": metrics["ngram_ratios"]}
    assert metrics["n_synthetic"] == len(samples)


def test_an_audit_adds_the_size_matched_shares_and_refuses_samples_that_do_not_give_the_recorded_ones(
        micro_run, tmp_path, monkeypatch, capsys):
    """`core audit` on a synthetic-data run rebuilds its data and recomputes its n-gram shares from samples.jsonl:
    a run made before the size-matched shares were recorded gets them; samples that do not reproduce the recorded
    shares (a file edited after the run) are refused, not re-scored."""
    import shutil

    run_dir, _ = micro_run
    monkeypatch.setenv("SEQPATE_CACHE", str(run_dir.parent.parent / "cache"))  # the data the run prepared
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    metrics = json.loads((copy / "metrics.json").read_text())
    recorded = metrics.pop("ngram_ratios_size_matched")
    (copy / "metrics.json").write_text(json.dumps(metrics))  # as a run made before 2026-11-27
    assert main(["audit", "--run-dir", str(copy)]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == ["metrics.json", "statement.md"]
    assert RunDir(copy).metrics()["ngram_ratios_size_matched"] == recorded
    assert RunDir(copy).metrics()["ngram_ratios"] == metrics["ngram_ratios"]

    lines = (copy / "samples.jsonl").read_text().splitlines()
    train_text = job_from_run_config(RunDir(copy)).data.train[0].text
    (copy / "samples.jsonl").write_text("\n".join([json.dumps({**json.loads(lines[0]), "text": train_text}),
                                                   *lines[1:]]) + "\n")
    assert main(["audit", "--run-dir", str(copy)]) == 2
    assert "ngram_ratios recomputed from samples.jsonl and the rebuilt data" in capsys.readouterr().err
    assert RunDir(copy).metrics()["ngram_ratios"] == metrics["ngram_ratios"]  # nothing rewritten


def test_a_launched_job_runs_the_same_run_as_the_command_line(micro_run):
    """The Synthetic data page launches a run as a job (core.runs.jobs.launch: config.json, then `python -m core
    job`); given the micro run's config, the job repeats that run bit for bit."""
    run_dir, summary = micro_run
    root = run_dir.parent.parent
    job = RunDir.create(root / "runs" / "as-a-job", RunDir(run_dir).config()["config"], 0)
    env = {**os.environ, "SEQPATE_CACHE": str(root / "cache"), "SEQPATE_DEVICE": ""}
    out = subprocess.run([sys.executable, "-m", "core", "job", str(job.path)], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    assert job.state() == "done" and job.is_complete()
    assert job.metrics()["accuracy_synthetic"] == summary["accuracy_synthetic"]
    assert (job.path / "samples.jsonl").read_text() == (run_dir / "samples.jsonl").read_text()
    assert job.privacy()["epsilon"] == RunDir(run_dir).privacy()["epsilon"]
    # a config it cannot run fails the run with the reason (it would have been run as a text-generation config)
    broken = RunDir.create(root / "runs" / "broken", {**RunDir(run_dir).config()["config"], "synth": {"lr": "x"}}, 0)
    out = subprocess.run([sys.executable, "-m", "core", "job", str(broken.path)], capture_output=True, text=True,
                         timeout=120, env=env)
    # as a text-generation job's config error: one line, exit 2 (it was exit 1 with a traceback.txt)
    assert out.returncode == 2 and out.stderr == "error: lr must be a number, got 'x'\n", out.stderr
    assert broken.state() == "failed" and broken.status()["error"] == "lr must be a number, got 'x'"


@pytest.mark.parametrize("args, message", [
    (["--epsilon", "zero"], "epsilon must be a number (or inf), got 'zero'"),
    (["--epsilon", "-3"], "epsilon must be a positive number or inf"),
    (["--corpus", "missing.csv"], "labelled data file not found"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, message):
    run_dir = tmp_path / "run"
    assert main(["synth", *args, "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not run_dir.exists()


def test_a_run_dir_under_a_file_is_refused_before_the_data_is_read(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    assert main(["synth", "--corpus", str(tmp_path / "missing.csv"), "--run-dir", str(a_file / "run")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: run directory {a_file / 'run'} cannot be made: {a_file} is a file"
    assert a_file.read_text() == "keep me"


def test_unknown_generator_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["synth", "--generator", "gan", "--run-dir", str(tmp_path / "run")])
    assert exit_.value.code == 2 and "invalid choice: 'gan'" in capsys.readouterr().err


def test_a_users_file_cut_by_balancing_is_said(tmp_path):
    """A CLI audit's file of 100 texts of one label and 8 of another trained on 12 of them, without a word."""
    from core.synth.command import balancing_note
    from core.synth.config import synth_config
    from core.synth.data import labelled_data

    path = tmp_path / "mine.csv"
    path.write_text("text,label\n" + "".join(f"text {i} of a,a\n" for i in range(100))
                    + "".join(f"text {i} of b,b\n" for i in range(8)))
    cfg = synth_config("tiny", corpus=str(path))
    data = labelled_data(cfg)
    assert balancing_note(data, cfg) == (f"note: {path}: every label is cut to 8 texts (the rarest label's count), "
                                         "so 16 of its 108 texts are used (12 to train, 4 to test; delta = 1/12)")
    path.write_text("text,label\n" + "".join(f"text {i} of {lb},{lb}\n" for i in range(8) for lb in "ab"))
    assert balancing_note(labelled_data(cfg), cfg) == ""  # nothing cut, nothing said
    # tiny's per_label 200 is more than the rarest label's 100: the rarest label cut it (a review read "per_label")
    path.write_text("text,label\n" + "".join(f"text {i} of a,a\n" for i in range(150))
                    + "".join(f"text {i} of b,b\n" for i in range(100)))
    assert "every label is cut to 100 texts (the rarest label's count)" in balancing_note(labelled_data(cfg), cfg)
    path.write_text("text,label\n" + "".join(f"text {i} of {lb},{lb}\n" for i in range(300) for lb in "ab"))
    assert "every label is cut to 200 texts (per_label 200), so 400 of its 600" in balancing_note(labelled_data(cfg),
                                                                                                cfg)


def test_bad_labelled_file_names_its_line(tmp_path, capsys):
    data = tmp_path / "mine.csv"
    data.write_text("text,label\ngood film,pos\nbad film\n")
    assert main(["synth", "--corpus", str(data), "--run-dir", str(tmp_path / "run")]) == 2
    assert f"{data} line 3: expected 2 fields" in capsys.readouterr().err


def test_quick_base_model_uses_all_public_text_and_overrides_win():
    from core.config import preset_config
    from core.synth.config import synth_config
    from core.synth.job import synth_base_config

    quick = synth_base_config(synth_config("quick"))
    assert quick.data.public_train is None  # every public sentence, not core quick's 8,000
    assert quick.data.private_train == preset_config("quick").data.private_train  # the user split is untouched
    assert quick.model == preset_config("quick").model  # same model size, so DP fine-tuning costs the same
    assert synth_base_config(synth_config("quick"), {"data__public_train": 500}).data.public_train == 500
    assert synth_base_config(synth_config("tiny")) == preset_config("tiny")


def test_an_old_runs_config_still_names_its_own_base_model(tmp_path):
    """Replaying a config.json written before quick moved to the all-public base rebuilds that run's base."""
    import argparse

    from core.config import preset_config
    from core.synth.command import config_from_args
    from core.synth.config import SYNTH_BASE_OVERRIDES, SYNTH_PRESETS
    from core.synth.job import synth_base_config

    assert set(SYNTH_BASE_OVERRIDES) == set(SYNTH_PRESETS)  # every synth preset names its base model
    old_base = preset_config("quick").to_dict()  # core quick's base: 8,000 public sentences
    stored = {"config": {"method": "synth-filter", "preset": "quick",
                         "synth": {"generator": "filter", "preset": "quick", "epsilon": 3.0}, "base": old_base}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(stored))
    args = argparse.Namespace(config=str(path), preset=None, generator=None, seed=None, corpus=None, epsilon=None)
    cfg, overrides = config_from_args(args)
    assert synth_base_config(cfg, overrides).data == preset_config("quick").data
    assert synth_base_config(cfg, overrides).data.public_train == 8000


def test_a_config_written_before_separate_clipping_replays_joint_clipping(tmp_path):
    """Runs written before multitask_clipping existed clipped jointly; today's default is Algorithm 1's."""
    import argparse

    from core.synth.command import config_from_args
    from core.synth.config import SynthConfig, synth_config

    assert synth_config("quick", generator="multitask").multitask_clipping == "separate"
    old = {"generator": "multitask", "preset": "quick", "epsilon": 3.0}
    assert SynthConfig.from_dict(old).multitask_clipping == "joint"
    args = dict(preset=None, generator=None, seed=None, corpus=None, epsilon=None)
    stored, own = tmp_path / "config.json", tmp_path / "mine.json"
    stored.write_text(json.dumps({"config": {"method": "synth-multitask", "preset": "quick", "synth": old}}))
    own.write_text(json.dumps({"synth": old}))  # a user's own settings file: today's defaults fill it in
    assert config_from_args(argparse.Namespace(config=str(stored), **args))[0].multitask_clipping == "joint"
    assert config_from_args(argparse.Namespace(config=str(own), **args))[0].multitask_clipping == "separate"


def test_a_config_written_before_the_separator_setting_replays_the_newline_separator(tmp_path):
    """Every run written before `separator` existed put a newline between label and text; today's is BOS."""
    import argparse

    from core.config import ConfigError
    from core.synth.command import config_from_args
    from core.synth.config import SynthConfig, synth_config

    assert synth_config("quick", generator="filter").separator == "bos"
    for generator in ("filter", "pplm", "multitask"):
        old = {"generator": generator, "preset": "quick", "epsilon": 3.0}
        assert SynthConfig.from_dict(old).separator == "newline"
        assert SynthConfig.from_dict({**old, "separator": "bos"}).separator == "bos"
    args = dict(preset=None, generator=None, seed=None, corpus=None, epsilon=None)
    stored, own = tmp_path / "config.json", tmp_path / "mine.json"
    stored.write_text(json.dumps({"config": {"method": "synth-filter", "preset": "quick", "synth": old}}))
    own.write_text(json.dumps({"synth": old}))
    assert config_from_args(argparse.Namespace(config=str(stored), **args))[0].separator == "newline"
    assert config_from_args(argparse.Namespace(config=str(own), **args))[0].separator == "bos"
    with pytest.raises(ConfigError, match="separator must be bos or newline"):
        synth_config("tiny", separator="tab")


@pytest.mark.parametrize("content, message", [
    ({"generator": "filter", "epsilon": 8}, "unknown key(s) epsilon, generator; put SynthConfig fields under"),
    ([1, 2], 'must hold a JSON object with a "synth" section'),
    ({"synth": [1, 2]}, '"synth" must be a JSON object of settings'),
    ({"synth": {"lr": "0.001"}}, "lr must be a number, got '0.001'"),
    ({"synth": {"corpus": 5}}, "corpus must be str, got 5"),
    ({"base": [1]}, '"base" must be a JSON object of settings'),
    ({"config": {"method": "seqpate", "preset": "quick"}}, "is a 'seqpate' run's, not a synthetic-data run's"),
])
def test_a_config_file_it_cannot_use_is_one_line(tmp_path, capsys, content, message):
    """A flat file ran the default generator at the default epsilon, and odd types were tracebacks."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(content))
    assert main(["synth", "--config", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_chitchat_topics_on_another_base_corpus_are_refused_in_one_line(tmp_path, capsys):
    """The topics are chitchat's conversation prompts: on a Europarl base the run found no labelled text and
    stopped at "min() arg is an empty sequence" (a review)."""
    europarl = tmp_path / "europarl.txt"
    europarl.write_text("".join(f"sentence number {i} of the parliament debate today\n" for i in range(50)))
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"base": {"data": {"corpus": str(europarl)}}}))
    assert main(["synth", "--config", str(path), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert (f"the chitchat topics are read from the chitchat corpus, but the base model's corpus is '{europarl}'; "
            "for labelled texts of your own give --corpus FILE") in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_chitchat_topics_on_a_file_in_the_chitchat_layout_are_read_from_it(tmp_path, monkeypatch):
    """A base corpus read in the chitchat layout (corpus_format chitchat) holds the topics' prompts: the refusal
    above compared the corpus's name, and would have refused it. A copy of the bundled corpus gives its data."""
    import shutil

    from core.data.corpora import chitchat_path
    from core.synth.config import synth_config
    from core.synth.job import prepare_job

    monkeypatch.setenv("SEQPATE_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "mine.json"
    shutil.copy(chitchat_path(), copy)
    bundled = prepare_job(synth_config("tiny")).data
    mine = prepare_job(synth_config("tiny"), {"data__corpus": str(copy), "data__corpus_format": "chitchat"}).data
    assert mine.stats() == {**bundled.stats(), "source": mine.source} and mine.train == bundled.train


def test_a_null_in_a_config_file_is_a_setting(tmp_path):
    """per_label null means 'to the rarest label' (quick's setting); it was dropped, leaving tiny's 200."""
    import argparse

    from core.synth.command import config_from_args

    path = tmp_path / "c.json"
    path.write_text(json.dumps({"synth": {"per_label": None}}))
    args = argparse.Namespace(config=str(path), preset="tiny", generator=None, seed=None, corpus=None, epsilon=None)
    assert config_from_args(args)[0].per_label is None


def test_preset_against_a_config_of_another_preset_is_refused(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"synth": {"preset": "quick", "generator": "filter"}}))
    assert main(["synth", "--config", str(path), "--preset", "tiny", "--run-dir", str(tmp_path / "run")]) == 2
    assert "--preset tiny with a config of preset quick" in capsys.readouterr().err


def test_a_launched_job_whose_settings_raise_anything_fails_the_run(tmp_path, monkeypatch):
    """Only a ConfigError failed the run; any other error while its settings were read left it queued for good."""
    from core.synth import command

    def broken(run):
        raise ValueError("a config.json no reader expected")

    monkeypatch.setattr(command, "settings_of_run", broken)
    shipped = RunDir(pathlib.Path(__file__).parents[2] / "cached_runs" / "synth-tiny-filter-eps3")
    run = RunDir.create(tmp_path / "launched", shipped.config()["config"], 0)
    with pytest.raises(ValueError):
        command.run_launched_job(run)
    assert run.state() == "failed" and run.status()["error"] == "ValueError: a config.json no reader expected"


def test_a_label_the_filter_passed_nothing_of_is_named():
    """A privacy officer's filter run kept 0 samples of 2 of its 3 labels and filled them with rejects, silently."""
    from core.synth.command import unfiltered_labels_note

    note = unfiltered_labels_note({"generation": {"accepted_per_label": {"billing": 0, "tech": 32, "shipping": 0}}})
    assert note == ('note: the filter passed no sample of 2 of 3 labels (billing, shipping): their samples are the '
                    'rejects its discriminator scored highest ("kept": "filled" in samples.jsonl)')
    assert unfiltered_labels_note({"generation": {"accepted_per_label": {"a": 1, "b": 5}}}) == ""
    assert unfiltered_labels_note({"generation": {"accepted": 3}}) == ""  # runs made before it was counted per label
