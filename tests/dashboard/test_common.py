"""Helpers of dashboard/common.py: timing, config diff, URL settings, caching on file mtimes."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

from fake_runs import write_run

from dashboard import common as c


def test_timing_estimates_remaining_from_progress():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    started = (now - timedelta(seconds=100)).isoformat()
    elapsed, remaining = c.timing({"state": "running", "started": started, "progress": 0.25}, now)
    assert elapsed == 100 and remaining == 300
    finished = (now - timedelta(seconds=40)).isoformat()
    assert c.timing({"state": "done", "started": started, "finished": finished, "progress": 1.0}, now) == (60, 0)
    assert c.timing({"state": "queued"}, now) == (None, None)
    assert c.fmt_duration(3725) == "1h 02m" and c.fmt_duration(65) == "1m 05s" and c.fmt_duration(None) == "–"


def test_config_diff_lists_only_differences():
    a = {"method": "seqpate", "privacy": {"epsilon": 3.0, "delta": 1e-6}, "seed": 0}
    b = {"method": "seqpate", "privacy": {"epsilon": math.inf, "delta": 1e-6}, "seed": 0, "extra": 1}
    diff = c.config_diff(a, b)
    assert list(diff["field"]) == ["extra", "privacy.epsilon"]
    assert diff.set_index("field").loc["extra", "A"] == "(absent)"
    assert c.config_diff(a, a).empty


def test_url_settings_round_trip():
    settings = dict(c.LAUNCH_DEFAULTS, methods=["seqpate", "pub-gpt+pseudo"], filter_kind="top-k", top_k=40,
                    teachers=7, seed=2)
    query = c.settings_to_query(settings)
    assert query["filter"] == "top-k:40" and query["methods"] == "seqpate,pub-gpt+pseudo"
    back, ignored = c.settings_from_query(query)
    assert ignored == []
    assert {k: back[k] for k in ("methods", "filter_kind", "top_k", "teachers", "seed")} == {
        "methods": ["seqpate", "pub-gpt+pseudo"], "filter_kind": "top-k", "top_k": 40, "teachers": 7, "seed": 2}
    _, ignored = c.settings_from_query({"teachers": "-3", "filter": "top-z:1", "ablation": "-nope", "seed": "x"})
    assert sorted(ignored) == ["ablation=-nope", "filter=top-z:1", "seed=x", "teachers=-3"]


def test_records_follow_file_changes(roots):
    run = write_run(roots["live"], "r1", "seqpate", ppl=10.0)
    assert c.runs_frame()["ppl"].tolist() == [10.0]
    metrics = json.loads((run.path / "metrics.json").read_text())
    run.write_metrics({**metrics, "ppl": 11.5, "padding": "x" * 10})  # a new size and mtime: read again
    assert c.runs_frame()["ppl"].tolist() == [11.5]


def test_headline_groups_seeds_and_skips_ablations(roots):
    write_run(roots["cached"], "a", "seqpate", seed=0, ppl=10.0, bleu4=1.0)
    write_run(roots["cached"], "b", "seqpate", seed=1, ppl=20.0, bleu4=3.0)
    write_run(roots["cached"], "abl", "seqpate", ablation="-kl", ppl=99.0)
    write_run(roots["cached"], "topk", "seqpate", filter="top-k:50", ppl=99.0)  # a variant: never averaged in
    table = c.headline_table(c.finished_frame())
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["PPL"], row["BLEU-4"], row["runs"]) == (15.0, 2.0, 2)
    both = c.headline_table(c.finished_frame(), include_variants=True).set_index("setting")
    assert both.loc["filter top-k:50", "PPL"] == 99.0 and both.loc["", "runs"] == 2
