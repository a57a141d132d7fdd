"""Fuzzing the readers of untrusted files: run files (any garbage in any run file) and corpus files.

The only failures allowed are the clear ones: RunFormatError (run files), ConfigError (a stored config), CorpusError
(corpora), each with a one-line message. The listing and the dashboard never fail at all: an unreadable run is
shown as failed.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.config import ConfigError, DataConfig, validate
from core.data.corpora import CorpusError, Record, load_airdialog, load_corpus, load_europarl, load_table
from core.runs.registry import list_runs, reconcile, run_info
from core.runs.store import PHRASES, STATES, STATUS, RunDir, RunFormatError

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_dirs = itertools.count()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# Dicts shaped like run files, with any value in any field.
status_like = st.fixed_dictionaries({}, optional={
    "state": st.sampled_from(STATES) | json_values, "stage": json_values, "pid": st.integers() | json_values,
    "progress": st.floats() | json_values, "created": json_values, "started": json_values, "error": json_values,
})
config_like = st.fixed_dictionaries({}, optional={
    "config": st.dictionaries(st.sampled_from(["method", "preset", "seed", "data", "privacy", "seqpate", "decode",
                                               "model", "dpsgd", "bogus"]), json_values, max_size=5),
    "created": json_values, "seed": json_values,
})
privacy_like = st.fixed_dictionaries({}, optional={
    "epsilon": st.floats() | json_values, "delta": json_values, "events": json_values, "accountant": json_values,
})


def _garble(data: bytes, cut: int, junk: bytes) -> bytes:
    """Cut a file short and append junk: a torn write, a disk error, a hand edit."""
    return data[: cut % (len(data) + 1)] + junk


def contents(structured=json_values) -> st.SearchStrategy[bytes]:
    as_json = structured.map(lambda v: json.dumps(v).encode())
    return st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        as_json,
        st.lists(structured, max_size=5).map(lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()),
        st.builds(_garble, as_json, st.integers(0, 500), st.binary(max_size=8)),
        st.integers(1, 3000).map(lambda n: b"[" * n),  # deep nesting
        st.just(b"1" * 5000),  # an integer longer than Python will parse
    )


def _one_line(err: Exception) -> None:
    assert str(err) and "\n" not in str(err), repr(err)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """One folder for all examples (hypothesis runs many examples per test call, a tmp_path is per call)."""
    return tmp_path_factory.mktemp("fuzz")


def _fresh_run(scratch: Path, files: dict[str, bytes]) -> RunDir:
    """A run folder alone in a root of its own."""
    path = scratch / f"root{next(_dirs)}" / "run"
    path.mkdir(parents=True)
    for name, data in files.items():
        (path / name).write_bytes(data)
    return RunDir(path)


def _read_everything(run: RunDir) -> None:
    for read in (run.status, run.config, run.privacy, run.metrics, run.progress, run.completions, run.phrases,
                 run.state):
        try:
            read()
        except RunFormatError as err:
            _one_line(err)
    try:
        cfg = run.run_config()
        if cfg is not None:
            validate(cfg)
    except (RunFormatError, ConfigError) as err:
        _one_line(err)
    if run.is_complete():  # answers without raising; complete only with every required file there, state done
        assert run.state() == "done" and not run.missing_files() and not run.damaged_files()


def test_a_garbled_run_file_is_reported_not_read_as_absent(tmp_path):
    """The readers may fail only with RunFormatError, and must fail: a reader returning None for garbage would let
    a damaged run read as one that has not written the file yet."""
    run = _fresh_run(tmp_path, {"status.json": b'{"state": "do', "metrics.json": b"{not json",
                                "config.json": b"[1, 2]", "privacy.json": b"1" * 5000})
    for read in (run.status, run.metrics, run.config, run.privacy):
        with pytest.raises(RunFormatError):
            read()
    assert not run.is_complete() and run.incomplete_reason().startswith("invalid JSON in ")


@FUZZ
@given(
    status=contents(status_like), config=contents(config_like), privacy=contents(privacy_like),
    metrics=contents(), progress=contents(status_like), completions=contents(),
    phrases=st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
)
def test_run_file_readers_fail_only_with_run_format_errors(scratch, status, config, privacy, metrics, progress,
                                                           completions, phrases) -> None:
    run = _fresh_run(scratch, {"status.json": status, "config.json": config, "privacy.json": privacy,
                      "metrics.json": metrics, "progress.jsonl": progress, "completions.jsonl": completions,
                      PHRASES: phrases})
    _read_everything(run)


@FUZZ
@given(status=status_like, config=contents(config_like), privacy=contents(privacy_like))
def test_listing_reconcile_and_dashboard_rows_never_fail(scratch, status, config, privacy) -> None:
    from dashboard.loading import _build_record

    run = _fresh_run(scratch, {STATUS: json.dumps(status).encode(), "config.json": config, "privacy.json": privacy})
    try:
        reconcile(run)  # may mark it failed: a garbled "running" run has no live process
    except RunFormatError as err:
        _one_line(err)
    info = run_info(run)
    assert info.state in STATES and 0.0 <= info.progress <= 1.0
    assert all(v is None or isinstance(v, str) for v in (info.stage, info.method, info.preset, info.created))
    assert [i.run_id for i in list_runs([run.path.parent])] == ["run"]  # the root still lists
    record = _build_record(run.path, "live")
    assert record["state"] in STATES
    # and the pages' tables take the record: one garbled field (a seed "zero") crashed the Overview and Runs pages
    import pandas as pd

    from dashboard import loading, tables, wording

    frame = pd.DataFrame([{**record, "state": "done"}])
    loading.seeds_of(frame), tables.headline_table(frame), tables.privacy_cards(frame), tables.distinct_configs(frame)
    wording.privacy_statement(record["epsilon"], record["delta"], record["unit"], record["method"],
                              record["privacy_target"])


# ----------------------------------------------------------------------------------------------------------------
# Corpus loaders
# ----------------------------------------------------------------------------------------------------------------


def _csv_text(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue().encode()


cells = st.text(max_size=30)
table_rows = st.dictionaries(st.sampled_from(["text", "user_id", "other"]), json_values | st.text(max_size=60),
                             max_size=3)
dialogues = st.fixed_dictionaries({}, optional={
    "dialogue": st.lists(st.text(max_size=40) | json_values, max_size=4) | json_values,
    "intent": st.fixed_dictionaries({}, optional={"name": st.text(max_size=10) | json_values}) | json_values,
})

corpus_files = {
    "jsonl": contents(table_rows),
    "csv": st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                     st.lists(st.lists(cells, max_size=4), max_size=5).map(_csv_text),
                     st.lists(st.lists(cells, max_size=4), max_size=5).map(lambda r: _csv_text([["text", "user_id"], *r])),
                     st.just(b'"' + b"x" * 140_000 + b'"\n')),  # a cell over csv's field size limit
    "txt": st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
    "json": st.one_of(contents(dialogues), st.lists(dialogues, max_size=3).map(lambda v: json.dumps(v).encode())),
}
LOADERS = {"jsonl": load_table, "csv": load_table, "txt": load_europarl, "json": load_airdialog}


def _check_loader(scratch: Path, kind: str, data: bytes) -> None:
    path = scratch / f"corpus{next(_dirs)}.{kind}"
    path.write_bytes(data)
    for load in (LOADERS[kind], lambda p: load_corpus(DataConfig(corpus=str(p)))):
        try:
            records = load(path)
        except CorpusError as err:
            _one_line(err)
            continue
        assert records and all(isinstance(r, Record) for r in records)
        assert all(isinstance(r.text, str) and r.text.strip() and isinstance(r.user_id, str) for r in records)


@FUZZ
@given(data=corpus_files["jsonl"])
def test_jsonl_loader(scratch, data: bytes) -> None:
    _check_loader(scratch, "jsonl", data)


@FUZZ
@given(data=corpus_files["csv"])
@example(data=b'"\n"\r\n')  # found by this test: a header cell holding a newline made a two-line message
def test_csv_loader(scratch, data: bytes) -> None:
    _check_loader(scratch, "csv", data)


@FUZZ
@given(data=corpus_files["txt"])
def test_txt_loader(scratch, data: bytes) -> None:
    _check_loader(scratch, "txt", data)


@FUZZ
@given(data=corpus_files["json"])
def test_airdialog_loader(scratch, data: bytes) -> None:
    _check_loader(scratch, "json", data)
