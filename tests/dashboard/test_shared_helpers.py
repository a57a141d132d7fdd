"""Helpers the pages share (dashboard/loading.py, widgets.py, wording.py): config diff, URL settings, caching on
file mtimes."""

from __future__ import annotations

import json
import math

import pytest
from fake_runs import write_run

from core.config import ConfigError
from dashboard import launch_settings as launch
from dashboard import loading, tables, widgets, wording


def test_config_diff_lists_only_differences():
    a = {"method": "seqpate", "privacy": {"epsilon": 3.0, "delta": 1e-6}, "seed": 0}
    b = {"method": "seqpate", "privacy": {"epsilon": math.inf, "delta": 1e-6}, "seed": 0, "extra": 1}
    diff = loading.config_diff(a, b)
    assert list(diff["field"]) == ["extra", "privacy.epsilon"]
    assert diff.set_index("field").loc["extra", "A"] == "(absent)"
    assert loading.config_diff(a, a).empty
    empty = loading.config_diff({"ray_address": ""}, {}).iloc[0]
    assert (empty["A"], empty["B"]) == ('""', "(absent)")  # an empty string is shown, not a blank cell
    # a field one method never reads says so on its row (a NoisySGD run's partition beside a SeqPATE run's)
    from core.config import preset_config

    seq = preset_config("tiny", method="seqpate", seqpate__partition="by-user").to_dict()
    sgd = preset_config("tiny", method="noisysgd", dpsgd__lr=1e-4).to_dict()
    rows = loading.config_diff(seq, sgd).set_index("field")["never read by"]
    assert rows["seqpate.partition"] == "B" and rows["method"] == "" and rows["dpsgd.lr"] == "A"


def test_url_settings_round_trip():
    settings = dict(launch.LAUNCH_DEFAULTS, methods=["seqpate", "pub-gpt+pseudo"], filter_kind="top-k", top_k=40,
                    teachers=7, seed=2)
    query = launch.settings_to_query(settings)
    assert query["filter"] == "top-k:40" and query["methods"] == "seqpate,pub-gpt+pseudo"
    back, ignored = launch.settings_from_query(query)
    assert ignored == []
    assert {k: back[k] for k in ("methods", "filter_kind", "top_k", "teachers", "seed")} == {
        "methods": ["seqpate", "pub-gpt+pseudo"], "filter_kind": "top-k", "top_k": 40, "teachers": 7, "seed": 2}
    preset_query = launch.settings_to_query(launch.LAUNCH_DEFAULTS)
    assert preset_query["filter"] == "" and launch.settings_from_query(preset_query)[0]["filter_kind"] == "preset"
    _, ignored = launch.settings_from_query({"teachers": "-3", "filter": "top-z:1", "ablation": "-nope", "seed": "x"})
    assert sorted(ignored) == [
        "ablation=-nope (not one of none, -merge_p, -kl, -pseudo, -effi_kd, -gaussian, -all)",
        "filter=top-z:1 (candidate filter 'top-z:1' must start with top-p: or top-k:)",
        "seed=x (not a whole number from 0 to 4,294,967,295)",
        "teachers=-3 (not a whole number from 1 to 1,000,000,000)"]


def test_url_settings_keep_what_the_link_says_or_say_why_not():
    # a seed the engine cannot take (32-bit) is ignored with a warning, not rounded or launched to fail later
    back, ignored = launch.settings_from_query({"seed": "99999999999999999999"})
    assert back["seed"] == 0
    assert ignored == ["seed=99999999999999999999 (not a whole number from 0 to 4,294,967,295)"]
    assert launch.settings_from_query({"seed": str(launch.MAX_SEED)})[0]["seed"] == launch.MAX_SEED
    # an over-long epsilon was cut to 40 characters (1e39 launched for 1e42): ignored and said instead
    long_eps = "1" + "0" * 42
    back, ignored = launch.settings_from_query({"eps": long_eps})
    assert back["eps"] == launch.LAUNCH_DEFAULTS["eps"] and len(ignored) == 1 and ignored[0].startswith("eps=")
    # a link made with every method cleared opens with none chosen (it opened with SeqPATE, silently)
    assert launch.settings_from_query({"methods": ""})[0]["methods"] == []
    back, ignored = launch.settings_from_query({"eps": " ", "delta": ""})  # a walk saw eps= become 3 without a word
    assert (back["eps"], back["delta"]) == ("3", "1e-6") and ignored == ["eps= (empty: 3 kept)", "delta= (empty: 1e-6 kept)"]
    # top-p keeps its digits in the URL (:g made top-p:0.9999999 into top-p:1, no filtering)
    assert launch.launch_filter_spec(dict(launch.LAUNCH_DEFAULTS, filter_kind="top-p", top_p=0.9999999)) == "top-p:0.9999999"


def test_a_float_box_value_is_what_it_shows():
    """JavaScript's toFixed rounds the exact binary value half up; Python's round goes to even."""
    assert widgets.as_shown(2.5, 0) == 3.0 and widgets.as_shown(0.125, 2) == 0.13 and widgets.as_shown(0.015, 2) == 0.01
    # the exact binary value decides, as in node: (1.005).toFixed(2) is "1.00", (0.9995).toFixed(3) is "1.000"
    assert widgets.as_shown(1.005, 2) == 1.0 and widgets.as_shown(0.9995, 3) == 1.0 and widgets.as_shown(2.0005, 3) == 2.001


def test_search_key_treats_typographic_quotes_and_spaces_as_typed():
    assert wording.search_key("  I’m   from ") == "i'm from" == wording.search_key("i'm from")
    assert wording.search_key("“Hi”") == '"hi"'


def test_records_follow_file_changes(roots):
    run = write_run(roots["live"], "r1", "seqpate", ppl=10.0)
    assert loading.runs_frame()["ppl"].tolist() == [10.0]
    metrics = json.loads((run.path / "metrics.json").read_text())
    run.write_metrics({**metrics, "ppl": 11.5, "padding": "x" * 10})  # a new size and mtime: read again
    assert loading.runs_frame()["ppl"].tolist() == [11.5]


def test_a_finished_run_whose_files_were_damaged_since_is_failed_and_says_why(roots):
    """A walk truncated a finished run's config.json: the Runs page listed it done with a blank method, and the
    result pages would have taken it (a done run missing metrics.json joined tables with blank cells)."""
    write_run(roots["live"], "good", "seqpate", ppl=10.0)
    garbled = write_run(roots["live"], "garbled", "seqpate", ppl=10.0)
    (garbled.path / "config.json").write_text('{"config": {"meth')
    lost = write_run(roots["live"], "lost", "seqpate", ppl=10.0)
    (lost.path / "metrics.json").unlink()
    frame = loading.runs_frame().set_index("run_id")
    assert frame.loc["good", "state"] == "done"
    assert frame.loc["garbled", "state"] == "failed"
    assert frame.loc["garbled", "error"] == "finished, but config.json missing or unreadable since"
    assert frame.loc["lost", "state"] == "failed"
    assert frame.loc["lost", "error"] == "finished, but metrics.json missing or unreadable since"
    assert loading.finished_frame()["run_id"].tolist() == ["good"]
    # a line before the last cut short (the last may be an append still being written): `runs show` said not
    # finished, the listings done
    cut = write_run(roots["live"], "cut", "seqpate", ppl=10.0)
    lines = (cut.path / "progress.jsonl").read_text().splitlines(keepends=True)
    (cut.path / "progress.jsonl").write_text(lines[0][:20] + "\n" + "".join(lines[1:]))
    assert len(lines) > 1 and loading.runs_frame().set_index("run_id").loc["cut", "error"] == (
        "finished, but progress.jsonl missing or unreadable since")
    (roots["live"] / "good" / "progress.jsonl").unlink()  # after its record was cached: read again
    assert loading.runs_frame().set_index("run_id").loc["good", "error"] == ("finished, but progress.jsonl missing or "
                                                                             "unreadable since")


def test_headline_groups_seeds_and_gives_each_variant_its_own_row(roots):
    write_run(roots["cached"], "a", "seqpate", seed=0, ppl=10.0, bleu4=1.0)
    write_run(roots["cached"], "b", "seqpate", seed=1, ppl=20.0, bleu4=3.0)
    write_run(roots["cached"], "abl", "seqpate", ablation="-kl", ppl=99.0)
    write_run(roots["cached"], "topk", "seqpate", filter="top-k:50", ppl=99.0)  # a variant: never averaged in
    table = tables.headline_table(loading.finished_frame())
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["PPL"], row["BLEU-4"], row["runs"]) == (15.0, 2.0, 2)
    both = tables.headline_table(loading.finished_frame(), include_variants=True).set_index("setting")
    assert both.loc["filter top-k:50", "PPL"] == 99.0 and both.loc["", "runs"] == 2
    # an ablation is a variant too: Export's headline CSV left it out, where its docstring gives every variant a row
    assert both.loc["ablation -kl", "PPL"] == 99.0 and len(both) == 3
    assert row["δ"] == "1e-06"
    write_run(roots["cached"], "no-noise", "seqpate", epsilon=float("inf"))  # a control without a guarantee
    assert loading.shown_delta(float("inf"), 1e-6) is None and loading.shown_delta(0.0, 1e-6) == 0.0
    with_control = tables.headline_table(loading.finished_frame())
    deltas = dict(zip(with_control["ε"], with_control["δ"], strict=True))
    assert deltas.pop(float("inf")) == "–" and list(deltas.values()) == ["1e-06"]


def test_headline_names_the_seeds_each_row_averages_and_warns_when_they_differ(roots):
    for seed, ppl in ((0, 218.9), (1, 194.7), (2, 199.3)):  # the shipped quick SeqPATE runs at eps 3
        write_run(roots["cached"], f"seq-{seed}", "seqpate", seed=seed, ppl=ppl)
    write_run(roots["cached"], "adp-0", "adp", seed=0, ppl=217.4)  # seed 0 only
    table = tables.headline_table(loading.finished_frame()).set_index("Method")
    assert table.loc["SeqPATE", "seeds"] == "0, 1, 2" and abs(table.loc["SeqPATE", "PPL"] - 204.3) < 1e-9
    assert table.loc["Adaptive DP", "seeds"] == "0"
    note = tables.seed_mix_note(table.reset_index())
    assert "most average seeds 0, 1, 2, but Adaptive DP at ε 3: seed 0" in note
    one_seed = tables.headline_table(loading.finished_frame().query("seed == 0"))
    assert "seeds" not in one_seed and tables.seed_mix_note(one_seed) == ""


def test_a_run_label_names_a_seed_other_than_the_default():
    record = {"run_id": "r", "method": "seqpate", "epsilon": 3.0, "state": "done"}
    assert "seed" not in wording.run_option_label(record | {"seed": 0})
    assert wording.run_option_label(record | {"seed": 2}) == "r  ·  SeqPATE  ·  ε=3  ·  seed 2  ·  done"


def test_headline_counts_a_shared_run_once_leaves_out_synthetic_runs_and_splits_presets(roots):
    import shutil

    from fake_runs import write_synth_run

    original = write_run(roots["cached"], "seq", "seqpate", ppl=10.0, bleu4=1.0)
    shutil.copytree(original.path, roots["cached"] / "seq-copy-from-another-plan")  # same config hash
    write_run(roots["cached"], "seq-seed1", "seqpate", seed=1, ppl=20.0, bleu4=3.0)
    write_run(roots["cached"], "quick-seq", "seqpate", preset="quick", ppl=40.0, bleu4=5.0)
    write_synth_run(roots["cached"], "synth-filter-3", "filter", 3.0, 0.4)
    table = tables.headline_table(loading.finished_frame())
    assert list(table.columns[:2]) == ["preset", "Method"]  # two presets: never averaged together
    rows = table.set_index("preset")
    assert (rows.loc["tiny", "PPL"], rows.loc["tiny", "runs"]) == (15.0, 2)  # the copy is not a third seed
    assert rows.loc["quick", "PPL"] == 40.0
    assert not table["Method"].str.contains("synth").any()
    one_preset = tables.headline_table(loading.finished_frame().query("preset == 'tiny'"))
    assert "preset" not in one_preset.columns


def test_the_copy_of_a_shared_config_shown_is_the_one_report_keeps(roots):
    # Copies of one config run by several sweep plans at other times differ in their last bits and sampled
    # completions; the dashboard and REPORT.md must quote the same copy: the plainest name (the shortest), so that
    # tiny's SeqPATE at ε 3 reads tiny-seqpate-eps3 (a walk read "-ablationnone", the id that sorts first, as an
    # ablation run on Completions)
    import shutil

    from core.runs.report import load_rows

    original = write_run(roots["cached"], "tiny-seqpate-teachers10", "seqpate", ppl=909.46, bleu4=0.19)
    for name in ("tiny-seqpate-ablationnone", "tiny-seqpate-eps3"):
        copy = roots["cached"] / name
        shutil.copytree(original.path, copy)
        metrics = json.loads((copy / "metrics.json").read_text())
        (copy / "metrics.json").write_text(json.dumps({**metrics, "ppl": 909.34, "bleu4": 0.23}))
    row = tables.headline_table(loading.finished_frame()).iloc[0]
    assert (row["PPL"], row["BLEU-4"], row["runs"], row["run ids"]) == (909.34, 0.23, 1, "tiny-seqpate-eps3")
    (reported,) = load_rows(roots["cached"])
    assert (reported.name, reported.ppl) == ("tiny-seqpate-eps3", 909.34)


def test_a_run_differing_only_in_unread_fields_is_a_copy_and_one_at_other_settings_a_row_of_its_own(roots):
    from core.runs.report import load_rows

    # a Pub-GPT shipped before a SeqPATE default changed, and one launched today: the same run, not two
    write_run(roots["cached"], "tiny-pub-gpt", "pub-gpt", ppl=500.0, config={"seqpate__kd_lambda": 20.0})
    write_run(roots["live"], "pub-gpt-today", "pub-gpt", ppl=501.0)
    # NoisySGD at the defaults, and at another learning rate (no VARIANT_FIELDS name): never averaged together
    write_run(roots["cached"], "tiny-noisysgd", "noisysgd", ppl=300.0)
    write_run(roots["live"], "noisysgd-lr", "noisysgd", ppl=900.0, config={"dpsgd__lr": 1e-4})
    table = tables.headline_table(loading.finished_frame(), include_variants=True).set_index(["Method", "setting"])
    # the run made here, with a note naming the shipped run it stands in for (REPORT.md quotes that one)
    assert table.loc[("Pub-GPT", ""), ["PPL", "runs", "run ids"]].tolist() == [501.0, 1, "pub-gpt-today"]
    assert tables.replaced_shipped_copies(loading.finished_frame()) == {"pub-gpt-today": ["tiny-pub-gpt"]}
    # the config's epsilon (3) is not a target for a method that ignores it
    assert loading.finished_frame().set_index("run_id")["epsilon_target"].isna().loc[["pub-gpt-today", "tiny-noisysgd"]] \
        .tolist() == [True, False]
    assert table.loc[("NoisySGD", ""), ["PPL", "runs"]].tolist() == [300.0, 1]
    assert table.loc[("NoisySGD", "dpsgd.lr 0.0001"), "PPL"] == 900.0
    assert len(tables.headline_table(loading.finished_frame())) == 2  # at the defaults only: the variant is left out
    assert sorted(row.name for row in load_rows(roots["cached"])) == ["tiny-noisysgd", "tiny-pub-gpt"]
    roots["live"].joinpath("pub-gpt-today").rename(roots["cached"] / "pub-gpt-today")  # shipped too: one row, the
    assert sorted(row.name for row in load_rows(roots["cached"])) == ["tiny-noisysgd", "tiny-pub-gpt"]  # plainer


def test_privacy_cards_put_phrase_target_runs_and_shared_copies_in_a_note():
    import pandas as pd

    frame = pd.DataFrame([
        {"run_id": "seq-3", "method": "seqpate", "epsilon": 3.0, "epsilon_target": 3.0, "privacy_target": "sample",
         "unit": "sample", "accountant": "gaussian", "delta": 1e-6, "effective_hash": "h3"},
        {"run_id": "seq-3-copy", "method": "seqpate", "epsilon": 3.0, "epsilon_target": 3.0,
         "privacy_target": "sample", "unit": "sample", "accountant": "gaussian", "delta": 1e-6, "effective_hash": "h3"},
        {"run_id": "seq-avg3", "method": "seqpate", "epsilon": 1.9, "epsilon_target": 3.0,
         "privacy_target": "phrase-avg", "unit": "sample", "accountant": "gaussian", "delta": 1e-6,
         "effective_hash": "ha3"},
        {"run_id": "seq-avg3-m100", "method": "seqpate", "epsilon": 2.4, "epsilon_target": 3.0,
         "privacy_target": "phrase-avg", "unit": "sample", "accountant": "gaussian", "delta": 1e-6,
         "effective_hash": "ha3m"},
        {"run_id": "gc-avg5", "method": "noisysgd-gc+pseudo", "epsilon": 2.99, "epsilon_target": 5.0,
         "privacy_target": "phrase-avg", "unit": "sample", "accountant": "rdp", "delta": 1e-6, "effective_hash": "hg5"},
    ])
    cards = {card["method"]: card for card in tables.privacy_cards(frame)}
    seq = cards["seqpate"]
    assert (seq["epsilon"], seq["runs"]) == ("3", 3)  # not "1.9, 2.4, 3", and the copy counts once
    # one pair per run: the same phrase target gives another sentence ε under other settings
    assert seq["note"] == ("also 2 run(s) calibrated to an average name-phrase ε (→ their ε per training "
                           "sentence): 3 → 1.9, 3 → 2.4 (Phrases page), a heuristic: their noise is chosen from "
                           "private name counts")
    assert seq["caveat"] == ""  # its card describes its sample-target runs, a guarantee
    gc = cards["noisysgd-gc+pseudo"]  # only phrase-target runs: the card describes them, as a heuristic
    assert (gc["epsilon"], gc["kind"], gc["note"]) == ("2.99", "private", "")
    assert gc["caveat"] == tables.PHRASE_TARGET_HEURISTIC and "a heuristic, not a DP guarantee" in gc["caveat"]


def test_privacy_cards_describe_a_method_by_its_dp_runs_and_flag_adp():
    import pandas as pd

    frame = pd.DataFrame([
        {"method": "synth-filter", "epsilon": 2.9999991, "unit": "sample", "accountant": "pld", "delta": 1e-3},
        {"method": "synth-filter", "epsilon": 3.0, "unit": "sample", "accountant": "pld", "delta": 1e-3},
        {"method": "synth-filter", "epsilon": 8.0, "unit": "sample", "accountant": "pld", "delta": 1e-3},
        {"method": "synth-filter", "epsilon": math.inf, "unit": "none", "accountant": "none", "delta": 0.0},
        {"method": "adp", "epsilon": 3.0, "unit": "sample", "accountant": "pld", "delta": 1e-6},
        {"method": "pri-gpt", "epsilon": math.inf, "unit": "none", "accountant": "none", "delta": 0.0},
    ])
    cards = {card["method"]: card for card in tables.privacy_cards(frame)}
    synth = cards["synth-filter"]
    assert synth["kind"] == "private" and synth["epsilon"] == "3, 8" and synth["accountant"] == "pld"
    assert synth["note"].startswith("also 1 run(s) at ε = ∞") and synth["runs"] == 4
    assert synth["caveat"].startswith("δ = 1/|train|, the paper's setting, is a weak δ")  # shown on a warning card
    assert cards["adp"]["kind"] == "private" and "heuristic" in cards["adp"]["caveat"]
    assert cards["pri-gpt"]["kind"] == "not-private" and cards["pri-gpt"]["note"] == "" and not cards["pri-gpt"]["caveat"]


def test_runs_whose_noise_shared_a_stream_are_measurements_on_every_summary(roots):
    """A run made before its noise had a stream of its own (privacy.json without random_streams) says in its
    statement that its ε is a measurement at its noise level, not a proven bound; the one-line summaries (Runs
    page, HTML report) and the Overview's card said "(ε, δ)-DP" and showed a shield."""
    old = write_run(roots["cached"], "old-sgd", "noisysgd", epsilon=3.0)
    old.write_privacy({k: v for k, v in old.privacy().items() if k != "random_streams"})
    write_run(roots["cached"], "new-sgd", "noisysgd", epsilon=8.0)
    old_seq = write_run(roots["cached"], "old-seq-seed1", "seqpate", epsilon=3.0, seed=1)  # nothing shared
    old_seq.write_privacy({k: v for k, v in old_seq.privacy().items() if k != "random_streams"})
    records = loading.runs_frame().set_index("run_id")
    assert records.loc["old-sgd", "shared_streams"] and not records.loc["new-sgd", "shared_streams"]
    assert not records.loc["old-seq-seed1", "shared_streams"]
    line = wording.privacy_statement(3.0, 1e-6, "sample", "noisysgd", "sample", shared_streams=True)
    assert "-DP" not in line and "a measurement at its noise level, not a proven bound" in line
    from dashboard.report import build_report_html

    html = build_report_html(records.loc["old-sgd"].to_dict() | {"run_id": "old-sgd"}, {}, old.privacy(), {}, [])
    assert "<span class='warn'>ε = 3, δ = 1e-06 as accounted for one training sentence, a measurement" in html
    card = next(c for c in tables.privacy_cards(loading.finished_frame()) if c["method"] == "noisysgd")
    assert card["caveat"].startswith("1 of the 2 runs whose ε is listed were made before the noise had a random "
                                     "stream of its own")
    seq = next(c for c in tables.privacy_cards(loading.finished_frame()) if c["method"] == "seqpate")
    assert not seq["caveat"]


def test_the_headline_table_says_which_epsilons_are_not_guarantees(roots):
    """The cards and statements said an ADP ε is a heuristic and an old run's a measurement; the table beside them
    showed both as plain numbers (browser review). Its "ε is" column names them, and is left out where all rows
    are guarantees."""
    write_run(roots["cached"], "seq", "seqpate", epsilon=3.0)
    write_run(roots["cached"], "pub", "pub-gpt")
    assert "ε is" not in tables.headline_table(loading.finished_frame()).columns
    write_run(roots["cached"], "adp", "adp", epsilon=3.0)
    old = write_run(roots["cached"], "old-sgd", "noisysgd", epsilon=3.0)
    old.write_privacy({k: v for k, v in old.privacy().items() if k != "random_streams"})
    old_adp = write_run(roots["cached"], "old-adp", "adp", epsilon=8.0)
    old_adp.write_privacy({k: v for k, v in old_adp.privacy().items() if k != "random_streams"})
    table = tables.headline_table(loading.finished_frame()).set_index("run ids")
    assert table["ε is"].to_dict() == {"pub": "", "seq": "", "old-sgd": "measurement", "adp": "heuristic",
                                       "old-adp": "heuristic, measurement"}


def test_own_prefix_completion_failures_are_reported_not_cached(roots, monkeypatch):
    import subprocess
    from types import SimpleNamespace

    run = write_run(roots["live"], "with-weights", "pub-gpt")
    answers = iter([SimpleNamespace(returncode=2, stdout="", stderr="error: the prefix is 80 tokens\n"),
                    SimpleNamespace(returncode=0, stdout='[{"run": "with-weights", "completion": "hi"}]', stderr="")])
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: next(answers))
    loading._cached_own_completions.clear()
    assert loading.complete_own_prefix([run], "my  name") == {"with-weights": {"run": "with-weights",
                                                                               "error": "error: the prefix is 80 tokens"}}
    # the failure was not cached: the same request asks again and gets the answer
    assert loading.complete_own_prefix([run], "my name")["with-weights"]["completion"] == "hi"


def test_only_a_seqpate_run_is_a_variant_by_its_seqpate_settings():
    from core.config import preset_config

    quick = preset_config("quick", method="pub-gpt", seqpate__teachers=100, seqpate__filter="top-p:0.95").to_dict()
    assert loading.variant_settings(quick) == {}  # pub-gpt never reads the SeqPATE section it carries
    seq = preset_config("quick", method="seqpate", seqpate__teachers=100, seqpate__filter="top-p:0.95").to_dict()
    assert loading.variant_settings(seq) == {"teachers": 100, "filter": "top-p:0.95"}
    assert loading.variant_settings(preset_config("quick", method="seqpate").to_dict()) == {}
    phrase = preset_config("quick", method="noisysgd-gc+pseudo", data__canaries="1,10,100").to_dict()
    assert loading.variant_settings(phrase) == {"canaries": "1,10,100"}


def test_filter_preset_in_the_url_means_the_presets_own_filter():
    settings, ignored = launch.settings_from_query({"filter": "preset"})
    assert ignored == [] and settings["filter_kind"] == "preset" and launch.launch_filter_spec(settings) == ""


def test_seed_helpers_keep_runs_without_a_seed_apart():
    nan = float("nan")
    records = {"a": {"seed": 2}, "b": {"seed": nan}, "c": {"seed": 0}, "d": {"seed": 0.0}, "e": {}}
    assert loading.lowest_seed_first(list(records), records) == ["c", "d", "a", "b", "e"]
    assert loading.same_seed(records["c"], records["d"]) and not loading.same_seed(records["a"], records["c"])
    assert loading.same_seed(records["b"], records["e"]) and not loading.same_seed(records["b"], records["c"])


def test_a_runs_one_line_guarantee_names_adps_heuristic_and_synthetic_datas_weak_delta():
    assert wording.privacy_statement(3.0, 1e-6, "sample", "seqpate") == \
        "(ε = 3, δ = 1e-06)-DP, protecting one training sentence"
    adp = wording.privacy_statement(3.0, 1e-6, "sample", "adp")  # its statement.md and Overview card call it a heuristic
    assert "-DP" not in adp and "a heuristic, not a DP guarantee" in adp
    avg = wording.privacy_statement(1.9, 1e-6, "sample", "seqpate", "phrase-avg")  # noise chosen from private name counts
    assert "-DP" not in avg and "a heuristic, not a DP guarantee" in avg
    # the average name ε it was calibrated to, beside the sentence ε; and made before the noise had its own
    # stream, an ADP run's ε is also a measurement (its statement says both; the one line said only the first)
    avg = wording.privacy_statement(0.876, 1e-6, "sample", "seqpate", "phrase-avg", epsilon_target=3.0)
    assert avg.endswith("its noise level is chosen from the private data so that the average name ε is 3")
    old_adp = wording.privacy_statement(3.0, 1e-6, "sample", "adp", "sample", shared_streams=True)
    assert old_adp.startswith(adp) and "; and a measurement at its noise level, not a proven bound" in old_adp
    assert wording.privacy_statement(3.0, 1e-6, "sample", "seqpate", "sample").endswith(
        "-DP, protecting one training sentence")
    assert wording.privacy_statement(3.0, 1 / 640, "sample", "synth-filter") == \
        "(ε = 3, δ = 0.00156)-DP (δ = 1/|train|, a weak δ), protecting one training sentence"


def test_launch_limits_apply_to_the_methods_that_read_them_and_damaged_leak_counts_read_as_absent(roots):
    args = dict(preset="tiny", epsilon="3", delta="1e-6", teachers=2 * 10**9, filter_spec="", partition="random",
                ablation="none", seed=0)
    with pytest.raises(ConfigError, match="teachers must be at most 1,000,000,000"):
        launch.build_launch_config("seqpate", **args)
    assert launch.build_launch_config("pub-gpt", **args).method == "pub-gpt"  # Pub-GPT has no teachers to limit
    # nor a filter: a top-p SeqPATE refuses (its box greyed out once SeqPATE is not chosen) refuses no other method
    for bad in ("top-p:0", "top-p:1.5", f"top-k:{2 * 10**9}"):
        with pytest.raises(ConfigError):
            launch.build_launch_config("seqpate", **{**args, "teachers": None, "filter_spec": bad})
        assert launch.build_launch_config("noisysgd", **{**args, "filter_spec": bad}).method == "noisysgd"
    run = write_run(roots["cached"], "damaged", "seqpate", r_name=0.0)
    run.write_metrics({**run.metrics(), "r_name_counts": {"names": "x", "references_with_name": [1]}})
    frame = loading.runs_frame()
    assert frame.loc[0, "r_name_names"] is None or math.isnan(frame.loc[0, "r_name_names"])
    assert tables.leak_scope(frame) == ""  # nothing recorded that reads as a count


def test_the_phrase_histogram_opens_on_the_closest_run_of_each_other_method():
    """Beside the chosen run: one run per other method of its preset and seed with a finite ε, preferring one that
    holds its kinds of phrase, then its privacy target, then its target ε, then the defaults, then the newest."""
    def rec(method, eps=3.0, target="sample", variant="", seed=0, preset="tiny", eps_target=3.0):
        return {"method": method, "epsilon": eps, "privacy_target": target, "variant": variant, "seed": seed,
                "preset": preset, "epsilon_target": eps_target}

    records = {
        "me": rec("seqpate", target="phrase-avg"),
        "sgd-new-sample": rec("noisysgd-gc+pseudo"),
        "sgd-avg": rec("noisysgd-gc+pseudo", eps=0.43, target="phrase-avg"),
        "pri": rec("pri-gpt", eps=math.inf, eps_target=None),  # no finite ε: never on the log axis
        "other-seed": rec("noisysgd", seed=1),
        "other-preset": rec("noisysgd", preset="quick"),
        "dp-names-only": rec("noisysgd"),
        "dp-canaries": rec("noisysgd", eps=8.0, eps_target=8.0),
        "adp": rec("adp"),
    }
    candidates = tables.histogram_candidates(records, "me")
    assert candidates == ["sgd-new-sample", "sgd-avg", "dp-names-only", "dp-canaries", "adp"]
    kinds_of = {i: {"name", "canary"} for i in candidates} | {"dp-names-only": {"name"}, "adp": {"name"}}
    # GC: its phrase-avg run, as the chosen one, over the newer sample one; NoisySGD: the one with canaries too, at
    # another ε, over the one of the same ε without them; ADP, unlike in kind, last
    assert tables.histogram_defaults(records, "me", {"name", "canary"}, kinds_of) == [
        "me", "sgd-avg", "dp-canaries", "adp"]


def test_another_data_set_or_base_model_is_a_setup_not_a_variant():
    """What the 'Data and base model' picker groups by (loading.setup_label), and what it leaves as variants."""
    from core.config import preset_config

    def config(**overrides) -> dict:
        return preset_config("tiny", method="seqpate", **overrides).to_dict()

    assert loading.setup_label(config()) == "chitchat"
    own = config(data__corpus="/data/ep.txt", data__private_train=750)
    assert loading.setup_label(own) == "/data/ep.txt · data.private_train 750"
    assert loading.variant_settings(own) == {}  # at its preset's defaults on its own data
    # canaries, their seed and digits add secrets to one user of the same data: variants, not another data set
    canaries = config(data__canaries="1,10", data__canary_seed=3)
    assert loading.setup_label(canaries) == "chitchat"
    assert loading.variant_settings(canaries) == {"canaries": "1,10", "data.canary_seed": 3}
    # a synthetic-data run: its labelled texts' corpus, and a base model that is a checkout
    synth = {"method": "synth-filter", "synth": {"corpus": "/data/mine.csv"},
             "base": {"model": {"source": "/models/gpt2", "n_embd": 128}}}
    assert loading.setup_label(synth) == "/data/mine.csv · model.source /models/gpt2"
    # a checkout's tokenizer names its base model too: same weights, another tokenizer, another base
    assert loading.base_digest({"weights_sha256": "aaaa", "tokenizer_sha256": "cccc"}) == "aaaa (tokenizer cccc)"
    assert loading.base_digest({"weights_sha256": "aaaa"}) == "aaaa" and loading.base_digest({}) is None


def test_a_run_is_paced_and_its_phrases_compared_on_its_own_data_first():
    """An AirDialog run paced a chitchat run's remaining time, and its customers' names were drawn by default
    beside chitchat's phrases."""
    from dashboard import estimate

    def rec(run_id, setup, finished):
        return {"run_id": run_id, "state": "done", "started": "t", "preset": "tiny", "method": "seqpate",
                "variant": "", "setup": setup, "finished": finished, "base_cached": True,
                "privacy_target": "sample", "epsilon_target": 3.0}

    records = [rec("seq", "chitchat", "2026-11-20"), rec("air-seq", "/data/air.json", "2026-11-28")]
    running = {**rec("now", "chitchat", None), "state": "running"}
    assert [records[i]["run_id"] for i in estimate.pace_runs(running, records)] == ["seq"]
    by_id = {r["run_id"]: {**r, "seed": 0, "epsilon": 3.0} for r in records}
    by_id["me"] = {**rec("me", "chitchat", None), "method": "noisysgd", "seed": 0, "epsilon": 3.0}
    assert tables.histogram_candidates(by_id, "me") == ["seq"]
    # and Compare's run B beside an AirDialog run A: a run of A's data, not the newest chitchat run
    compared = [{**by_id["seq"], "source": "cached"}, {**by_id["air-seq"], "source": "live"},
                {**by_id["air-seq"], "run_id": "air-pub", "method": "pub-gpt", "source": "live"}]
    assert compared[loading.compare_partner(compared, 1)]["run_id"] == "air-pub"


def test_compare_names_a_result_as_the_run_details_print_it():
    """Compare read "PPL 1033.24" under run details reading "PPL 1,033.24" (a walk)."""
    assert tables.run_result({"ppl": 1033.244, "method": "seqpate", "state": "done"}) == "PPL 1,033.24"
    assert tables.run_result({"ppl": None, "method": "seqpate", "state": "running"}) == "running, no PPL"
    assert tables.run_result({"ppl": None, "method": "synth-filter", "state": "done"}).startswith("synthetic data")


def test_the_headline_epsilon_over_seeds_is_the_largest_accounted(roots):
    """Over seeds the headline row's ε is the largest any of its runs spent: a mean or the least would understate
    the privacy loss of one of them."""
    write_run(roots["cached"], "s0", "seqpate", seed=0, epsilon=3.0)
    run = write_run(roots["cached"], "s1", "seqpate", seed=1, epsilon=3.0)
    privacy = json.loads((run.path / "privacy.json").read_text())
    (run.path / "privacy.json").write_text(json.dumps({**privacy, "epsilon": 3.4}))
    row = tables.headline_table(loading.finished_frame()).iloc[0]
    assert row["runs"] == 2 and row["ε"] == 3.4


def test_a_shipped_run_whose_process_is_gone_lists_as_failed(roots):
    """A shipped "running" run (a sweep killed while writing into cached_runs/) whose process has exited is listed
    as failed, not running for good; the dashboard never writes the shipped folder to say so."""
    import subprocess
    import sys

    run = write_run(roots["cached"], "stuck", "seqpate", state="running")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    status = json.loads((run.path / "status.json").read_text())
    (run.path / "status.json").write_text(json.dumps({**status, "pid": dead.pid, "pid_started": None}))
    frame = loading.runs_frame().set_index("run_id")
    assert frame.loc["stuck", "state"] == "failed"
    assert frame.loc["stuck", "error"].startswith("process exited without finishing")
    assert json.loads((run.path / "status.json").read_text())["state"] == "running"  # the folder is left as it was


def test_an_empty_runs_frame_has_the_columns_of_a_full_one(roots):
    """RECORD_COLUMNS (the columns of the frame when no run exists) lists what a run's record holds, in order: a
    page that reads a column of an empty frame must not fail where it works with runs."""
    assert list(loading.runs_frame().columns) == list(loading.RECORD_COLUMNS)
    write_run(roots["cached"], "one", "seqpate")
    assert list(loading.runs_frame().columns) == list(loading.RECORD_COLUMNS)


def test_every_page_with_the_made_here_toggle_is_one_launch_switches():
    """Launch spends the opening link's value of each made-here toggle (tables.MADE_HERE_KEYS) when it switches them
    on: a key missing there would let a stale link switch that page's back off."""
    import re
    from pathlib import Path

    views = [path.read_text() for path in (Path(loading.__file__).parent / "views").glob("*.py")]
    keys = [key for text in views for key in re.findall(r'made_here_or_shipped\([^\n]*key="([a-z_]+)"\)', text)]
    calls = sum(text.count("made_here_or_shipped(") for text in views)
    assert calls == len(keys) == len(set(keys))  # a call the pattern misses (a key in a variable) is not let by
    assert set(keys) == set(tables.MADE_HERE_KEYS)
