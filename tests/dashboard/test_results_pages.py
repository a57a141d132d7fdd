"""Privacy-utility, Phrases and Completions pages against fake runs: charts and tables match the run files."""

from __future__ import annotations

import json
import math

import pytest
from apptest_helpers import metrics, open_tab, plotly_specs, texts
from fake_runs import PHRASES, phrase_rows, write_run

from core.runs.store import RunDir


@pytest.fixture
def results(roots):
    cached = roots["cached"]
    for eps, bleu in ((1.0, 1.5), (3.0, 2.5), (8.0, 3.0)):
        write_run(cached, f"seq-eps{eps:g}", "seqpate", epsilon=eps, bleu4=bleu, ppl=200 / eps,
                  phrases=phrase_rows(eps / 3), teachers_per_user={"1": 50, "2": 7, "3": 2, ">3": 1, "mean": 1.2})
        write_run(cached, f"sgd-eps{eps:g}", "noisysgd", epsilon=eps, bleu4=bleu / 2, ppl=400 / eps)
    write_run(cached, "pub", "pub-gpt", bleu4=0.4, ppl=500.0)
    write_run(cached, "pri", "pri-gpt", bleu4=4.2, ppl=60.0, r_name=0.125,
              completions=["Alice Smith lives in Provo"] + ["pri says hi"] * 5)
    write_run(cached, "seq-kl", "seqpate", epsilon=3.0, ablation="-kl", bleu4=1.9)
    write_run(cached, "seq-topk", "seqpate", epsilon=3.0, filter="top-k:50", bleu4=2.2)
    write_run(cached, "seq-m5", "seqpate", epsilon=3.0, teachers=5, bleu4=2.1)
    return cached


def test_privacy_utility_empty(roots, app_page):
    at = app_page("privacy_utility")
    assert not at.exception
    assert "No finished runs yet" in texts(at)
    from fake_runs import write_synth_run

    write_synth_run(roots["cached"], "synth-x", "filter", 3.0, 0.4)  # none of its runs has a PPL: not here
    assert "synthetic-data runs are on the Synthetic data page" in texts(app_page("privacy_utility"))


def test_privacy_utility_chart_has_points_and_reference_lines(results, app_page):
    # a by-user run with another teacher count varies two settings: it belongs to no table of the paper
    write_run(results, "seq-byuser-m5", "seqpate", epsilon=3.0, partition="by-user", teachers=5, bleu4=0.1)
    at = app_page("privacy_utility")
    assert not at.exception
    assert not at.dataframe  # lazy tabs: the first (the curves) is the only one built
    assert "The numbers behind these points, one row per run" in texts(at)  # the chart's text alternative
    bleu, ppl = panels(plotly_specs(at)[0])
    assert bleu["layout"]["xaxis"]["type"] == "log"
    ids = {row[0] for trace in bleu["data"] for row in (trace.get("customdata") or [])}
    assert {"seq-eps1", "seq-eps3", "seq-eps8", "sgd-eps1", "pri", "pub"} <= ids
    assert "seq-kl" not in ids  # ablations go to their own table
    assert not {"seq-topk", "seq-m5"} & ids  # variants (filter, teacher count) only when asked for
    # not plotly's "5" for 0.5, and no 10 beside the 8 (at 900 px their labels touched)
    assert bleu["layout"]["xaxis"]["ticktext"] == ["0.5", "1", "2", "3", "5", "8"]
    assert bleu["layout"]["yaxis"]["title"]["text"] == "BLEU-4 (0-100)"  # sacrebleu's scale: 0.23 is not 23%
    seq_points = next(t for t in bleu["data"] if t["name"] == "SeqPATE" and t["mode"] == "markers")
    by_id = {cd[0]: y for cd, y in zip(seq_points["customdata"], seq_points["y"], strict=True)}
    assert by_id["seq-eps3"] == 2.5
    pub_line = next(t for t in bleu["data"] if t["name"].startswith("Pub-GPT (ε=0"))
    assert pub_line["y"][0] == pub_line["y"][1] == 0.4  # a flat line at the reference's value
    pri_line = next(t for t in bleu["data"] if t["name"].startswith("Pri-GPT (ε=∞"))
    assert pri_line["y"][0] == 4.2
    dashes = [t["line"]["dash"] for t in bleu["data"] if "reference" in t["name"]]
    assert len(dashes) >= 2 and len(set(dashes)) == len(dashes)  # coinciding references stay visible
    assert ppl["layout"]["yaxis2"]["type"] == "log" and ppl["layout"]["xaxis2"]["type"] == "log"
    seq_ppl = next(t for t in ppl["data"] if t["name"] == "SeqPATE" and t["mode"] == "markers")
    assert dict(zip((cd[0] for cd in seq_ppl["customdata"]), seq_ppl["y"], strict=True))["seq-eps3"] == 200 / 3
    assert not any(t.get("showlegend", True) for t in ppl["data"])  # one legend for both panels
    write_run(results, "pri-canaries", "pri-gpt", bleu4=0.2, ppl=70.0, canaries="1,10")  # a variant of the reference
    at.toggle(key="pu_variants").set_value(True).run()
    bleu, _ = panels(plotly_specs(at)[0])
    pri_line = next(t for t in bleu["data"] if t["name"].startswith("Pri-GPT (ε=∞"))
    assert pri_line["y"][0] == 4.2  # still the reference at its defaults, not averaged with the canary run
    ids = {row[0] for trace in bleu["data"] for row in (trace.get("customdata") or [])}
    assert {"seq-topk", "seq-m5"} <= ids and "seq-kl" not in ids
    seq_line = next(t for t in bleu["data"] if t["name"] == "SeqPATE" and t["mode"] == "lines")
    assert 2.5 in seq_line["y"] and not {2.2, 2.1} & set(seq_line["y"])  # variants are points, not in the line
    open_tab(at, "pu_tab", "Points")
    assert not plotly_specs(at)  # the curves' tab is not built while another is open
    points = at.dataframe[0].value
    assert points.set_index("run").loc["seq-topk", "setting"] == "filter top-k:50"
    assert points.set_index("run").loc["seq-topk", "δ"] == "1e-06"  # each ε with its δ
    from fake_runs import write_synth_run

    write_synth_run(results, "synth-x", "filter", 3.0, 0.4)  # no PPL or BLEU-4: the Synthetic data page's
    assert "synth-x" not in set(open_tab(at, "pu_tab", "Points").dataframe[0].value["run"])
    # ablation (Table 3), filter (Table 4) tables and the teacher-count curve (App. H), each in its tab
    write_run(results, "seq-eps3-other-plan", "seqpate", epsilon=3.0, bleu4=2.5)  # the same config, another plan
    tab = open_tab(at, "pu_tab", "Ablations (Table 3)")
    ablation = tab.dataframe[0].value
    assert sorted(ablation["ablation"]) == ["-kl", "SeqPATE (full)"]  # the shared baseline once
    # what -kl means under the table, not only in Launch's tooltip (a lecturer's class would ask)
    assert ("What each row switches off: -kl: cross-entropy over the vocabulary on the noisy answer's top candidate "
            "instead of KL to it.") in [x.value for x in tab.caption]
    assert set(ablation["run"]) == {"seq-eps3", "seq-kl"}  # of the two copies, the run id that sorts first
    # a -kl run made before its cross-entropy was over the vocabulary (its metrics record no teacher_loss)
    old = results / "seq-kl" / "metrics.json"
    old.write_text(json.dumps({k: v for k, v in json.loads(old.read_text()).items() if k != "teacher_loss"}))
    ablation = open_tab(at, "pu_tab", "Ablations (Table 3)").dataframe[0].value
    assert sorted(ablation["ablation"]) == ["-kl (made before 2026-11-27)", "SeqPATE (full)"]
    assert "took the -KL cross-entropy over the candidate set" in texts(at)  # the label explained
    from dashboard import loading

    # and wherever the run is named by the setting it varies (the headline export, the Points tab)
    shown = loading.runs_frame().set_index("run_id").loc["seq-kl", ["variant", "variant_shown"]]
    assert list(shown) == ["ablation -kl", "ablation -kl (made before 2026-11-27)"]  # the first paces estimates
    filters = open_tab(at, "pu_tab", "Candidate filters (Table 4)").dataframe[0].value
    assert set(filters["filter"]) == {"top-p:0.95", "top-k:50"}
    assert len(filters) == 2 and "seq-topk" in set(filters["run"])  # at the ε of the varied run, others default
    write_run(results, "seq-topk100", "seqpate", epsilon=3.0, filter="top-k:100", bleu4=2.0)
    filters = open_tab(at, "pu_tab", "Candidate filters (Table 4)").dataframe[0].value
    assert list(filters["filter"]) == ["top-k:50", "top-k:100", "top-p:0.95"]  # by number, not as text
    assert not any("top-k:1:" in x.value for x in at.caption)
    write_run(results, "seq-topk1", "seqpate", epsilon=3.0, filter="top-k:1", bleu4=1.0)
    tab = open_tab(at, "pu_tab", "Candidate filters (Table 4)")  # its KL over one candidate is 0: the tab says so
    assert any(x.value.startswith("top-k:1: with one candidate the KL to the teachers' answer is 0")
               for x in tab.caption)
    from dashboard.loading import filter_order

    assert sorted(["top-k:100", None, "top-k:50", "garbled"], key=filter_order)[:2] == ["top-k:50", "top-k:100"]
    open_tab(at, "pu_tab", "Teachers (App. H)")
    assert not at.exception
    teacher_curve = plotly_specs(at)[0]
    title = teacher_curve["layout"]["title"]["text"]  # perplexity first: BLEU-4 is noise at this size
    assert title.startswith("SeqPATE: Perplexity (lower is better) vs number of teachers")
    curve_ids = {row[0] for trace in teacher_curve["data"] for row in (trace.get("customdata") or [])}
    assert curve_ids == {"seq-eps3", "seq-m5"}  # a copy from another plan is not a second seed
    line = next(t for t in teacher_curve["data"] if t["mode"] == "lines")
    assert line["name"] == "ε=3" and len(line["x"]) == 2  # one point per teacher count


def test_adps_curve_is_named_a_heuristic():
    """Its cards and statements say ADP's ε is a heuristic; its curve sat beside the DP methods' as one of them."""
    import pandas as pd

    from dashboard.charts import privacy_utility_figure

    runs = pd.DataFrame({"run_id": ["adp", "sgd"], "method": ["adp", "noisysgd"], "epsilon": [3.0, 3.0],
                         "privacy_target": ["sample", "sample"], "variant": ["", ""], "source": ["cached"] * 2,
                         "ppl": [200.0, 210.0], "bleu4": [0.2, 0.3]})
    names = {t.name for t in privacy_utility_figure(runs, "ppl").data}
    assert names == {"Adaptive DP (heuristic ε)", "NoisySGD"}
    # a run's hover names its kind: a phrase-avg variant sits in its method's trace, an old run's ε is measured
    runs = pd.DataFrame({"run_id": ["seq", "avg", "old"], "method": ["seqpate"] * 3, "epsilon": [3.0, 1.9, 8.0],
                         "privacy_target": ["sample", "phrase-avg", "sample"], "shared_streams": [False, False, True],
                         "variant": ["", "target phrase-avg", ""], "source": ["cached"] * 3,
                         "ppl": [200.0, 210.0, 190.0], "bleu4": [0.2, 0.3, 0.3]})
    [points] = [t for t in privacy_utility_figure(runs, "ppl").data if t.mode == "markers"]
    assert {row[0]: row[1] for row in points.customdata} == {
        "seq": "defaults", "avg": "target phrase-avg · ε a heuristic", "old": "defaults · ε a measurement"}
    assert points.name == "SeqPATE"  # not every run's ε is a heuristic


def test_runs_made_here_are_diamonds_beside_the_shipped_dots():
    """They train on this machine's base model, not the shipped runs': a reader must tell the two apart."""
    import pandas as pd

    from dashboard.charts import privacy_utility_figure, teacher_curve_figure

    runs = pd.DataFrame({"run_id": ["shipped", "here"], "method": ["seqpate"] * 2, "epsilon": [3.0, 5.0],
                         "epsilon_target": [3.0, 5.0], "variant": ["", ""], "source": ["cached", "live"],
                         "ppl": [909.3, 989.0], "bleu4": [0.2, 0.3], "teachers": [10, 100]})
    points = next(t for t in privacy_utility_figure(runs, "ppl").data if t.mode == "markers")
    assert list(points.marker.symbol) == ["circle", "diamond"]
    assert [row[1] for row in points.customdata] == ["defaults", "defaults · made here"]  # in the hover too
    teachers = [t for t in teacher_curve_figure(runs, "ppl").data if t.mode == "markers" and t.customdata is not None]
    assert [list(t.marker.symbol) for t in teachers] == [["circle"], ["diamond"]]
    for figure in (privacy_utility_figure(runs, "ppl"), teacher_curve_figure(runs, "ppl")):  # the legend says so
        assert [t.name for t in figure.data if t.name.startswith("made on this machine")]
    shipped = runs[runs["source"] == "cached"]
    assert not [t for t in privacy_utility_figure(shipped, "ppl").data if t.name.startswith("made on")]


def test_a_method_with_variants_only_gets_points_and_no_line_averaging_them():
    """Without a run at the preset's defaults the line fell back to every run of the method, averaging two teacher
    counts at one ε into a point no run has."""
    import pandas as pd

    from dashboard.charts import privacy_utility_figure

    runs = pd.DataFrame({"run_id": ["m10", "m100", "pub"], "method": ["seqpate", "seqpate", "noisysgd"],
                         "epsilon": [3.0, 3.0, 3.0], "epsilon_target": [3.0, 3.0, 3.0],
                         "variant": ["teachers 10", "teachers 100", ""], "source": ["cached"] * 3,
                         "ppl": [900.0, 800.0, 700.0], "bleu4": [0.2, 0.3, 0.4]})
    traces = privacy_utility_figure(runs, "ppl").data
    assert [list(t.y) for t in traces if t.mode == "lines" and t.legendgroup == "seqpate"] == []
    assert [list(t.y) for t in traces if t.mode == "markers" and t.legendgroup == "seqpate"] == [[900.0, 800.0]]
    assert [list(t.y) for t in traces if t.mode == "lines" and t.legendgroup == "noisysgd"] == [[700.0]]


def test_runs_made_here_get_a_line_of_their_own():
    """With the runs made here in place of their shipped copies, one at ε 3 joined the shipped SeqPATE line, which
    read 909 -> 1033 -> 909 (a walk): it stands on another base model, so its runs make a dotted line of their own."""
    import pandas as pd

    from dashboard.charts import privacy_utility_figure

    runs = pd.DataFrame({"run_id": ["s1", "here3", "s8", "here8"], "method": ["seqpate"] * 4,
                         "epsilon": [1.0, 3.0, 8.0, 8.0], "epsilon_target": [1.0, 3.0, 8.0, 8.0], "variant": [""] * 4,
                         "source": ["cached", "live", "cached", "live"],
                         "ppl": [910.0, 1033.0, 908.0, 1020.0], "bleu4": [0.2] * 4})
    lines = [t for t in privacy_utility_figure(runs, "ppl").data if t.mode == "lines"]
    assert [(list(t.x), list(t.y), t.line.dash) for t in lines] == [([1.0, 8.0], [910.0, 908.0], None),
                                                                    ([3.0, 8.0], [1033.0, 1020.0], "dot")]
    # a reference made here in place of the shipped one says so (it looked shipped, beside shipped SeqPATE)
    pub = pd.DataFrame({"run_id": ["pub-here"], "method": ["pub-gpt"], "epsilon": [0.0], "epsilon_target": [None],
                        "variant": [""], "source": ["live"], "ppl": [1163.6], "bleu4": [0.2]})
    names = [t.name for t in privacy_utility_figure(pd.concat([runs, pub]), "ppl").data if t.legendgroup == "pub-gpt"]
    assert names == ["Pub-GPT (ε=0, reference, made here)"]


def test_teacher_curve_does_not_blow_a_tiny_spread_up_into_a_peak():
    """The shipped tiny curve: perplexities 908.1 to 909.3 over M = 1..1000 filled the plot autoscaled."""
    import pandas as pd

    from dashboard.charts import span_at_least, teacher_curve_figure

    low, high = span_at_least([908.6, 908.4, 908.1, 909.3])
    assert high - low == pytest.approx(0.1 * 908.7) and low < 908.1 and high > 909.3
    assert span_at_least([0.21, 0.37]) is None  # a spread of more than 10% keeps plotly's autoscale
    assert span_at_least([float("nan"), None]) is None and span_at_least([0.0, 0.0]) is None
    runs = pd.DataFrame({"epsilon_target": [3.0] * 4, "teachers": [1, 10, 100, 1000], "run_id": list("abcd"),
                         "ppl": [908.6, 908.4, 908.1, 909.3], "bleu4": [0.23, 0.21, 0.37, 0.21]})
    assert list(teacher_curve_figure(runs, "ppl").layout.yaxis.range) == pytest.approx([low, high])
    assert teacher_curve_figure(runs, "bleu4").layout.yaxis.range is None


def test_privacy_utility_shows_one_seed_unless_every_seed_is_asked_for(results, app_page):
    write_run(results, "seq-eps3-seed1", "seqpate", epsilon=3.0, bleu4=9.0, seed=1)
    privacy = results / "seq-eps3-seed1" / "privacy.json"  # accounted 1.3e-7 off seed 0's, as quick's NoisySGD runs
    privacy.write_text(privacy.read_text().replace('"epsilon": 2.9985', '"epsilon": 2.99850013'))
    write_run(results, "pub-seed1", "pub-gpt", bleu4=8.0, seed=1)
    at = app_page("privacy_utility")
    assert at.selectbox(key="pu_seed").value == 0

    def bleu_panel() -> tuple[set, float]:
        bleu, _ = panels(plotly_specs(at)[0])
        ids = {row[0] for trace in bleu["data"] for row in (trace.get("customdata") or [])}
        return ids, next(t for t in bleu["data"] if t["name"].startswith("Pub-GPT (ε=0"))["y"][0]

    ids, pub = bleu_panel()
    assert "seq-eps3" in ids and not {"seq-eps3-seed1", "pub-seed1"} & ids and pub == 0.4
    at.selectbox(key="pu_seed").set_value("every seed (mean)").run()
    ids, pub = bleu_panel()
    assert {"seq-eps3", "seq-eps3-seed1"} <= ids and pub == (0.4 + 8.0) / 2
    # one mean point per target ε, although the two seeds' runs are accounted a little apart
    bleu, _ = panels(plotly_specs(at)[0])
    seq_line = next(t for t in bleu["data"] if t["name"] == "SeqPATE" and t["mode"] == "lines")
    assert len(seq_line["x"]) == 3 and seq_line["y"][1] == (2.5 + 9.0) / 2


def test_privacy_utility_gives_each_plotted_runs_base_model(results, app_page):
    """ADP's canary runs (made 2026-11-27 on another base model than the shipped tiny runs) showed as shipped dots
    beside them with nothing telling them apart: a point's hover and the Points table give its base model."""
    for name, method in (("adp-canaries", "adp"), ("sgd-canaries", "noisysgd")):
        run = write_run(results, name, method, epsilon=3.0, canaries="1,10,100", ppl=900.0)
        run.write_metrics({**run.metrics(), "base_model": {"source": "tiny", "weights_sha256": "8867e2a78e365b32"}})
    at = app_page("privacy_utility")
    at.toggle(key="pu_variants").set_value(True).run()
    bleu, _ = panels(plotly_specs(at)[0])
    settings = {row[0]: row[1] for trace in bleu["data"] if trace["mode"] == "markers"
                for row in (trace.get("customdata") or [])}
    assert settings["adp-canaries"].startswith("canaries") and "· base 8867e2a78e365b32" in settings["adp-canaries"]
    assert settings["seq-eps3"] == "defaults"
    open_tab(at, "pu_tab", "Points")
    points = at.dataframe[0].value.set_index("run")
    assert points.loc["adp-canaries", "base model"] == "8867e2a78e365b32"
    assert points.loc["seq-eps3", "base model"] == "not recorded"


def test_phrase_histogram_defaults_to_runs_of_the_chosen_runs_seed(roots, app_page):
    phrases = [{"phrase": "Name0", "occurrences": 2, "users": 1, "teachers": 1, "epsilon": 2.0, "kind": "name"}]
    write_run(roots["cached"], "seq", "seqpate", phrases=phrases, partition="by-user")
    write_run(roots["cached"], "sgd", "noisysgd", phrases=phrases)
    write_run(roots["cached"], "sgd-seed2", "noisysgd", seed=2, phrases=phrases)  # the newest run of NoisySGD
    at = app_page("phrases")
    assert at.selectbox(key="phrases_run").value == "seq"
    open_tab(at, "phrases_tab", "ε histogram")
    assert at.multiselect(key="phrases_hist_runs_seq").value == ["seq", "sgd"]


def test_phrase_histogram_compares_runs_of_the_same_privacy_target_and_epsilon(roots, app_page):
    """A phrase-avg run at 3 is compared with the other methods' phrase-avg runs at 3, not with whatever ran last
    (NoisySGD at ε 8, a teacher-count variant); a sample-level run with runs at the preset's defaults."""
    phrases = [{"phrase": "Name0", "occurrences": 2, "users": 1, "teachers": 1, "epsilon": 2.0, "kind": "name"}]
    avg = {"privacy__target": "phrase-avg"}
    cached = roots["cached"]  # each run below is newer than the one before
    write_run(cached, "seq-avg3", "seqpate", phrases=phrases, partition="by-user", config=avg)
    write_run(cached, "seq-eps3", "seqpate", phrases=phrases)
    write_run(cached, "gc-avg3", "noisysgd-gc+pseudo", phrases=phrases, config=avg)
    write_run(cached, "gc-eps3", "noisysgd-gc+pseudo", phrases=phrases)
    write_run(cached, "sgd-eps3", "noisysgd", phrases=phrases)
    write_run(cached, "sgd-eps8", "noisysgd", epsilon=8.0, phrases=phrases)
    write_run(cached, "seq-m5", "seqpate", teachers=5, phrases=phrases)
    write_run(cached, "gc-avg3-users", "noisysgd-gc+pseudo", phrases=phrases, config={**avg, "dpsgd__batching": "users"})
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("gc-avg3-users").run()
    open_tab(at, "phrases_tab", "ε histogram")
    assert at.multiselect(key="phrases_hist_runs_gc-avg3-users").value == ["gc-avg3-users", "seq-avg3", "sgd-eps3"]
    at.selectbox(key="phrases_run").set_value("sgd-eps3").run()
    open_tab(at, "phrases_tab", "ε histogram")
    assert at.multiselect(key="phrases_hist_runs_sgd-eps3").value == ["sgd-eps3", "gc-eps3", "seq-eps3"]  # newest first


def test_phrases_at_one_epsilon_are_all_at_or_below_their_average(roots, app_page):
    # three canaries of a by-user run share one epsilon whose float mean rounds a hair below it
    eps = 2.9999999966684703
    phrases = [{"phrase": f"canary {i}", "occurrences": 1, "users": 1, "teachers": 1, "epsilon": eps,
                "kind": "canary"} for i in range(3)]
    write_run(roots["cached"], "seq", "seqpate", phrases=phrases, partition="by-user")
    shown = metrics(app_page("phrases"))
    assert (shown["average ε"], shown["share ≤ average"]) == ("3", "100%")


def panels(spec: dict) -> tuple[dict, dict]:
    """The Fig. 2 figure's two panels (BLEU-4 on axes x/y, perplexity on x2/y2), each as {"data", "layout"}."""
    left = [t for t in spec["data"] if t.get("xaxis", "x") == "x"]
    right = [t for t in spec["data"] if t.get("xaxis") == "x2"]
    assert len(left) + len(right) == len(spec["data"]) and left and right
    return {"data": left, "layout": spec["layout"]}, {"data": right, "layout": spec["layout"]}


def test_phrases_summary_matches_csv(results, app_page):
    at = app_page("phrases")
    assert not at.exception
    at.selectbox(key="phrases_run").set_value("seq-eps3").run()
    rows = phrase_rows(1.0)
    eps = [r["epsilon"] for r in rows]
    avg = sum(eps) / len(eps)
    shown = metrics(at)
    assert shown["phrases"] == str(len(rows))
    assert shown["average ε"] == f"{avg:.3g}"
    assert shown["min ε"] == f"{min(eps):.3g}" and shown["max ε"] == f"{max(eps):.3g}"
    assert shown["share ≤ average"] == f"{sum(e <= avg for e in eps) / len(eps):.0%}"
    table = at.dataframe[0].value
    assert list(table["phrase"]) == PHRASES
    at.text_input(key="phrases_search").set_value("smith").run()
    assert list(at.dataframe[0].value["phrase"]) == ["Alice Smith"]
    assert not plotly_specs(at)  # lazy tabs: the histograms are not built while the table is open
    hist = plotly_specs(open_tab(at, "phrases_tab", "ε histogram"))
    assert [s["layout"]["title"]["text"] for s in hist] == ["ε per secret phrase"] and not at.dataframe
    teachers = plotly_specs(open_tab(at, "phrases_tab", "Teachers per user"))
    assert teachers[0]["layout"]["title"]["text"].startswith("Users by number of teachers")
    assert "on average" not in " ".join(x.value for x in at.caption)  # mean 1.2: most users in one teacher
    assert not at.exception
    open_tab(at, "phrases_tab", "Table")  # the table's search survived the other tabs
    assert at.text_input(key="phrases_search").value == "smith"
    assert list(at.dataframe[0].value["phrase"]) == ["Alice Smith"]


def test_teachers_tab_says_when_users_are_spread_over_several_teachers(roots, app_page):
    write_run(roots["cached"], "crowded", "seqpate", epsilon=3.0, partition="by-user", teachers=20,
              phrases=phrase_rows(1.0), teachers_per_user={"1": 3, "2": 2, "3": 1, ">3": 2, "mean": 2.27})
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("crowded").run()
    open_tab(at, "phrases_tab", "Teachers per user")
    assert not at.exception
    assert "Here a user sits in 2.27 teachers on average" in " ".join(x.value for x in at.caption)


def test_phrases_summary_is_per_kind_and_histogram_per_run(roots, app_page):
    names = [{"phrase": f"Name{i}", "occurrences": 2, "users": 1, "teachers": 1, "epsilon": 2.0 + i, "kind": "name"}
             for i in range(3)]
    canaries = [{"phrase": "123456", "occurrences": 100, "users": 1, "teachers": 1, "epsilon": 500.0,
                 "kind": "canary"}]
    write_run(roots["cached"], "sgd-a", "noisysgd", phrases=names + canaries)
    write_run(roots["cached"], "sgd-b", "noisysgd", seed=1, phrases=names)
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("sgd-a").run()
    assert not at.exception
    assert at.radio(key="phrases_kind").value == "name"  # the names' average, not one mixed with canaries
    assert metrics(at)["average ε"] == "3" and metrics(at)["phrases"] == "3"
    open_tab(at, "phrases_tab", "ε histogram")  # the histogram follows the kind chosen above: names only
    at.multiselect(key="phrases_hist_runs_sgd-a").set_value(["sgd-a", "sgd-b"]).run()
    hist = next(spec for spec in plotly_specs(at) if spec["layout"]["title"]["text"] == "ε per secret phrase")
    assert {name: sum(t["y"]) for name, t in ((t["name"], t) for t in hist["data"])} == {
        "NoisySGD: sgd-a": 3, "NoisySGD: sgd-b": 3}  # two runs of one method stay apart, the canary is left out
    at.radio(key="phrases_kind").set_value("all").run()
    assert metrics(at)["average ε"] == f"{(2 + 3 + 4 + 500) / 4:.3g}"
    hist = next(spec for spec in plotly_specs(at) if spec["layout"]["title"]["text"] == "ε per secret phrase")
    a, b = hist["data"]
    assert (sum(a["y"]), sum(b["y"])) == (4, 3) and a["x"] == b["x"]  # the same bins for every run
    assert a["y"][0] == 1 and a["customdata"][0] == "ε 2–2.3"  # ε = 2 in the first of 40 log bins from 2 to 500
    assert a["y"][-1] == 1 and a["customdata"][-1].endswith("–500")
    assert hist["layout"]["yaxis"]["dtick"] == 1 and hist["layout"]["yaxis"]["tickformat"] == "d"  # whole counts
    open_tab(at, "phrases_tab", "Table")
    assert len(at.dataframe[0].value) == 4


def test_the_histogram_prefers_runs_with_the_chosen_runs_canaries_and_names_those_without(roots, app_page):
    """A walk chose canaries and read "no phrase with a finite ε above 0" for runs that hold no canaries at all."""
    names = [{"phrase": "Name0", "occurrences": 2, "users": 1, "teachers": 1, "epsilon": 2.0, "kind": "name"}]
    canary = [{"phrase": "123456", "occurrences": 100, "users": 1, "teachers": 1, "epsilon": 500.0, "kind": "canary"}]
    write_run(roots["cached"], "seq-canaries", "seqpate", phrases=names + canary)
    write_run(roots["cached"], "sgd-canaries", "noisysgd", phrases=names + canary)
    write_run(roots["cached"], "sgd-names", "noisysgd", phrases=names)  # newer, but without canaries
    write_run(roots["cached"], "gc-names", "noisysgd-gc+pseudo", phrases=names)
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("seq-canaries").run()
    at.radio(key="phrases_kind").set_value("canary").run()
    open_tab(at, "phrases_tab", "ε histogram")
    assert at.multiselect(key="phrases_hist_runs_seq-canaries").value == ["seq-canaries", "sgd-canaries", "gc-names"]
    assert "Not drawn (no canary phrases in the run): gc-names." in texts(at)
    assert "no phrase with a finite ε above 0" not in texts(at)


def test_phrases_without_any_csv(roots, app_page):
    write_run(roots["cached"], "pub", "pub-gpt")
    at = app_page("phrases")
    assert not at.exception
    assert "No runs with a phrases.csv yet" in texts(at)


def test_completions_side_by_side_with_highlights_and_leak_rate(results, app_page):
    from fake_runs import write_synth_run

    write_synth_run(results, "synth-x", "filter", 3.0, 0.4)
    at = app_page("completions")
    assert not at.exception
    runs = at.multiselect(key="comp_runs_tiny")
    assert runs.options and not [o for o in runs.options if o.startswith("synth-x")]  # samples, not completions
    assert runs.value[0].startswith("seq-eps") and len(runs.value) == 4  # SeqPATE first, one run per method
    assert not {"seq-topk", "seq-m5", "seq-kl"} & set(runs.value)  # at the preset's defaults
    # the runs that do not fit a row wrap onto the next (tests/e2e checks it in a browser): no sideways scroller
    assert "repeat(auto-fit,minmax(11rem,1fr))" in texts(at) and "overflow-x:auto" not in texts(at)
    at.multiselect(key="comp_runs_tiny").set_value(["pri", "seq-eps3"]).run()
    at.multiselect(key="comp_prefixes_").set_value([0]).run()
    assert not at.exception
    html = texts(at)
    assert "my name is really" in html  # prefix 0
    assert "<mark>Alice Smith</mark>" in html  # the reference, highlighted with the seqpate run's phrases
    assert "Alice Smith lives in Provo" in html  # pri-gpt has no phrases.csv: its completion is not marked
    assert "seqpate says something about item 0" in html
    assert "leak rate R_name = 12.50%" in html
    assert "Highlighted and underlined where they occur: the 5 secret phrase(s) of the runs' phrases.csv." in html
    assert "mark{background:#fefcbf;padding:0 .1rem;text-decoration:underline" in html  # not by colour alone
    pri = RunDir(results / "pri")  # how many names the rate looks for, where the run recorded it
    pri.write_metrics({**pri.metrics(), "r_name_counts": {"names": 4, "references_with_name": 0}})
    at.multiselect(key="comp_prefixes_").set_value([1]).run()  # a prefix with no secret phrase in sight
    html = texts(at)
    assert "leak rate R_name = 12.50% (4 names looked for)" in html and "(none occurs in the prefixes shown)" in html
    at.multiselect(key="comp_prefixes_").set_value([0]).run()
    assert "a run needs its weights: runs made on this machine keep them" in html
    # the example is words of a test prefix these runs completed (not a fixed phrase another preset has)
    assert at.text_input(key="comp_find").placeholder == "type words of a prefix, e.g. my name"
    at.text_input(key="comp_find").set_value("NAME IS").run()  # finds the test prefixes containing the words
    assert at.multiselect(key="comp_prefixes_name is").options == ["0: my name is really"]
    at.text_input(key="comp_find").set_value(" name   is ").run()  # spaces as typed find the same prefixes
    assert at.multiselect(key="comp_prefixes_name is").options == ["0: my name is really"]
    at.text_input(key="comp_find").set_value("zebra").run()
    assert "No test prefix contains 'zebra'" in at.warning[0].value
    at.text_input(key="comp_find").set_value("").run()
    assert at.multiselect(key="comp_prefixes_").value == [0]  # the choice made before searching is back
    at.multiselect(key="comp_runs_tiny").set_value(["seq-eps3", "seq-topk"]).run()  # same method and ε
    html = texts(at)
    assert "SeqPATE · ε 3 · seq-eps3" in html and "SeqPATE · ε 3 · seq-topk" in html


def test_a_damaged_completions_or_phrases_file_is_named_and_the_page_still_shows(roots, app_page):
    """A review put a bad line in the middle of completions.jsonl: the whole Completions page failed."""
    write_run(roots["cached"], "pub", "pub-gpt", phrases=phrase_rows())
    bad = write_run(roots["cached"], "seq", "seqpate", phrases=phrase_rows())
    lines = bad.file("completions.jsonl").read_text().splitlines()
    bad.file("completions.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    bad.file("phrases.csv").write_text('phrase,epsilon\n"unclosed,1\n')
    at = app_page("completions")
    assert not at.exception
    assert [e.value for e in at.error if e.value.startswith("seq: ") and "line 2" in e.value]
    assert "pub-gpt says something about item 4" in texts(at)  # the other run's completions still show
    assert "No completions to show for seq." in texts(at)
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("seq").run()
    assert not at.exception


def test_a_run_made_here_under_a_shipped_runs_name_keeps_each_runs_own_numbers_and_text(roots, app_page):
    """A review made a run in runs/tiny-seqpate-eps3 beside the shipped one: the pages keyed both by one id, and
    showed the shipped run's perplexity beside the run made here's completions."""
    from dashboard import loading

    write_run(roots["cached"], "tiny-seqpate-eps3", "seqpate", ppl=100.0, completions=["SHIPPED text"] * 3)
    write_run(roots["live"], "tiny-seqpate-eps3", "seqpate", ppl=200.0, completions=["MADEHERE text"] * 3)
    rows = loading.runs_frame().set_index("run_id")
    assert rows.loc["tiny-seqpate-eps3", "ppl"] == 200.0 and rows.loc["tiny-seqpate-eps3", "source"] == "live"
    assert rows.loc["tiny-seqpate-eps3 (shipped)", "ppl"] == 100.0
    assert loading.get_run("tiny-seqpate-eps3 (shipped)").source == "cached"
    # the names a damaged file is shown by
    assert [loading.listed_id(loading.get_run(i)) for i in rows.index] == list(rows.index)
    at = app_page("completions")
    at.multiselect(key=next(m.key for m in at.multiselect if m.key.startswith("comp_runs"))).set_value(
        ["tiny-seqpate-eps3 (shipped)"]).run()
    assert not at.exception and "SHIPPED text" in texts(at) and "MADEHERE" not in texts(at)


def test_completions_show_runs_of_one_seed(results, app_page):
    # another seed splits the users anew: its runs completed other test prefixes, so seeds are shown one at a time
    for run_id, method in (("a-seq-seed1", "seqpate"), ("a-pub-seed1", "pub-gpt"), ("a-pri-seed1", "pri-gpt")):
        write_run(results, run_id, method, seed=1)
    at = app_page("completions")
    seed = at.selectbox(key="comp_seed")
    assert seed.value == 0 and seed.options == ["0", "1"]  # no "every seed": their prefixes differ
    runs = at.multiselect(key="comp_runs_tiny_seed0")
    assert len(runs.value) == 4 and not [r for r in runs.options if "seed1" in r]
    runs.set_value(["seq-eps3", "pub"]).run()
    at.selectbox(key="comp_seed").set_value(1).run()
    runs = at.multiselect(key="comp_runs_tiny_seed1")
    assert sorted(runs.value) == ["a-pri-seed1", "a-pub-seed1", "a-seq-seed1"]  # SeqPATE and the references
    at.multiselect(key="comp_prefixes_").set_value([0]).run()
    assert "SeqPATE · ε 3 · seed 1" in texts(at)  # the header and the cell name the seed
    at.selectbox(key="comp_seed").set_value(0).run()
    assert at.multiselect(key="comp_runs_tiny_seed0").value == ["seq-eps3", "pub"]  # seed 0's choice kept


def test_completions_keep_the_chosen_runs_across_pages(results, app_page):
    at = app_page("completions")
    at.multiselect(key="comp_runs_tiny").set_value(["pri", "seq-eps3"]).run()
    at.switch_page("views/overview.py").run()
    at.switch_page("views/completions.py").run()  # the reader comes back to the comparison they set up
    assert at.multiselect(key="comp_runs_tiny").value == ["pri", "seq-eps3"] and not at.exception


def test_completions_say_when_a_run_completed_other_prefixes(results, app_page):
    at = app_page("completions")
    at.multiselect(key="comp_runs_tiny").set_value(["seq-eps3", "seq-topk"]).run()
    at.multiselect(key="comp_prefixes_").set_value([0]).run()
    assert "this run's prefix at #0 is another" not in texts(at)  # fake runs share prefixes ...
    run = RunDir(results / "seq-topk")  # ... unless another data config gave this run other test sentences
    run.write_completions([{**row, "prefix": f"other data's prefix {row['index']}"} for row in run.completions()])
    at.multiselect(key="comp_runs_tiny").set_value(["seq-eps3", "seq-topk"]).run()
    assert "(this run's prefix at #0 is another: “other data&#x27;s prefix 0”; another data config)" in texts(at)


def test_completions_default_to_the_overviews_runs(results, app_page):
    # the newest SeqPATE run is a control at another epsilon, and seq-eps3 has a second copy (another sweep
    # plan's, same config): the default is the Overview's run, at the preset's epsilon, the copy sorting first
    write_run(results, "z-seq-eps0.01", "seqpate", epsilon=0.01)
    write_run(results, "seq-eps3-copy", "seqpate", epsilon=3.0, bleu4=9.9)
    at = app_page("completions")
    runs = at.multiselect(key="comp_runs_tiny").value
    assert runs[0] == "seq-eps3" and "sgd-eps3" in runs  # NoisySGD at the preset's epsilon too
    assert "pri" in runs and "pub" in runs  # the references have no epsilon to match


def test_completions_default_to_the_shipped_runs_as_the_overview_does(results, roots, app_page):
    """A browser walk saw Completions open on its own run (made here, another base model) while the Overview and
    Privacy-utility showed the shipped run of its settings."""
    mine = write_run(roots["live"], "mine-seq-eps3", "seqpate", epsilon=3.0)  # seq-eps3's settings, made here
    at = app_page("completions")
    assert at.multiselect(key="comp_runs_tiny").value[0] == "seq-eps3"
    # it kept its weights: "Your own prefix" points to it in the Runs box, where it told a review to launch a run
    (mine.path / "model").mkdir()
    (mine.path / "model" / "config.json").write_text("{}")
    at = app_page("completions")
    assert "add one that did to Runs above (mine-seq-eps3)" in " ".join(c.value for c in at.caption)
    at = app_page()  # the Overview's toggle puts the run made here in its place, on every page
    at.toggle(key="overview_made_here").set_value(True).run()
    at.switch_page("views/completions.py").run()
    assert at.multiselect(key="comp_runs_tiny").value[0] == "mine-seq-eps3"


def test_completions_of_a_typed_prefix_come_from_runs_that_kept_weights(results, app_page, monkeypatch):
    from dashboard import loading

    (results / "seq-eps3" / "model").mkdir()
    (results / "seq-eps3" / "model" / "config.json").write_text("{}")
    calls = []

    def fake_complete(runs, prefix, seed=0):  # the real one runs `python -m core complete` (tested in test_cli)
        calls.append(([r.run_id for r in runs], prefix, seed))
        return {"seq-eps3": {"run": "seq-eps3", "completion": "Alice Smith says hello"}}

    monkeypatch.setattr(loading, "complete_own_prefix", fake_complete)
    at = app_page("completions")
    at.multiselect(key="comp_runs_tiny").set_value(["seq-eps3", "pri"]).run()
    at.text_input(key="comp_own").set_value("hello there")  # inside a form: sent with the submit
    at.button[0].click().run()  # the form's submit button
    assert not at.exception
    assert calls == [(["seq-eps3"], "hello there", 0)]  # only the run with weights is asked
    assert "One sample per run (seed 0)" in " ".join(c.value for c in at.caption)
    html = texts(at)
    assert "<mark>Alice Smith</mark> says hello" in html  # highlighted with the run's secret phrases
    assert "Kept no weights, so not completed: pri" in " ".join(c.value for c in at.caption)
    at.number_input(key="comp_own_seed").set_value(7)  # another sample
    at.button[0].click().run()
    assert calls[-1] == (["seq-eps3"], "hello there", 7)
    assert "One sample per run (seed 7)" in " ".join(c.value for c in at.caption)


def test_an_empty_completion_is_named_not_left_blank():
    """A blank cell in the completions grid (351 of the shipped runs' 64,400 completions are empty) read as a
    fault of the page."""
    from dashboard.wording import completion_html

    assert completion_html("", ["Bob"]) == completion_html("  ", []) == (
        "<i>(empty: the model ended the text at its first token)</i>")
    assert completion_html("Bob <3", ["Bob"]) == "<mark>Bob</mark> &lt;3"


def test_completion_highlight_escapes_html():
    from dashboard.wording import highlight

    assert highlight("<b>Bob</b> met Bobby", ["Bob"]) == "&lt;b&gt;<mark>Bob</mark>&lt;/b&gt; met Bobby"
    assert highlight("nothing", []) == "nothing"


def test_a_link_names_the_preset_and_the_tab(roots):
    from apptest_helpers import open_page

    write_run(roots["cached"], "tiny-seq", "seqpate", epsilon=3.0, ppl=900.0)
    write_run(roots["cached"], "tiny-pub", "pub-gpt", ppl=1000.0)
    write_run(roots["cached"], "quick-seq", "seqpate", preset="quick", epsilon=3.0, ppl=280.0)
    at = open_page("privacy_utility", query={"pu_preset": "quick", "pu_tab": "Points"})
    assert not at.exception
    assert at.selectbox(key="pu_preset").value == "quick"  # not the preset with the most runs
    assert list(at.dataframe[0].value["run"]) == ["quick-seq"]


def _with_exposure(run, exposure: dict[str, float], candidates: int = 1_000_000):
    """Add a canary run's exposure to its metrics.json, as core.analysis.exposure records it."""
    detail = [{"canary_id": f"canary-{k}x", "inserted": int(k), "candidates": candidates, "method": "sampled",
               "scored": 4096, "more_likely": 0, "rank": 1.0, "exposure": v, "exposure_low": v / 2,
               "exposure_high": v * 2} for k, v in exposure.items()]
    run.write_metrics({**run.metrics(), "exposure": exposure, "exposure_detail": detail})


CANARY_PHRASES = [{"phrase": "my ID is 123456", "occurrences": 1, "users": 1, "teachers": 1, "epsilon": 0.9,
                   "kind": "canary", "inserted": 1},
                  {"phrase": "my ID is 654321", "occurrences": 10, "users": 1, "teachers": 1, "epsilon": 8.5,
                   "kind": "canary", "inserted": 10},
                  {"phrase": "Alice", "occurrences": 3, "users": 2, "teachers": 2, "epsilon": 2.0, "kind": "name"}]


def test_the_phrases_page_shows_canary_exposure_beside_the_phrase_epsilon(roots, app_page):
    """Exposure, the one measured leak of an inserted canary (2.2 / 10.4 / 19.9 bits for quick's Pri-GPT against
    0.2 for SeqPATE), was only in REPORT.md and statement.md: the Phrases page listed the canaries' ε alone."""
    cached = roots["cached"]
    seq = write_run(cached, "seq-canaries", "seqpate", epsilon=3.0, canaries="1,10", phrases=CANARY_PHRASES)
    pri = write_run(cached, "pri-canaries", "pri-gpt", canaries="1,10",
                    phrases=[{**r, "epsilon": float("inf")} for r in CANARY_PHRASES])
    other = write_run(cached, "seq-other-canaries", "seqpate", epsilon=3.0, canaries="1,10",
                      phrases=CANARY_PHRASES, config={"data__canary_seed": 9})  # other numbers: not compared
    write_run(cached, "plain", "seqpate", epsilon=3.0, phrases=phrase_rows())
    _with_exposure(seq, {"1": 0.21, "10": 0.3})
    _with_exposure(pri, {"1": 2.2, "10": 10.4})
    _with_exposure(other, {"1": 5.0, "10": 5.0})
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("seq-canaries").run()
    at.session_state["phrases_tab"] = "Canary exposure"
    at.run()
    assert not at.exception
    mine, compared = (d.value for d in at.dataframe)
    assert mine["copies inserted"].tolist() == [1, 10] and mine["phrase ε"].tolist() == [0.9, 8.5]
    # to two decimals, as REPORT.md (one decimal read "0.1 to 0.4" here, and "0.2 to 0.2" for a run's 0.21 to 0.24)
    assert mine["exposure (bits)"].tolist() == [0.21, 0.3] and mine["95% interval"].tolist() == ["0.10 to 0.42",
                                                                                                  "0.15 to 0.60"]
    assert mine["most possible"].tolist() == pytest.approx([math.log2(1e6)] * 2)
    assert mine["ranked by"].tolist() == ["4,096 sampled of 1,000,000"] * 2
    assert compared["run"].tolist() == ["pri-canaries", "seq-canaries"]  # Pri-GPT first, in the methods' order
    # a second copy of one config (tiny's canary Pri-GPT is in two sweep plans) is one row, as on the other pages
    _with_exposure(write_run(cached, "pri-canaries-copy", "pri-gpt", canaries="1,10",
                             phrases=[{**r, "epsilon": float("inf")} for r in CANARY_PHRASES]), {"1": 2.3, "10": 9.9})
    at.run()
    assert at.dataframe[1].value["run"].tolist() == ["pri-canaries", "seq-canaries"]
    assert compared["1×"].tolist() == [2.2, 0.21] and compared["10×"].tolist() == [10.4, 0.3]
    assert not [c for c in at.caption if "different base models" in c.value]  # none records a digest
    # runs on another base model (ADP's canary runs, made here): the table says which stand on which
    adp = write_run(cached, "adp-canaries", "adp", epsilon=3.0, canaries="1,10", phrases=CANARY_PHRASES)
    _with_exposure(adp, {"1": 0.2, "10": 0.3})
    adp.write_metrics({**adp.metrics(), "base_model": {"source": "tiny", "weights_sha256": "8867e2a78e365b32"}})
    at.run()
    expected = ("These runs may stand on different base models (some record their base model's digest, others none), "
                "so compare a run only with those on the same one: "
                "adp-canaries on base weights 8867e2a78e365b32; pri-canaries, seq-canaries recorded none")
    assert any(c.value.startswith(expected) for c in at.caption)
    # a run without canaries says why it has no exposure
    at.selectbox(key="phrases_run").set_value("plain").run()
    assert "inserted no canaries" in " ".join(i.value for i in at.info) and not at.exception


def test_all_phrases_name_the_average_of_each_kind(roots, app_page):
    """quick-phrases-seqpate-avg3 is calibrated to an average name ε of 3; with "all" chosen (a choice that stays
    from run to run) its page showed "average ε 2.6", canaries included, beside the note on the calibration."""
    write_run(roots["cached"], "avg", "seqpate", epsilon=0.9, canaries="1,10", phrases=CANARY_PHRASES,
              config={"privacy__target": "phrase-avg"})
    at = app_page("phrases")
    at.radio(key="phrases_kind").set_value("all").run()
    assert not at.exception and metrics(at)["average ε"] == "3.8"  # (0.9 + 8.5 + 2) / 3
    assert ("Averaged over every kind of phrase; by kind: canaries 4.7, names 2 (this run is calibrated to an "
            "average name ε).") in [x.value for x in at.caption]
    at.radio(key="phrases_kind").set_value("name").run()
    assert metrics(at)["average ε"] == "2" and not any("by kind" in x.value for x in at.caption)


def test_tables_of_seqpates_variants_say_when_its_answers_are_noise_dominated(roots, app_page):
    """tiny's Table 3/4 and App. H rows (M 10, noise std 69) read as effects of the aggregation with no word that the
    teachers' answers carry almost no signal (std / M = 6.9)."""
    seq = write_run(roots["cached"], "seq", "seqpate", epsilon=3.0, ppl=909.3)
    write_run(roots["cached"], "seq-kl", "seqpate", epsilon=3.0, ablation="-kl", ppl=912.0)
    note = ("Noise-dominated at this preset: at ε 3 the noise std is 69.0 on a sum of M = 10 teacher distributions "
            "(std / M = 6.9")
    for std, said in ((69.04, True), (9.5, False)):
        seq.write_privacy({**seq.privacy(), "noise_scale": std})
        at = open_tab(app_page("privacy_utility"), "pu_tab", "Ablations (Table 3)")
        assert not at.exception and any(x.value.startswith(note) for x in at.caption) is said


def test_curves_say_when_seqpates_line_is_flat_and_why(roots, app_page):
    """A lecturer projecting the curves saw tiny's SeqPATE at 905-910 from ε 0.5 to 8 and quick's at 219-221 up to
    ε = ∞, with the reason only on the other tabs and in REPORT.md."""
    runs = {eps: write_run(roots["cached"], f"seq-eps{eps:g}", "seqpate", epsilon=eps, ppl=ppl)
            for eps, ppl in ((0.5, 908.5), (3.0, 909.4), (8.0, 905.2))}
    for run in runs.values():  # tiny's noise on M = 10: the noise note says why, and nothing else
        run.write_privacy({**run.privacy(), "noise_scale": 69.04})
    captions = [x.value for x in app_page("privacy_utility").caption]
    assert any(c.startswith("Noise-dominated at this preset") and "SeqPATE's points differ" in c for c in captions)
    assert not any("flat here" in c for c in captions)
    for run in runs.values():  # quick's: the answers could carry signal, and the line is flat all the same
        run.write_privacy({**run.privacy(), "noise_scale": 9.5})
    at = app_page("privacy_utility")
    captions = " ".join(x.value for x in at.caption)
    assert not at.exception and "Noise-dominated" not in captions
    assert ("SeqPATE's perplexity is flat here: between 905.20 and 909.40 across target ε 0.5 to 8, a spread of "
            "0.5%. At this "
            "preset the teachers' answers barely change the student.") in captions
    write_run(roots["cached"], "seq-epsinf", "seqpate", epsilon=math.inf, ppl=907.0)
    captions = " ".join(x.value for x in app_page("privacy_utility").caption)
    assert "No noise at all (ε = ∞) gives about the same" in captions
    runs[8.0].write_metrics({**runs[8.0].metrics(), "ppl": 850.0})  # a line that moves: 7.0%
    assert not any("flat here" in x.value for x in app_page("privacy_utility").caption)
