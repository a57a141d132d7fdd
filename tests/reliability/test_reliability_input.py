"""Bad input through the real command line and the Launch page: one clear line, exit code 2, nothing written."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.dashboard.apptest_helpers import open_page
from tests.reliability.conftest import cli, make_roots, one_line_error, tree_snapshot

TINY = ["--preset", "tiny"]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# Each refusal is a short process that mostly waits to be scheduled on a busy machine: the commands of the three
# tables below run side by side in one fixture, and each case then checks its own result.

SETTINGS = [  # epsilon and delta of a method that takes them (Pub-GPT, the default, ignores both)
    (["--method", "seqpate", "--epsilon", "0"], "epsilon must be a positive number or inf, got 0.0"),
    (["--method", "seqpate", "--epsilon", "-3"], "epsilon must be a positive number or inf, got -3.0"),
    (["--method", "seqpate", "--epsilon", "NaN"], "epsilon must be a number (or inf), got 'NaN'"),
    (["--method", "seqpate", "--epsilon", "three"], "epsilon must be a number (or inf), got 'three'"),
    (["--method", "seqpate", "--epsilon", ""], "epsilon must be a number (or inf), got ''"),
    (["--method", "seqpate", "--delta", "0"], "delta must be in (0, 1), got 0.0"),
    (["--method", "seqpate", "--delta", "1"], "delta must be in (0, 1), got 1.0"),
    (["--method", "seqpate", "--delta=-1e-6"], "delta must be in (0, 1), got -1e-06"),
    (["--method", "seqpate", "--delta", "nan"], "delta must be a number, got 'nan'"),
    # tiny preset: n = 2000 private training sentences, so delta must stay below 1/2000
    (["--method", "seqpate", "--delta", "1e-3"], "delta must be below 1/n = 0.0005 (n = 2000 private training sentences)"),
    (["--method", "seqpate", "--delta", "5e-4"], "delta must be below 1/n = 0.0005"),
    (["--method", "seqpate", "--teachers", "2001"], "2001 teachers but only 2000 private training sentences"),
    (["--method", "seqpate", "--teachers", "0"], "teachers must be at least 1, got 0"),
    (["--method", "seqpate", "--filter", "top-k:0"], "top-k must be a positive integer, got 0"),
    (["--method", "seqpate", "--filter", "top-k:2.5"], "top-k must be a positive integer, got 2.5"),
    (["--method", "seqpate", "--filter", "top-p:0"], "top-p must be in (0, 1], got 0"),
    (["--method", "seqpate", "--filter", "top-p:1.01"], "top-p must be in (0, 1], got 1.01"),
    (["--method", "seqpate", "--filter", "top-p:-0.5"], "top-p must be in (0, 1], got -0.5"),
    (["--method", "seqpate", "--filter", "nucleus"], "candidate filter 'nucleus' must look like"),
    (["--teachers", "ten"], "argument --teachers: invalid int value: 'ten'"),
    # the average-phrase calibration is Gaussian; a Laplace ablation would silently fall back to per-sentence noise
    (["--method", "seqpate", "--ablation=-gaussian", "--privacy-target", "phrase-avg"],
     "privacy target phrase-avg calibrates Gaussian noise, but ablation -gaussian releases Laplace noise"),
]

CORPORA = [
    ("empty.txt", b"", "no non-blank lines"),
    ("blank.txt", b"\n  \n\t\n", "no non-blank lines"),
    ("empty.jsonl", b"", "file is empty"),
    ("empty.csv", b"", "file is empty"),
    ("latin1.txt", "caf\xe9 au lait every single morning here\n".encode("latin-1"),
     "line 1: not valid UTF-8 (byte 0xe9)"),
    ("latin1.jsonl", b'{"text": "fine line"}\n{"text": "caf\xe9"}\n', "line 2: not valid UTF-8 (byte 0xe9)"),
    ("utf16.csv", "text\nhello there\n".encode("utf-16"), "not valid UTF-8"),
    ("notext.csv", b"sentence,user_id\nhello there my friend how are you,u1\n",
     "no 'text' column (columns: sentence, user_id)"),
    ("notext.jsonl", b'{"sentence": "hello"}\n', "line 1: no 'text' string field"),
    ("garbage.jsonl", b"{not json\n", "line 1: not valid JSON"),
    ("garbage.json", b"[{]", "not valid JSON"),
    ("ragged.csv", b"text,user_id\na b c d e f g h,u1,extra\n", "line 2: expected 2 fields"),
    ("corpus.xlsx", b"PK\x03\x04", "cannot tell the format"),
    # a valid file far too small for the preset's sizes
    ("few.txt", b"one two three four five six seven eight\n" * 3, "few.txt: the public side has only"),
]

CONFIGS = [
    (b"{oops", "cannot read config"),
    (b"\xff\xfe\x00", "cannot read config"),
    (b"[" * 100_000, "cannot read config"),
    ([1, 2], "must hold a JSON object of config sections"),
    ({"seqpate": {"teachers": "many"}}, "seqpate.teachers must be int, got 'many'"),
    ({"privacy": {"delta": "small"}}, "privacy.delta must be a number, got 'small'"),
    ({"data": {"private_train": True}}, "data.private_train must be int or null, got True"),
    ({"seed": "x"}, "seed must be int, got 'x'"),
    ({"seqpate": {"teachrs": 5}}, "unknown SeqPATEConfig field(s): teachrs"),
    # a name with a newline broke the one-line error (found by the run-file fuzz test): quoted as the file holds it
    ({"data": {"\n": None, "": 1}}, "unknown DataConfig field(s): '', '\\n'"),
    ({"seqpate": 5}, "config section seqpate must be a JSON object, got 5"),
    ({"bogus": {"a": 1}}, "unknown config section 'bogus'"),
    ({"bogus": 1}, "unknown config field 'bogus'"),
    ({"preset": [1]}, "unknown preset [1]"),
    ({"data": {"private_test": -5}}, "private_test must not be negative"),
    ({"decode": {"top_k": 0}}, "decode top-k must be a positive integer, got 0"),
    ({"decode": {"top_p": 1.5}}, "decode top-p must be in (0, 1], got 1.5"),
]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """{case id: (result of `python -m core run ...`, the run folder it was asked to write)}."""
    base = tmp_path_factory.mktemp("refusals")
    commands: dict[str, tuple[list[str], Path]] = {}
    for i, (args, _) in enumerate(SETTINGS):
        run_dir = base / f"settings{i}"
        commands[f"settings{i}"] = (["run", *TINY, "--run-dir", str(run_dir), *args], run_dir)
    for i, (name, data, _) in enumerate(CORPORA):
        (base / f"corpus{i}").mkdir()
        corpus, run_dir = _write(base / f"corpus{i}" / name, data), base / f"corpus{i}" / "run"
        commands[f"corpus{i}"] = (["run", *TINY, "--corpus", str(corpus), "--run-dir", str(run_dir)], run_dir)
    for i, (content, _) in enumerate(CONFIGS):
        data = content if isinstance(content, bytes) else json.dumps(content).encode()
        config, run_dir = _write(base / f"config{i}.json", data), base / f"config{i}"
        commands[f"config{i}"] = (["run", "--config", str(config), "--run-dir", str(run_dir)], run_dir)
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = pool.map(lambda command: cli(*command[0]), commands.values())
        return {key: (out, run_dir) for (key, (_, run_dir)), out in zip(commands.items(), results, strict=True)}


def _case_ids(cases) -> list[str]:
    return [" ".join(map(str, case[:-1]))[:60] for case in cases]


@pytest.mark.parametrize("i", range(len(SETTINGS)), ids=_case_ids(SETTINGS))
def test_bad_privacy_and_decoding_settings(refusals, i: int) -> None:
    out, run_dir = refusals[f"settings{i}"]
    one_line_error(out, SETTINGS[i][1])
    assert not run_dir.exists()


@pytest.mark.parametrize("i", range(len(CORPORA)), ids=[case[0] for case in CORPORA])
def test_bad_corpus_files(refusals, i: int) -> None:
    out, run_dir = refusals[f"corpus{i}"]
    one_line_error(out, CORPORA[i][2])
    assert not run_dir.exists()


@pytest.mark.parametrize("i", range(len(CONFIGS)), ids=_case_ids(CONFIGS))
def test_bad_config_files(refusals, i: int) -> None:
    out, run_dir = refusals[f"config{i}"]
    one_line_error(out, CONFIGS[i][1])
    assert not run_dir.exists()


def test_missing_corpus_and_a_folder_as_corpus(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    one_line_error(cli("run", "--corpus", str(tmp_path / "nope.txt"), "--run-dir", str(run_dir)),
                   "corpus file not found")
    (tmp_path / "folder.txt").mkdir()
    one_line_error(cli("run", "--corpus", str(tmp_path / "folder.txt"), "--run-dir", str(run_dir)),
                   "corpus path is a directory, not a file")  # it said "not found"
    assert not run_dir.exists()


def test_model_paths_that_are_not_models(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    empty = tmp_path / "empty"
    empty.mkdir()
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "config.json").write_bytes(b"\x00\xff not json")
    not_a_model = tmp_path / "other"
    not_a_model.mkdir()
    (not_a_model / "config.json").write_text('{"hello": "world"}')
    a_file = _write(tmp_path / "weights.bin", b"\x00" * 16)
    for path in (empty, garbled, not_a_model, a_file, tmp_path / "missing"):
        out = cli("run", *TINY, "--model", str(path), "--run-dir", str(run_dir))
        one_line_error(out, f"model path is not a model directory (no readable config.json with model_type): "
                            f"{path}")
    assert not run_dir.exists()


def test_delta_checked_against_n_after_loading_when_the_preset_leaves_n_open(tmp_path: Path, small_corpus) -> None:
    """Preset paper takes every private sentence (private_train None): n is only known once the data is loaded."""
    config = tmp_path / "paper.json"
    config.write_text(json.dumps({
        "preset": "paper", "privacy": {"delta": 0.01},
        "data": {"corpus": str(small_corpus), "private_valid": 10, "private_test": 10, "public_valid": 10},
    }))
    run_dir = tmp_path / "run"
    out = cli("run", "--config", str(config), "--run-dir", str(run_dir))
    one_line_error(out, "delta must be below 1/n")
    assert "private training sentences), got 0.01" in out.stderr
    assert not run_dir.exists()


@pytest.mark.slow  # a real job: imports the whole engine (torch) only to fail at stage data
def test_a_job_whose_delta_is_too_large_for_its_data_fails_at_stage_data(tmp_path: Path, small_corpus) -> None:
    """The config of the test above launched as a background job (no command line to refuse it)."""
    from core.config import RunConfig
    from core.runs.store import RunDir

    stored = {**RunConfig().to_dict(), "preset": "paper"}
    stored["privacy"]["delta"] = 0.01
    stored["data"].update(corpus=str(small_corpus), private_train=None, public_train=None, private_valid=10,
                          private_test=10, public_valid=10)
    run = RunDir.create(tmp_path / "job", stored, 0)
    job = cli("job", str(run.path))
    assert job.returncode == 1, job.stderr[-2000:]
    status = run.status()
    assert status["state"] == "failed" and status["stage"] == "data"
    assert status["error"].startswith("ConfigError: delta must be below 1/n"), status["error"]
    assert "private training sentences), got 0.01" in status["error"]
    assert not run.is_complete() and run.metrics() is None


def test_an_existing_run_directory_is_left_exactly_as_it_was(tmp_path: Path, nano) -> None:
    from tests.dashboard.fake_runs import write_run

    existing = write_run(tmp_path, "old", "pub-gpt", ppl=77.0)
    before = tree_snapshot(existing.path)
    one_line_error(cli("run", *TINY, "--method", "pub-gpt", "--run-dir", str(existing.path)),
                   f"run directory already exists: {existing.path}")
    assert tree_snapshot(existing.path) == before
    a_file = _write(tmp_path / "a-file", b"keep me")
    one_line_error(cli("run", *TINY, "--run-dir", str(a_file)), f"run directory already exists: {a_file} is a file")
    assert a_file.read_bytes() == b"keep me"
    # A run folder that cannot be made (its parent is a file) is one line too, not a traceback.
    config = tmp_path / "nano.json"
    config.write_text(json.dumps(nano(method="pub-gpt").to_dict()))
    one_line_error(cli("run", "--config", str(config), "--run-dir", str(a_file / "sub")),
                   f"run directory {a_file / 'sub'} cannot be made: {a_file} is a file")
    assert a_file.read_bytes() == b"keep me"


# ----------------------------------------------------------------------------------------------------------------
# The dashboard's Launch page
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture
def dash_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    roots = make_roots(tmp_path)
    monkeypatch.setenv("SEQPATE_RUNS_DIR", str(roots["live"]))
    monkeypatch.setenv("SEQPATE_CACHED_RUNS_DIR", str(roots["cached"]))
    monkeypatch.setenv("SEQPATE_CACHE", str(roots["cache"]))
    # Should anything be launched after all, the stand-in job leaves a mark instead of training.
    from core.runs import jobs

    mark = tmp_path / "launched"
    script = tmp_path / "job.py"
    script.write_text(f"from pathlib import Path\nPath({str(mark)!r}).touch()\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    return {**roots, "mark": mark}


def _refuses(at, message: str, roots: dict[str, Path]) -> None:
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(message in e for e in errors), errors
    assert at.button(key="launch_button").disabled  # AppTest, like a browser, cannot click it
    assert [p.name for p in roots["live"].iterdir()] == [] and not roots["mark"].exists()


def test_launch_page_refuses_bad_settings_and_starts_no_job(dash_roots: dict[str, Path]) -> None:
    at = open_page("launch", {"preset": "tiny", "methods": "seqpate"})
    assert not at.exception
    steps = [
        ("launch_eps", "0", "epsilon must be a positive number or inf, got 0.0"),
        ("launch_eps", "nan", "epsilon must be a number (or inf), got 'nan'"),
        ("launch_eps", "three", "epsilon must be a number (or inf), got 'three'"),
        ("launch_eps", "-1", "epsilon must be a positive number or inf, got -1.0"),
        ("launch_delta", "1", "delta must be in (0, 1), got 1.0"),
        ("launch_delta", "0", "delta must be in (0, 1), got 0.0"),
        ("launch_delta", "1e-3", "delta must be below 1/n = 0.0005 (n = 2000 private training sentences)"),
    ]
    for key, value, message in steps:
        at.text_input(key="launch_eps").set_value("3")
        at.text_input(key="launch_delta").set_value("1e-6")
        at.text_input(key=key).set_value(value).run()
        _refuses(at, message, dash_roots)
    at.text_input(key="launch_delta").set_value("1e-6").run()
    at.number_input(key="launch_teachers").set_value(2001).run()
    _refuses(at, "2001 teachers but only 2000 private training sentences", dash_roots)


def test_launch_page_ignores_impossible_filters_from_the_url(dash_roots: dict[str, Path]) -> None:
    """top-k 0 and top-p outside (0, 1] cannot be typed (the widgets are bounded); from the URL they are ignored."""
    for spec in ("top-k:0", "top-p:1.5", "top-p:0"):
        at = open_page("launch", {"preset": "tiny", "methods": "seqpate", "filter": spec})
        assert not at.exception
        assert f"filter={spec}" in " ".join(w.value for w in at.warning)
        assert at.query_params["filter"] == ""  # the preset's own filter stands in
    assert [p.name for p in dash_roots["live"].iterdir()] == [] and not dash_roots["mark"].exists()
