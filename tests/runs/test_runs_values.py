"""core.runs.values: a field of a run file of the wrong type counts as absent (the registry read `progress: true`
as 1.0 before these readers were shared), and the registry keeps a progress within [0, 1]."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

from core.config import RunConfig
from core.runs import RunDir
from core.runs.registry import run_info
from core.runs.store import RunFormatError
from core.runs.values import as_dict, as_float, as_int, as_str, parse_time, safe_read


def test_numbers_read_as_numbers_and_nothing_else_does():
    assert [as_float(v) for v in (3, 2.5, "0.25", "1e-6")] == [3.0, 2.5, 0.25, 1e-6]
    assert [as_float(v) for v in (True, False, None, "abc", [1], {"a": 1}, 10**400)] == [None] * 7
    assert as_float("inf") == math.inf  # an infinite epsilon is written Infinity: read as one
    # whole numbers only: a seed of 2.5 or True is garbled, not 2 or 1
    assert [as_int(v) for v in (7, 7.0, "12")] == [7, 7, 12]
    assert [as_int(v) for v in (2.5, True, "inf", "nan", None, "x")] == [None] * 6


def test_text_sections_and_times_of_the_wrong_type_count_as_absent():
    assert (as_str("seqpate"), as_str(3), as_str(None)) == ("seqpate", None, None)
    assert (as_dict({"a": 1}), as_dict([1]), as_dict("x"), as_dict(None)) == ({"a": 1}, {}, {}, {})
    assert parse_time("2026-11-20T10:00:00") == datetime(2026, 11, 20, 10, tzinfo=UTC)  # no zone: UTC
    assert parse_time("2026-11-20T11:00:00+01:00") == datetime(2026, 11, 20, 10, tzinfo=UTC)
    assert [parse_time(v) for v in ("", "yesterday", None, 5)] == [None] * 4


def test_safe_read_gives_the_default_for_a_file_absent_garbled_or_null():
    def garbled():
        raise RunFormatError("invalid JSON")

    def gone():
        raise FileNotFoundError("status.json")

    assert [safe_read(f, {}) for f in (garbled, gone, lambda: None)] == [{}, {}, {}]
    assert safe_read(lambda: {"state": "done"}, {}) == {"state": "done"}


def test_a_progress_out_of_range_or_garbled_is_kept_within_0_and_1(tmp_path):
    """set_status keeps it in range; a hand-edited or garbled status.json need not."""
    run = RunDir.create(tmp_path / "r", RunConfig().to_dict(), seed=0)
    status = json.loads((run.path / "status.json").read_text())
    shown = {}
    for progress in ("1.7", "-0.2", "0.4", "NaN", "true", '"half"'):
        text = json.dumps({**status, "state": "queued"})[:-1] + f', "progress": {progress}}}'
        (run.path / "status.json").write_text(text)
        shown[progress] = run_info(run).progress
    assert shown == {"1.7": 1.0, "-0.2": 0.0, "0.4": 0.4, "NaN": 0.0, "true": 0.0, '"half"': 0.0}
