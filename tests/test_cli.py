"""The command line as a user drives it: real subprocesses, one-line errors, complete run directories."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError, preset_config
from core.runs.store import REQUIRED_FILES, RunDir
from tests.conftest import micro_config


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, timeout=timeout)


def test_data_stats_reports_disjoint_user_split():
    out = cli("data-stats", "--corpus", "chitchat", "--preset", "tiny", "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["corpus"]["users"] == 1315
    assert stats["disjoint_users"] is True
    # tiny's split sizes (its preset's data config), drawn from user pools that share no one
    assert stats["private"]["splits"] == {"train": 2000, "valid": 200, "test": 200}
    assert stats["public"]["splits"] == {"train": 2000, "valid": 200}
    # every user with a sentence of at least min_words words is on one side (95 of chitchat's 1,315 have none)
    assert stats["private"]["users"] + stats["public"]["users"] == 1315 - 95
    assert 0.2 < stats["public_share"] < 0.3


def test_data_stats_of_a_corpus_too_small_for_the_preset_still_says_what_it_holds(tmp_path):
    """data-stats, the command to learn a corpus's sizes, refused a 1,200-line file with the preset's sizes only."""
    corpus = tmp_path / "ep.txt"
    corpus.write_text("".join(f"line {i} of a small corpus with enough words in it\n" for i in range(300)))
    out = cli("data-stats", "--corpus", str(corpus), "--preset", "tiny", "--json")
    assert out.returncode == 2 and json.loads(out.stdout)["corpus"] == {"users": 300, "records": 300,
                                                                        "records_min_words": 300}
    assert out.stderr.startswith(f"error: {corpus}: the public side has only ") and "the private side has only" in out.stderr


@pytest.fixture(scope="module")
def pub_gpt_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    config = root / "micro.json"
    config.write_text(json.dumps(micro_config().to_dict()))
    run_dir = root / "pub"
    out = cli("run", "--method", "pub-gpt", "--config", str(config), "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    return run_dir, json.loads(out.stdout.strip().splitlines()[-1])


def test_pub_gpt_run_writes_every_file_of_the_format(pub_gpt_run):
    run_dir, summary = pub_gpt_run
    run = RunDir(run_dir)
    assert run.missing_files() == [] and run.is_complete()
    assert set(REQUIRED_FILES) <= {p.name for p in run_dir.iterdir()}
    metrics, privacy, status = run.metrics(), run.privacy(), run.status()
    assert status["state"] == "done" and status["progress"] == 1.0
    vocab = metrics["base_model"]["vocab_size"]
    assert math.isfinite(metrics["ppl"]) and 1 < metrics["ppl"] < vocab
    assert summary["ppl"] == pytest.approx(metrics["ppl"])
    assert privacy["epsilon"] == 0.0 and privacy["unit"] == "none" and privacy["events"] == []
    assert all(0 <= metrics[f"bleu{n}"] <= 100 for n in range(1, 5))
    completions = run.completions()
    assert len(completions) == metrics["n_completions"] == 30
    assert all(len(c["prefix"].split()) == 4 for c in completions)
    config = run.config()
    assert config["config"]["method"] == "pub-gpt" and len(config["config_hash"]) == 16
    assert "torch" in config["versions"]


def test_same_config_gives_same_metrics(pub_gpt_run, tmp_path):
    run_dir, summary = pub_gpt_run
    out = cli("run", "--config", str(run_dir / "config.json"), "--run-dir", str(tmp_path / "again"))
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout.strip().splitlines()[-1])
    assert again["ppl"] == pytest.approx(summary["ppl"], rel=1e-6)
    assert again["bleu4"] == pytest.approx(summary["bleu4"], rel=1e-6)


def test_a_run_keeps_each_test_sentence_nll_and_they_make_its_perplexity(pub_gpt_run):
    run_dir, summary = pub_gpt_run
    rows = RunDir(run_dir).test_nll()
    assert len(rows) == RunDir(run_dir).metrics()["n_test_sentences"]
    assert all(tokens > 0 and nll > 0 for nll, tokens in rows)
    corpus_ppl = math.exp(math.fsum(nll for nll, _ in rows) / sum(tokens for _, tokens in rows))
    assert corpus_ppl == pytest.approx(summary["ppl"], rel=1e-12)


def test_compare_says_which_run_is_lower(pub_gpt_run, tmp_path):
    import shutil

    run_dir, _ = pub_gpt_run
    worse = tmp_path / "worse"
    shutil.copytree(run_dir, worse)
    RunDir(worse).write_test_nll([(nll + 0.05 * tokens, tokens) for nll, tokens in RunDir(run_dir).test_nll()])
    out = cli("compare", str(run_dir), str(worse), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    ppl = result["perplexity"]
    assert ppl["ratio"] == pytest.approx(math.exp(-0.05)) and ppl["verdict"] == "A is lower"
    # the same completions: BLEU-4 is equal and the paired test finds nothing
    bleu4 = RunDir(run_dir).metrics()["bleu4"]
    assert result["bleu4"]["bleu_a"] == pytest.approx(bleu4) == result["bleu4"]["bleu_b"]
    assert result["bleu4"]["verdict"] == "no clear difference"
    copy = tmp_path / "copy"  # a copy (the run itself is refused: below)
    shutil.copytree(run_dir, copy)
    same = cli("compare", str(run_dir), str(copy))
    assert same.returncode == 0 and "no clear difference" in same.stdout
    itself = cli("compare", str(run_dir), str(run_dir))  # read "no clear difference" (a CLI audit)
    assert itself.returncode == 2 and itself.stderr == "error: run A and run B are the same run (pub): give two runs\n"
    (worse / "test_nll.csv").unlink()  # an older run: perplexity is not compared, BLEU-4 still is
    older = cli("compare", str(run_dir), str(worse))
    assert older.returncode == 0 and "perplexity: not compared" in older.stdout and "BLEU-4" in older.stdout
    count = len((worse / "completions.jsonl").read_text().splitlines())  # as many as its metrics.json counts
    (worse / "completions.jsonl").write_text('{"prefix": "other", "reference": "x", "completion": "y"}\n' * count)
    other = cli("compare", str(run_dir), str(worse))
    assert other.returncode == 2 and "different test prefixes" in other.stderr and other.stderr.count("\n") == 1


def test_compare_draws_more_completions_from_the_saved_models(pub_gpt_run, tmp_path):
    import torch

    from core.evaluation import bleu_scores
    from core.models import load_local_model
    from core.runs.live import resample_completions

    run_dir, _ = pub_gpt_run
    run = RunDir(run_dir)
    draws = resample_completions(run, 3)
    # draw 0 is the run's own completions; the others are new samples of the same prefixes
    assert draws[0] == [row["completion"] for row in run.completions()]
    assert len(draws) == 3 and all(len(d) == 30 for d in draws)
    assert draws[1] != draws[0] and draws[2] not in (draws[0], draws[1])
    # another run: the same one with its weights nudged, so it samples other completions
    other = tmp_path / "nudged"
    shutil.copytree(run_dir, other)
    model = load_local_model(other / "model")
    with torch.no_grad():
        for weight in model.parameters():
            weight.add_(0.05 * torch.randn_like(weight))
    model.save_pretrained(other / "model")
    out = cli("compare", str(run_dir), str(other), "--draws", "3", "--json")
    assert out.returncode == 0, out.stderr
    assert "drawing 3 completions of each of the 30 test prefixes" in out.stderr
    bleu4 = json.loads(out.stdout)["bleu4"]
    expected = [sum(bleu_scores(d, [r["reference"] for r in run.completions()])["bleu4"] for d in drawn) / 3
                for drawn in (draws, resample_completions(RunDir(other), 3))]
    assert [bleu4["bleu_a"], bleu4["bleu_b"]] == pytest.approx(expected, rel=1e-12)
    assert bleu4["draws"] == 3 and bleu4["n_completions"] == 90 and 0 < bleu4["p_value"] <= 1
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    same = cli("compare", str(run_dir), str(copy), "--draws", "3", "--json")
    assert json.loads(same.stdout)["bleu4"]["p_value"] == 1.0  # one run against its copy: the same draws
    shipped = tmp_path / "shipped"  # shipped runs keep no weights: one line, not a traceback
    shipped_source = Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-pub-gpt"
    shutil.copytree(shipped_source, shipped)
    refused = cli("compare", str(shipped), str(shipped_source), "--draws", "2")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith("error: --draws 2 needs both runs' saved models: shipped kept no model weights")
    zero = cli("compare", str(run_dir), str(other), "--draws", "0")
    assert zero.returncode == 2 and "--draws must be from 1 to 1,000, got 0" in zero.stderr


def test_a_run_keeps_its_weights_and_completes_a_typed_prefix(pub_gpt_run, tmp_path):
    from core.config import RunConfig
    from core.data import load_prepared
    from core.evaluation import sentence_nll
    from core.models import load_local_model
    from core.tokenizer import encode_sentences, load_tokenizer

    run_dir, _ = pub_gpt_run
    run = RunDir(run_dir)
    # the saved weights are the evaluated model: they reproduce every test sentence's NLL
    cfg = RunConfig.from_dict(run.config()["config"])
    model, tokenizer = load_local_model(run_dir / "model"), load_tokenizer(run_dir / "model")
    test = load_prepared(cfg.data, cfg.seed).private_test
    rows = sentence_nll(model, encode_sentences(tokenizer, [s.text for s in test], cfg.data.max_tokens),
                        tokenizer.pad_token_id)
    assert [t for _, t in rows] == [t for _, t in run.test_nll()]
    # float32 sums on 2 threads: a full-suite run once differed by 1.3e-6 relative (another model: by far more)
    assert [n for n, _ in rows] == pytest.approx([n for n, _ in run.test_nll()], rel=1e-5)

    no_weights = tmp_path / "shipped"
    shutil.copytree(Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-pub-gpt", no_weights)
    unfinished = RunDir.create(tmp_path / "queued", micro_config().to_dict(), 0)
    out = cli("complete", str(run_dir), str(no_weights), str(unfinished.path), "synth-tiny-filter-eps3",
              "--prefix", "  my   name is ", "--seed", "3")
    # a run that cannot complete is an error (exit 2, one line), and the others' completions still print
    assert out.returncode == 2 and out.stderr.splitlines()[-1].startswith("error: 3 of 4 run(s)")
    first, second, third, fourth = json.loads(out.stdout)
    assert isinstance(first["completion"], str) and first["run"] == "pub"
    assert "kept no model weights" in second["error"]
    assert third["error"] == "queued is not a finished run (state queued)"  # not 'shipped runs keep none'
    assert fourth["error"] == ("synth-tiny-filter-eps3 is a synthetic-data run: it keeps no model (its samples "
                               "are in samples.jsonl)")
    again = cli("complete", str(run_dir), "--prefix", "my name is", "--seed", "3")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["completion"] == first["completion"]  # seeded, and the prefix's spacing does not matter
    for blank in ("   ", "\x01\x02"):  # control characters alone were completed as an empty prefix
        empty = cli("complete", str(run_dir), "--prefix", blank)
        assert empty.returncode == 2 and "type a prefix" in empty.stderr


@pytest.mark.parametrize("args, message", [
    (["complete", "tiny-pub-gpt", "--prefix", "hello", "--seed", "-1"], "seed must be a whole number from 0 to"),
    (["compare", "tiny-pub-gpt", "tiny-pri-gpt", "--confidence", "1.5"], "--confidence must be between 0 and 1, "
                                                                          "got 1.5"),
    (["compare", "tiny-pub-gpt", "tiny-pri-gpt", "--confidence", "nan"], "--confidence must be between 0 and 1"),
    # 10^9 asked numpy for 1.46 TiB (a traceback); 10^5 draws started a job of days (a CLI audit)
    (["compare", "tiny-pub-gpt", "tiny-pri-gpt", "--resamples", "1000000000"],
     "--resamples must be from 1 to 1,000,000, got 1000000000"),
    (["compare", "tiny-pub-gpt", "tiny-pri-gpt", "--draws", "100000"], "--draws must be from 1 to 1,000, got 100000"),
    (["compare", "tiny-pub-gpt", "cached_runs/tiny-pub-gpt"], "run A and run B are the same run (tiny-pub-gpt)"),
    # a value starting with '-' read as a flag: "argument --epsilon: expected one argument" (a CLI audit)
    (["privacy", "calibrate", "--queries", "10", "--epsilon", "-inf"], "epsilon must be a positive number or inf, "
                                                                      "got -inf"),
    (["run", "--method", "seqpate", "--delta", "-1e-6", "--run-dir", "x"], "delta must be in (0, 1), got -1e-06"),
])
def test_every_command_refuses_settings_out_of_range_in_one_line(args, message, capsys):
    """A negative seed was refused by every command but `complete`; a confidence of 1.5 or nan passed `compare`
    with exit 0 where the runs had no per-sentence NLL to bootstrap (a review)."""
    from core.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_an_empty_completion_says_why(pub_gpt_run, monkeypatch, capsys):
    """An empty completion (the model's first token ended the text: 5 to 11 seeds of 20 for a Japanese or
    Cyrillic prefix on a quick model) printed "completion": "" with no word, which reads as a fault."""
    import core.runs.live as live
    from core.cli import main

    run_dir, _ = pub_gpt_run
    monkeypatch.setattr(live, "complete_prefix", lambda run, prefix, seed=0: "" if prefix == "日本語" else "hi")
    assert main(["complete", str(run_dir), "--prefix", "日本語"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"run": "pub", "completion": "", "note": "empty: the model ended the text at its first token"}]
    assert main(["complete", str(run_dir), "--prefix", "my name"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"run": "pub", "completion": "hi"}]


def test_saved_models_sample_where_seqpate_device_says(pub_gpt_run, tmp_path):
    """`complete` and `compare --draws` load a run's saved model where runs compute: an unknown device, or cuda
    without a GPU, is refused in one line (they sampled on the CPU whatever SEQPATE_DEVICE said)."""
    import torch

    run_dir, _ = pub_gpt_run
    shutil.copytree(run_dir, tmp_path / "copy")
    commands = (["complete", str(run_dir), "--prefix", "my name is"],
                ["compare", str(run_dir), str(tmp_path / "copy"), "--draws", "2"])
    devices = {"gpu": "error: SEQPATE_DEVICE must be cpu or cuda, got 'gpu'\n"}
    if not torch.cuda.is_available():
        devices["cuda"] = "sees no CUDA GPU"
    for args in commands:
        for device, error in devices.items():
            out = subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, timeout=600,
                                 env=dict(os.environ, SEQPATE_DEVICE=device))
            assert out.returncode == 2 and out.stdout == "" and error in out.stderr, (args, device, out.stderr)
            assert out.stderr.count("\n") == 1


def test_runs_show_prints_status_json(pub_gpt_run):
    run_dir, _ = pub_gpt_run
    out = cli("runs", "show", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["state"] == "done"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "seqpate", "--epsilon", "abc"], "epsilon must be a number"),
        (["--method", "noisysgd", "--epsilon", "-1"], "epsilon must be a positive number"),
        (["--method", "seqpate", "--epsilon", "nan"], "epsilon must be a number (or inf), got 'nan'"),
        (["--method", "seqpate", "--delta", "2"], "delta must be in (0, 1)"),
        (["--method", "seqpate", "--filter", "top-k:0"], "top-k must be a positive integer"),
        (["--method", "seqpate", "--filter", "top-p:1.5"], "top-p must be in (0, 1]"),
        (["--method", "seqpate", "--teachers", "5000"], "5000 teachers but only 2000"),
        (["--method", "nonsense"], "unknown method"),
        # beyond what the engine honours (core.config: MIN_EPSILON, MAX_EPSILON, MIN_DELTA, MAX_SEED)
        (["--method", "seqpate", "--epsilon", "1e-320"], "epsilon must be at least 1e-06"),  # autodp never ended
        (["--method", "noisysgd", "--epsilon", "1e5"], "epsilon must be at most 1000 (or inf for no noise)"),
        (["--method", "seqpate", "--epsilon", "1e400"], "is too large for a number; write inf for no noise"),
        (["--method", "seqpate", "--delta", "1e-13"], "delta must be at least 1e-12"),
        (["--method", "pub-gpt", "--seed", "-1"], "seed must be a whole number from 0 to 4294967295"),
        (["--method", "pub-gpt", "--seed", "4294967296"], "seed must be a whole number from 0 to 4294967295"),
        (["--method", "noisysgd", "--epochs", "0"], "dpsgd.epochs must be at least 1, got 0"),
        (["--method", "noisysgd", "--canaries", "1000000000"], "canary insertion counts must be from 1 to 10,000"),
        (["--method", "seqpate", "--filter", "top-k:inf"], "needs a finite number"),
        (["--method", "seqpate", "--ray-address", "auto"], "--ray-address needs --executor ray"),
        (["--config", "cached_runs/quick-seqpate-eps3/config.json"],
         "--preset tiny with a config of preset quick: the config sets every size itself"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    run_dir = tmp_path / "never"
    out = cli("run", "--preset", "tiny", "--run-dir", str(run_dir), *args)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and message in out.stderr
    assert "Traceback" not in out.stderr
    assert not run_dir.exists()


def test_flags_the_method_never_reads_are_noted_and_not_stored(capsys):
    from core.cli import build_parser, config_from_args

    args = build_parser().parse_args(["run", "--method", "pub-gpt", "--teachers", "5", "--filter", "top-k:3",
                                      "--run-dir", "x"])
    cfg = config_from_args(args)
    assert "note: pub-gpt does not use --teachers, --filter: ignored" in capsys.readouterr().err
    assert cfg == preset_config("tiny", method="pub-gpt")  # the preset's values, not settings it never used
    args = build_parser().parse_args(["run", "--method", "seqpate", "--teachers", "10", "--filter", "top-p: 0.9",
                                      "--run-dir", "x"])
    cfg = config_from_args(args)  # 10 is tiny's own count: read all the same, so no note
    assert capsys.readouterr().err == "" and cfg.seqpate.filter == "top-p:0.9"
    config_from_args(build_parser().parse_args(["run", "--method", "pub-gpt", "--executor", "process",
                                                "--run-dir", "x"]))  # no teachers to run anywhere
    assert "note: pub-gpt does not use --executor: ignored" in capsys.readouterr().err
    # a value the method could not run with, in a field it never reads, is noted like any other (it was refused)
    cfg = config_from_args(build_parser().parse_args(["run", "--method", "seqpate", "--epochs", "0",
                                                      "--run-dir", "x"]))
    assert "note: seqpate does not use --epochs: ignored" in capsys.readouterr().err
    assert cfg == preset_config("tiny", method="seqpate")
    with pytest.raises(ConfigError, match="dpsgd.epochs must be at least 1"):  # where it is read, refused
        config_from_args(build_parser().parse_args(["run", "--method", "noisysgd", "--epochs", "0",
                                                    "--run-dir", "x"]))


def test_compare_and_report_say_what_is_wrong(tmp_path):
    shutil.copytree(Path(__file__).resolve().parents[1] / "cached_runs" / "quick-pub-gpt", tmp_path / "copy")
    same = json.loads(cli("compare", "quick-pub-gpt", str(tmp_path / "copy"), "--json").stdout)
    assert same["bleu4"]["p_value"] == 1.0 and same["bleu4"]["verdict"] == "no clear difference"  # was p = 0.000
    failed = RunDir.create(tmp_path / "failed", micro_config(method="pub-gpt").to_dict(), seed=0)
    failed.set_status(state="failed", stage="evaluate", error="boom")
    out = cli("compare", "quick-pub-gpt", str(failed.path))
    assert out.returncode == 2 and "run B (failed) is not a finished run (state failed)" in out.stderr
    out = cli("report", "--runs", str(tmp_path), "--notes", str(tmp_path / "missing.md"))
    assert out.returncode == 2 and "no such file" in out.stderr and not (tmp_path / "REPORT.md").exists()
    (tmp_path / "binary.md").write_bytes(b"notes\n\xff\xfe")  # named no file: "'utf-8' codec can't decode ..."
    one = tmp_path / "one"  # a folder with a finished run, so that the report gets as far as its notes
    shutil.copytree(Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-pub-gpt", one / "tiny-pub-gpt")
    out = cli("report", "--runs", str(one), "--notes", str(tmp_path / "binary.md"))
    assert out.returncode == 2 and out.stderr == f"error: notes {tmp_path / 'binary.md'}: not UTF-8 text (byte 6)\n"
    assert not (one / "REPORT.md").exists()


def test_a_finished_run_with_a_file_lost_since_is_named_as_such(tmp_path):
    """A walk deleted metrics.json of a finished run (or truncated its config.json): compare said "not a finished
    run (state done)", runs show said done with metrics null, runs list said done (or, for the config, failed
    with no reason in its text form)."""
    damaged = tmp_path / "damaged"
    shutil.copytree(Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-pub-gpt", damaged)
    (damaged / "metrics.json").unlink()
    out = cli("compare", "tiny-pub-gpt", str(damaged))
    assert out.returncode == 2 and ("run B (damaged) is not a finished run (state done, but metrics.json missing): "
                                    "nothing to compare") in out.stderr
    shown = json.loads(cli("runs", "show", str(damaged)).stdout)
    assert shown["state"] == "done" and shown["problem"] == "state done, but metrics.json missing"
    env = {**os.environ, "SEQPATE_RUNS_DIR": str(tmp_path)}
    listed = subprocess.run([sys.executable, "-m", "core", "runs", "list"], capture_output=True, text=True, env=env,
                            timeout=120).stdout
    line = next(line for line in listed.splitlines() if line.startswith("damaged "))
    assert " failed " in line and line.endswith("(finished, but metrics.json missing or unreadable since)")
    # garbled rather than lost: failed too, as the dashboard lists it (runs list said done)
    (damaged / "metrics.json").write_text("{not json")
    listed = subprocess.run([sys.executable, "-m", "core", "runs", "list"], capture_output=True, text=True, env=env,
                            timeout=120).stdout
    line = next(line for line in listed.splitlines() if line.startswith("damaged "))
    assert " failed " in line and line.endswith("(finished, but metrics.json missing or unreadable since)")
    (damaged / "metrics.json").write_text("{}")
    (damaged / "config.json").write_text('{"config": {"meth')
    shown = json.loads(cli("runs", "show", str(damaged)).stdout)
    assert shown["problem"].startswith("state done, but invalid JSON in ") and "config.json" in shown["problem"]
    (damaged / "status.json").write_text('{"state": "do')  # no state to name: the file is
    assert RunDir(damaged).incomplete_reason().startswith(f"invalid JSON in {damaged / 'status.json'}")
    # lost: runs show printed only the folder (exit 0), compare and audit said "state None"
    (damaged / "status.json").unlink()
    assert RunDir(damaged).incomplete_reason() == "status.json is missing"
    shown = json.loads(cli("runs", "show", str(damaged)).stdout)
    assert shown == {"run_dir": str(damaged), "state": "failed", "problem": "status.json is missing"}
    out = cli("compare", "tiny-pub-gpt", str(damaged))
    assert out.returncode == 2 and "is not a finished run (status.json is missing)" in out.stderr


def test_report_leaves_out_a_damaged_run_and_says_so(tmp_path):
    """One run folder with a garbled config.json stopped the whole report ('invalid JSON in ...')."""
    shipped = Path(__file__).resolve().parents[1] / "cached_runs"
    for name in ("tiny-pub-gpt", "synth-tiny-filter-eps3"):
        shutil.copytree(shipped / name, tmp_path / name)
    shutil.copytree(shipped / "synth-tiny-filter-eps8", tmp_path / "garbled")
    (tmp_path / "garbled" / "config.json").write_text('{"config": {"meth')
    out = cli("report", "--runs", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("note: left out 1 run folder(s) that are not finished runs: garbled (state done, "
                                 "but invalid JSON in ")
    report = (tmp_path / "REPORT.md").read_text()
    assert "| filter | 3.00 | 0 | 3.00 |" in report  # the synthetic run that is whole
    assert "Left out, not finished runs: garbled (state done, but invalid JSON in " in report


def test_a_run_file_cut_short_is_named_as_such_not_as_another_test_set(tmp_path):
    """A walk cut a finished run's completions.jsonl and test_nll.csv short: compare blamed another data config
    ('different test prefixes', 'not the same test set') and the audit scored the 10 completions left."""
    cut = tmp_path / "cut"
    shutil.copytree(Path(__file__).resolve().parents[1] / "cached_runs" / "quick-pub-gpt", cut)
    completions = (cut / "completions.jsonl").read_text().splitlines(keepends=True)
    (cut / "completions.jsonl").write_text("".join(completions[:10]))
    out = cli("compare", "quick-pub-gpt", str(cut))
    assert out.returncode == 2 and ("is not a finished run (state done, but completions.jsonl holds 10 of the 1000 "
                                    "completions metrics.json counts)") in out.stderr
    assert cli("audit", "--run-dir", str(cut)).returncode == 2
    (cut / "completions.jsonl").write_text("".join(completions))
    (cut / "phrases.csv").write_text('phrase,occurrences\n"never closed\n')  # what the audit rewrites: repaired
    assert cli("audit", "--run-dir", str(cut)).returncode == 0 and RunDir(cut).is_complete()
    nll = (cut / "test_nll.csv").read_text().splitlines(keepends=True)
    (cut / "test_nll.csv").write_text("".join(nll[:11]))
    out = json.loads(cli("compare", "quick-pub-gpt", str(cut), "--json").stdout)
    assert out["perplexity"]["error"] == ("test_nll.csv of quick-pub-gpt holds 1000 sentences and of cut 10, "
                                          "for the same test set: one was cut short")


def test_privacy_calibrate_answers_infinity_for_a_noise_too_small_to_protect_anything():
    """std 1e-160 was an OverflowError, 1e-10 scipy's 'f(a) and f(b) must have different signs'."""
    for sigma in ("1e-160", "1e-10"):
        out = cli("privacy", "calibrate", "--queries", "1000", "--sigma", sigma)
        assert out.returncode == 0 and json.loads(out.stdout)["epsilon"] == math.inf, out.stderr
    # no noise at all is labelled as a run records it, not as the Gaussian accountant's answer
    from core.privacy import ACCOUNTANT_EXACT_GAUSSIAN, ACCOUNTANT_NOT_PRIVATE

    for args in (("--sigma", "0"), ("--epsilon", "inf")):
        out = json.loads(cli("privacy", "calibrate", "--queries", "1000", *args).stdout)
        assert (out["epsilon"], out["accountant"]) == (math.inf, ACCOUNTANT_NOT_PRIVATE)
    out = json.loads(cli("privacy", "calibrate", "--queries", "1000", "--sigma", "1e-10").stdout)
    assert out["accountant"] == ACCOUNTANT_EXACT_GAUSSIAN


def test_existing_run_dir_is_refused(pub_gpt_run):
    run_dir, _ = pub_gpt_run
    out = cli("run", "--method", "pub-gpt", "--preset", "tiny", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "already exists" in out.stderr


def test_privacy_calibrate_reproduces_the_known_multiplier():
    out = cli("privacy", "calibrate", "--queries", "1000", "--epsilon", "3", "--delta", "1e-6")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["noise_multiplier"] == pytest.approx(48.8212, abs=1e-3)
    assert result["noise_std"] == pytest.approx(69.04, abs=1e-2)
    back = json.loads(cli("privacy", "calibrate", "--queries", "1000", "--sigma", str(result["noise_std"])).stdout)
    assert back["epsilon"] == pytest.approx(3.0, abs=1e-6)
    # epsilon and sigma answer each other: both given is refused, not one of them silently dropped
    both = cli("privacy", "calibrate", "--queries", "1000", "--epsilon", "3", "--sigma", "5")
    assert both.returncode == 2 and "not allowed with" in both.stderr and not both.stdout


def test_privacy_calibrate_refuses_what_it_cannot_compute_in_one_line():
    """An epsilon of 10^5 made the DP-SGD calibration take minutes and gigabytes; a delta of 1e-310 made autodp
    fail with 'Failed to find epsilon'."""
    for args, message in [(["--epsilon", "1e5", "--delta", "1e-6"], "epsilon must be at most 1000"),
                          (["--epsilon", "1e-320", "--delta", "1e-6"], "epsilon must be at least 1e-06"),  # ran on
                          (["--epsilon", "3", "--delta", "1e-310"], "delta must be at least 1e-12"),
                          (["--sigma", "69", "--delta", "1e-310"], "delta must be at least 1e-12"),
                          # inf was "a number (or inf)" in one message and refused by the next
                          (["--sigma", "inf"], "sigma must be a finite number, got 'inf'"),
                          (["--sigma", "-1"], "--sigma must be at least 0"),
                          (["--epsilon", "3", "--queries", "0"], "--queries must be at least 1")]:
        out = cli("privacy", "calibrate", "--queries", "1000", *args)
        assert out.returncode == 2 and message in out.stderr and out.stderr.strip().count("\n") == 0, out.stderr


def test_compare_refuses_a_synthetic_data_run():
    """Its samples have empty references: compare printed BLEU 0.00 against 0.00, 'no clear difference'."""
    out = cli("compare", "synth-tiny-multitask-eps3", "tiny-adp-eps3")  # shipped runs, by id
    assert out.returncode == 2 and not out.stdout and out.stderr.count("\n") == 1
    assert "run A (synth-tiny-multitask-eps3) is a synthetic-data run" in out.stderr


def test_a_thread_count_that_is_not_a_number_is_refused_before_a_run_folder_is_made(tmp_path):
    env = dict(os.environ, SEQPATE_THREADS="abc")  # was exit 1 and a run folder failed at stage queued
    for command in (["run", "--method", "pub-gpt"], ["synth", "--generator", "filter", "--epsilon", "3"]):
        out = subprocess.run([sys.executable, "-m", "core", *command, "--preset", "tiny", "--run-dir",
                              str(tmp_path / "run")], capture_output=True, text=True, timeout=600, env=env)
        assert out.returncode == 2 and "SEQPATE_THREADS must be a whole number" in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", [["run", "--method", "pub-gpt"], ["synth", "--generator", "filter"]])
def test_a_run_folder_is_made_only_once_a_stop_can_be_recorded_in_it(command, tmp_path, monkeypatch):
    """A Ctrl-C or SIGTERM while the engine loaded (torch: 6-9 s) left a folder "queued" for good: the folder was
    made before the engine was imported and SIGTERM handled. Now SIGTERM is handled when the folder is made."""
    import signal

    from core.cli import main

    seen = []

    def create(*args, **kwargs):
        seen.append(signal.getsignal(signal.SIGTERM))
        raise KeyboardInterrupt  # a Ctrl-C the moment the folder would be made: nothing written, exit 130

    monkeypatch.setattr(RunDir, "create", create)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert main([*command, "--preset", "tiny", "--run-dir", str(tmp_path / "run")]) == 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert len(seen) == 1 and seen[0] not in (signal.SIG_DFL, previous) and not (tmp_path / "run").exists()


SHIPPED_RUN = Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-adp-eps3"


def test_mistakes_that_used_to_pass_or_mislead_are_one_line(tmp_path):
    config = tmp_path / "typo.json"
    config.write_text('{"seqpat": {}}')  # an empty misspelt section ran the preset as if nothing was wrong
    report_here = tmp_path / "runs"
    report_here.mkdir()
    for args, message in [
        (["run", "--method", "seqpate", "--teacher", "5", "--run-dir", str(tmp_path / "r")],  # ran as --teachers
         "unrecognized arguments: --teacher 5"),
        (["run", "--config", str(config), "--run-dir", str(tmp_path / "r")], "unknown config section 'seqpat'"),
        (["run", "--method", "pub-gpt", "--run-dir", ""], "argument --run-dir: needs a folder name"),  # "exists: ."
        (["report", "--runs", str(report_here)], "no finished runs there"),  # wrote a report of 0 runs
        (["run", "--config", "cached_runs/synth-tiny-filter-eps3/config.json", "--run-dir", str(tmp_path / "r")],
         "unknown config section 'synth' in cached_runs/synth-tiny-filter-eps3/config.json (a synthetic-data run's "
         "config: use core synth --config)"),
        (["report", "--runs", str(SHIPPED_RUN)], "is a run folder"),  # wrote REPORT.md into the run
        (["report", "--runs", str(config)], "not a folder"),
        (["sweep", "--plan", "adp", "--out", ""], "argument --out: needs a folder name"),
        # Ray said "Invalid address format" once the pseudo data was made: a failed run folder (a CLI audit)
        (["run", "--method", "seqpate", "--executor", "ray", "--ray-address", "not a host", "--run-dir",
          str(tmp_path / "r")], "ray address must be auto, local, host:port or scheme://... (e.g. 10.0.0.5:6379, "
                                "or ray://host:10001), got 'not a host'"),
    ]:
        out = cli(*args)
        assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)
    assert not (tmp_path / "r").exists() and not list(report_here.iterdir())
    assert not (SHIPPED_RUN / "REPORT.md").exists()


def test_job_on_a_folder_that_was_never_launched_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "missing", tmp_path / "empty"):  # was a traceback ending in an AttributeError
        out = cli("job", str(folder))
        assert out.returncode == 2 and out.stderr == f"error: not a launched run folder (no config.json): {folder}\n"


def test_job_runs_only_a_queued_run_that_no_live_job_holds(tmp_path, monkeypatch, capsys):
    """`core job` on a run at stage audit waited for the slot, then ran the whole pipeline again in its folder."""
    import contextlib

    import core.cli
    import core.runs.jobs
    from core.cli import main
    from core.runs.store import RunDir

    run = RunDir.create(tmp_path / "launched", micro_config().to_dict(), 0)
    run.set_status(state="running", stage="audit")
    assert main(["job", str(run.path)]) == 2
    assert capsys.readouterr().err.startswith("error: launched is running, not queued: `core job` runs a launched ")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:  # queued as another live process's job (jobs.launch records the job's pid)
        run.set_status(state="queued", stage=None, pid=sleeper.pid)
        assert main(["job", str(run.path)]) == 2
        assert f"is queued as the job of process {sleeper.pid}, which is alive" in capsys.readouterr().err
    finally:
        sleeper.kill()
        sleeper.wait()

    @contextlib.contextmanager
    def slot_after_another_ran_it(root, run_dir, *args, **kwargs):
        run_dir.set_status(state="done")  # what a second `core job` did while this one waited
        yield 0

    run.set_status(state="queued", pid=None)
    monkeypatch.setattr(core.runs.jobs, "acquire_slot", slot_after_another_ran_it)
    monkeypatch.setattr(core.cli, "execute_run", lambda *a: pytest.fail("ran a run another process had run"))
    assert main(["job", str(run.path)]) == 0
    assert "launched is done by now: nothing to run" in capsys.readouterr().err

    # a job whose launcher died (a dead pid) is taken by `core job`, which claims it before waiting: a listing
    # meanwhile saw a queued run with a dead pid and failed it, and the job then ran nothing
    from core.runs import list_runs

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run.set_status(state="queued", pid=dead.pid)

    @contextlib.contextmanager
    def slot_after_a_listing(root, run_dir, *args, **kwargs):
        list_runs([(tmp_path, "live")])  # the dashboard lists every 2 s while jobs run
        yield 0

    ran = []
    monkeypatch.setattr(core.runs.jobs, "acquire_slot", slot_after_a_listing)
    monkeypatch.setattr(core.cli, "execute_run", lambda cfg, r: ran.append(r.run_id) or 0)
    assert main(["job", str(run.path)]) == 0 and ran == ["launched"]
    assert run.status()["pid"] == os.getpid()


def test_a_failure_the_run_folder_cannot_record_is_still_named_with_its_stage(tmp_path, monkeypatch, capsys):
    """A folder that became unwritable at stage evaluate: recording the failure failed too, and that second error
    replaced the run's (`error: [Errno 1] ... .status.json.tmp`, no stage, exit 2 as if nothing were written)."""
    from core.cli import record_failure
    from core.runs.store import RunDir

    run = RunDir.create(tmp_path / "ro", micro_config().to_dict(), 0)
    run.set_status(state="running", stage="evaluate")

    def unwritable(*args, **kwargs):
        raise PermissionError("[Errno 1] Operation not permitted: 'ro/.status.json.tmp'")

    monkeypatch.setattr(RunDir, "set_status", unwritable)
    try:
        raise OSError(28, "No space left on device")
    except OSError as exc:
        assert record_failure(run, exc) == 1
    assert capsys.readouterr().err == (
        "error: run failed at stage evaluate: OSError: [Errno 28] No space left on device (not recorded in "
        f"{run.path}: PermissionError: [Errno 1] Operation not permitted: 'ro/.status.json.tmp'; the run lists as "
        "failed once its process has ended)\n")


def test_a_run_or_sweep_made_where_no_listing_looks_says_so(tmp_path, monkeypatch, capsys):
    """A sweep into runs/sw and a run in runs/x/y showed neither in `runs list` nor on the dashboard."""
    from core.cli import note_unlisted

    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    note_unlisted(Path("runs"))
    note_unlisted(Path("runs/../runs"))
    assert capsys.readouterr().err == ""
    note_unlisted(Path("runs/sw"))
    assert capsys.readouterr().err == ("note: runs/sw is not runs/ ($SEQPATE_RUNS_DIR) or cached_runs/: `runs list` "
                                       "and the dashboard will not list runs made there; `runs show`, `compare` and "
                                       "`audit` take their folders\n")


def test_a_stop_or_a_refusal_the_run_folder_cannot_record_is_still_what_is_said(tmp_path, monkeypatch, capsys):
    """With a full disk, a Ctrl-C or a launched run's refused config was reported as the failed status write."""
    from core.cli import failing_the_run, stopped
    from core.runs.store import RunDir

    run = RunDir.create(tmp_path / "full", micro_config().to_dict(), 0)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunDir, "set_status", no_space)
    assert stopped(run, KeyboardInterrupt()) == 130
    assert capsys.readouterr().err == (f"stopped: {run.path} (not recorded: OSError: [Errno 28] No space left on "
                                       "device; the run lists as failed once its process has ended)\n")
    with pytest.raises(ConfigError, match="seqpate.teachers must be int"):
        with failing_the_run(run):
            raise ConfigError("seqpate.teachers must be int, got 'x'")


def test_a_launched_run_whose_config_is_refused_fails_with_the_reason(tmp_path):
    from core.runs.store import RunDir

    stored = preset_config("tiny", method="seqpate").to_dict()
    stored["seqpate"]["teachers"] = "x"
    run = RunDir.create(tmp_path / "launched", stored, 0)  # as the Launch page writes it, its settings hand-edited
    out = cli("job", str(run.path))
    assert out.returncode == 2 and out.stderr == "error: seqpate.teachers must be int, got 'x'\n", out.stderr
    assert run.state() == "failed" and run.status()["error"] == "seqpate.teachers must be int, got 'x'"


def test_a_ray_config_rerun_on_another_executor_drops_the_cluster_address(tmp_path, capsys):
    from core.cli import build_parser, config_from_args

    stored = tmp_path / "ray.json"
    stored.write_text(json.dumps({"config": preset_config("tiny", method="seqpate", seqpate__executor="ray",
                                                          seqpate__ray_address="auto").to_dict()}))
    args = build_parser().parse_args(["run", "--config", str(stored), "--executor", "local", "--run-dir", "unused"])
    sp = config_from_args(args).seqpate
    assert (sp.executor, sp.ray_address) == ("local", "")  # was stored as 'auto', never used
    assert "the config's ray_address 'auto' is dropped" in capsys.readouterr().err
    args = build_parser().parse_args(["run", "--config", str(stored), "--run-dir", "unused"])
    assert config_from_args(args).seqpate.ray_address == "auto"


def test_a_method_without_epsilon_keeps_the_presets_privacy(capsys):
    from core.cli import build_parser, config_from_args

    args = build_parser().parse_args(["run", "--method", "pub-gpt", "--preset", "tiny", "--epsilon", "5",
                                      "--delta", "1e-7", "--run-dir", "unused"])
    cfg = config_from_args(args)  # the same config, and so the same run, whatever the flags said
    assert cfg.privacy == preset_config("tiny").privacy
    assert "pub-gpt takes no epsilon or delta (epsilon 0): --epsilon and --delta ignored" in capsys.readouterr().err
    args = build_parser().parse_args(["run", "--method", "seqpate", "--preset", "tiny", "--epsilon", "5",
                                      "--run-dir", "unused"])
    assert config_from_args(args).privacy.epsilon == 5.0


def test_runs_list_shows_a_fixed_epsilon_and_stops_quietly_when_the_pipe_closes(pub_gpt_run):
    run_dir, _ = pub_gpt_run
    config = json.loads((run_dir / "config.json").read_text())
    assert config["config"]["privacy"]["epsilon"] != 0  # the config's epsilon is not what Pub-GPT has
    env = {**os.environ, "SEQPATE_RUNS_DIR": str(run_dir.parent), "SEQPATE_CACHED_RUNS_DIR": str(run_dir / "none")}
    listed = subprocess.run([sys.executable, "-m", "core", "runs", "list"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0 and "eps asked=0.0" in listed.stdout and "pub-gpt" in listed.stdout
    header, line = listed.stdout.splitlines()[:2]  # a header, and the preset (rows of one method looked alike)
    assert header.split() == ["run", "source", "state", "stage", "preset", "method", "epsilon"]
    assert line.split()[:6] == ["pub", "live", "done", "done", "tiny", "pub-gpt"]
    # a reader that closes the pipe at once (`runs list | head`) gets no "Broken pipe" error
    closed = subprocess.run(f"{sys.executable} -m core runs list | true", shell=True, env=env,
                            capture_output=True, text=True)
    assert "Broken pipe" not in closed.stderr


def test_a_config_file_keeps_its_nulls(tmp_path):
    """A null size in a config file means "take everything"; `--config` must not swap in the preset's number, or a
    run would not reproduce from its own config.json."""
    import argparse

    from core.cli import config_from_args
    from core.config import preset_config

    stored = preset_config("quick", method="seqpate", seqpate__teachers=7).to_dict()
    stored["data"]["private_train"] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"config": stored}))
    cfg = config_from_args(argparse.Namespace(config=str(path), preset=None))
    assert cfg.data.private_train is None and cfg.seqpate.teachers == 7
    assert cfg.to_dict() == stored


@pytest.mark.parametrize("flag", [["--ablation", "merge_p"], ["--ablation=-merge_p"]])
def test_an_ablation_is_named_with_or_without_the_papers_dash(flag):
    from core.cli import build_parser

    args = build_parser().parse_args(["run", "--method", "seqpate", "--run-dir", "x", *flag])
    assert args.ablation == "-merge_p"


def test_an_unknown_ablation_is_refused_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "core", "run", "--method", "seqpate", "--preset", "tiny",
                          "--ablation", "merge", "--run-dir", str(tmp_path / "r")], capture_output=True, text=True)
    assert out.returncode != 0
    assert "unknown ablation 'merge'" in out.stderr
    assert not (tmp_path / "r").exists()


def test_a_run_made_here_under_a_shipped_runs_name_and_the_shipped_one_are_told_apart(tmp_path, monkeypatch):
    """runs list showed two rows of one name, compare took the one made here without a word and printed
    "A = tiny-pub-gpt, B = tiny-pub-gpt", and the dashboard's name for the shipped one was refused."""
    shipped = Path(__file__).resolve().parents[1] / "cached_runs" / "tiny-pub-gpt"
    shutil.copytree(shipped, tmp_path / "tiny-pub-gpt")
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(tmp_path))
    listed = cli("runs", "list").stdout.splitlines()
    assert sum(line.startswith("tiny-pub-gpt  ") and " live " in line for line in listed) == 1
    assert sum(line.startswith("tiny-pub-gpt (shipped) ") and " cached " in line for line in listed) == 1
    shown = cli("runs", "show", "tiny-pub-gpt (shipped)")
    assert json.loads(shown.stdout)["run_dir"] == str(shipped) and shown.stderr == ""
    out = cli("compare", "tiny-pub-gpt", "tiny-pub-gpt (shipped)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("A = tiny-pub-gpt, B = tiny-pub-gpt (shipped)\n")
    assert out.stderr == (f"note: 'tiny-pub-gpt' names a run made here ({tmp_path / 'tiny-pub-gpt'}) and a shipped "
                          "run: taking the one made here; 'tiny-pub-gpt (shipped)' names the shipped one\n")
    refused = cli("runs", "show", "../x (shipped)")
    assert refused.returncode == 2 and "not a shipped run's name: '../x (shipped)'" in refused.stderr


def test_audit_takes_a_folder_here_first_and_names_a_shipped_run_only_by_its_folder(tmp_path, monkeypatch):
    """`audit --run-dir ID` took a run id and rewrote a shipped run's files on a bare name, and a run folder in the
    current folder was looked up as an id instead."""
    shipped = Path(__file__).resolve().parents[1] / "cached_runs"
    cached = tmp_path / "cached"
    shutil.copytree(shipped / "tiny-pub-gpt", cached / "tiny-pub-gpt")
    before = (cached / "tiny-pub-gpt" / "metrics.json").read_bytes()
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(cached))
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(tmp_path / "runs"))
    out = cli("audit", "--run-dir", "tiny-pub-gpt")
    assert out.returncode == 2 and out.stderr == (f"error: 'tiny-pub-gpt' is a shipped run: the audit rewrites its "
                                                  f"files; to do that, give its folder ({cached / 'tiny-pub-gpt'})\n")
    assert (cached / "tiny-pub-gpt" / "metrics.json").read_bytes() == before
    here = tmp_path / "here"
    shutil.copytree(shipped / "tiny-pub-gpt", here / "mine")
    out = subprocess.run([sys.executable, "-m", "core", "audit", "--run-dir", "mine"], capture_output=True,
                         text=True, timeout=600, cwd=here,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 0, out.stderr
    assert json.loads((here / "mine" / "metrics.json").read_text())["audit"]["recomputed_by"] == "core audit"


def test_no_run_folder_takes_the_name_the_listings_give_a_shipped_run(tmp_path):
    from core.runs.registry import is_safe_run_id

    out = cli("run", "--method", "pub-gpt", "--preset", "tiny", "--run-dir", str(tmp_path / "tiny-pub-gpt (shipped)"))
    assert out.returncode == 2 and "is how the run listings name a shipped run; choose another" in out.stderr
    assert not (tmp_path / "tiny-pub-gpt (shipped)").exists()
    assert not is_safe_run_id("tiny-pub-gpt (shipped)") and is_safe_run_id("tiny-pub-gpt (mine)")


def test_a_wrong_plan_or_run_name_is_refused_before_torch_loads():
    """`sweep --plan nosuch` and `complete nosuchrun` loaded torch and transformers (about 5 s) before saying so."""
    for argv, message in ([["sweep", "--plan", "nosuch", "--preset", "tiny"], "unknown plan 'nosuch'"],
                          [["complete", "nosuchrun", "--prefix", "hi"], "no run named 'nosuchrun'"]):
        code = (f"import sys\nfrom core.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
                "print('torch' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert message in out.stderr and out.stdout.strip() == "False", (argv, out.stdout, out.stderr)
